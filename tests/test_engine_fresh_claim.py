"""A run that claims an output afresh looks up no block's write mark (on an object store each
lookup is a request, a block and a neighbour each); a resumed run still skips what it wrote."""

import numpy as np
import pytest
import scipy.ndimage as ndi
import zarr

import dask.array as da
import distconv as dc
from distconv.engine import location
from distconv.engine.marks import BLOCKS, COMPLETE

from .helpers import small_engine_blocks


@pytest.fixture
def mark_lookups(monkeypatch):
    """The block-mark paths asked whether they exist, in order."""
    seen = []
    exists = location.Location.exists

    def counted(self):
        if BLOCKS in str(self.path):
            seen.append(str(self.path))
        return exists(self)

    monkeypatch.setattr(location.Location, "exists", counted)
    return seen


def _input(tmp_path, rng):
    x = rng.standard_normal((203, 77)).astype(np.float32)
    zarr.create_array(str(tmp_path / "in.zarr"), shape=x.shape, chunks=(32, 77), dtype=x.dtype)[...] = x
    return x


def test_a_fresh_engine_run_looks_up_no_block_mark(tmp_path, rng, monkeypatch, mark_lookups):
    small_engine_blocks(monkeypatch, 20_000, 2000)
    x = _input(tmp_path, rng)
    y = dc.gaussian_filter(da.from_zarr(str(tmp_path / "in.zarr")), sigma=2.0)
    report = dc.to_zarr(y, str(tmp_path / "out.zarr"))
    assert report["path"] == "engine" and report["tasks"] > 3
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], ndi.gaussian_filter(x, 2.0),
                               rtol=1e-5, atol=1e-5)
    assert mark_lookups == []


def test_a_fresh_dask_store_looks_up_no_block_mark(tmp_path, rng, mark_lookups):
    """The general path's writer (storage.store_into): a stencil the engine does not take."""
    x = _input(tmp_path, rng)
    y = dc.gaussian_filter(da.from_zarr(str(tmp_path / "in.zarr")), sigma=2.0, mode="wrap")
    assert dc.to_zarr(y, str(tmp_path / "out.zarr"))["path"] != "engine"
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...],
                               ndi.gaussian_filter(x, 2.0, mode="wrap"), rtol=1e-5, atol=1e-5)
    assert (tmp_path / "out.zarr" / COMPLETE).exists() and mark_lookups == []
