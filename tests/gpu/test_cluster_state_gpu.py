"""A LocalCUDACluster that dc.cluster() starts speaks TLS with credentials made for it, its
workers fork from distconv's server, and the process is left as found (LocalCUDACluster sets
an environment variable in it; the forkserver preloads cupy)."""

import os

import numpy as np
import pytest

import distconv as dc

from ..test_cluster_state import _assert_as_before, _snapshot
from ..test_cluster_tls import _plain, _refused

pytestmark = pytest.mark.gpu

CONFIG = {"type": "cuda", "n_workers": 1, "dashboard_address": None}


@pytest.mark.parametrize("ending", ["done", "interrupt"])
def test_a_gpu_cluster_leaves_the_process_as_found_and_takes_only_its_clients(ending):
    import dask.array as da
    import dask_cuda  # noqa: F401  (its first import adds its own keys to dask's config: not ours)
    import scipy.ndimage as ndi

    before = _snapshot()
    x = np.random.default_rng(0).standard_normal((512, 384)).astype(np.float32)
    with pytest.raises(KeyboardInterrupt) if ending == "interrupt" else _nothing():
        with dc.cluster(CONFIG, quiet=True) as client:
            address = client.scheduler.address
            assert address.startswith("tls://"), address
            _refused(_plain(address))
            got = dc.correlate(da.from_array(x, chunks=(128, 384)), np.ones((3, 3)), mode="wrap").compute()
            np.testing.assert_allclose(got, ndi.correlate(x, np.ones((3, 3)), mode="wrap"), rtol=1e-5, atol=1e-5)
            assert set(client.run(lambda: "cupy" in __import__("sys").modules).values()) == {True}
            if ending == "interrupt":
                raise KeyboardInterrupt
    assert "RAPIDS_NO_INITIALIZE" not in os.environ or "RAPIDS_NO_INITIALIZE" in before["environ"]
    _assert_as_before(before)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
