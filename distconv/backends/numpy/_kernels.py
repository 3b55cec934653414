"""The numba kernels behind compiled.py (imported only when a block first runs one, so a
process that filters only small arrays never imports numba). compiled.py has the rule of which
calls come here and the arguments in these kernels' terms; each kernel's header states its
loop -> data mapping and its limits.

Every innermost loop runs over 0-based slices of contiguous rows: an index that may be
negative (``j + off``) makes numba check for wraparound, which stops LLVM vectorizing.
Picks are written ``u if u < v else v``, not min(): one compare and select, which LLVM turns
into vector min/max instructions. Mode codes: core.modes.MODES (constant 0, reflect 1,
nearest 2, mirror 3, wrap 4)."""
# ruff: noqa: FURB136

from __future__ import annotations

import numpy as np
from numba import njit

# one GIL release per call; cached on disk beside this file (compile once per machine);
# no fastmath: sums round as scipy's (no FMA contraction, no reassociation); no bounds checks
JIT = {"nogil": True, "cache": True, "fastmath": False, "boundscheck": False, "error_model": "numpy"}

@njit(**JIT)
def _src(p, n, mode):
    """The index in 0..n-1 scipy's ``mode`` reads for coordinate ``p`` of a line of ``n``;
    -1 for constant's cval (mode codes: core.modes.MODES)."""
    if p >= 0 and p < n:
        return p
    if mode == 0:
        return -1
    if mode == 2:
        return 0 if p < 0 else n - 1
    if n == 1:
        return 0
    if mode == 1:
        q = p % (2 * n)
        return q if q < n else 2 * n - 1 - q
    if mode == 3:
        q = p % (2 * n - 2)
        return q if q < n else 2 * n - 2 - q
    return p % n

@njit(**JIT)
def _c_int(x, oc):
    """C's (type)x for a double, as scipy's x86-64 builds run it, as int64 bits that the caller
    narrows to the type: oc 1 (8/16-bit types and int32: cvttsd2si on 32 bits), 2 (uint32,
    int64: on 64 bits), 3 (uint64: at 2**63 and above, x - 2**63 converted and its top bit
    flipped). A double out of the conversion's range (or NaN) gives its lowest integer."""
    if oc == 1:
        if x >= -2147483648.0 and x < 2147483648.0:
            return np.int64(x)
        return np.int64(-2147483648)
    if oc == 3 and x >= 9223372036854775808.0:
        y = x - 9223372036854775808.0
        v = np.int64(y) if y < 9223372036854775808.0 else np.int64(-9223372036854775808)
        return v ^ np.int64(-9223372036854775808)
    if x >= -9223372036854775808.0 and x < 9223372036854775808.0:
        return np.int64(x)
    return np.int64(-9223372036854775808)


@njit(**JIT)
def _store(acc, dst, n, oc):
    """dst[:n] = acc[:n] cast as scipy casts a double (oc 0: a float type)."""
    if oc == 0:
        for j in range(n):
            dst[j] = acc[j]
    else:
        for j in range(n):
            dst[j] = _c_int(acc[j], oc)

