"""Image clustering: nearest-centroid assignment, bag-of-visual-words histograms, and
distributed Lloyd k-means (each chunk's worker computes assignments and partial sums; the
partials are tree-reduced; new centres go back out with the next iteration's graph)."""

from __future__ import annotations

import operator

import numpy as np

from .. import backends
from ..core import checks
from ..core.arrays import to_host


def _descriptors(X, centroids=None):
    X = checks.as_array(X, "X", kinds="biuf")
    if checks.array_kind(X) == "xarray":
        X = X.data
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, d), got shape {tuple(X.shape)}")
    if centroids is None:
        return X, None
    C = to_host(centroids) if hasattr(centroids, "get") else np.asarray(centroids)
    if C.ndim != 2 or C.shape[0] == 0:
        raise ValueError(f"centroids must be 2-D (K, d) with K >= 1, got shape {C.shape}")
    if C.shape[1] != X.shape[1]:
        raise ValueError(f"centroids have {C.shape[1]} dimensions but X has {X.shape[1]}")
    if not np.isfinite(C).all():
        raise ValueError("centroids must be finite")
    return X, C


def _rows(X):
    """Dask descriptors chunked along n only."""
    return X if X.numblocks[1] == 1 else X.rechunk({1: -1})


def kmeans_assign(X, centroids):
    """int32 index of the nearest centroid for each row of X (n, d).

    The GPU path works in float32 and equals a float64 brute-force argmin except where the two
    best distances tie within float32 rounding. Rows with NaN get an unspecified label."""
    X, C = _descriptors(X, centroids)
    if checks.array_kind(X) == "dask":
        from ..graph.blockwise import map_rows

        return map_rows(_rows(X), backends.kmeans_assign, C, dtype=np.int32, name="distconv-kmeans-assign")
    return backends.kmeans_assign(X, C)


def bovw_histogram(X, centroids, groups=None, n_groups=None):
    """(n_groups, K) int64: how many of each group's descriptors fall to each centroid.

    ``groups`` gives each descriptor's image id (0 <= id < n_groups); None puts all in one group.
    """
    X, C = _descriptors(X, centroids)
    if groups is not None:
        g = checks.as_array(groups, "groups", kinds="iu")
        if checks.array_kind(g) == "xarray":
            g = g.data
        if g.shape != (X.shape[0],):
            raise ValueError(f"groups must have one id per descriptor ({X.shape[0]},), got {tuple(g.shape)}")
        if n_groups is None:
            n_groups = int(to_host(g.max().compute() if checks.array_kind(g) == "dask" else g.max())) + 1 if g.size else 0
    n_groups = 1 if groups is None else operator.index(n_groups)
    if checks.array_kind(X) == "dask":
        from ..graph import merge

        X = _rows(X)
        arrays = [X] if groups is None else [X, merge.as_dask_like(X[:, 0], groups).rechunk((X.chunks[0],))]

        def per_block(xb, gb=None):
            return backends.bovw(xb, C, gb, n_groups)

        parts = merge.per_chunk(per_block, arrays, (n_groups, C.shape[0]), np.int64, "distconv-bovw")
        return merge.merge(parts)
    return backends.bovw(X, C, groups, n_groups)


class KMeans:
    """Lloyd's k-means on numpy, cupy or dask descriptors (distributed on dask).

    fit(X) sets cluster_centers_ (K, d), labels_ (numpy/cupy input), inertia_, n_iter_.
    Stops when the squared centre shift falls under tol x the mean feature variance.
    Empty clusters keep their previous centre.
    """

    def __init__(self, n_clusters=8, init="k-means++", max_iter=300, tol=1e-4, seed=None):
        self.n_clusters = operator.index(n_clusters)
        if self.n_clusters < 1:
            raise ValueError(f"n_clusters must be >= 1, got {n_clusters}")
        if not (isinstance(init, str) and init in ("k-means++", "random")) and np.ndim(init) != 2:
            raise ValueError(f"init must be 'k-means++', 'random' or a (K, d) array, got {init!r}")
        self.init, self.max_iter, self.tol, self.seed = init, operator.index(max_iter), float(tol), seed

    def _initial(self, X, rng):
        if not isinstance(self.init, str):
            C = np.asarray(self.init, dtype=np.float64)
            if C.shape != (self.n_clusters, X.shape[1]):
                raise ValueError(f"init has shape {C.shape}, expected {(self.n_clusters, X.shape[1])}")
            return C
        n = X.shape[0]
        take = np.sort(rng.choice(n, size=min(n, max(20 * self.n_clusters, 10_000)), replace=False))
        sample = X[take]
        sample = to_host(sample.compute() if hasattr(sample, "compute") else sample).astype(np.float64)
        if self.init == "random":
            return sample[rng.choice(len(sample), self.n_clusters, replace=False)]
        return _kmeans_plus_plus(sample, self.n_clusters, rng)

    def fit(self, X):
        X, _ = _descriptors(X)
        if X.shape[0] < self.n_clusters:
            raise ValueError(f"X has {X.shape[0]} rows, fewer than n_clusters={self.n_clusters}")
        rng = np.random.default_rng(self.seed)
        is_dask = checks.array_kind(X) == "dask"
        if is_dask:
            X = _rows(X).persist()
        C = self._initial(X, rng)
        var = _mean_variance(X)
        for it in range(1, self.max_iter + 1):
            sums, counts, inertia = _partials(X, C, is_dask)
            new = C.copy()
            nz = counts > 0
            new[nz] = sums[nz] / counts[nz, None]
            shift = float(((new - C) ** 2).sum())
            C = new
            if shift <= self.tol * var:
                break
        self.cluster_centers_, self.n_iter_ = C, it
        self.inertia_ = float(_partials(X, C, is_dask)[2])
        if not is_dask:
            self.labels_ = kmeans_assign(X, C)
        return self

    def predict(self, X):
        return kmeans_assign(X, self.cluster_centers_)


def _partials(X, C, is_dask):
    if not is_dask:
        return _host_partials(X, C)
    from ..graph.merge import tree_sum_delayed

    return tree_sum_delayed(_host_partials, X, C, name="distconv-kmeans-partials")


def _host_partials(block, C):
    s, c, i = backends.partial_sums(block, C)
    return to_host(s), to_host(c), float(to_host(i))


def _mean_variance(X):
    if checks.array_kind(X) == "dask":
        v = X.astype(np.float64).var(axis=0).mean().compute()
    else:
        v = X.astype(np.float64).var(axis=0).mean()
    return float(to_host(v))


def _kmeans_plus_plus(sample, k, rng):
    """Greedy k-means++ (as scikit-learn): of 2 + log(k) candidates drawn by squared distance,
    keep the one that lowers the potential most."""
    trials = 2 + int(np.log(k))
    centers = [sample[rng.integers(len(sample))]]
    d2 = ((sample - centers[0]) ** 2).sum(1)
    for _ in range(1, k):
        total = d2.sum()
        if total <= 0:
            centers.append(sample[rng.integers(len(sample))])
            continue
        cand = rng.choice(len(sample), size=trials, p=d2 / total)
        cd2 = np.minimum(d2[None, :], ((sample[None, :, :] - sample[cand][:, None, :]) ** 2).sum(2))
        best = int(np.argmin(cd2.sum(1)))
        centers.append(sample[cand[best]])
        d2 = cd2[best]
    return np.array(centers)
