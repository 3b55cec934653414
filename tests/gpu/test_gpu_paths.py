"""GPU paths (cupy blocks, kernels/*.cu) against the numpy paths on the same random inputs.
Outputs are poisoned first: an element a kernel fails to write shows up as NaN."""

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc

from ..helpers import assert_matches, poison_gpu_pool

pytestmark = pytest.mark.gpu
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]


@pytest.fixture
def cp():
    import cupy

    return cupy


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8, np.int32])
def test_correlate_convolve_every_mode_origin_parity(gpu, rng, ndim, dtype):
    shape = {1: (1031,), 2: (67, 133), 3: (13, 21, 35)}[ndim]
    a = (rng.standard_normal(shape) * 50).astype(dtype)
    for mode in MODES:
        for _ in range(2):
            w = rng.standard_normal(tuple(int(k) for k in rng.integers(1, 6, ndim)))
            origin = tuple(int(rng.integers(-(k // 2), (k - 1) // 2 + 1)) for k in w.shape)
            for op in ("correlate", "convolve"):
                got, ref = gpu.both(getattr(dc, op), a, weights=w, mode=mode, cval=1.25, origin=origin)
                assert_matches(got, ref, dtype=np.float32 if dtype == np.float32 else None)


def test_tiled_and_direct_kernels_big_masks(gpu, rng):
    a = rng.standard_normal((150, 170)).astype(np.float32)
    for k in [(32, 32), (1, 31), (31, 1), (33, 3), (45, 45), (17, 2)]:
        w = rng.standard_normal(k)
        got, ref = gpu.both(dc.correlate, a, weights=w, mode="mirror")
        assert_matches(got, ref, scale=np.abs(ref).max())
    w3 = rng.standard_normal((11, 11, 11))  # over the constant-memory slots: global mask
    a3 = rng.standard_normal((20, 30, 40))
    got, ref = gpu.both(dc.correlate, a3, weights=w3, mode="wrap")
    assert_matches(got, ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_long_1d_correlate_folded_into_rows(cp, rng, dtype, monkeypatch):
    """A long 1-D correlate runs its interior as rows of overlapping windows (2-D tiles): every
    mode and origin, masks short and long, even and odd, a signal whose start is not 16-byte
    aligned, a halo tile (the ends are not global edges); scipy's result, and bit for bit the
    one-row kernel's (the same order of taps). A signal that wraps around stays in one row."""
    from distconv.backends.cuda import convolve
    from distconv.core.tile import Tile

    monkeypatch.setattr(convolve, "FOLD_ROW", 512)  # many rows, a partial last row tile
    folds = []
    fold = convolve._fold_rows
    monkeypatch.setattr(convolve, "_fold_rows", lambda *a: folds.append(fold(*a)) or folds[-1])
    x = rng.standard_normal(160_003).astype(dtype)
    for K, origin, mode in [(31, 0, "reflect"), (32, -3, "wrap"), (3, 1, "constant"), (9, 0, "mirror"),
                            (17, 8, "nearest"), (2, 0, "reflect")]:
        w = rng.standard_normal(K)
        for start in (0, 1):
            xs = x[start:]
            folds.clear()
            got = dc.correlate1d(cp.asarray(x)[start:], w, mode=mode, cval=0.5, origin=origin)
            assert folds and folds[-1] == (mode != "wrap")  # the call itself records last; wrap: the ends need the far end
            ref = ndi.correlate1d(xs.astype(np.float64), w, mode=mode, cval=0.5, origin=origin)
            assert_matches(got, ref.astype(dtype), scale=np.abs(ref).max())
            min_tiles = convolve.FOLD_MIN_TILES
            monkeypatch.setattr(convolve, "FOLD_MIN_TILES", 10**9)
            one_row = dc.correlate1d(cp.asarray(x)[start:], w, mode=mode, cval=0.5, origin=origin)
            monkeypatch.setattr(convolve, "FOLD_MIN_TILES", min_tiles)
            np.testing.assert_array_equal(got.get(), one_row.get())
    w = rng.standard_normal(31)
    ext = cp.asarray(x)
    halo = Tile.extended(ext, ((15, 15),))  # a chunk with its neighbours' halos
    poison_gpu_pool(x.nbytes)
    folds.clear()
    got = convolve.correlate(halo, w, "reflect", 0.0, (0,))
    assert folds[-1]
    ref = ndi.correlate1d(x.astype(np.float64), w, mode="reflect")[15:-15]
    assert_matches(got, ref.astype(dtype), scale=np.abs(ref).max())


@pytest.mark.parametrize("mode", MODES)
def test_3d_masks_sliding_along_z(cp, gpu, rng, mode, monkeypatch):
    """3-D masks run by the sliding kernel (each plane staged once): numpy's result, every
    mode, runs of planes that end mid-array, halo pieces along z; and bit for bit the tiled
    kernel's result (the same order of taps)."""
    from distconv.backends.cuda import convolve

    monkeypatch.setattr(convolve, "slide_planes", lambda KD: 7)  # several runs per block column, a short last one
    for dtype, k, shape in [(np.float32, (3, 3, 3), (23, 19, 37)), (np.float32, (5, 5, 5), (16, 70, 133)),
                            (np.float32, (2, 4, 3), (1, 9, 5)), (np.float32, (8, 3, 1), (30, 8, 64)),
                            (np.float32, (3, 1, 16), (9, 33, 20)), (np.float64, (6, 6, 6), (11, 17, 29)),
                            (np.float32, (4, 2, 15), (10, 23, 70))]:
        assert convolve.slides(np.dtype(dtype), *k)
        a = (rng.standard_normal(shape) * 10).astype(dtype)
        w = rng.standard_normal(k)
        origin = tuple(int(rng.integers(-(n // 2), (n - 1) // 2 + 1)) for n in k)
        got, ref = gpu.both(dc.correlate, a, weights=w, mode=mode, cval=-0.75, origin=origin)
        assert_matches(got, ref, scale=np.abs(ref).max())
        with monkeypatch.context() as m:
            m.setattr(convolve, "slides", lambda *args: False)
            tiled = dc.correlate(cp.asarray(a), w, mode=mode, cval=-0.75, origin=origin)
        np.testing.assert_array_equal(got.get(), tiled.get())
    a = rng.standard_normal((41, 30, 52)).astype(np.float32)
    w = rng.standard_normal((5, 3, 4))
    x = da.from_array(cp.asarray(a), chunks=(13, 16, 52))
    poison_gpu_pool(a.nbytes * 4)
    with dask.config.set(scheduler="threads"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = dc.correlate(x, w, mode=mode).compute()
    assert_matches(got, ndi.correlate(a.astype(np.float64), w, mode=mode).astype(np.float32), dtype=np.float32)


@pytest.mark.parametrize("mode", MODES)
def test_3d_masks_sliding_from_any_lead(cp, rng, mode, monkeypatch):
    """The sliding kernel stages each plane from LEAD columns before its window (so rows start
    16-byte aligned): every lead gives the tiled kernel's result bit for bit, on x and y edges
    and odd sizes; the launcher's lead puts a whole float32 array's windows on 16 bytes."""
    from distconv.backends.cuda import convolve
    from distconv.backends.cuda.tile import dc_tile, lead
    from distconv.core.tile import Tile

    for k, shape in [((3, 3, 3), (9, 21, 139)), ((5, 5, 5), (12, 19, 261)), ((3, 2, 5), (7, 5, 9))]:
        a = cp.asarray(rng.standard_normal(shape).astype(np.float32))
        w = rng.standard_normal(k)
        with monkeypatch.context() as m:
            m.setattr(convolve, "slides", lambda *args: False)
            tiled = dc.correlate(a, w, mode=mode, cval=0.5).get()
        for ahead in range(4):
            with monkeypatch.context() as m:
                m.setattr(convolve, "lead", lambda *args: ahead)
                np.testing.assert_array_equal(dc.correlate(a, w, mode=mode, cval=0.5).get(), tiled, err_msg=str(ahead))
    src, _keep = dc_tile(Tile.of(cp.zeros((4, 8, 64), np.float32)), [[0], [1], [2]])
    assert [lead(src, -r, 4) for r in range(5)] == [0, 3, 2, 1, 0]
    src, _keep = dc_tile(Tile.of(cp.zeros((4, 8, 63), np.float32)), [[0], [1], [2]])
    assert lead(src, -1, 4) == 0  # rows of 63 floats: no lead aligns them all


@pytest.mark.parametrize("mode", MODES)
def test_9x9_tiled_correlate_on_odd_sizes(gpu, rng, mode):
    """The tiled kernel's stores (rows and columns left found once a tile): partial tiles at
    the right and bottom edges, rows that are not 16-byte multiples, every origin sign."""
    for shape in [(37, 261), (70, 128), (5, 7)]:
        a = rng.standard_normal(shape).astype(np.float32)
        for origin in [(0, 0), (-4, 3), (2, -1)]:
            w = rng.standard_normal((9, 9))
            got, ref = gpu.both(dc.correlate, a, weights=w, mode=mode, cval=0.25, origin=origin)
            assert_matches(got, ref, scale=np.abs(ref).max())


@pytest.mark.parametrize("mode", MODES)
def test_median_of_full_boxes_by_forgetful_selection(cp, gpu, rng, mode, monkeypatch):
    """Full boxes of up to 27 values take a median kernel (the sorting networks of full 3 x 3,
    5 x 5 and 3 x 3 x 3 boxes; the forgetful-selection median for the other full boxes, such
    as 3 x 1 x 5): scipy's result on finite data; with NaN and infinities, the same pick as the
    kept-R insert path."""
    from distconv.backends.cuda import rank as rank_kernels

    launch = rank_kernels._launch
    for dtype, size, shape in [(np.float32, 3, (37, 45)), (np.float32, 5, (29, 70)),
                               (np.float32, (3, 3, 3), (11, 19, 40)), (np.float64, (3, 3, 3), (9, 13, 17)),
                               (np.int32, 5, (33, 41)), (np.uint8, (1, 3, 3), (5, 30, 31)),
                               (np.float32, (3, 1, 5), (7, 9, 33))]:
        a = (rng.standard_normal(shape) * 100).astype(dtype)
        got, ref = gpu.both(dc.median_filter, a, size=size, mode=mode, cval=1.5)
        assert_matches(got, ref)
        if a.dtype.kind != "f":
            continue
        for value, share in ((np.nan, 0.08), (np.inf, 0.03), (-np.inf, 0.03)):
            a[rng.random(shape) < share] = value
        poison_gpu_pool(a.nbytes * 4)
        got = dc.median_filter(cp.asarray(a), size=size, mode=mode, cval=np.nan)
        with monkeypatch.context() as m:
            m.setattr(rank_kernels, "_launch", lambda *args, **kw: launch(*args, **{**kw, "full": False}))
            kept = dc.median_filter(cp.asarray(a), size=size, mode=mode, cval=np.nan)
        np.testing.assert_array_equal(got.get(), kept.get())


@pytest.mark.parametrize("mode", MODES)
def test_median_3x3_propagates_nan_as_the_numpy_path(gpu, rng, mode):
    """The 3 x 3 median's kernel marks windows holding NaN itself (nan_policy propagate without
    a screen of the data); other 9-value boxes that ask the backend the same way get the mark
    from the NaN indicator's window maximum. Both as the numpy path, NaN cval included."""
    for dtype, size, shape in [(np.float32, 3, (37, 45)), (np.float64, 3, (29, 70)),
                               (np.float32, (1, 3, 3), (5, 30, 31)), (np.float32, (3, 1, 3), (7, 9, 33)),
                               (np.float32, (3, 3, 1), (9, 8, 7))]:
        a = (rng.standard_normal(shape) * 100).astype(dtype)
        for value, share in ((np.nan, 0.04), (np.inf, 0.02), (-np.inf, 0.02)):
            a[rng.random(shape) < share] = value
        for cval in (1.5, np.nan):
            got, ref = gpu.both(dc.median_filter, a, size=size, mode=mode, cval=cval)
            np.testing.assert_array_equal(got.get(), ref)
        got, ref = gpu.both(dc.median_filter, np.where(np.isnan(a), 0, a), size=size, mode=mode)
        np.testing.assert_array_equal(got.get(), ref)


@pytest.mark.parametrize("mode", MODES)
def test_1d_gaussian_and_derivatives(gpu, rng, mode):
    a = rng.standard_normal((37, 45, 29)).astype(np.float32)
    for axis in (0, 1, 2):
        w = rng.standard_normal(9)
        got, ref = gpu.both(dc.correlate1d, a, weights=w, axis=axis, mode=mode, origin=-2)
        assert_matches(got, ref)
        got, ref = gpu.both(dc.derivative, a, axis=axis, accuracy=8, mode=mode)
        assert_matches(got, ref, scale=np.abs(ref).max())
    got, ref = gpu.both(dc.gaussian_filter, a, sigma=(1.0, 2.0, 0.5), mode=mode, cval=0.3)
    assert_matches(got, ref)
    b = rng.integers(0, 255, (40, 50)).astype(np.uint8)
    got, ref = gpu.both(dc.gaussian_filter, b, sigma=2.0, mode=mode)
    np.testing.assert_array_less(np.abs(got.get().astype(int) - ref.astype(int)), 2)  # float32 vs float64 rounding at .5


def test_halo_tiles_on_gpu_match_numpy(cp, rng):
    """dask arrays of cupy blocks: the kernel reads the centre and neighbour pieces in place."""
    a = rng.standard_normal((70, 90, 33)).astype(np.float32)
    with dask.config.set(scheduler="threads"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in MODES:
            x = da.from_array(cp.asarray(a), chunks=(17, 40, 11))
            w = rng.standard_normal((3, 5, 2))
            poison_gpu_pool(a.nbytes * 3)
            got = dc.correlate(x, w, mode=mode, origin=(0, 1, 0)).compute()
            assert type(got).__module__.startswith("cupy")
            assert_matches(got, ndi.correlate(a.astype(np.float64), w, mode=mode, origin=(0, 1, 0)).astype(np.float32), dtype=np.float32)
            got = dc.gaussian_filter(x, (1.5, 0, 2.0), mode=mode).compute()
            assert_matches(got, ndi.gaussian_filter(a, (1.5, 0, 2.0), mode=mode))


@pytest.mark.parametrize("op", ["add", "mul", "min", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint32, np.bool_, np.uint8])
def test_scans(cp, gpu, rng, op, dtype):
    from ..test_scan import reference, sample

    a = sample(rng, (33, 5000), dtype, op) if op != "mul" else sample(rng, (33, 301), dtype, op)
    for axis in (0, 1, None):
        for exclusive in (False, True):
            got, ref = gpu.both(dc.scan, a, op=op, axis=axis, exclusive=exclusive)
            assert_matches(got, reference(a, op, axis, exclusive))
    long = sample(rng, (3 * 4096 * 16 + 77,), dtype, op)
    if op == "add":
        got = dc.cumsum(cp.asarray(long))
        assert_matches(got, np.cumsum(long))


def test_scan_carries_across_gpu_chunks_and_exclusive_rows(cp, rng):
    a = rng.random((64, 3000)).astype(np.float32)
    x = da.from_array(cp.asarray(a), chunks=(20, 700))
    for axis in (0, 1):
        assert_matches(dc.cumsum(x, axis=axis).compute(), np.cumsum(a, axis=axis))
    from distconv.backends.cuda.scan import scan

    row = cp.asarray(a[:, :500])
    ref = np.cumsum(a[:, :500], axis=1)
    for exclusive in (False, True):
        got = scan(row, "add", 1, exclusive, np.float32).get()
        exp = ref if not exclusive else np.concatenate([np.zeros((64, 1), np.float32), ref[:, :-1]], axis=1)
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-4)


def test_row_scans_over_hundreds_of_tiles(cp, rng):
    """Rows long enough that the block-wide look-back spans more than one step of 256 tiles,
    rows ending in a partial tile, and both load paths (asynchronous copies when the scan type
    is the input's, converting loads when it is not): exact ops and integers compared exactly."""
    from ..test_scan import reference

    n = 256 * 32 * 300 + 4099  # ~300 float tiles of 8192, the last one partial
    a = rng.standard_normal(n).astype(np.float32)
    for op in ("max", "min"):
        for exclusive in (False, True):
            poison_gpu_pool(a.nbytes * 3)
            got = dc.scan(cp.asarray(a), op=op, exclusive=exclusive).get()
            np.testing.assert_array_equal(got, reference(a, op, None, exclusive))
    for dtype in (np.int32, np.uint8, np.int64):  # sums in the input's type, in a wider one
        b = rng.integers(0, 3, n).astype(dtype)
        poison_gpu_pool(b.nbytes * 16)
        np.testing.assert_array_equal(dc.cumsum(cp.asarray(b)).get(), np.cumsum(b))
    rows = rng.integers(-5, 6, (3, 3 * 8192 + 17)).astype(np.int32)
    for exclusive in (False, True):
        got = dc.scan(cp.asarray(rows), op="add", axis=1, exclusive=exclusive).get()
        np.testing.assert_array_equal(got, reference(rows, "add", 1, exclusive))


@pytest.mark.parametrize("name", ["sum", "prod", "min", "max", "mean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
def test_reductions(cp, gpu, rng, name, dtype):
    from ..test_scan import sample

    a = sample(rng, (37, 129, 7), dtype, "mul" if name == "prod" else "add")
    for axis in (None, 0, 1, 2, (0, 2)):
        got, ref = gpu.both(getattr(dc, name), a, axis=axis)
        assert_matches(np.asarray(got.get()), np.asarray(ref))
    big = rng.standard_normal(2**22 + 3).astype(np.float32)
    assert_matches(np.asarray(dc.max(cp.asarray(big)).get()), np.asarray(big.max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
def test_reductions_of_views_that_start_mid_vector(cp, rng, dtype):
    """A view whose data pointer is not 16-byte aligned is reduced element by element: every
    element once, nothing past its end (memory around it poisoned)."""
    from ..test_scan import sample

    a = sample(rng, (40_009,), dtype, "add")
    for lo, hi in [(1, None), (3, -2), (5, 6), (2, 1029)]:
        poison_gpu_pool(a.nbytes * 4, value=-7e30)
        d = cp.asarray(a)[lo:hi]
        for name in ("sum", "min", "max"):
            got, ref = getattr(dc, name)(d), getattr(np, name)(a[lo:hi])
            scale = float(np.abs(a[lo:hi].astype(np.float64)).sum()) if name == "sum" else None
            assert_matches(np.asarray(got.get()), np.asarray(ref), scale=scale)


def test_histograms(gpu, rng):
    for dtype in (np.float32, np.float64, np.uint8):
        a = (rng.standard_normal(200_003) * 60).astype(dtype)
        for bins, rng_ in [(256, None), (65536, (-100, 100)), (np.sort(rng.uniform(-80, 80, 40)), None)]:
            (got, ge), (ref, re) = gpu.both(dc.histogram, a, bins=bins, range=rng_)
            np.testing.assert_array_equal(got.get(), ref)
            np.testing.assert_array_equal(ge, re)
    w = rng.random(200_003)
    (got, _), (ref, _) = gpu.both(lambda x, wt: dc.histogram(x, bins=100, weights=wt), a.astype(np.float32), w)
    np.testing.assert_allclose(got.get(), ref, rtol=1e-9)
    b = rng.integers(0, 3000, 100_000)
    got, ref = gpu.both(dc.bincount, b, minlength=3500)
    np.testing.assert_array_equal(got.get(), ref)
    x, y = rng.standard_normal(50_000), rng.standard_normal(50_000)
    (g, _, _), (r, _, _) = gpu.both(dc.histogram2d, x, y, bins=(17, 23))
    np.testing.assert_array_equal(g.get(), r)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histogram_values_on_and_beside_the_edges(gpu, rng, dtype):
    """Uniform bins trust (v - lo) * scale only away from the edges: values exactly on them, one
    ulp either side, and ranges whose edges sit off the ideal grid (far from zero) must land
    where numpy puts them."""
    for bins, rng_ in [(256, (-1.3, 2.9)), (7, (0.0, 1.0)), (200, (1000.0, 1001.0)), (256, None),
                       (65536, (-4.0, 4.0)), (65536, (-100.3, 257.9))]:  # the packed kernel's lookups too
        a = (rng.uniform(-2, 3, 100_001) if rng_ is None or rng_[0] < 100 else 1000 + rng.random(100_001)).astype(dtype)
        e = np.histogram_bin_edges(a, bins=bins, range=rng_).astype(dtype)
        near = np.concatenate([e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf)]).astype(dtype)
        # subnormals compare as zero on the GPU (cupy's own x >= 0 too): not numpy's answer
        near = near[(near == 0) | (np.abs(near) >= np.finfo(dtype).tiny)]
        a = np.concatenate([a, near, [np.nan] if rng_ else []]).astype(dtype)  # numpy refuses NaN without range
        rng.shuffle(a)
        (got, ge), (ref, re) = gpu.both(dc.histogram, a, bins=bins, range=rng_)
        np.testing.assert_array_equal(got.get(), ref)
        np.testing.assert_array_equal(ge, re)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
def test_histogram_packs_far_values_and_views(cp, rng, dtype):
    """Uniform bins read values in packs and count those near an edge or outside the range
    apart: infinities, huge values, values far below, every element size, and views that start
    and end mid-pack must all count as numpy counts them."""
    info = np.finfo(dtype) if np.issubdtype(dtype, np.floating) else np.iinfo(dtype)
    a = (rng.standard_normal(100_003) * 40).clip(info.min, info.max).astype(dtype)
    far = [info.max, info.min, 0, 1, 3]
    if np.issubdtype(dtype, np.floating):
        far += [np.inf, -np.inf, 1e30, -1e30]
    a[rng.choice(a.size, 5000, replace=False)] = rng.choice(np.array(far, dtype=dtype), 5000)
    d = cp.asarray(a)
    for lo, hi in [(0, None), (1, None), (3, -1), (2, 9), (5, 5 + 8 * 1024 + 3)]:
        for bins, range_ in [(256, (-60, 60)), (7, (0, 5)), (100, (-1e4, 1e4))]:
            got, _ = dc.histogram(d[lo:hi], bins=bins, range=range_)
            np.testing.assert_array_equal(got.get(), np.histogram(a[lo:hi], bins=bins, range=range_)[0])


def test_histogram_unaligned_views_sizes_and_integer_bins(cp, rng):
    """Views that start mid-vector, odd sizes, integer bins (bincount) of every element size."""
    base = rng.standard_normal(10_007).astype(np.float32)
    xd = cp.asarray(base)
    for lo, hi in [(0, None), (1, None), (3, -2), (5, 6), (7, 7), (2, 40), (0, 1001)]:
        got, _ = dc.histogram(xd[lo:hi], bins=33, range=(-2.0, 2.0))
        np.testing.assert_array_equal(got.get(), np.histogram(base[lo:hi], bins=33, range=(-2.0, 2.0))[0])
    for dtype in (np.uint8, np.int32, np.int64, np.bool_):
        b = rng.integers(0, 2 if dtype == np.bool_ else 200, 50_011).astype(dtype)
        for lo in (0, 1, 3):
            got = dc.bincount(cp.asarray(b)[lo:], minlength=256)
            np.testing.assert_array_equal(got.get(), np.bincount(b[lo:], minlength=256))
    edges = np.sort(rng.uniform(-2, 2, 100))
    got, _ = dc.histogram(xd[1:], bins=edges)
    np.testing.assert_array_equal(got.get(), np.histogram(base[1:], bins=edges)[0])


def test_histogram_of_many_bins_counts_past_16_bit_wraps(cp, rng):
    """Bins too many for 32-bit shared counters take 16-bit ones, two to a 32-bit word
    (distconv_histogram_packed): bins hit far more than 65536 times per block (both halves of
    one word, the last bin, values on edges that go through the spare slot, NaN and values
    outside) must still count exactly, for uniform bins, explicit edges and integer bins."""
    from distconv.backends.cuda import histogram as hist_kernels

    bins, lo, hi = 65536, -1.0, 1.0
    assert hist_kernels._packed_bytes(bins) > hist_kernels.SMEM_BUDGET  # the packed path runs
    e = np.histogram_bin_edges(np.zeros(1), bins=bins, range=(lo, hi))
    n = 2**23 + 5
    pick = rng.integers(0, 6, n)
    a = np.choose(pick, [np.float64(e[32768] + e[32769]) / 2, (e[32769] + e[32770]) / 2, e[100], hi,
                         np.nan, 7.0]).astype(np.float32)
    a[rng.choice(n, 100_000, replace=False)] = rng.uniform(-1.2, 1.2, 100_000)
    for dtype in (np.float32, np.float64):
        x = cp.asarray(a.astype(dtype))
        got, _ = dc.histogram(x, bins=bins, range=(lo, hi))
        np.testing.assert_array_equal(got.get(), np.histogram(a.astype(dtype), bins=bins, range=(lo, hi))[0])
    edges = np.sort(rng.uniform(-1.1, 1.1, 40_001))
    got, _ = dc.histogram(cp.asarray(a), bins=edges)
    np.testing.assert_array_equal(got.get(), np.histogram(a, bins=edges)[0])
    b = np.choose(rng.integers(0, 3, n), [70_000, 70_001, rng.integers(0, 80_000, n)]).astype(np.int64)
    got = dc.bincount(cp.asarray(b), minlength=80_001)
    np.testing.assert_array_equal(got.get(), np.bincount(b, minlength=80_001))


@pytest.mark.parametrize("K", [1, 7, 64, 1024])
@pytest.mark.parametrize("D", [37, 64, 128])
def test_kmeans_assign_and_bovw(cp, rng, K, D):
    from ..test_kmeans import assert_labels_ok

    X = rng.standard_normal((5000, D)).astype(np.float32)
    C = rng.standard_normal((K, D)).astype(np.float32)
    poison_gpu_pool(X.nbytes)
    labels = dc.kmeans_assign(cp.asarray(X), C).get()
    assert_labels_ok(labels, X, C)
    groups = rng.integers(0, 9, 5000)
    got = dc.bovw_histogram(cp.asarray(X), C, cp.asarray(groups), n_groups=9).get()
    ref = np.zeros((9, K), dtype=np.int64)
    np.add.at(ref, (groups, labels), 1)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("K, D", [(1, 3), (7, 37), (256, 64), (300, 130), (1024, 128), (70, 200), (5, 600)])
def test_kmeans_on_tensor_cores_labels_as_the_float32_kernel(cp, rng, K, D):
    """3xTF32 distances label as the float32 kernel does: the same labels except where the two
    best distances of a row lie within float32 rounding, and exact ties (duplicate centroids,
    points halfway) take the lowest index; partial tiles of rows, centroids and dimensions;
    both block shapes (D 64 and 200) and a D whose rows do not fit shared memory (600: the
    float32 kernel)."""
    from distconv.backends.cuda import kmeans as km

    from ..test_kmeans import assert_labels_ok

    n = 5003
    X = (rng.standard_normal((n, D)) * rng.choice([0.01, 1, 100], (n, 1))).astype(np.float32)
    C = rng.standard_normal((K, D)).astype(np.float32)
    if K > 2:
        C[K - 1] = C[1]  # duplicates: the lower index wins
        C[K // 2] = C[0]
        X[:50] = C[1]
        X[50:100] = C[0]
    Xd, cents = km._prepare(cp.asarray(X), C)
    poison_gpu_pool(X.nbytes)
    tc = km._assign(Xd, cents, tensor_cores=True).get()
    f32 = km._assign(Xd, cents, tensor_cores=False).get()
    assert_labels_ok(tc, X, C)
    if K > 2:
        assert np.all(tc[:50] == 1) and np.all(tc[50:100] == 0)
    d = (C.astype(np.float64) ** 2).sum(1)[None] - 2 * X.astype(np.float64) @ C.astype(np.float64).T
    gap = d[np.arange(n), tc] - d[np.arange(n), f32]
    scale = (X.astype(np.float64) ** 2).sum(1) + (C.astype(np.float64) ** 2).sum(1).max()
    assert np.all(np.abs(gap[tc != f32]) <= 1e-5 * scale[tc != f32])
    assert (tc == f32).mean() > 0.999


def test_kmeans_sees_centroids_changed_in_place(cp, rng):
    """The device copy of the centroids is kept per content, not per array: a vocabulary
    edited in place between calls labels by its new values."""
    from ..test_kmeans import assert_labels_ok

    X = rng.standard_normal((3000, 40)).astype(np.float32)
    C = rng.standard_normal((50, 40)).astype(np.float32)
    assert_labels_ok(dc.kmeans_assign(cp.asarray(X), C).get(), X, C)
    C[:] = C[::-1].copy()
    C[7] += 3
    assert_labels_ok(dc.kmeans_assign(cp.asarray(X), C).get(), X, C)


def test_kmeans_fit_on_gpu_matches_numpy(cp, rng):
    from ..test_kmeans import numpy_lloyd

    X = rng.standard_normal((4000, 8)).astype(np.float32)
    C0 = X[rng.choice(4000, 5, replace=False)].astype(np.float64)
    km = dc.KMeans(5, init=C0, max_iter=4, tol=0.0).fit(cp.asarray(X))
    np.testing.assert_allclose(km.cluster_centers_, numpy_lloyd(X.astype(np.float64), C0, 4), rtol=1e-4, atol=1e-4)


def test_transpose(gpu, rng):
    for shape, axes in [((1023, 777), None), ((5, 33, 65), (0, 2, 1)), ((7, 9, 11), (2, 0, 1)), ((4, 5, 6, 7), (3, 1, 0, 2))]:
        a = rng.standard_normal(shape).astype(np.float32)
        got, ref = gpu.both(dc.transpose, a, axes=axes)
        np.testing.assert_array_equal(got.get(), ref)
    # every element size; tiles whole, cut along one side, cut along both, one element wide
    for dtype in (np.uint8, np.int16, np.float32, np.float64):
        for shape in [(3, 128, 192), (2, 130, 4099), (1, 64, 1), (1, 1, 200), (1, 65, 63)]:
            a = (rng.standard_normal(shape) * 100).astype(dtype)
            got, ref = gpu.both(dc.transpose, a, axes=(0, 2, 1))
            np.testing.assert_array_equal(got.get(), ref)


def test_more_than_2_to_the_31_elements(cp, rng):
    n = 46_345  # 46345^2 > 2^31
    if cp.cuda.Device().mem_info[0] < 3 * n * n * 4:
        pytest.skip("needs ~26 GB of free GPU memory")
    x = cp.random.standard_normal((n, n), dtype=np.float32)
    w = rng.standard_normal((3, 3))
    y = dc.correlate(x, w, mode="reflect")
    tail = x[-40:].get()
    ref = ndi.correlate(tail.astype(np.float64), w, mode="reflect")[-30:].astype(np.float32)
    assert_matches(y[-30:].get(), ref, dtype=np.float32)
    del y, x


def test_out_of_memory_is_a_clear_error(cp):
    pool = cp.cuda.MemoryPool()  # a pool of its own: earlier tests' cached blocks do not count
    with cp.cuda.using_allocator(pool.malloc):
        x = cp.ones((8192, 8192), dtype=np.float32)  # 256 MiB
        pool.set_limit(size=pool.used_bytes() + 64 * 2**20)  # the 256 MiB output cannot fit
        with pytest.raises(MemoryError, match=r"GPU out of memory on a chunk of shape \(8192, 8192\) float32.*Rechunk to about"):
            dc.correlate(x, np.ones((3, 3)))


@pytest.mark.parametrize("mode", MODES)
def test_fused_separable_gaussian_2d(cp, gpu, rng, mode):
    """Two passes over (y, x) run as one fused kernel; it must equal scipy's chained passes."""
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((131, 203)).astype(dtype)
        for sigma, order in [(2.0, 0), ((1.0, 3.5), 0), (1.5, (0, 1)), (0.6, 0)]:
            got, ref = gpu.both(dc.gaussian_filter, a, sigma=sigma, order=order, mode=mode, cval=0.7)
            assert_matches(got, ref, scale=np.abs(ref).max())
    x = da.from_array(cp.asarray(a), chunks=(40, 70))
    with dask.config.set(scheduler="threads"):
        got = dc.gaussian_filter(x, 2.0, mode=mode).compute()
    assert_matches(got, ndi.gaussian_filter(a, 2.0, mode=mode))


@pytest.mark.parametrize("chunks", [(40, 50), (23, 17), (97, 101)])
@pytest.mark.parametrize("mode", ["nearest", "wrap"])
def test_fused_chain_and_histogram_on_cupy_chunks(cp, rng, chunks, mode):
    x = rng.standard_normal((97, 101)).astype(np.float32)

    def chain(a):
        y = dc.gaussian_filter(a, 1.5, mode=mode)
        return dc.derivative(dc.laplace(y, mode=mode), axis=0, accuracy=4, mode=mode)

    poison_gpu_pool(x.nbytes * 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = da.from_array(x, chunks=chunks).map_blocks(cp.asarray)
        got = chain(d)
        h, _ = dc.histogram(got, bins=32, range=(-1.0, 1.0))
        got, h = dask.compute(got, h)
    ref = chain(x)
    assert_matches(got, ref, scale=float(np.abs(ref).max()))
    np.testing.assert_array_equal(cp.asnumpy(h), np.histogram(cp.asnumpy(got), bins=32, range=(-1.0, 1.0))[0])
