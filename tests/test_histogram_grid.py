"""The uniform-bin slack of the GPU histograms (backends/cuda/histogram.py _grid_of), checked on
the CPU against a float model of the kernels' arithmetic (kernels/binning.cuh dc_bin_clear):
every value the formula trusts must land in numpy's bin."""

import numpy as np
import pytest

from distconv.backends.cuda import histogram
from distconv.backends.cuda.histogram import _grid_of


def trusted_bins(v, edges):
    """dc_bin_clear in the edges' type: (trusted?, bin) for each value of v."""
    E = edges.dtype.type
    lo, scale, slack = (E(a) for a in _grid_of(edges.tobytes(), edges.dtype.str))
    with np.errstate(all="ignore"):
        f = (v.astype(E) - lo) * scale
        b = np.trunc(np.clip(f, -2**30, 2**30)).astype(np.int64)
        r = f - b.astype(E)
        clear = (b >= 0) & (b < len(edges) - 1) & (r > slack) & (r < E(1) - slack)
    return clear, b


def near_every_edge(edges, ulps):
    """Each edge and the values up to ``ulps`` steps either side of it."""
    out, up, down = [edges], edges.copy(), edges.copy()
    for _ in range(ulps):
        up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
        out += [up, down]
    return np.concatenate(out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bins, range_", [(65536, (-4.0, 4.0)), (65536, (-100.3, 257.9)), (256, (-1.3, 2.9)),
                                          (7, (0.0, 1.0)), (200, (1000.0, 1001.0)), (40_000, (-1e-3, 3e-3)),
                                          (1000, (-7e6, 1e7 + 1))])
def test_values_the_formula_trusts_land_in_numpys_bin(rng, dtype, bins, range_):
    edges = np.histogram_bin_edges(np.zeros(1), bins=bins, range=range_).astype(dtype)
    spread = rng.uniform(*range_, 400_000).astype(dtype)
    v = np.concatenate([near_every_edge(edges, 8), spread])
    v = v[(v >= edges[0]) & (v <= edges[-1])]
    clear, b = trusted_bins(v, edges)
    truth = np.minimum(np.searchsorted(edges, v, side="right") - 1, bins - 1)
    assert np.array_equal(b[clear], truth[clear])
    assert trusted_bins(spread, edges)[0].mean() > 0.95  # the slack leaves most values to the formula


def test_the_slack_is_what_the_arithmetic_needs():
    """65536 float32 bins on (-4, 4): the edges lie on the grid and scale is exact, so the slack
    is the two roundings of (v - lo) * scale (eps of nbins), not a multiple of it: about 1.6 %
    of the values go to the edge lookups, not 12.5 %."""
    edges = np.histogram_bin_edges(np.zeros(1), bins=65536, range=(-4, 4)).astype(np.float32)
    slack = _grid_of(edges.tobytes(), edges.dtype.str)[2]
    assert slack < 1.01 * np.finfo(np.float32).eps * 65538


def test_binnings_are_reused_only_for_the_same_edges(monkeypatch):
    """Binning.of finds an entry by the edges' length and ends, and reuses it only when every
    byte matches: edges that differ in the middle alone get their own binning."""
    monkeypatch.setattr(histogram, "_device", lambda: 0)
    monkeypatch.setattr(histogram, "device_constant_of", lambda data, dtype, shape: np.frombuffer(data, dtype))
    monkeypatch.setattr(histogram, "_RECENT", {})
    edges = np.histogram_bin_edges(np.zeros(1), bins=65536, range=(-4, 4)).astype(np.float32)
    first = histogram.Binning.of(edges, True)
    assert histogram.Binning.of(edges.copy(), True) is first
    moved = edges.copy()
    moved[30000] = np.nextafter(moved[30000], np.float32(1))
    other = histogram.Binning.of(moved, True)
    assert other is not first and np.array_equal(other.edges, moved) and other.slack > first.slack
    assert histogram.Binning.of(moved, False).kind != other.kind
    again = histogram.Binning.of(edges, True)  # (one entry a fingerprint: rebuilt, the same)
    assert np.array_equal(again.edges, edges) and again.slack == first.slack
