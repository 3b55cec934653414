"""GPU-sized blocks (graph.groups): one task per run of chunks along axis 0. Runs are taken on
cupy chunks only; here the same code runs on numpy chunks (wants_runs patched) with the run
outputs poisoned, and every result must equal numpy/scipy whatever the chunking and run size."""

import numpy as np
import pytest
import scipy.ndimage as ndi

import dask
import dask.array as da
import distconv as dc
from distconv.graph import groups, halo, scan

from .helpers import assert_matches


@pytest.fixture
def runs(monkeypatch):
    """Runs on numpy chunks, their output blocks NaN-filled so an unwritten row shows."""
    monkeypatch.setattr(groups, "wants_runs", lambda x: True)

    def poisoned(block, shape, dtype):
        out = np.empty(shape, dtype)
        out.fill(np.nan if out.dtype.kind == "f" else -7)
        return out

    monkeypatch.setattr(halo, "empty_like_run", poisoned)
    monkeypatch.setattr(scan, "empty_like_run", poisoned)


def _chunked(rng, shape):
    chunks = tuple(int(rng.integers(1, s + 1)) for s in shape)
    return chunks


@pytest.mark.filterwarnings("ignore:axis")
@pytest.mark.parametrize("limit", [1, 3000, 10**9])
@pytest.mark.parametrize("mode", ["reflect", "constant", "nearest", "mirror", "wrap"])
def test_correlate_in_runs_equals_scipy(rng, runs, limit, mode):
    x = rng.standard_normal((37, 23)).astype(np.float32)
    w = rng.standard_normal((5, 3))
    d = da.from_array(x, chunks=_chunked(rng, x.shape))
    with dask.config.set({groups.CONFIG_KEY: limit}):
        y = dc.correlate(d, w, mode=mode, cval=0.5)
    assert y.shape == x.shape
    if limit == 10**9 and d.numblocks[0] > 1 and mode != "wrap":
        assert y.numblocks[0] == 1  # every row of chunks in one run
    assert_matches(y, ndi.correlate(x, w, mode=mode, cval=0.5).astype(np.float32), scale=10)


@pytest.mark.filterwarnings("ignore:axis")
def test_fused_chain_and_histogram_in_runs(rng, runs):
    x = rng.standard_normal((61, 45))
    d = da.from_array(x, chunks=(12, 15))  # rows 12 x 4 + 13 (the thin last one merged)
    with dask.config.set({groups.CONFIG_KEY: 12 * 15 * 8 * 3}):  # runs of three chunk rows
        y = dc.laplace(dc.gaussian_filter(d, 2.0), mode="nearest")
        h, _ = dc.histogram(y, bins=16, range=(-0.2, 0.2))
        assert y.chunks[0] == (36, 25)
    ref = ndi.laplace(ndi.gaussian_filter(x, 2.0), mode="nearest")
    assert_matches(y, ref)
    np.testing.assert_array_equal(h.compute(), np.histogram(ref, bins=16, range=(-0.2, 0.2))[0])


@pytest.mark.parametrize("axis", [1, 2, -1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scan_in_runs_equals_numpy(rng, runs, axis, exclusive):
    x = rng.integers(-5, 6, (19, 13, 8)).astype(np.int64)
    d = da.from_array(x, chunks=_chunked(rng, x.shape))
    with dask.config.set({groups.CONFIG_KEY: 5 * 13 * 8 * 8}):
        y = dc.scan(d, "add", axis=axis, exclusive=exclusive)
    ref = np.cumsum(x, axis=axis)
    if exclusive:
        ref = ref - x
    assert y.chunks[1:] == d.chunks[1:]
    np.testing.assert_array_equal(y.compute(), ref)


def test_scan_along_axis0_keeps_the_chunks(rng, runs):
    x = rng.standard_normal((40, 6))
    d = da.from_array(x, chunks=(7, 4))
    y = dc.cumsum(d, axis=0)
    assert y.chunks == d.chunks
    np.testing.assert_allclose(y.compute(), np.cumsum(x, axis=0))


def test_weighted_histogram_and_bincount_in_runs(rng, runs):
    x = rng.standard_normal((33, 10))
    w = rng.random((33, 10))
    d = da.from_array(x, chunks=(4, 3))
    h, e = dc.histogram(d, bins=9, range=(-2, 2), weights=da.from_array(w, chunks=(4, 3)))
    np.testing.assert_allclose(h.compute(), np.histogram(x, bins=9, range=(-2, 2), weights=w)[0])
    ints = rng.integers(0, 12, 50)
    with pytest.warns(UserWarning, match="bincount computes the input's min and max now"):
        counted = dc.bincount(da.from_array(ints, chunks=6))
    np.testing.assert_array_equal(counted.compute(), np.bincount(ints))


def test_runs_off_keep_the_chunks(rng, runs):
    d = da.from_array(rng.standard_normal((30, 8)), chunks=(5, 4))
    with dask.config.set({groups.CONFIG_KEY: 0}):
        assert dc.correlate(d, np.ones((3, 3))).chunks == d.chunks
    assert dc.correlate(d, np.ones((3, 3))).numblocks[0] == 1


def test_numpy_chunks_never_merge(rng):
    d = da.from_array(rng.standard_normal((30, 8)), chunks=(5, 4))
    assert dc.correlate(d, np.ones((3, 3))).chunks == d.chunks


@pytest.mark.parametrize("value", ["lots", -1])
def test_bad_block_bytes_is_named(rng, runs, value):
    d = da.from_array(rng.standard_normal((30, 8)), chunks=(5, 4))
    with dask.config.set({groups.CONFIG_KEY: value}), pytest.raises(ValueError, match="distconv.block-bytes"):
        dc.correlate(d, np.ones((3, 3)))