# ---- N-D correlate ----------------------------------------------------------------------
# correlate_nd: scipy's NI_Correlate for 1-D..3-D blocks seen as 3-D (z, y, x).
# Loops: output row (z, y) -> runs of taps on one source row (the mask's rows, C order) ->
# columns x (innermost, contiguous, vectorized): where every tap of the run is inside the
# array, four taps at a time (_acc4: acc read and written once for four, the additions in
# scipy's order); the columns where some tap of the run falls outside go tap by tap through
# _src. acc: one float64 row per output row (the sum scipy keeps per element, same order of
# additions). Limits: ext C-contiguous; any mask (the cost grows with its taps, as scipy's).
@njit(**JIT)
def correlate_nd(ext, tz, ty, tx, tw, lo0, lo1, lo2, c0, c1, c2, mode, cval, out, oc):
    nz, ny, nx = out.shape
    lz, ly, lx = ext.shape
    ntap = tw.shape[0]
    acc = np.empty(nx, np.float64)
    for z in range(nz):
        for y in range(ny):
            for j in range(nx):
                acc[j] = 0.0
            t = 0
            while t < ntap:
                u = t + 1
                while u < ntap and tz[u] == tz[t] and ty[u] == ty[t]:
                    u += 1
                sz = _src(lo0 + z + tz[t] - c0, lz, mode)
                sy = _src(lo1 + y + ty[t] - c1, ly, mode)
                if sz < 0 or sy < 0:
                    for q in range(t, u):
                        v = tw[q] * cval
                        for j in range(nx):
                            acc[j] += v
                    t = u
                    continue
                row = ext[sz, sy]
                a, b = 0, nx  # the columns where every tap of the run is inside the row
                for q in range(t, u):
                    off = lo2 + tx[q] - c2
                    a = max(a, min(max(-off, 0), nx))
                    b = min(b, max(min(lx - off, nx), 0))
                b = max(a, b)
                for q in range(t, u):
                    wt = tw[q]
                    off = lo2 + tx[q] - c2
                    for j in range(a):
                        s = _src(j + off, lx, mode)
                        acc[j] += wt * cval if s < 0 else wt * np.float64(row[s])
                    for j in range(b, nx):
                        s = _src(j + off, lx, mode)
                        acc[j] += wt * cval if s < 0 else wt * np.float64(row[s])
                ac = acc[a:b]
                q = t
                while q + 4 <= u:
                    o0, o1, o2, o3 = (lo2 + tx[q] - c2 + a, lo2 + tx[q + 1] - c2 + a,
                                      lo2 + tx[q + 2] - c2 + a, lo2 + tx[q + 3] - c2 + a)
                    m = b - a
                    _acc4(ac, row[o0:o0 + m], row[o1:o1 + m], row[o2:o2 + m], row[o3:o3 + m],
                          tw[q], tw[q + 1], tw[q + 2], tw[q + 3])
                    q += 4
                while q < u:
                    o0 = lo2 + tx[q] - c2 + a
                    _acc1(ac, row[o0:o0 + b - a], tw[q])
                    q += 1
                t = u
            _store(acc, out[z, y], nx, oc)


@njit(**JIT)
def _acc4(ac, r0, r1, r2, r3, w0, w1, w2, w3):
    """ac += w0 r0, then w1 r1, w2 r2, w3 r3 (in that order, in doubles), element by element."""
    for j in range(ac.shape[0]):
        ac[j] = (((ac[j] + w0 * np.float64(r0[j])) + w1 * np.float64(r1[j])) + w2 * np.float64(r2[j])) \
            + w3 * np.float64(r3[j])


@njit(**JIT)
def _acc1(ac, r0, w0):
    for j in range(ac.shape[0]):
        ac[j] += w0 * np.float64(r0[j])


