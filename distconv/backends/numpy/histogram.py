"""Histogram counts of one block: numpy.histogram / bincount / histogram2d (the oracle
for backends/cuda/histogram.py). Counts come back as int64 (exact), weighted sums as float64."""

from __future__ import annotations

import numpy as np



def counts(block, edges: np.ndarray, uniform: bool, weights=None):
    """Counts of ``block`` in the bins ``edges[b] <= v < edges[b+1]`` (last bin closed)."""
    w = None if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    return np.histogram(np.asarray(block).ravel(), bins=edges, weights=w)[0]


def bincount(block, nbins: int, weights=None):
    """np.bincount over ``nbins`` bins (values already checked to lie in [0, nbins))."""
    w = None if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    out = np.bincount(np.asarray(block).ravel(), weights=w, minlength=nbins)
    return out if w is not None else out.astype(np.int64)


def counts2d(x, y, xedges: np.ndarray, yedges: np.ndarray, weights=None):
    """Joint counts (int64, or float64 weighted) as numpy.histogram2d bins them."""
    w = None if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    h = np.histogram2d(np.asarray(x).ravel(), np.asarray(y).ravel(), bins=[xedges, yedges], weights=w)[0]
    return h if w is not None else h.astype(np.int64)
