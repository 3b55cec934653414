"""The direct path on GPU blocks (pinned staging, edge rows shared between blocks, nvCOMP
encode and decode where installed) against scipy, for both input layouts: zarr's chunks and
distconv's own shards. GPU memory is poisoned first; the output store starts empty, so a block
or shard left unwritten reads back as fill values and fails the comparison."""

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

from distconv import batch
from distconv.graph import shards, storage, storage_job

from ..helpers import poison_gpu_pool

pytestmark = pytest.mark.gpu


def _run(tmp_path, name, inp, steps):
    doc = {"input": inp, "steps": steps, "outputs": {"path": f"{name}.zarr"}}
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(doc))
    wf = batch.load(p)
    poison_gpu_pool(1 << 26)
    s = batch.run(wf, progress=False)
    assert s["path"] == "direct"
    return wf, s


@pytest.mark.parametrize("shape, chunks", [((203, 61), (8, 16)), ((37, 33, 20), (4, 11, 20))])
def test_direct_path_on_the_gpu_equals_scipy(tmp_path, monkeypatch, shape, chunks):
    monkeypatch.setattr(storage, "GPU_CHUNK_BYTES", 9000)  # many blocks: halos cross them
    monkeypatch.setattr(storage_job, "SHARD_MIN_BYTES", 0)
    monkeypatch.setattr(shards, "INNER_BYTES", 300)
    steps = [{"op": "gaussian_filter", "sigma": 1.5}, {"op": "laplace", "mode": "nearest"}]
    wf, s = _run(tmp_path, "a", {"path": "in.zarr", "synthetic": {"shape": list(shape), "chunks": list(chunks),
                                                                   "seed": 7}}, steps)
    assert "upload" in s["stage_seconds"]  # zarr decoded into pinned memory, then one upload
    x = zarr.open_array(wf.input["path"], mode="r")[...]
    first = zarr.open_array(wf.outputs["path"], mode="r")[...]
    np.testing.assert_allclose(first, ndi.laplace(ndi.gaussian_filter(x, 1.5), mode="nearest"),
                               rtol=2e-5, atol=2e-4)
    # layout (b): distconv's shards in; decoded by nvCOMP on the GPU when it is installed
    w = np.arange(15, dtype=np.float64).reshape(3, 5) / 10 - 0.7
    wf2, s2 = _run(tmp_path, "b", {"path": wf.outputs["path"]},
                   [{"op": "correlate", "weights": (w if len(shape) == 2 else w[None]).tolist(), "mode": "mirror"}])
    from distconv.backends.cuda import zstd as gpu_zstd

    assert ("upload" not in s2["stage_seconds"]) == gpu_zstd.available()
    np.testing.assert_allclose(zarr.open_array(wf2.outputs["path"], mode="r")[...],
                               ndi.correlate(first, w if len(shape) == 2 else w[None], mode="mirror"),
                               rtol=2e-5, atol=2e-4)