# ---- 1-D passes (correlate1d) -------------------------------------------------------------
# pass_last: scipy's NI_Correlate1D along the last (contiguous) axis of src (lines, L).
# Loops: line p -> its double line buffer (the mode's values around it, as NI_ExtendLine)
# -> taps in scipy's order, four at a time (_pairs4 / _acc4: o read and written once for
# four) -> output positions (innermost, contiguous, vectorized). dst (lines, n) holds
# positions lo..lo+n-1 of the line. Limits: C-contiguous.
@njit(**JIT)
def pass_last(src, w, c, lo, mode, cval, sym, dst, oc):
    lines, ln = src.shape
    n = dst.shape[1]
    k = w.shape[0]
    s1 = k // 2
    m = n + k - 1
    buf = np.empty(m, np.float64)
    o = np.empty(n, np.float64)
    base = lo - c
    a = min(max(-base, 0), m)
    b = max(min(ln - base, m), a)
    for p in range(lines):
        row = src[p]
        for q in range(a):
            s = _src(base + q, ln, mode)
            buf[q] = cval if s < 0 else np.float64(row[s])
        bq, rs = buf[a:b], row[a + base:b + base]
        for q in range(b - a):
            bq[q] = np.float64(rs[q])
        for q in range(b, m):
            s = _src(base + q, ln, mode)
            buf[q] = cval if s < 0 else np.float64(row[s])
        if sym != 0:
            wc = w[s1]
            bc = buf[s1:s1 + n]
            for i in range(n):
                o[i] = bc[i] * wc
            mm = s1  # pairs from the outermost in: (s1 - mm, s1 + mm)
            while mm >= 4:
                _pairs4(o, buf[s1 - mm:s1 - mm + n], buf[s1 + mm:s1 + mm + n],
                        buf[s1 - mm + 1:s1 - mm + 1 + n], buf[s1 + mm - 1:s1 + mm - 1 + n],
                        buf[s1 - mm + 2:s1 - mm + 2 + n], buf[s1 + mm - 2:s1 + mm - 2 + n],
                        buf[s1 - mm + 3:s1 - mm + 3 + n], buf[s1 + mm - 3:s1 + mm - 3 + n],
                        w[s1 - mm], w[s1 - mm + 1], w[s1 - mm + 2], w[s1 - mm + 3], sym)
                mm -= 4
            while mm >= 1:
                _pairs1(o, buf[s1 - mm:s1 - mm + n], buf[s1 + mm:s1 + mm + n], w[s1 - mm], sym)
                mm -= 1
        else:
            wl = w[k - 1]
            bl = buf[k - 1:k - 1 + n]
            for i in range(n):
                o[i] = bl[i] * wl
            t = 0
            while t + 4 <= k - 1:
                _acc4(o, buf[t:t + n], buf[t + 1:t + 1 + n], buf[t + 2:t + 2 + n], buf[t + 3:t + 3 + n],
                      w[t], w[t + 1], w[t + 2], w[t + 3])
                t += 4
            while t < k - 1:
                _acc1(o, buf[t:t + n], w[t])
                t += 1
        _store(o, dst[p], n, oc)


@njit(**JIT)
def _pairs4(o, a0, b0, a1, b1, a2, b2, a3, b3, w0, w1, w2, w3, sym):
    """o += (a0 +- b0) w0, then the pairs 1, 2, 3 (in that order, in doubles)."""
    if sym > 0:
        for j in range(o.shape[0]):
            o[j] = (((o[j] + (np.float64(a0[j]) + np.float64(b0[j])) * w0)
                     + (np.float64(a1[j]) + np.float64(b1[j])) * w1)
                    + (np.float64(a2[j]) + np.float64(b2[j])) * w2) \
                + (np.float64(a3[j]) + np.float64(b3[j])) * w3
    else:
        for j in range(o.shape[0]):
            o[j] = (((o[j] + (np.float64(a0[j]) - np.float64(b0[j])) * w0)
                     + (np.float64(a1[j]) - np.float64(b1[j])) * w1)
                    + (np.float64(a2[j]) - np.float64(b2[j])) * w2) \
                + (np.float64(a3[j]) - np.float64(b3[j])) * w3


@njit(**JIT)
def _pairs1(o, a0, b0, w0, sym):
    if sym > 0:
        for j in range(o.shape[0]):
            o[j] += (np.float64(a0[j]) + np.float64(b0[j])) * w0
    else:
        for j in range(o.shape[0]):
            o[j] += (np.float64(a0[j]) - np.float64(b0[j])) * w0


