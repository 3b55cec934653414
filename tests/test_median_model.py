"""A numpy model of the median kernels' networks (kernels/rank.cu distconv_median3x3,
distconv_median5x5, distconv_median3x3x3: sorting networks shared between neighbouring outputs),
exchange for exchange (the same Batcher merges, the same pieces, the same ranks kept): it equals
scipy on random data with ties for every mode and dtype, marks every window holding NaN, and
costs the min/max per output the kernels' headers state. Runs on any machine; the kernels
themselves against scipy: tests/gpu/test_median_gpu.py."""

import numpy as np
import pytest
import scipy.ndimage as ndi

MODES = ["reflect", "nearest", "mirror", "wrap", "constant"]
PAD = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}


# ---- the model: kernels/rank.cu's networks in numpy -------------------------------------------

def oe_net(na, nb):
    """Batcher's odd-even merge of sorted wires 0..na-1 and na..na+nb-1, built as rank.cu's
    dc_oem builds it: (comparators (lo, hi): the smaller value to wire lo, wires in sorted order)."""
    net = []

    def oem(a, b):
        if not a or not b:
            return a + b
        if len(a) == 1 and len(b) == 1:
            net.append((a[0], b[0]))
            return [a[0], b[0]]
        v, w = oem(a[0::2], b[0::2]), oem(a[1::2], b[1::2])
        out, i = [v[0]], 0
        while i < len(w) and i + 1 < len(v):
            net.append((w[i], v[i + 1]))
            out += [w[i], v[i + 1]]
            i += 1
        return out + w[i:] + v[i + 1:]

    out = oem(list(range(na)), list(range(na, na + nb)))
    return net, out


class Net:
    """The kernels' exchanges (DcOrd) and pieces (dc_merge, dc_sort, dc_kth2) over values that
    support ``lo`` and ``hi``: numpy arrays (np.minimum and np.maximum propagate NaN, as NANP
    exchanges do) or the symbols of Count."""

    def __init__(self, lo=np.minimum, hi=np.maximum):
        self.lo, self.hi = lo, hi

    def merge(self, a, b):
        net, order = oe_net(len(a), len(b))
        w = list(a) + list(b)
        for p, q in net:
            w[p], w[q] = self.lo(w[p], w[q]), self.hi(w[p], w[q])
        return [w[i] for i in order]

    def sort(self, v):
        v = list(v)
        h = len(v) // 2
        return v if len(v) <= 1 else self.merge(self.sort(v[:h]), self.sort(v[h:]))

    def kth2(self, a, b, k):
        """The k-th smallest (from 0) of sorted a and b: the smallest over the splits
        i + j = k + 1 of max(a[i-1], b[j-1])."""
        r = None
        for i in range(len(a) + 1):
            j = k + 1 - i
            if 0 <= j <= len(b):
                t = b[j - 1] if i == 0 else a[i - 1] if j == 0 else self.hi(a[i - 1], b[j - 1])
                r = t if r is None else self.lo(r, t)
        return r

    def median3x3_row(self, r0, r1, r2):
        """dc_median3x3_row: rows y-1 .. y+1 at columns x-1 .. x+4 -> the medians at x .. x+3."""
        lo, hi = self.lo, self.hi
        cols = [self.sort([r0[c], r1[c], r2[c]]) for c in range(6)]
        m = [None] * 4
        for j in (0, 2):
            low, high = hi(cols[j + 1][0], cols[j + 2][0]), lo(cols[j + 1][2], cols[j + 2][2])
            a, b = lo(cols[j + 1][1], cols[j + 2][1]), hi(cols[j + 1][1], cols[j + 2][1])
            for q, c in ((j, j), (j + 1, j + 3)):
                x, y, z = hi(low, cols[c][0]), hi(a, lo(b, cols[c][1])), lo(high, cols[c][2])
                m[q] = hi(lo(x, y), lo(hi(x, y), z))
        return m

    def median5x5_step(self, r):
        """dc_median5x5_step: rows y-2 .. y+3 by columns x-2 .. x+5 -> m[dy][q] at (y+dy, x+q)."""
        core = [self.sort([r[1][c], r[2][c], r[3][c], r[4][c]]) for c in range(8)]
        pr = [self.merge(core[2 * p + 1], core[2 * p + 2]) for p in range(3)]
        rp = [[self.sort([r[5 if dy else 0][2 * p + 1], r[5 if dy else 0][2 * p + 2]]) for p in range(3)]
              for dy in range(2)]
        m = [[None] * 4 for _ in range(2)]
        for k in range(2):
            c10 = self.merge(pr[k], pr[k + 1])[3:13]
            for dy in range(2):
                row = r[5 if dy else 0]
                c6 = self.merge(c10, self.merge(rp[dy][k], rp[dy][k + 1]))[4:10]
                for dx in range(2):
                    c = 2 * k + 5 if dx else 2 * k
                    m10 = self.merge(c6, core[c])
                    m[dy][2 * k + dx] = self.hi(m10[4], self.lo(m10[5], row[c]))
        return m

    def median3x3x3_step(self, v):
        """dc_median3x3x3_step: planes z-1 .. z+1 by rows y-1 .. y+2 by columns x-1 .. x+4 ->
        m[dy][q] at (z, y+dy, x+q)."""
        tri = [[self.sort([v[0][y][x], v[1][y][x], v[2][y][x]]) for x in range(6)] for y in range(4)]
        vp = [self.merge(tri[1][x], tri[2][x]) for x in range(6)]
        m = [[None] * 4 for _ in range(2)]
        for k in range(2):
            x0 = 2 * k
            c12 = self.merge(vp[x0 + 1], vp[x0 + 2])
            for dy in range(2):
                yr = 3 if dy else 0
                c10 = self.merge(c12, self.merge(tri[yr][x0 + 1], tri[yr][x0 + 2]))[4:14]
                for dx in range(2):
                    xc = x0 + 3 if dx else x0
                    m[dy][x0 + dx] = self.kth2(self.merge(c10, vp[xc])[6:10], tri[yr][xc], 3)
        return m


