"""Two GPUs through dask-cuda: halos and carries cross GPU boundaries, results equal numpy."""

import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc

pytestmark = pytest.mark.multi_gpu


def test_filters_scans_histograms_across_two_gpus(rng):
    import cupy
    import dask.array as da

    a = rng.standard_normal((4096, 1024)).astype(np.float32)
    with dc.cluster({"type": "cuda", "n_workers": 2, "threads_per_worker": 4,
                     "dashboard_address": "127.0.0.1:0"}, quiet=True) as client:
        x = da.from_array(a, chunks=(512, 1024)).map_blocks(cupy.asarray).persist()
        w = rng.standard_normal((5, 5))
        got = dc.correlate(x, w, mode="wrap").map_blocks(cupy.asnumpy).compute()
        np.testing.assert_allclose(got, ndi.correlate(a.astype(np.float64), w, mode="wrap"), rtol=1e-4, atol=1e-4)
        got = dc.cumsum(x, axis=0).map_blocks(cupy.asnumpy).compute()
        np.testing.assert_allclose(got, np.cumsum(a.astype(np.float64), axis=0), rtol=1e-4, atol=1e-2)
        h, e = dc.histogram(x, bins=64, range=(-4, 4))
        np.testing.assert_array_equal(cupy.asnumpy(h.compute()), np.histogram(a, 64, (-4, 4))[0])
        assert len(client.scheduler_info()["workers"]) == 2