# pass_mid: the same along the middle axis of src (slabs, L, cols), cols > 1 contiguous.
# Loops: slab -> output position i along the axis -> taps in scipy's order (each tap one
# source row, or cval), four at a time where all four read rows -> columns (innermost,
# contiguous, vectorized). o: one float64 row. Limits: C-contiguous.
@njit(**JIT)
def pass_mid(src, w, c, lo, mode, cval, sym, dst, oc):
    slabs, ln, cols = src.shape
    n = dst.shape[1]
    k = w.shape[0]
    s1 = k // 2
    o = np.empty(cols, np.float64)
    rows = np.empty(k, np.int64)
    for p in range(slabs):
        plane = src[p]
        for i in range(n):
            for t in range(k):
                rows[t] = _src(lo + i + t - c, ln, mode)
            first = s1 if sym != 0 else k - 1
            r = rows[first]
            wf = w[first]
            if r >= 0:
                x = plane[r]
                for j in range(cols):
                    o[j] = np.float64(x[j]) * wf
            else:
                v = cval * wf
                for j in range(cols):
                    o[j] = v
            if sym != 0:
                mm = s1
                while mm >= 1:
                    if mm >= 4 and min(rows[s1 - mm], rows[s1 - mm + 3], rows[s1 + mm], rows[s1 + mm - 3]) >= 0:
                        _pairs4(o, plane[rows[s1 - mm]], plane[rows[s1 + mm]],
                                plane[rows[s1 - mm + 1]], plane[rows[s1 + mm - 1]],
                                plane[rows[s1 - mm + 2]], plane[rows[s1 + mm - 2]],
                                plane[rows[s1 - mm + 3]], plane[rows[s1 + mm - 3]],
                                w[s1 - mm], w[s1 - mm + 1], w[s1 - mm + 2], w[s1 - mm + 3], sym)
                        mm -= 4
                    else:
                        _pair(plane, rows[s1 - mm], rows[s1 + mm], w[s1 - mm], sym, cval, o, cols)
                        mm -= 1
            else:
                t = 0
                while t < k - 1:
                    if t + 4 <= k - 1 and min(rows[t], rows[t + 1], rows[t + 2], rows[t + 3]) >= 0:
                        _acc4(o, plane[rows[t]], plane[rows[t + 1]], plane[rows[t + 2]], plane[rows[t + 3]],
                              w[t], w[t + 1], w[t + 2], w[t + 3])
                        t += 4
                        continue
                    r = rows[t]
                    if r >= 0:
                        _acc1(o, plane[r], w[t])
                    else:
                        v = cval * w[t]
                        for j in range(cols):
                            o[j] += v
                    t += 1
            _store(o, dst[p, i], cols, oc)


@njit(**JIT)
def _pair(plane, ra, rb, wm, sym, cval, o, cols):
    """o += (row ra +- row rb) * wm over the columns (a row index < 0: cval)."""
    if ra >= 0 and rb >= 0:
        xa, xb = plane[ra], plane[rb]
        if sym > 0:
            for j in range(cols):
                o[j] += (np.float64(xa[j]) + np.float64(xb[j])) * wm
        else:
            for j in range(cols):
                o[j] += (np.float64(xa[j]) - np.float64(xb[j])) * wm
    elif ra >= 0:
        xa = plane[ra]
        if sym > 0:
            for j in range(cols):
                o[j] += (np.float64(xa[j]) + cval) * wm
        else:
            for j in range(cols):
                o[j] += (np.float64(xa[j]) - cval) * wm
    elif rb >= 0:
        xb = plane[rb]
        if sym > 0:
            for j in range(cols):
                o[j] += (cval + np.float64(xb[j])) * wm
        else:
            for j in range(cols):
                o[j] += (cval - np.float64(xb[j])) * wm
    else:
        v = ((cval + cval) if sym > 0 else (cval - cval)) * wm
        for j in range(cols):
            o[j] += v

