"""Single-GPU kernel rows, each beside its anchor in the same process, each output checked
against the numpy path (whole arrays, or edge-and-interior slabs where scipy on 1 GiB would
take minutes on the CPU)."""

from __future__ import annotations

import numpy as np
import scipy.ndimage as ndi

import distconv as dc
from distconv.ops.stencils import central_coefficients

from .harness import row

N2 = 16384


def _slab_check(got, x, fn, r):
    """Compare rows [0, 256) and the last 256 rows of got with the numpy path on those rows
    plus an r-row halo (the boundary mode acts at the real edges)."""
    host = x[: 256 + r].get()
    ok = np.allclose(got[:256].get(), fn(host)[:256], rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(host).max())))
    host = x[-(256 + r):].get()
    ok &= np.allclose(got[-256:].get(), fn(host)[-256:], rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(host).max())))
    return bool(ok)


def conv_rows(copy, timeit, cp, cpx):
    rows = []
    x = cp.random.standard_normal((N2, N2), dtype=cp.float32)
    rng = np.random.default_rng(0)
    for k in (3, 5, 9):
        w = rng.standard_normal((k, k))
        ours = lambda: dc.correlate(x, w, mode="reflect")  # noqa: E731
        ok = _slab_check(ours(), x, lambda h: ndi.correlate(h.astype(np.float64), w, mode="reflect"), k)
        t = timeit(ours)
        ta = timeit(lambda: cpx.correlate(x, cp.asarray(w, dtype=cp.float32), mode="reflect"))
        rows.append(row(f"conv2d_{k}x{k}", "kernel", 2 * x.nbytes, t, copy, "cupyx.scipy.ndimage.correlate", ta, ok))
    for axis, name in ((0, "conv1d_axis0_9"), (1, "conv1d_axis1_9")):
        w = rng.standard_normal(9)
        ours = lambda: dc.correlate1d(x, w, axis=axis)  # noqa: E731
        ok = _slab_check(ours(), x, lambda h: ndi.correlate1d(h.astype(np.float64), w, axis=axis), 9)
        t = timeit(ours)
        ta = timeit(lambda: cpx.correlate1d(x, cp.asarray(w, dtype=cp.float32), axis=axis))
        rows.append(row(name, "kernel", 2 * x.nbytes, t, copy, "cupyx correlate1d", ta, ok))
    c8 = central_coefficients(1, 8)
    for axis in (0, 1):
        ours = lambda: dc.derivative(x, axis, accuracy=8)  # noqa: E731
        ok = _slab_check(ours(), x, lambda h: ndi.correlate1d(h.astype(np.float64), c8, axis=axis, mode="nearest"), 9)
        t = timeit(ours)
        ta = timeit(lambda: cpx.correlate1d(x, cp.asarray(c8, dtype=cp.float32), axis=axis, mode="nearest"))
        rows.append(row(f"deriv8_axis{axis}", "kernel", 2 * x.nbytes, t, copy, "cupyx correlate1d (same coefficients)", ta, ok))
    ours = lambda: dc.gaussian_filter(x, 2.0)  # noqa: E731
    ok = _slab_check(ours(), x, lambda h: ndi.gaussian_filter(h, 2.0), 9)
    t = timeit(ours)
    ta = timeit(lambda: cpx.gaussian_filter(x, 2.0))
    rows.append(row("gaussian2d_s2", "kernel", 2 * x.nbytes, t, copy, "cupyx gaussian_filter", ta, ok))
    del x
    s = cp.random.standard_normal(2**28, dtype=cp.float32)
    w = rng.standard_normal(31)
    got = dc.correlate1d(s, w)
    head = s[:100_000].get()
    ok = np.allclose(got[:99_000].get(), ndi.correlate1d(head.astype(np.float64), w)[:99_000], rtol=1e-4, atol=1e-3)
    t = timeit(lambda: dc.correlate1d(s, w))
    ta = timeit(lambda: cpx.correlate1d(s, cp.asarray(w, dtype=cp.float32)))
    rows.append(row("conv1d_31", "kernel", 2 * s.nbytes, t, copy, "cupyx correlate1d", ta, ok))
    del s, got
    v = cp.random.standard_normal((256, 1024, 1024), dtype=cp.float32)
    for k in (3, 5):
        w = rng.standard_normal((k, k, k))
        got = dc.correlate(v, w)
        host = v[: 8 + k].get()
        ok = np.allclose(got[:8].get(), ndi.correlate(host.astype(np.float64), w)[:8], rtol=1e-4, atol=1e-3)
        t = timeit(lambda: dc.correlate(v, w))
        ta = timeit(lambda: cpx.correlate(v, cp.asarray(w, dtype=cp.float32)), repeat=5)
        rows.append(row(f"conv3d_{k}", "kernel", 2 * v.nbytes, t, copy, "cupyx correlate", ta, ok))
    return rows


