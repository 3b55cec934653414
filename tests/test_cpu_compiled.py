"""The compiled CPU path (backends/numpy/compiled.py, numba): scipy.ndimage's numbers, bit for
bit, on fresh random inputs of odd sizes, 1-D to 3-D, every boundary mode, integer dtypes with
scipy's casts, NaN and inf; the compiled kernel is the one that ran where compiled.reason()
allows it (scipy is made to fail there), and scipy runs, with its own numbers, where it does
not. Blocks of any size take the path here (MIN_SIZE 0); in use, small blocks run scipy."""

import threading

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc
from distconv.backends.numpy import compiled
from distconv.backends.numpy import kernel_cache
from distconv.backends.numpy import convolve as np_convolve
from distconv.backends.numpy import rank as np_rank
from distconv.core.tile import Tile

from .helpers import assert_matches

MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]
INTS = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.uint32, np.int64, np.uint64]


class _NoScipy:
    """Stands in for scipy.ndimage inside the numpy backend: any use fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"scipy.ndimage.{name} ran where the compiled path should have")


@pytest.fixture
def compiled_only(monkeypatch):
    """Every block takes the compiled path, and scipy inside the backend fails if used (a
    compile under way on this machine, left by an earlier test's first run, sends blocks to
    scipy: not here)."""
    monkeypatch.setattr(compiled, "MIN_SIZE", 0)
    monkeypatch.setattr(kernel_cache, "compiling", lambda: False)
    monkeypatch.setattr(np_convolve, "ndi", _NoScipy())
    monkeypatch.setattr(np_rank, "ndi", _NoScipy())


@pytest.fixture
def small_blocks_too(monkeypatch):
    """Every block may take the compiled path (scipy allowed where reason() says so)."""
    monkeypatch.setattr(compiled, "MIN_SIZE", 0)


def _shape(rng, ndim, lo=1, hi=14):
    return tuple(int(s) | 1 if rng.random() < 0.7 else int(s) for s in rng.integers(lo, hi, ndim))


def _data(rng, shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 30).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -3000), min(info.max, 3000)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dt)


def _origin(rng, k):
    return int(rng.integers(-(k // 2), (k - 1) // 2 + 1))


def _same(got, ref):
    """Bit for bit: the compiled sums add in scipy's order and round as it does."""
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref, strict=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_correlate_nd_equals_scipy(compiled_only, rng, mode, ndim):
    for dtype in (np.float64, np.float32):
        for _ in range(4):
            a = _data(rng, _shape(rng, ndim), dtype)
            w = rng.standard_normal(tuple(int(k) for k in rng.integers(1, 6, ndim)))
            w[tuple(rng.integers(0, k) for k in w.shape)] = 0.0  # a zero tap drops out
            org = tuple(_origin(rng, k) for k in w.shape)
            cval = float(rng.standard_normal())
            _same(dc.correlate(a, w, mode=mode, cval=cval, origin=org),
                  ndi.correlate(a, w, mode=mode, cval=cval, origin=org))
            _same(dc.convolve(a, w, mode=mode, cval=cval, origin=org),
                  ndi.convolve(a, w, mode=mode, cval=cval, origin=org))


@pytest.mark.parametrize("mode", MODES)
def test_correlate1d_every_axis_and_mask_kind(compiled_only, rng, mode):
    a = _data(rng, (9, 14, 11), np.float32)
    for axis in (0, 1, 2):
        for kind in ("symmetric", "antisymmetric", "general", "even"):
            k = int(rng.integers(1, 9)) | 1 if kind != "even" else 2 * int(rng.integers(1, 5))
            w = rng.standard_normal(k)
            if kind == "symmetric":
                w = w + w[::-1]
            elif kind == "antisymmetric":
                w = w - w[::-1]
            org = _origin(rng, k)
            _same(dc.correlate1d(a, w, axis=axis, mode=mode, cval=0.3, origin=org),
                  ndi.correlate1d(a, w, axis=axis, mode=mode, cval=0.3, origin=org))
            _same(dc.convolve1d(a.astype(np.float64), w, axis=axis, mode=mode, origin=org),
                  ndi.convolve1d(a.astype(np.float64), w, axis=axis, mode=mode, origin=org))