# _window: buf[:m] = row[off:off + m] with the mode where it leaves the row (cval where the mode
# reads none): the middle as one contiguous copy, the ends element by element. Inlined.
@njit(inline="always", **JIT)
def _window(buf, row, off, m, mode, cval):
    ln = row.shape[0]
    a = min(max(-off, 0), m)
    b = max(min(ln - off, m), a)
    for q in range(a):
        s = _src(q + off, ln, mode)
        buf[q] = cval if s < 0 else row[s]
    bq, rs = buf[a:b], row[a + off:b + off]
    for q in range(b - a):
        bq[q] = rs[q]
    for q in range(b, m):
        s = _src(q + off, ln, mode)
        buf[q] = cval if s < 0 else row[s]


# ---- min/max passes ---------------------------------------------------------------------
# _pick: d[:n] = min (max) of itself and x[:n]; _pick_value: of itself and one value v;
# inlined at numba's IR level, so each caller keeps a branch-free vectorized loop per case.
@njit(inline="always", **JIT)
def _pick(d, x, n, minimum):
    if minimum:
        for i in range(n):
            v = x[i]
            d[i] = v if v < d[i] else d[i]
    else:
        for i in range(n):
            v = x[i]
            d[i] = v if v > d[i] else d[i]


@njit(inline="always", **JIT)
def _pick_value(d, v, n, minimum):
    if minimum:
        for i in range(n):
            d[i] = v if v < d[i] else d[i]
    else:
        for i in range(n):
            d[i] = v if v > d[i] else d[i]

# extremum_last: minimum/maximum_filter1d along the last axis of src (lines, L), in the
# input's type (exact: the values picked are the input's, cval one of its values).
# Loops: line -> its padded line buffer -> taps -> positions (innermost, contiguous,
# vectorized min/max). Limits: C-contiguous; cost k per element (scipy's is ~2).
@njit(**JIT)
def extremum_last(src, k, c, lo, mode, cval, minimum, dst):
    lines = src.shape[0]
    n = dst.shape[1]
    m = n + k - 1
    buf = np.empty(m, src.dtype)
    for p in range(lines):
        _window(buf, src[p], lo - c, m, mode, cval)
        d = dst[p]
        for i in range(n):
            d[i] = buf[i]
        for t in range(1, k):
            _pick(d, buf[t:t + n], n, minimum)

# extremum_mid: the same along the middle axis of src (slabs, L, cols).
# Loops: slab -> output position -> taps (source rows, or cval) -> columns (innermost,
# contiguous, vectorized). Limits: C-contiguous.
@njit(**JIT)
def extremum_mid(src, k, c, lo, mode, cval, minimum, dst):
    slabs, ln, cols = src.shape
    n = dst.shape[1]
    for p in range(slabs):
        for i in range(n):
            d = dst[p, i]
            r = _src(lo + i - c, ln, mode)
            if r >= 0:
                x = src[p, r]
                for j in range(cols):
                    d[j] = x[j]
            else:
                for j in range(cols):
                    d[j] = cval
            for t in range(1, k):
                r = _src(lo + i + t - c, ln, mode)
                if r < 0:
                    _pick_value(d, cval, cols, minimum)
                else:
                    _pick(d, src[p, r], cols, minimum)

# ---- rank filters over a footprint ------------------------------------------------------
# _exchanges: the network ``net`` (rows a, b, op; op 0 both, 1 min into a, 2 max into b) over
# the first w columns of buf's rows, columns innermost (vectorized min/max). Inlined.
@njit(inline="always", **JIT)
def _exchanges(buf, net, w):
    for e in range(net.shape[0]):
        ba = buf[net[e, 0]]
        bb = buf[net[e, 1]]
        op = net[e, 2]
        if op == 0:
            for j in range(w):
                u = ba[j]
                v = bb[j]
                ba[j] = u if u < v else v
                bb[j] = v if u < v else u
        elif op == 1:
            for j in range(w):
                u = ba[j]
                v = bb[j]
                ba[j] = u if u < v else v
        else:
            for j in range(w):
                u = ba[j]
                v = bb[j]
                bb[j] = v if u < v else u


