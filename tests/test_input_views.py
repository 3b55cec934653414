"""What a process keeps of an input is keyed by the job's view of it (path and a fingerprint of
its metadata), and what it keeps of a run goes when the run ends or is stopped. Blocks run on
dask's threads here, so this process plays a kept cluster's long-lived worker."""

import shutil

import numpy as np
import pytest
import scipy.ndimage as ndi
import zarr

import dask.array as da
import distconv as dc
from distconv.engine import chain, ownership, read, shards
from distconv.engine.process import STATE

from .helpers import small_engine_blocks


@pytest.fixture
def small_blocks(monkeypatch):
    small_engine_blocks(monkeypatch, 900, 300)


def _write(path, x, chunks, zarr_format=3):
    if path.exists():
        shutil.rmtree(path)
    zarr.create_array(str(path), data=x, chunks=chunks, zarr_format=zarr_format)


def _smoothed(path, out):
    report = dc.to_zarr(dc.gaussian_filter(da.from_zarr(str(path)), 1.0), str(out))
    assert report["path"] == "engine" and report["tasks"] > 1, report
    return zarr.open_array(str(out), mode="r")[...]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_input_rewritten_in_place_is_read_as_it_is_now(tmp_path, rng, small_blocks, zarr_format):
    """The same path rewritten with another dtype and chunking between two jobs of one
    process: the second job reads the new array (the first one's opened array, keyed by the
    path alone, decoded the new chunks with the old metadata)."""
    p = tmp_path / "in.zarr"
    x = rng.standard_normal((40, 12)).astype(np.float32)
    _write(p, x, (8, 12), zarr_format)
    np.testing.assert_allclose(_smoothed(p, tmp_path / "a.zarr"), ndi.gaussian_filter(x, 1.0), rtol=1e-5, atol=1e-5)
    y = rng.standard_normal((40, 12))
    _write(p, y, (5, 12), zarr_format)
    got = _smoothed(p, tmp_path / "b.zarr")
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, ndi.gaussian_filter(y, 1.0), rtol=1e-12, atol=1e-12)


def test_an_input_changed_after_its_job_was_planned_is_refused_by_name(tmp_path, rng, small_blocks):
    """Rewritten between the plan and the blocks: no block decodes it with the plan's
    metadata; the error names the input and what it is now."""
    p = tmp_path / "in.zarr"
    _write(p, rng.standard_normal((40, 12)).astype(np.float32), (8, 12))
    plan = chain.plan_write(dc.gaussian_filter(da.from_zarr(str(p)), 1.0), str(tmp_path / "o.zarr"), False)
    assert plan.job is not None, plan.why
    _write(p, rng.standard_normal((40, 12)), (5, 12))
    claim = ownership.claim(str(tmp_path / "o.zarr"), key="path", words=ownership.PYTHON_WORDS)
    from distconv import engine

    with pytest.raises(RuntimeError, match=r"the input '.*in\.zarr' changed after this job was planned .*float64"):
        engine.write(plan, str(tmp_path / "o.zarr"), claim, None)


def _runs_held() -> set:
    """The runs this process's halo rows and held scans still hold something of."""
    held = set()
    edges = STATE.get("edge rows", read.EdgeRows)
    held |= {k[0][0] if isinstance(k[0], tuple) else k[0] for k in edges._rows}  # keyed (run or view, a, b)
    from distconv.engine import carries

    held |= {k[0] for k in carries.held()._held}
    return held


def test_a_runs_state_goes_when_it_ends(tmp_path, rng, small_blocks):
    """A finished run leaves no halo rows behind (the first block's upper edge, which no block
    takes, stayed until 64 later ones pushed it out)."""
    p = tmp_path / "in.zarr"
    x = rng.standard_normal((40, 12))
    _write(p, x, (8, 12), zarr_format=2)  # not plain zstd chunks: halos come from neighbours
    before = _runs_held()
    _smoothed(p, tmp_path / "a.zarr")
    assert _runs_held() <= before


def test_a_stopped_runs_state_goes_too(tmp_path, rng, small_blocks, monkeypatch):
    """A run that fails part way (its third block's write) leaves nothing of it in the process:
    its halo rows and a carried scan's held blocks are dropped as it stops."""
    p = tmp_path / "in.zarr"
    _write(p, rng.standard_normal((60, 12)), (6, 12), zarr_format=2)
    real, calls = shards.write_encoded, []

    def failing(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full")
        return real(*a, **k)

    monkeypatch.setattr(shards, "write_encoded", failing)
    before = _runs_held()
    with pytest.raises(OSError, match="disk full"):
        dc.to_zarr(dc.cumsum(dc.gaussian_filter(da.from_zarr(str(p)), 1.0), axis=0), str(tmp_path / "a.zarr"))
    assert _runs_held() <= before