@pytest.mark.parametrize("mode", MODES)
def test_separable_filters_equal_scipy(compiled_only, rng, mode):
    a = _data(rng, (23, 17), np.float32)
    b = _data(rng, (7, 12, 9), np.float64)
    for x in (a, b):
        _same(dc.gaussian_filter(x, 1.3, mode=mode, cval=0.5), ndi.gaussian_filter(x, 1.3, mode=mode, cval=0.5))
        _same(dc.gaussian_filter(x, 0.9, order=1, mode=mode), ndi.gaussian_filter(x, 0.9, order=1, mode=mode))
        for f in ("sobel", "prewitt"):
            _same(getattr(dc, f)(x, axis=-1, mode=mode), getattr(ndi, f)(x, axis=-1, mode=mode))
        for f in ("gaussian_laplace", "gaussian_gradient_magnitude"):
            _same(getattr(dc, f)(x, 1.1, mode=mode), getattr(ndi, f)(x, 1.1, mode=mode))


def test_uniform_filter_close_to_scipy(compiled_only, rng):
    """distconv's uniform filter is a 1/size mask (scipy's is a running sum): close, not bitwise."""
    a = _data(rng, (31, 29), np.float32)
    for mode in MODES:
        assert_matches(dc.uniform_filter(a, (3, 5), mode=mode), ndi.uniform_filter(a, (3, 5), mode=mode))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_inputs_cast_as_scipy(compiled_only, rng, dtype):
    """Sums in doubles, then C's cast: truncation, negative values wrapped into unsigned types,
    each pass of a separable filter cast to the type (scipy's chained 1-D filters)."""
    a = _data(rng, (15, 13), dtype)
    w = rng.standard_normal((3, 5)) * 3
    for mode in ("reflect", "constant"):
        _same(dc.correlate(a, w, mode=mode, cval=-7.0), ndi.correlate(a, w, mode=mode, cval=-7.0))
        _same(dc.correlate1d(a, [1.5, -2.0, 0.7], axis=0, mode=mode), ndi.correlate1d(a, [1.5, -2.0, 0.7], axis=0, mode=mode))
    _same(dc.gaussian_filter(a, 1.2), ndi.gaussian_filter(a, 1.2))
    _same(dc.sobel(a, axis=0), ndi.sobel(a, axis=0))
    _same(dc.correlate(a, w, output=np.float32), ndi.correlate(a, w, output=np.float32))


def test_out_of_range_sums_wrap_as_scipy(compiled_only, rng):
    a = rng.integers(0, 255, (17, 19)).astype(np.uint8)
    for dtype in (np.uint8, np.int8, np.int16, np.uint16, np.int32):
        w = rng.standard_normal((3, 3)) * 400  # sums far outside the type
        _same(dc.correlate(a, w, output=dtype), ndi.correlate(a, w, output=dtype))
        _same(dc.correlate1d(a, [300.0, -1e3, 1e4], output=dtype), ndi.correlate1d(a, [300.0, -1e3, 1e4], output=dtype))


def test_float_output_of_the_other_width(compiled_only, rng):
    a = _data(rng, (13, 21), np.float64)
    w = rng.standard_normal((3, 3))
    _same(dc.correlate(a, w, output=np.float32), ndi.correlate(a, w, output=np.float32))
    _same(dc.correlate(a.astype(np.float32), w, output=np.float64),
          ndi.correlate(a.astype(np.float32), w, output=np.float64))
    _same(dc.gaussian_filter(a, 1.0, output=np.float32), ndi.gaussian_filter(a, 1.0, output=np.float32))


