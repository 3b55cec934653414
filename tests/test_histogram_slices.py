"""Histograms per slice, weighted or not, against numpy.histogram of each slice: the per-row
counts of the numpy backend (each value's bin found by a formula and checked against the
edges where it falls near one) and the accessor's ``histogram(dims=...)`` with weights, on
odd sizes, NaN and inf, values on the edges and next to them, uniform and given edges."""

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import distconv as dc
from distconv.backends.numpy import histogram as cpu


def _rows_reference(x, edges, w, rows):
    x2 = (x.view(np.uint8) if x.dtype == np.bool_ else x).reshape(rows, x.size // rows if rows else 0)
    w2 = None if w is None else w.reshape(x2.shape).astype(np.float64)
    out = [np.histogram(x2[k], bins=edges, weights=None if w2 is None else w2[k])[0] for k in range(rows)]
    return np.stack(out) if out else np.zeros((0, len(edges) - 1), np.int64 if w is None else np.float64)


def _edges(kind, dtype, nbins, rng):
    """Edges as ops/histograms.py hands them to the backend: float32 for float32 data."""
    if kind.startswith("uniform"):  # uniform64: float64 edges for any data (a float64 range)
        probe = np.empty(0, np.float64 if kind == "uniform64" else np.uint8 if dtype == np.bool_ else dtype)
        e = np.histogram_bin_edges(probe, nbins, range=(0, 150) if probe.dtype.kind in "iu" else (-2.5, 3.1))
    elif kind == "random":
        e = np.sort(rng.standard_normal(nbins + 1) * 3)
    elif kind == "repeated":
        e = np.sort(rng.choice(np.arange(-4.0, 5.0), nbins + 1))
    else:  # log-spaced: crowded near the bottom
        e = np.geomspace(1e-3, 10, nbins + 1)
    return e.astype(np.float32 if np.result_type(dtype, e.dtype) == np.float32 else np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("kind", ["uniform", "uniform64", "random", "repeated", "log"])
@pytest.mark.parametrize("weighted", [False, True])
def test_row_counts_match_numpy_per_row(rng, dtype, kind, weighted):
    for rows, n, nbins in [(1, 0, 3), (0, 5, 4), (7, 1, 1), (13, 365, 7), (3, 40_001, 50), (5, 211, 300)]:
        if np.dtype(dtype).kind == "b":
            x = rng.random(rows * n) < 0.5
        elif np.dtype(dtype).kind in "iu":
            x = rng.integers(0, 200, rows * n).astype(dtype)
        else:
            x = (rng.standard_normal(rows * n) * 3).astype(dtype)
        edges = _edges(kind, dtype, nbins, rng)
        if x.size and np.dtype(dtype).kind == "f":  # on the edges, next to them, NaN and inf
            at = rng.integers(0, x.size, 60)
            x[at[:30]] = edges[rng.integers(0, len(edges), 30)]
            x[at[30:]] = np.nextafter(edges[rng.integers(0, len(edges), 30)].astype(dtype),
                                      np.where(rng.random(30) < 0.5, np.inf, -np.inf).astype(dtype))
            x[at[:3]] = [np.nan, np.inf, -np.inf]
        w = rng.random(rows * n).astype(np.float32) if weighted else None
        ref = _rows_reference(x, edges, w, rows)
        uniform = kind.startswith("uniform")
        got = cpu.counts(x, edges, uniform, w, rows=rows)
        assert got.shape == ref.shape and got.dtype == (np.float64 if weighted else np.int64)
        if weighted:
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_array_equal(got, ref)
        if rows == 1:
            whole = cpu.counts(x, edges, uniform, w)
            np.testing.assert_array_equal(whole, got[0])


def test_uniform_edges_off_their_grid_and_more_bins_than_cells(rng):
    """Edges far from the grid a float32 formula makes (a narrow range far from 0), and more
    bins than the formula's cells: still numpy's bins."""
    for lo, hi, nbins, dtype in [(1000, 1000.001, 10, np.float32), (0, 1, 70_000, np.float32),
                                 (-1e-38, 1e-38, 5, np.float32), (0, 1e300, 7, np.float64)]:
        edges = np.histogram_bin_edges(np.empty(0, dtype), nbins, range=(dtype(lo), dtype(hi)))
        x = (lo + (hi - lo) * (rng.random(100_000) * 1.2 - 0.1)).astype(dtype)
        x[:500] = edges[rng.integers(0, len(edges), 500)]
        w = rng.random(x.size)
        # (numpy sums a cumulative sum's differences here: its last bits are its own)
        np.testing.assert_allclose(cpu.counts(x, edges, True, w), np.histogram(x, edges, weights=w)[0], atol=1e-9)
        np.testing.assert_array_equal(cpu.counts(x, edges, True, None, rows=10),
                                      _rows_reference(x, edges, None, 10))


def test_weighted_counts_never_sort(rng, monkeypatch):
    """numpy.histogram with weights and edges argsorts and gathers (9x the unweighted count):
    the weighted counts find each value's bin instead."""
    x = rng.standard_normal((20, 3000)).astype(np.float32)
    w = rng.random(x.shape)
    edges = np.linspace(-3, 3, 41).astype(np.float32)
    ref = _rows_reference(x, edges, w, 20)
    refs = [np.histogram(x, np.sort(rng.standard_normal(9)), weights=w)]
    monkeypatch.setattr(np, "histogram", lambda *a, **k: pytest.fail("numpy.histogram called"))
    monkeypatch.setattr(np, "argsort", lambda *a, **k: pytest.fail("argsort called"))
    np.testing.assert_allclose(cpu.counts(x, edges, True, w, rows=20), ref, rtol=1e-12)
    np.testing.assert_allclose(cpu.counts(x, refs[0][1], False, w), refs[0][0], rtol=1e-12)


@pytest.mark.parametrize("chunked", [False, True])
def test_weighted_histogram_per_slice_is_numpys_of_each_slice(rng, chunked):
    t, y, x = 11, 19, 23
    data = rng.standard_normal((t, y, x)).astype(np.float32)
    data[rng.random(data.shape) < 0.1] = np.nan  # masked points fall in no bin
    lat = np.linspace(-80, 80, y)
    da_ = xr.DataArray(data, dims=("time", "lat", "lon"), coords={"lat": lat}, name="t")
    w = np.cos(np.deg2rad(da_.lat))  # broadcasts over time and lon
    if chunked:
        da_ = da_.chunk({"time": 4, "lat": 7, "lon": 10})
    for dims, keep in [(["lat", "lon"], "time"), (["time"], None), (["lon"], None)]:
        h = da_.distconv.histogram(bins=9, range=(-2, 2), weights=w, dims=dims)
        full = np.broadcast_to(w.values[None, :, None], data.shape)
        order = [a for a in range(3) if da_.dims[a] not in dims] + [da_.dims.index(d) for d in dims]
        xs, ws = data.transpose(order), full.transpose(order)
        lead = xs.shape[:3 - len(dims)]
        xs, ws = xs.reshape(int(np.prod(lead)), -1), ws.reshape(int(np.prod(lead)), -1)
        ref = np.stack([np.histogram(xs[k], 9, (-2, 2), weights=ws[k])[0] for k in range(xs.shape[0])])
        assert h.dims == tuple(d for d in da_.dims if d not in dims) + ("bin",)
        assert h.dtype == ref.dtype
        np.testing.assert_allclose(h.values.reshape(ref.shape), ref, rtol=1e-12)
        unweighted = da_.distconv.histogram(bins=9, range=(-2, 2), dims=dims)
        ref_u = np.stack([np.histogram(xs[k], 9, (-2, 2))[0] for k in range(xs.shape[0])])
        np.testing.assert_array_equal(unweighted.values.reshape(ref_u.shape), ref_u)
        if keep:
            np.testing.assert_array_equal(h[keep].values, da_[keep].values)


def test_whole_weighted_histogram_with_nan_and_given_edges(rng):
    a = rng.standard_normal(10_007)
    a[::97] = np.nan
    w = rng.random(a.size).astype(np.float32)
    edges = np.array([-3.0, -1.0, -0.5, 0.0, 0.0, 0.25, 2.0, 3.0])  # uneven, one bin empty
    h, _ = dc.histogram(da.from_array(a, chunks=1001), bins=edges, weights=da.from_array(w, chunks=1001))
    ref, _ = np.histogram(a, bins=edges, weights=w.astype(np.float64))
    assert h.dtype == np.float32
    np.testing.assert_allclose(h.compute(), ref.astype(np.float32), rtol=1e-6)