def model_median(a, size, mode="reflect", cval=0.0):
    """scipy.ndimage.median_filter(a, size) of a 2-D (size 3, 5) or 3-D (size 3) array by the model:
    every output tile a thread computes, from the padded array (the kernels' staged tiles)."""
    r, net = size // 2, Net()
    p = np.pad(a, r, mode=PAD[mode], **({"constant_values": cval} if mode == "constant" else {}))
    if a.ndim == 2:
        rows = 1 if size == 3 else 2
        H, W = -(-a.shape[0] // rows) * rows, -(-a.shape[1] // 4) * 4
        p = np.pad(p, ((0, H - a.shape[0]), (0, W - a.shape[1] + 4 - 2 * r)), mode="edge")  # cropped below
        Y, X = np.meshgrid(np.arange(0, H, rows), np.arange(0, W, 4), indexing="ij")
        win = [[p[Y + i, X + c] for c in range(4 + 2 * r)] for i in range(rows + 2 * r)]
        m = [net.median3x3_row(*win)] if size == 3 else net.median5x5_step(win)
        out = np.empty((H, W), a.dtype)
    else:
        H, W = -(-a.shape[1] // 2) * 2, -(-a.shape[2] // 4) * 4
        p = np.pad(p, ((0, 0), (0, H - a.shape[1]), (0, W - a.shape[2] + 2)), mode="edge")
        Z, Y, X = np.meshgrid(np.arange(a.shape[0]), np.arange(0, H, 2), np.arange(0, W, 4), indexing="ij")
        m = net.median3x3x3_step([[[p[Z + z, Y + y, X + x] for x in range(6)] for y in range(4)] for z in range(3)])
        out = np.empty((a.shape[0], H, W), a.dtype)
    for dy, row in enumerate(m):
        for q, v in enumerate(row):
            out[..., dy::len(m), q::4] = v
    return out[tuple(slice(0, s) for s in a.shape)]


class Count:
    """Symbols for Net: each distinct min or max made once (the kernels' pieces are shared by
    construction, and the compiler drops what no median reads); ``ops(outs)``: those the outputs
    read, directly or not."""

    def __init__(self):
        self.made = {}

    def _op(self, kind, a, b):
        key = (kind,) + tuple(sorted((a, b), key=repr))
        return self.made.setdefault(key, key)

    def lo(self, a, b):
        return self._op("min", a, b)

    def hi(self, a, b):
        return self._op("max", a, b)

    def ops(self, outs):
        seen, todo = set(), list(outs)
        while todo:
            n = todo.pop()
            if isinstance(n, tuple) and n[0] in ("min", "max") and n not in seen:
                seen.add(n)
                todo += n[1:]
        return len(seen)


def _ties(rng, shape, dtype):
    """Random values with many ties (a few distinct values), as scipy compares them exactly."""
    if np.dtype(dtype).kind == "f":
        return np.where(rng.random(shape) < 0.5, np.round(rng.standard_normal(shape)),
                        rng.standard_normal(shape)).astype(dtype)
    if np.dtype(dtype) == np.int64:  # scipy's rank filters are exact below 2**53
        return (rng.integers(-3, 4, shape) * 2**40 + rng.integers(0, 2, shape)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -3), min(info.max, 4), shape, endpoint=True).astype(dtype)


def _nan_rule(a, size, mode="reflect", cval=0.0):
    """ops/rank_nan.py's rule: NaN where the window holds one, else the window's median."""
    r = size // 2
    p = np.pad(a, r, mode=PAD[mode], **({"constant_values": cval} if mode == "constant" else {}))
    w = np.lib.stride_tricks.sliding_window_view(p, (size,) * a.ndim).reshape(a.shape + (-1,))
    return np.where(np.isnan(w).any(-1), np.nan, np.sort(w, -1)[..., w.shape[-1] // 2]).astype(a.dtype)


MODEL_CASES = [((37, 53), 3), ((5, 7), 3), ((1, 1), 3), ((37, 53), 5), ((6, 9), 5), ((2, 3), 5),
               ((9, 13, 17), 3), ((3, 2, 5), 3), ((1, 1, 1), 3)]


@pytest.mark.parametrize("mode", MODES)
def test_model_networks_equal_scipy(rng, mode):
    for shape, size in MODEL_CASES:
        for dtype in (np.float32, np.float64, np.int32, np.uint8, np.int64):
            a = _ties(rng, shape, dtype)
            np.testing.assert_array_equal(model_median(a, size, mode, 2.0),
                                          ndi.median_filter(a, size, mode=mode, cval=2.0),
                                          err_msg=f"{shape} size {size} {np.dtype(dtype)}")


def test_model_networks_mark_every_window_holding_nan(rng):
    for shape, size in ((41, 47), 3), ((41, 47), 5), ((7, 19, 23), 3):
        a = rng.standard_normal(shape)
        a[rng.random(shape) < 0.02] = np.nan
        a.flat[rng.integers(0, a.size, 4)] = [np.inf, -np.inf, np.inf, -np.inf]
        for mode in ("wrap", "constant"):
            got, ref = model_median(a, size, mode, np.nan if mode == "constant" else 0.0), _nan_rule(a, size, mode)
            if mode == "constant":
                ref = _nan_rule(a, size, mode, np.nan)
            np.testing.assert_array_equal(got, ref)


def test_model_min_max_per_output_are_the_headers():
    """~19, ~62 and ~100 min/max an output (kernels/rank.cu; the PTX of the float builds has 608
    per 32 outputs, 498 per 8 and 804 per 8: the same networks)."""
    for step, n, expect in (("median3x3_row", 4, 19.0), ("median5x5_step", 8, 62.25), ("median3x3x3_step", 8, 100.5)):
        count = Count()
        net = Net(count.lo, count.hi)
        if step == "median3x3_row":
            outs = net.median3x3_row(*[[("in", i, c) for c in range(6)] for i in range(3)])
        elif step == "median5x5_step":
            outs = [m for row in net.median5x5_step([[("in", i, c) for c in range(8)] for i in range(6)]) for m in row]
        else:
            v = [[[("in", z, y, x) for x in range(6)] for y in range(4)] for z in range(3)]
            outs = [m for row in net.median3x3x3_step(v) for m in row]
        assert count.ops(outs) / n == expect, step