# rank_nd: rank_filter (median, percentile, min/max over a footprint) of 1-D..3-D blocks
# seen as 3-D. Loops: output row (z, y) -> strips of S columns -> gather: window value t
# of each column into row t of a buffer (n x S, in L1) -> a selection network
# (compare-exchanges of two buffer rows, columns innermost: vectorized min/max) -> the
# ranked row out. The network (net: rows a, b, op; op 0 both, 1 min into a, 2 max into b)
# is Batcher's odd-even merge sort cut to n values and pruned to what row ``rank`` needs.
# Limits: C-contiguous; n <= MAX_RANK_TAPS; NaN windows give some value of the window
# (the ops' NaN rule masks or replaces them, as it does scipy's).
@njit(**JIT)
def rank_nd(ext, tz, ty, tx, lo0, lo1, lo2, c0, c1, c2, mode, cval, net, rank, strip, out):
    nz, ny, nx = out.shape
    lz, ly = ext.shape[0], ext.shape[1]
    ntap = tz.shape[0]
    buf = np.empty((ntap, strip), ext.dtype)
    for z in range(nz):
        for y in range(ny):
            for x0 in range(0, nx, strip):
                w = min(strip, nx - x0)
                for t in range(ntap):
                    bt = buf[t]
                    sz = _src(lo0 + z + tz[t] - c0, lz, mode)
                    sy = _src(lo1 + y + ty[t] - c1, ly, mode)
                    if sz < 0 or sy < 0:
                        for j in range(w):
                            bt[j] = cval
                        continue
                    _window(bt, ext[sz, sy], lo2 + x0 + tx[t] - c2, w, mode, cval)
                _exchanges(buf, net, w)
                br = buf[rank]
                o = out[z, y, x0:x0 + w]
                for j in range(w):
                    o[j] = br[j]

# rank_omit_nd: nan_policy='omit' of the rank filters (floats): of each output's window, its
# count m of non-NaN values (into m_out) and the values at ranks lo_of[m] and hi_of[m] among
# them (a_out, b_out; the caller blends them as numpy's nan-functions do). Loops as rank_nd's;
# the gather counts each column's NaN and reads them as +inf, which sorts after every value,
# so that ranks below m of the sorted window are its non-NaN values' own; net sorts it whole
# (compiled.sort_network). Limits: rank_nd's; lo_of, hi_of in 0..n-1 for m in 0..n.
@njit(**JIT)
def rank_omit_nd(ext, tz, ty, tx, lo0, lo1, lo2, c0, c1, c2, mode, cval, net, lo_of, hi_of, strip,
                 a_out, b_out, m_out):
    nz, ny, nx = a_out.shape
    lz, ly = ext.shape[0], ext.shape[1]
    ntap = tz.shape[0]
    buf = np.empty((ntap, strip), ext.dtype)
    nan = np.empty(strip, np.int64)
    for z in range(nz):
        for y in range(ny):
            for x0 in range(0, nx, strip):
                w = min(strip, nx - x0)
                for j in range(w):
                    nan[j] = 0
                for t in range(ntap):
                    bt = buf[t]
                    sz = _src(lo0 + z + tz[t] - c0, lz, mode)
                    sy = _src(lo1 + y + ty[t] - c1, ly, mode)
                    if sz < 0 or sy < 0:
                        for j in range(w):
                            bt[j] = cval
                    else:
                        _window(bt, ext[sz, sy], lo2 + x0 + tx[t] - c2, w, mode, cval)
                    for j in range(w):
                        if bt[j] != bt[j]:
                            bt[j] = np.inf
                            nan[j] += 1
                _exchanges(buf, net, w)
                ao = a_out[z, y, x0:x0 + w]
                bo = b_out[z, y, x0:x0 + w]
                mo = m_out[z, y, x0:x0 + w]
                for j in range(w):
                    m = ntap - nan[j]
                    ao[j] = buf[lo_of[m], j]
                    bo[j] = buf[hi_of[m], j]
                    mo[j] = m