def scan_reduce_rows(copy, timeit, cp, cpx):
    rows = []
    s = cp.random.random(2**28, dtype=cp.float32)
    got = dc.cumsum(s)
    ref = np.cumsum(s.get().astype(np.float64))
    ok = np.allclose(got.get(), ref, rtol=1e-4)
    rows.append(row("scan1d", "kernel", 2 * s.nbytes, timeit(lambda: dc.cumsum(s)), copy, "cupy.cumsum",
                    timeit(lambda: cp.cumsum(s)), ok))
    for name, fn, anchor in (("reduce_sum", dc.sum, cp.sum), ("reduce_max", dc.max, cp.max)):
        host = s.get()
        ok = np.isclose(float(fn(s).get()), float(host.astype(np.float64).sum() if name == "reduce_sum" else host.max()), rtol=1e-5)
        rows.append(row(name, "kernel", s.nbytes, timeit(lambda: fn(s)), copy, f"cupy.{anchor.__name__}",
                        timeit(lambda: anchor(s)), ok))
    del s, got
    x = cp.random.random((N2, N2), dtype=cp.float32)
    for axis in (1, 0):
        got = dc.cumsum(x, axis=axis)
        sl = (slice(0, 512), slice(None)) if axis == 1 else (slice(None), slice(0, 512))
        ok = np.allclose(got[sl].get(), np.cumsum(x[sl].get().astype(np.float64), axis=axis), rtol=1e-4)
        rows.append(row(f"scan2d_axis{axis}", "kernel", 2 * x.nbytes, timeit(lambda: dc.cumsum(x, axis=axis)), copy,
                        "cupy.cumsum", timeit(lambda: cp.cumsum(x, axis=axis), repeat=5), ok))
    t = timeit(lambda: dc.transpose(x))
    ok = bool(cp.array_equal(dc.transpose(x), x.T))
    rows.append(row("transpose2d", "kernel", 2 * x.nbytes, t, copy, "cupy.ascontiguousarray(x.T)",
                    timeit(lambda: cp.ascontiguousarray(x.T)), ok))
    return rows


def hist_rows(copy, timeit, cp, cpx):
    rows = []
    s = cp.random.standard_normal(2**28, dtype=cp.float32)
    host = s.get()
    for bins, name in ((256, "hist256"), (65536, "hist65536")):
        h, e = dc.histogram(s, bins=bins, range=(-4, 4))
        ok = np.array_equal(h.get(), np.histogram(host, bins=bins, range=(-4, 4))[0])
        t = timeit(lambda: dc.histogram(s, bins=bins, range=(-4, 4)))
        ta = timeit(lambda: cp.histogram(s, bins=bins, range=(-4, 4)), repeat=5)
        rows.append(row(name, "kernel", s.nbytes, t, copy, "cupy.histogram", ta, ok))
    return rows


def kmeans_rows(copy, timeit, cp, cpx):
    rows = []
    N, D = 2**22, 64
    X = cp.random.standard_normal((N, D), dtype=cp.float32)
    groups = cp.random.randint(0, 1024, N).astype(cp.int64)
    for K in (64, 256, 1024):
        C = cp.random.standard_normal((K, D), dtype=cp.float32)

        def anchor():
            d = (C * C).sum(1)[None, :] - 2 * X @ C.T
            lab = d.argmin(1)
            return lab, cp.bincount(groups * K + lab, minlength=1024 * K)

        lab_a, _ = anchor()
        lab = dc.kmeans_assign(X, C)
        sub = slice(0, 65536)
        Xs, Cs = X[sub].get().astype(np.float64), C.get().astype(np.float64)
        d = (Xs * Xs).sum(1)[:, None] - 2 * Xs @ Cs.T + (Cs * Cs).sum(1)[None]
        l_ours = lab[sub].get()
        gap = d[np.arange(len(l_ours)), l_ours] - d.min(1)
        ok = bool(np.all(gap <= 1e-4 * (np.abs(d).max(1))))
        t = timeit(lambda: dc.bovw_histogram(X, C, groups, n_groups=1024))
        ta = timeit(anchor, repeat=5)
        agree = float((lab == lab_a).mean().get())
        rows.append(row(f"kmeans_k{K}", "kernel", X.nbytes, t, copy, "cupy GEMM+argmin+bincount", ta, ok,
                        note=f"label agreement with anchor {agree:.5f}; GFLOP/s {2 * N * K * D / t / 1e6:.0f}"))
    return rows


def filter_rows(copy, timeit, cp, cpx):
    """The scipy filter family beyond correlate, each beside cupyx's same filter."""
    rows = []
    x = cp.random.standard_normal((N2, N2), dtype=cp.float32)
    cases = [
        ("uniform2d_5", lambda a, m: m.uniform_filter(a, 5), 3),
        ("sobel2d", lambda a, m: m.sobel(a, axis=0), 2),
        ("gaussian_laplace_s2", lambda a, m: m.gaussian_laplace(a, 2.0), 9),
        ("gradient_magnitude_s2", lambda a, m: m.gaussian_gradient_magnitude(a, 2.0), 9),
        ("minimum2d_5", lambda a, m: m.minimum_filter(a, 5), 3),
        ("maximum2d_9", lambda a, m: m.maximum_filter(a, 9), 5),
        ("median2d_3", lambda a, m: m.median_filter(a, 3), 2),
        ("median2d_5", lambda a, m: m.median_filter(a, 5), 3),
    ]
    for name, fn, r in cases:
        ours = lambda: fn(x, dc)  # noqa: E731
        ok = _slab_check(ours(), x, lambda h: fn(h.astype(np.float64), ndi), r)
        t = timeit(ours, repeat=5)
        ta = timeit(lambda: fn(x, cpx), repeat=3)
        rows.append(row(name, "kernel", 2 * x.nbytes, t, copy, f"cupyx {name.split('2d')[0].split('_s')[0]}", ta, ok))
    del x
    v = cp.random.standard_normal((256, 1024, 1024), dtype=cp.float32)
    got = dc.median_filter(v, 3)
    host = v[:10].get()
    ok = bool(np.array_equal(got[:8].get(), ndi.median_filter(host, 3)[:8]))
    t = timeit(lambda: dc.median_filter(v, 3), repeat=3)
    ta = timeit(lambda: cpx.median_filter(v, 3), repeat=3)
    rows.append(row("median3d_3", "kernel", 2 * v.nbytes, t, copy, "cupyx median_filter", ta, ok))
    return rows


GROUPS = {"conv": conv_rows, "filters": filter_rows, "scan": scan_reduce_rows, "hist": hist_rows, "kmeans": kmeans_rows}