def test_nan_and_inf_propagate_as_scipy(compiled_only, rng):
    a = _data(rng, (19, 23), np.float64)
    a[3, 4], a[10, 10], a[18, 0], a[0, 22] = np.nan, np.inf, -np.inf, np.nan
    w = rng.standard_normal((3, 5))
    w[1, 2] = 0.0  # a zero tap does not read its NaN (scipy drops it)
    for mode in MODES:
        _same(dc.correlate(a, w, mode=mode), ndi.correlate(a, w, mode=mode))
        _same(dc.correlate1d(a, [1.0, 0.0, 1.0], axis=1, mode=mode),  # symmetric: inf + -inf
              ndi.correlate1d(a, [1.0, 0.0, 1.0], axis=1, mode=mode))
        _same(dc.gaussian_filter(a, 1.0, mode=mode), ndi.gaussian_filter(a, 1.0, mode=mode))
    w1 = np.array([1.0, np.nan, 2.0])  # a NaN in a 1-D mask reaches every output
    _same(dc.correlate1d(a, w1), ndi.correlate1d(a, w1))
    _same(dc.correlate(a, w, mode="constant", cval=np.nan), ndi.correlate(a, w, mode="constant", cval=np.nan))


@pytest.mark.parametrize("mode", MODES)
def test_halo_tiles_on_dask_equal_scipy(compiled_only, rng, mode):
    """Chunks with halos from their neighbours: the mode applies only at the array's edges."""
    a = _data(rng, (42, 36), np.float32)
    x = da.from_array(a, chunks=(14, 12))
    w = rng.standard_normal((5, 3))
    _same(dc.correlate(x, w, mode=mode).compute(), ndi.correlate(a, w, mode=mode))
    _same(dc.gaussian_filter(x, 1.5, mode=mode).compute(), ndi.gaussian_filter(a, 1.5, mode=mode))
    _same(dc.median_filter(x, 3, mode=mode).compute(), ndi.median_filter(a, 3, mode=mode))
    _same(dc.maximum_filter(x, (3, 5), mode=mode).compute(), ndi.maximum_filter(a, (3, 5), mode=mode))
    # gaussian then laplace: one backend call (correlate_pair) on the chained tile; distconv's
    # laplace sums its star mask in doubles (scipy's adds float32 passes): close, not bitwise
    assert_matches(dc.laplace(dc.gaussian_filter(x, 1.0, mode=mode), mode=mode),
                   ndi.laplace(ndi.gaussian_filter(a, 1.0, mode=mode), mode=mode))


def test_a_pass_computes_the_centre_of_an_extended_tile(compiled_only, rng):
    """The backend on a tile with halos (uneven, one side at a global edge) gives scipy's
    result on the whole extended array, cut to the centre."""
    ext = _data(rng, (20, 25), np.float32)
    halo = ((3, 0), (2, 4))
    tile = Tile.extended(ext, halo)
    centre = tuple(slice(lo, n - hi) for (lo, hi), n in zip(halo, ext.shape))
    w = rng.standard_normal(7)
    passes = [(0, w, 1), (1, w[::-1].copy(), -1), (0, w[:3].copy(), 0)]  # axis 0 twice
    want = ext
    for axis, ww, org in passes:
        want = ndi.correlate1d(want, ww, axis=axis, mode="mirror", origin=org)
    _same(np_convolve.correlate_passes(tile, passes, "mirror", 0.0), want[centre])
    m = rng.standard_normal((3, 4))
    _same(np_convolve.correlate(tile, m, "wrap", 0.0, (0, 1)), ndi.correlate(ext, m, mode="wrap", origin=(0, 1))[centre])
    fp = rng.random((3, 5)) < 0.6
    fp[1, 2] = True
    got = np_rank.rank(tile, fp, 2, "reflect", 0.0, (1, 0))
    _same(got, ndi.rank_filter(ext, 2, footprint=fp, mode="reflect", origin=(1, 0))[centre])


