"""Every Zarr layout of tests/test_layouts.py on GPU blocks: `distconv run` (device: gpu) and
``dc.to_zarr``, against scipy/numpy, GPU memory poisoned first and float outputs filled with NaN
(an element no block wrote shows up). Each layout reaches the GPU by the reader its metadata
allows: plain little-endian zstd chunks decoded by nvCOMP in batches, zarr-python's shards of
zstd chunks by distconv's shard reader (nvCOMP), anything else decoded by its codec pipeline
into pinned memory and uploaded."""

import numpy as np
import pytest
import yaml
import zarr

import dask.array as da
import distconv as dc
from distconv import batch
from distconv.engine import chain

from ..helpers import poison_gpu_pool, small_engine_blocks
from ..test_layouts import DIMS, LAYOUTS, WEIGHTS, _assert_equal, _make, _reference

pytestmark = pytest.mark.gpu

# layouts nvCOMP decodes from the files: plain zstd chunks (in batches), zarr-python's zstd shards
# (their sparse forms, every block missing a chunk, are decoded by the pipeline)
NVCOMP_BATCHES = {"v3-zstd", "v3-int16"}
NVCOMP_SHARDS = {"v3-sharded-zstd"}
# seen on one H100: these blocks read their shard files and also upload (stages hold both "read
# files" and "upload"); which part is uploaded, and whether the shard reader should take all of it,
# is not known yet: strict, so the day they read as predicted the marks go
SHARD_UPLOADS = pytest.mark.xfail(strict=True, reason="zarr-python's zstd shards: the blocks also upload")
RUN_LAYOUTS = [pytest.param(n, marks=SHARD_UPLOADS) if n in ("v3-sharded-zstd", "v3-sharded-zstd-sparse") else n
               for n in LAYOUTS]


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    root = tmp_path_factory.mktemp("layouts")
    return root, {name: _make(root, name) for name in LAYOUTS}


@pytest.fixture
def small_blocks(monkeypatch):
    small_engine_blocks(monkeypatch, 900, 300)


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_dc_to_zarr_on_gpu_blocks_reads_every_layout(layouts, tmp_path, small_blocks, name):
    root, values = layouts
    y = dc.cumsum(dc.correlate(da.from_zarr(str(root / f"{name}.zarr" / "v")), WEIGHTS, mode="nearest"), axis=0)
    plan = chain.plan_write(y, str(tmp_path / "o.zarr"), chain.gpu_blocks(None))
    assert plan.job is not None and plan.job.gpu, plan.why
    poison_gpu_pool(1 << 26)
    report = dc.to_zarr(y, str(tmp_path / "out.zarr"))
    assert report["path"] == "engine" and report["tasks"] > 3, report
    out = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")
    _assert_equal(out[...], _reference(values[name]))
    assert tuple(out.metadata.dimension_names) == DIMS


@pytest.mark.parametrize("name", RUN_LAYOUTS)
def test_distconv_run_on_the_gpu_reads_every_layout(layouts, tmp_path, small_blocks, name):
    from distconv.backends.cuda import zstd as gpu_zstd

    root, values = layouts
    doc = {"device": "gpu", "input": {"path": str(root / f"{name}.zarr" / "v")},
           "steps": [{"op": "correlate", "weights": WEIGHTS, "mode": "nearest"}, {"op": "cumsum", "axis": 0}],
           "outputs": {"path": str(tmp_path / "out.zarr")}}
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump(doc))
    poison_gpu_pool(1 << 26)
    s = batch.run(batch.load(p), progress=False)
    assert s["path"] == "direct", s
    out = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")
    _assert_equal(out[...], _reference(values[name]))
    assert tuple(out.metadata.dimension_names) == DIMS
    stages = s["stage_seconds"]
    nvcomp = gpu_zstd.available()
    assert ("batches decoded" in stages) == (nvcomp and name in NVCOMP_BATCHES), stages
    if name not in NVCOMP_BATCHES | NVCOMP_SHARDS or not nvcomp:
        assert "upload" in stages and "read files" not in stages, stages  # the pipeline's reads, uploaded
    if nvcomp and name in NVCOMP_SHARDS:
        assert "read files" in stages and "upload" not in stages, stages
    # the pipeline a layout's chunks decode with, chosen as the job was planned
    assert (s.get("why_reader") is not None) == (name in ("v2-lz4", "v2-order-F")), s.get("why_reader")
    assert np.dtype(out.dtype).isnative
