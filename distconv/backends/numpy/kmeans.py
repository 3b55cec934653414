"""k-means on one block of descriptors (n, d): assignment, bag-of-visual-words counts and
Lloyd partial sums. float64 here (the oracle for backends/cuda/kmeans.py, float32)."""

from __future__ import annotations

import numpy as np


ROWS = 4096  # numpy path: descriptors per distance slab (bounds the n x K temporary)


def _distances64(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    X, C = X.astype(np.float64), C.astype(np.float64)
    return (X * X).sum(1)[:, None] - 2.0 * X @ C.T + (C * C).sum(1)[None, :]


def assign(X, C):
    """Index of the nearest centroid of every row of X (int32)."""
    out = np.empty(X.shape[0], dtype=np.int32)
    for s in range(0, X.shape[0], ROWS):
        out[s:s + ROWS] = np.argmin(_distances64(X[s:s + ROWS], C), axis=1)
    return out


def bovw(X, C, groups, n_groups: int):
    """(n_groups, K) int64 counts of each group's descriptors per nearest centroid."""
    labels = assign(X, C)
    g = np.zeros(X.shape[0], dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    flat = np.bincount(g * C.shape[0] + labels, minlength=n_groups * C.shape[0])
    return flat.reshape(n_groups, C.shape[0]).astype(np.int64)


def partial_sums(X, C):
    """Lloyd's partials: per-centroid sums (K, d) float64, counts (K,) int64, inertia float64."""
    K = C.shape[0]
    sums = np.zeros((K, X.shape[1]))
    counts = np.zeros(K, dtype=np.int64)
    inertia = 0.0
    for s in range(0, X.shape[0], ROWS):
        xs = X[s:s + ROWS]
        d = _distances64(xs, C)
        lab = np.argmin(d, axis=1)
        inertia += float(np.maximum(d[np.arange(len(lab)), lab], 0).sum())
        np.add.at(sums, lab, xs.astype(np.float64))
        counts += np.bincount(lab, minlength=K)
    return sums, counts, np.float64(inertia)