@pytest.mark.parametrize("mode", MODES)
def test_minimum_maximum_equal_scipy(compiled_only, rng, mode):
    for dtype in (np.float32, np.float64, np.uint8, np.int16, np.int32, np.uint16):
        a = _data(rng, _shape(rng, 3, 2, 12), dtype)
        for _ in range(2):
            size = tuple(int(k) for k in rng.integers(1, 6, 3))
            org = tuple(_origin(rng, k) for k in size)
            for name in ("minimum_filter", "maximum_filter"):
                _same(getattr(dc, name)(a, size, mode=mode, cval=3, origin=org),
                      getattr(ndi, name)(a, size, mode=mode, cval=3, origin=org))
        _same(dc.minimum_filter1d(a, 4, axis=1, mode=mode), ndi.minimum_filter1d(a, 4, axis=1, mode=mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ndim", [2, 3])
def test_rank_filters_equal_scipy(compiled_only, rng, mode, ndim):
    for dtype in (np.float32, np.float64, np.uint8, np.int16, np.int32):
        a = _data(rng, _shape(rng, ndim, 2, 12), dtype)
        fp = rng.random(tuple(int(k) for k in rng.integers(1, 5, ndim))) < 0.7
        fp.flat[0] = True
        org = tuple(_origin(rng, k) for k in fp.shape)
        n = int(fp.sum())
        r = int(rng.integers(0, n))
        _same(dc.rank_filter(a, r, footprint=fp, mode=mode, cval=2, origin=org),
              ndi.rank_filter(a, r, footprint=fp, mode=mode, cval=2, origin=org))
        _same(dc.median_filter(a, 3, mode=mode), ndi.median_filter(a, 3, mode=mode))
        _same(dc.percentile_filter(a, 30, size=(3,) * (ndim - 1) + (5,), mode=mode),
              ndi.percentile_filter(a, 30, size=(3,) * (ndim - 1) + (5,), mode=mode))
        _same(dc.minimum_filter(a, footprint=fp, mode=mode, origin=org),
              ndi.minimum_filter(a, footprint=fp, mode=mode, origin=org))


def test_median_5x5_and_larger_boxes(compiled_only, rng):
    a = _data(rng, (37, 41), np.float32)
    for size in (5, 7, (3, 9), 11, 15):
        _same(dc.median_filter(a, size), ndi.median_filter(a, size))


@pytest.mark.parametrize("compiled_path", [True, False])
def test_one_d_rank_follows_scipys_nd_rule(monkeypatch, rng, compiled_path):
    """1-D rank filters give scipy's N-D numbers, compiled or not, so a small block (scipy)
    and a large one (compiled) agree (scipy's 1-D fast path differs from them on footprints
    with holes and on lines shorter than the window)."""
    monkeypatch.setattr(compiled, "MIN_SIZE", 0 if compiled_path else 1 << 62)
    if compiled_path:
        monkeypatch.setattr(np_rank, "ndi", _NoScipy())
    for n in (1, 2, 5, 31):
        a = _data(rng, (n,), np.float32)
        for mode in MODES:
            for fp in (np.ones(5, bool), np.array([1, 0, 1, 1], bool)):
                org = _origin(rng, len(fp))
                r = int(rng.integers(0, fp.sum()))
                want = ndi.rank_filter(a[None], r, footprint=fp[None], mode=mode, origin=(0, org))[0]
                _same(dc.rank_filter(a, r, footprint=fp, mode=mode, origin=org), want)


def test_rank_nan_rule_holds(compiled_only, rng):
    """NaN windows: distconv's rule (ops/rank_nan.py) over the compiled picks."""
    a = _data(rng, (21, 19), np.float32)
    a[5, 5] = a[20, 0] = np.nan
    got = dc.median_filter(a, 3)
    want = ndi.median_filter(np.nan_to_num(a), 3)
    bad = ndi.maximum_filter(np.isnan(a).astype(np.uint8), 3).astype(bool)
    np.testing.assert_array_equal(np.isnan(got), bad)
    np.testing.assert_array_equal(got[~bad], want[~bad])
    np.testing.assert_array_equal(dc.minimum_filter(a, 3, nan_policy="omit"),
                                  ndi.minimum_filter(np.where(np.isnan(a), np.inf, a), 3))


@pytest.mark.parametrize("mode", MODES)
def test_omit_over_blocks_with_nan_is_numpys_from_the_compiled_kernel(compiled_only, rng, monkeypatch, mode):
    """nan_policy='omit' on blocks holding NaN (and inf): the compiled kernel (each window
    sorted with NaN last, numpy's two ranks of its count) gives np.nanmedian, np.nanpercentile
    and the rank among non-NaN values bit for bit, over boxes, footprints, origins, 1-D to 3-D;
    the sort of windows.py never runs."""
    from distconv.backends import windows

    from .test_nan_quantiles import call, oracle, window_values

    monkeypatch.setattr(windows, "rank_omit", lambda *a, **k: pytest.fail("the sort path ran"))
    cases = [((29, 31), 3, 0), ((29, 31), 4, (1, -1)), ((29, 31), [[1, 0, 1], [0, 1, 1]], 0),
             ((7, 9, 11), 3, 0), ((61,), 6, 2), ((29, 31), (1, 5), 0)]
    for dtype in (np.float32, np.float64):
        for shape, window, origin in cases:
            a = (rng.standard_normal(shape) * 8 + 280).round(1).astype(dtype)
            a[rng.random(shape) < 0.35] = np.nan
            a.flat[rng.integers(0, a.size, 3)] = [np.inf, -np.inf, np.inf]
            if isinstance(window, list):
                fp, kw = np.asarray(window, bool), {"footprint": window}
            else:
                fp = np.ones(window if np.ndim(window) else (window,) * a.ndim, bool)
                kw = {"size": window}
            for op, arg in (("median", None), ("percentile", 30), ("percentile", 100), ("rank", -2)):
                got = call(op, a, arg, mode=mode, cval=2.5, origin=origin, **kw)
                ref = oracle(op, window_values(a, fp, mode, 2.5, origin), arg)
                _same(got, ref)


@pytest.mark.parametrize("mode", MODES)
def test_omit_over_blocks_without_nan_is_numpys_from_the_compiled_picks(compiled_only, rng, mode):
    """nan_policy='omit' on a block without NaN: the compiled rank filter at numpy's two
    ranks, blended as np.median / np.percentile (linear) blend them, bit for bit."""
    from numpy.lib.stride_tricks import sliding_window_view

    pad = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}
    for dtype in (np.float32, np.float64):
        a = _data(rng, (23, 18), dtype)
        for size, (o0, o1) in ((4, (0, 0)), ((3, 4), (1, -1)), (3, (0, 0)), ((2, 5), (0, 1))):
            box = (size, size) if np.ndim(size) == 0 else size
            lo = [k // 2 + o for k, o in zip(box, (o0, o1))]
            extra = {"constant_values": 2.5} if mode == "constant" else {}
            p = np.pad(a, [(l, k - 1 - l) for l, k in zip(lo, box)], mode=pad[mode], **extra)
            w = sliding_window_view(p, box).reshape(a.shape + (-1,))
            kw = dict(mode=mode, cval=2.5, origin=(o0, o1), nan_policy="omit")
            _same(dc.median_filter(a, size, **kw), np.median(w, axis=-1))
            _same(dc.percentile_filter(a, 30, size, **kw), np.percentile(w, 30.0, axis=-1))


@pytest.mark.parametrize("call, kind", [
    (lambda a: dc.correlate(a, np.ones((3, 3))), None),
    (lambda a: dc.median_filter(a.astype(np.int64), 3), "dtype int64"),
    (lambda a: dc.minimum_filter(a.astype(np.uint64), 3), "dtype uint64"),
    (lambda a: dc.minimum_filter(a.astype(np.uint8), 3, mode="constant", cval=1.5), "cval 1.5"),
    (lambda a: dc.median_filter(a, 17), "past the compiled"),
    (lambda a: dc.maximum_filter(a, (1, 129)), "past the compiled"),
    (lambda a: dc.correlate(a[None, None], np.ones((1, 1, 3, 3))), "4-D"),
    (lambda a: dc.correlate(a.astype(bool), np.ones((3, 3))), "dtype bool"),
])
def test_fallback_rule_runs_scipy(small_blocks_too, rng, call, kind):
    """What reason() refuses runs scipy, with scipy's numbers; what it allows runs compiled."""
    seen = []
    real = {n: getattr(compiled, n) for n in ("correlate", "correlate_passes", "rank", "extremum_passes")}
    for n, f in real.items():
        setattr(compiled, n, lambda *a, _f=f, **k: (seen.append(1), _f(*a, **k))[1])
    try:
        a = _data(rng, (15, 14), np.float32)
        call(a)
    finally:
        for n, f in real.items():
            setattr(compiled, n, f)
    assert bool(seen) == (kind is None)


def test_reason_names_each_limit():
    big = compiled.MIN_SIZE
    assert compiled.reason("linear", np.float32, size=big) is None
    assert compiled.reason("pick", np.uint8, taps=225, size=big) is None
    assert "past" in compiled.reason("pick", np.uint8, taps=226, size=big)
    assert "int64" in compiled.reason("pick", np.int64, size=big)
    assert "float16" in compiled.reason("linear", np.float16, size=big)
    assert "complex" in compiled.reason("linear", np.complex64, size=big)
    assert "4-D" in compiled.reason("linear", np.float32, ndim=4, size=big)
    assert "elements" in compiled.reason("linear", np.float32, size=big - 1)
    assert "mode" in compiled.reason("linear", np.float32, modes=("grid-wrap",), size=big)
    assert "cval" in compiled.reason("pick", np.uint8, modes=("constant",), cval=-1, size=big)
    assert compiled.reason("pick", np.uint8, modes=("reflect",), cval=-1, size=big) is None
    assert "cval" in compiled.reason("pick", np.float32, modes=("constant",), cval=np.nan, size=big)
    assert "cval" in compiled.reason("pick", np.float32, modes=("constant",), cval=0.1, size=big)
    assert compiled.reason("pick", np.float32, taps=127, passes=True, size=big) is None
    assert "past" in compiled.reason("pick", np.float32, taps=128, passes=True, size=big)


def test_networks_select_every_rank():
    for n in (1, 2, 3, 9, 10, 25):
        for r in range(n):
            net = compiled.network(n, r)
            for _ in range(20):
                v = list(np.random.default_rng(n * 31 + r).permutation(n))
                for a, b, op in net:
                    lo, hi = min(v[a], v[b]), max(v[a], v[b])
                    v[a] = lo if op in (0, 1) else v[a]
                    v[b] = hi if op in (0, 2) else v[b]
                assert v[r] == r


def test_kernels_release_the_gil_and_threads_agree(compiled_only, rng):
    """Every kernel is compiled nogil; blocks filtered on threads at once equal scipy's."""
    from distconv.backends.numpy import _kernels

    for name in ("correlate_nd", "pass_last", "pass_mid", "extremum_last", "extremum_mid", "rank_nd"):
        assert getattr(_kernels, name).targetoptions["nogil"] is True
    blocks = [_data(rng, (64, 61), np.float32) for _ in range(4)]
    results = [None] * 4

    def work(i):
        results[i] = dc.gaussian_filter(blocks[i], 2.0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for b, r in zip(blocks, results):
        _same(r, ndi.gaussian_filter(b, 2.0))


@pytest.fixture
def banded(monkeypatch):
    """Every block of more than a few outputs splits into bands over a pool of 3 threads."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(3)
    monkeypatch.setattr(compiled, "BAND_MIN_OUTPUTS", 8)
    monkeypatch.setattr(compiled, "_threads", lambda: 3)
    monkeypatch.setattr(compiled, "_pool", lambda: pool)
    yield pool
    pool.shutdown()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_a_block_split_into_bands_over_threads_equals_scipy(compiled_only, banded, rng, mode, ndim):
    """A block's values (rows, a 3-D block's planes) in bands on threads of their own: scipy's
    numbers bit for bit, the bands' edges included, for the correlate and a rank filter; also
    a tile with a halo (its centre starts past 0) as dask's chunks hand it in."""
    shape = {1: (97,), 2: (23, 31), 3: (7, 9, 11)}[ndim]
    x = _data(rng, shape, np.float32)
    w = rng.standard_normal((3,) * ndim)
    origin = [_origin(rng, 3) for _ in range(ndim)]
    kw = {"mode": mode, "cval": 1.5, "origin": origin}
    _same(dc.correlate(x, w, **kw), ndi.correlate(x, w, **kw))
    _same(dc.median_filter(x, size=3, **kw), ndi.median_filter(x, size=3, **kw))
    chunks = tuple((s // 2, s - s // 2) for s in shape)
    got = dc.correlate(da.from_array(x, chunks=chunks), w, **kw).compute(scheduler="threads")
    _same(got, ndi.correlate(x, w, **kw))


def test_the_band_threads_and_the_bands(monkeypatch):
    """Outside a worker the bands use the process's cores; bands are C-contiguous views that
    cover the output once, along planes for 3-D blocks, rows for one plane, values for 1-D."""
    import os

    compiled._threads.cache_clear()
    try:
        assert compiled._threads() == len(os.sched_getaffinity(0))
    finally:
        compiled._threads.cache_clear()
    monkeypatch.setattr(compiled, "BAND_MIN_OUTPUTS", 1)
    monkeypatch.setattr(compiled, "_threads", lambda: 3)
    for shape, axis in (((1, 10, 4), 1), ((5, 3, 4), 0), ((1, 1, 50), 2)):
        seen = []
        compiled._banded(lambda o, a, start, seen=seen: seen.append((o.flags.c_contiguous, a, start, o.shape[a])),
                         np.zeros(shape))
        seen.sort(key=lambda e: e[2])
        assert len(seen) == 3 and all(c and a == axis for c, a, _, _ in seen), seen
        starts = [st for _, _, st, _ in seen]
        assert starts[0] == 0 and all(st + n == nxt for (_, _, st, n), nxt in zip(seen, starts[1:] + [shape[axis]]))


def test_a_forked_child_makes_its_own_band_threads():
    """The server CPU workers fork from ran warm(): a child asks its own thread count again."""
    compiled._threads()
    compiled._forget_pool()
    assert compiled._threads.cache_info().currsize == 0 and compiled._pool.cache_info().currsize == 0


def test_a_workers_codec_threads_are_its_own_threads():
    """The zstd pool of a dask worker of 1 thread has 1 thread (not one per core of the node:
    every worker of a node had as many); outside a worker, the process's cores."""
    from distributed import Client, LocalCluster

    from distconv.backends.numpy import zstd

    def size():
        return zstd._pool()._max_workers

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            Client(c) as client:
        assert client.submit(size, pure=False).result() == 1
    zstd._forget_pool()
    compiled._threads.cache_clear()
    try:
        assert size() == compiled._threads()
    finally:
        zstd._forget_pool()
        compiled._threads.cache_clear()


def test_the_workers_server_imports_numba_and_compiles_nothing_before_it_forks():
    """CPU clusters' workers fork from a server that imported preload.py: numba and the kernels'
    module are imported there, and no kernel is compiled or loaded (a call would compile every
    type not in the cache: ~15 s before the cluster is up)."""
    import subprocess
    import sys

    from distconv.session import worker_imports

    assert "distconv.backends.numpy.preload" in worker_imports.CPU_WORKER_IMPORTS
    code = ("import sys, distconv.backends.numpy.preload\nfrom distconv.backends.numpy import _kernels as k\n"
            "print('numba' in sys.modules, len(k.correlate_nd.signatures), len(k.rank_nd.signatures))")
    res = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "0", "0"], res.stdout
