"""nan_policy='omit' rank filters against numpy's nan-functions over sliding windows: every
window's np.nanmedian, np.nanpercentile (default 'linear' method), np.nanmin / np.nanmax and
the rank among its non-NaN values, bit for bit, for every mode (each with its numpy.pad
padding), odd and even window sizes and footprints, origins, float32 and float64, windows with
even and odd counts of valid values, on numpy, dask chunkings (and cupy where a GPU is:
tests/gpu/test_median_gpu.py runs the same oracle on the kernels' paths)."""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi
from numpy.lib.stride_tricks import sliding_window_view

import distconv as dc

from .helpers import host

PAD = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}
MODES = [("reflect", 0.0), ("mirror", 0.0), ("nearest", 0.0), ("wrap", 0.0), ("constant", 1.5),
         ("constant", np.nan)]


def window_values(a, footprint, mode, cval=0.0, origin=0):
    """Every window of ``a`` under scipy's ``mode`` (numpy.pad's padding), the footprint's
    values only: shape a.shape + (taps,)."""
    fp = np.asarray(footprint, bool)
    origins = np.broadcast_to(origin, (a.ndim,))
    lo = [k // 2 + o for k, o in zip(fp.shape, origins)]
    pads = [(lo_, k - 1 - lo_) for lo_, k in zip(lo, fp.shape)]
    extra = {"constant_values": cval} if mode == "constant" else {}
    w = sliding_window_view(np.pad(a, pads, mode=PAD[mode], **extra), fp.shape)
    return w.reshape(a.shape + (-1,))[..., np.flatnonzero(fp)]


def nan_rank(w, rank):
    """The ``rank``-th smallest non-NaN value of each window (negative: from the top), NaN
    where the window holds fewer."""
    s, m = np.sort(w, axis=-1), (~np.isnan(w)).sum(axis=-1)
    idx = m + rank if rank < 0 else np.full_like(m, rank)
    ok = (idx >= 0) & (idx < m)
    return np.where(ok, np.take_along_axis(s, np.clip(idx, 0, w.shape[-1] - 1)[..., None], -1)[..., 0], np.nan)


def oracle(op, w, arg=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN windows, inf - inf
        if op == "median":
            return np.nanmedian(w, axis=-1)
        if op == "percentile":
            return np.nanpercentile(w, float(arg if arg >= 0 else 100 + arg), axis=-1)
        if op == "minimum":
            return np.nanmin(w, axis=-1)
        if op == "maximum":
            return np.nanmax(w, axis=-1)
        return nan_rank(w, arg)


def call(op, x, arg=None, **kw):
    kw["nan_policy"] = "omit"
    if op == "median":
        return dc.median_filter(x, **kw)
    if op == "percentile":
        return dc.percentile_filter(x, arg, **kw)
    if op == "minimum":
        return dc.minimum_filter(x, **kw)
    if op == "maximum":
        return dc.maximum_filter(x, **kw)
    return dc.rank_filter(x, arg, **kw)


def masked(rng, shape, frac, dtype, inf=False):
    """Temperatures in K (ties from rounding) with NaN at ``frac`` of the places."""
    a = (rng.standard_normal(shape) * 8 + 280).round(1).astype(dtype)
    a[rng.random(shape) < frac] = np.nan
    if inf:
        a.flat[rng.integers(0, a.size, 4)] = [np.inf, -np.inf, np.inf, np.inf]
    return a


def assert_same(got, ref):
    got = host(got)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    np.testing.assert_array_equal(got, ref)


CASES = [  # (op, arg, size or footprint)
    ("median", None, 3), ("median", None, 5), ("median", None, (3, 1)), ("median", None, 4),
    ("median", None, [[1, 0, 1], [0, 1, 1]]),
    ("percentile", 30, 3), ("percentile", 30, 5), ("percentile", 50, 3), ("percentile", 12.5, (1, 5)),
    ("percentile", 0, 3), ("percentile", 100, 3), ("percentile", -25, 4),
    ("percentile", 70, [[1, 0, 1], [0, 1, 1]]),
    ("rank", 2, 3), ("rank", -2, 5), ("minimum", None, 3), ("maximum", None, [[1, 1, 0], [0, 1, 1]]),
]


def _kw(shape_or_fp):
    if isinstance(shape_or_fp, list):
        return {"footprint": shape_or_fp}, np.asarray(shape_or_fp, bool)
    size = shape_or_fp
    box = (size, size) if np.ndim(size) == 0 else size
    return {"size": size}, np.ones(box, bool)


@pytest.mark.parametrize("op, arg, window", CASES, ids=[f"{c[0]}{c[1] if c[1] is not None else ''}-{c[2]}"
                                                       for c in CASES])
@pytest.mark.parametrize("mode, cval", MODES, ids=[f"{m}{c}" if m == "constant" else m for m, c in MODES])
def test_omit_is_numpys_nan_function_of_every_window(rng, op, arg, window, mode, cval):
    kw, fp = _kw(window)
    for dtype in (np.float32, np.float64):
        for frac in (0.0, 0.3, 0.8):
            a = masked(rng, (19, 23), frac, dtype)
            ref = oracle(op, window_values(a, fp, mode, cval), arg)
            assert_same(call(op, a, arg, mode=mode, cval=cval, **kw), ref)
    # windows of every count of valid values, even and odd, both present
    m = (~np.isnan(window_values(masked(rng, (19, 23), 0.3, np.float64), fp, mode, cval))).sum(-1)
    assert fp.sum() < 4 or (len(set((m % 2).ravel().tolist())) == 2)


def test_the_issues_even_counts_are_numpys_mean_and_linear_percentile(rng):
    """Temperatures with NaN: where a window holds an even number of values the old answer was
    the upper middle one (scipy's pick among the valid values), kelvins off numpy's."""
    a = masked(rng, (40, 50), 0.3, np.float32)
    w = window_values(a, np.ones((3, 3), bool), "reflect")
    even = ((~np.isnan(w)).sum(-1) % 2 == 0) & ~np.isnan(w).all(-1)
    med = dc.median_filter(a, 3, nan_policy="omit")
    p30 = dc.percentile_filter(a, 30, 3, nan_policy="omit")
    upper = np.take_along_axis(np.sort(w, -1), ((~np.isnan(w)).sum(-1) // 2)[..., None], -1)[..., 0]
    assert (med[even] != upper[even]).any()
    np.testing.assert_array_equal(med, oracle("median", w))
    np.testing.assert_array_equal(p30, oracle("percentile", w, 30))


def test_omit_without_nan_interpolates_too_and_propagate_stays_scipys(rng):
    """numpy's nan-functions of a window without NaN are np.median's and np.percentile's: omit
    interpolates there too; propagate is scipy.ndimage's (the upper middle value, no
    interpolation) wherever a window holds no NaN, and NaN where it holds one."""
    a = rng.standard_normal((21, 26))
    for size in (3, 4, (2, 5)):
        fp = np.ones((size, size) if np.ndim(size) == 0 else size, bool)
        w = window_values(a, fp, "reflect")
        np.testing.assert_array_equal(dc.median_filter(a, size, nan_policy="omit"), np.median(w, -1))
        np.testing.assert_array_equal(dc.percentile_filter(a, 30, size, nan_policy="omit"),
                                      np.percentile(w, 30.0, axis=-1))
        for pol in ("propagate",):
            np.testing.assert_array_equal(dc.median_filter(a, size, nan_policy=pol), ndi.median_filter(a, size))
            np.testing.assert_array_equal(dc.percentile_filter(a, 30, size, nan_policy=pol),
                                          ndi.percentile_filter(a, 30, size))
            np.testing.assert_array_equal(dc.rank_filter(a, 1, size, nan_policy=pol), ndi.rank_filter(a, 1, size))
    b = a.copy()
    b[5, 7] = np.nan
    for f, g in ((dc.median_filter, ndi.median_filter), (dc.minimum_filter, ndi.minimum_filter)):
        got, ref = f(b, 4), g(b, 4)
        near = np.zeros(b.shape, bool)
        near[4:8, 6:10] = True  # the windows of size 4 (offset 2) that hold (5, 7)
        assert np.isnan(got[near]).all() and not np.isnan(got[~near]).any()
        np.testing.assert_array_equal(got[~near], ref[~near])


def test_omit_follows_numpy_with_inf(rng):
    """±inf among the values: numpy's own arithmetic (inf - inf is NaN in its interpolation)."""
    for dtype in (np.float32, np.float64):
        a = masked(rng, (17, 19), 0.3, dtype, inf=True)
        for op, arg in (("median", None), ("percentile", 30), ("percentile", 100), ("percentile", 0), ("rank", -1)):
            for size in (3, 4):
                ref = oracle(op, window_values(a, np.ones((size, size), bool), "wrap"), arg)
                assert_same(call(op, a, arg, size=size, mode="wrap"), ref)


def test_omit_in_three_and_one_dims(rng):
    a = masked(rng, (7, 9, 11), 0.4, np.float32)
    for op, arg in (("median", None), ("percentile", 40)):
        assert_same(call(op, a, arg, size=3, mode="nearest"),
                    oracle(op, window_values(a, np.ones((3, 3, 3), bool), "nearest"), arg))
        assert_same(call(op, a, arg, size=(2, 3), axes=(0, 2), mode="mirror"),
                    oracle(op, window_values(a, np.ones((2, 1, 3), bool), "mirror"), arg))
    v = masked(rng, (60,), 0.4, np.float64)
    assert_same(call("median", v, size=4, mode="reflect", origin=1),
                oracle("median", window_values(v, np.ones(4, bool), "reflect", origin=1)))


@pytest.mark.parametrize("op, arg, size", [("median", None, 3), ("median", None, 4), ("percentile", 30, 5),
                                           ("rank", -3, 3)])
def test_omit_never_depends_on_the_chunking(backend, rng, op, arg, size):
    """Chunks with and without NaN (the sort of each window's values, or the rank filter at the
    two ranks and the same blend) give the same numbers: numpy's."""
    a = masked(rng, (45, 61), 0.0, np.float32)
    a[5:12, 3:20][rng.random((7, 17)) < 0.5] = np.nan  # NaN in a few chunks only
    ref = oracle(op, window_values(a, np.ones((size, size), bool), "reflect"), arg)
    assert_same(backend.run(lambda x: call(op, x, arg, size=size), a), ref)
    for chunks in ((7, 9), (45, 13), (11, 61)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = call(op, da.from_array(a, chunks=chunks), arg, size=size).compute()
        assert_same(got, ref)


def test_omit_on_the_engine_is_numpys(tmp_path, rng):
    """dc.to_zarr of an omit median / percentile over a Zarr input runs the engine's blocks
    (and a mode wrap the general path): numpy's numbers either way."""
    import zarr

    a = masked(rng, (64, 90), 0.3, np.float32)
    a[:, 60:] = np.nan_to_num(a[:, 60:], nan=270.0)  # blocks without NaN too
    src = str(tmp_path / "in.zarr")
    zarr.create_array(src, shape=a.shape, chunks=(16, 30), dtype=a.dtype)[...] = a
    for i, (op, arg, mode) in enumerate((("median", None, "reflect"), ("percentile", 30, "nearest"),
                                         ("median", None, "wrap"))):
        out = str(tmp_path / f"out{i}.zarr")
        report = dc.to_zarr(call(op, da.from_zarr(src), arg, size=4, mode=mode), out)
        assert (report["path"] == "engine") == (mode != "wrap"), report
        ref = oracle(op, window_values(a, np.ones((4, 4), bool), mode), arg)
        assert_same(zarr.open_array(out)[...], ref)
