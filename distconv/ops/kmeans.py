"""Image clustering: nearest-centroid assignment, bag-of-visual-words histograms, and
distributed Lloyd k-means (each chunk's worker computes assignments and partial sums; the
partials are tree-reduced; new centres go back out with the next iteration's graph)."""

from __future__ import annotations

import operator

import numpy as np

from .. import backends
from ..core import checks
from ..core.arrays import to_host
from . import docs


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


@docs.fill
def kmeans_assign(X, centroids):
    """Label each row of X with the index of its nearest centroid (k-means assignment).

    The nearest by Euclidean distance. On a dask array each chunk of rows is labelled where it
    lives (the centroids travel with the task). The GPU path works
    in float32 and equals a float64 brute-force argmin except where the two best distances tie
    within float32 rounding. Rows holding NaN get an unspecified label.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The descriptors, one per row: a numpy, cupy, dask or xarray array of bools, integers,
        float32 or float64.
    centroids : array_like, shape (K, d)
        The K centres (finite numbers), numpy or cupy.

    Returns
    -------
    labels : ndarray, cupy.ndarray or dask.array.Array
        int32, shape (n,), of X's kind (an xarray input gives its data's kind); lazy for dask.

    Raises
    ------
    ValueError
        X not 2-D, centroids not 2-D with at least one row, of another width than X, or not
        finite.
    TypeError
        X of a dtype distconv does not process (complex, float16, object, strings).

    See Also
    --------
    KMeans : Fits the centroids.
    bovw_histogram : Counts the labels per group.
    scipy.cluster.vq.vq : The same assignment on numpy arrays.

    Examples
    --------
    >>> X = np.array([[0.0, 0], [0, 1], [10, 10], [9, 10]])
    >>> dc.kmeans_assign(X, np.array([[0.0, 0], [10, 10]]))
    array([0, 0, 1, 1], dtype=int32)
    """
    X, C = _descriptors(X, centroids)
    if checks.array_kind(X) == "dask":
        from ..graph.blockwise import map_rows

        return map_rows(_rows(X), backends.kmeans_assign, C, dtype=np.int32, name="distconv-kmeans-assign")
    return backends.kmeans_assign(X, C)


@docs.fill
def bovw_histogram(X, centroids, groups=None, n_groups=None):
    """Bag-of-visual-words histogram: per group, how many descriptors fall to each centroid.

    Each row of X is assigned its nearest centroid (:func:`kmeans_assign`) and counted in its
    group's row, without the labels ever being stored. Counts are exact integers, the same for
    every chunking (a dask input's chunks are counted where they live and merged as a tree).

    Parameters
    ----------
    X : array_like, shape (n, d)
        The descriptors, one per row: a numpy, cupy, dask or xarray array of bools, integers,
        float32 or float64.
    centroids : array_like, shape (K, d)
        The K visual words (finite numbers), numpy or cupy.
    groups : array_like of int, shape (n,), optional
        Each descriptor's group (an image id, 0 <= id < n_groups). None (default): one group.
    n_groups : int, optional
        The number of groups (default: the largest id + 1, which a dask ``groups`` computes).

    Returns
    -------
    counts : ndarray, cupy.ndarray or dask.array.Array
        int64, shape (n_groups, K), of X's kind.

    Raises
    ------
    ValueError
        X not 2-D; centroids not 2-D with at least one row, of another width than X, or not
        finite; ``groups`` of another length than X.
    TypeError
        X of a dtype distconv does not process, or ``groups`` not integers.

    See Also
    --------
    kmeans_assign : The labels themselves.
    KMeans : Fits the centroids.

    Examples
    --------
    >>> X = np.array([[0.0, 0], [0, 1], [10, 10], [9, 10]])
    >>> words = np.array([[0.0, 0], [10, 10]])
    >>> dc.bovw_histogram(X, words).tolist()
    [[2, 2]]
    >>> dc.bovw_histogram(X, words, groups=np.array([0, 0, 2, 2])).tolist()
    [[2, 0], [0, 0], [0, 2]]
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
    """K-means clustering by Lloyd's algorithm, distributed over dask chunks.

    Each iteration assigns every row its nearest centre and moves each centre to the mean of
    its rows; on a dask input every chunk's worker computes its partial sums where the chunk
    lives and the partials merge as a tree, so only K x d numbers travel. Iteration stops when
    the squared shift of the centres falls under ``tol`` times the mean feature variance (as
    scikit-learn's), or after ``max_iter`` iterations. An empty cluster keeps its centre.

    Parameters
    ----------
    n_clusters : int, optional
        K, the number of clusters. Default 8.
    init : {'k-means++', 'random'} or array_like of shape (K, d), optional
        The first centres: greedy k-means++ (as scikit-learn's) or K rows drawn at random,
        both from a sample of at most max(20 K, 10000) rows; or the centres themselves.
    max_iter : int, optional
        The most iterations. Default 300.
    tol : float, optional
        The relative shift below which the fit has converged. Default 1e-4.
    seed : int or None, optional
        The seed of the initial draw (None: a fresh one).

    Attributes
    ----------
    cluster_centers_ : ndarray, shape (K, d)
        The centres (float64, numpy), set by :meth:`fit`.
    labels_ : ndarray or cupy.ndarray, shape (n,)
        Each row's cluster (int32), for a numpy or cupy input; not set for dask (call
        :meth:`predict` or :func:`kmeans_assign`, lazily).
    inertia_ : float
        The sum of squared distances of the rows to their centres.
    n_iter_ : int
        The iterations run.

    Raises
    ------
    ValueError
        ``n_clusters`` below 1, or ``init`` neither a known name nor a 2-D array.

    See Also
    --------
    kmeans_assign, bovw_histogram
    sklearn.cluster.KMeans : The same algorithm on one machine.

    Examples
    --------
    >>> X = np.array([[0.0, 0], [0, 1], [10, 10], [9, 10]])
    >>> km = dc.KMeans(2, init=np.array([[0.0, 0], [10, 10]])).fit(X)
    >>> km.cluster_centers_.tolist()
    [[0.0, 0.5], [9.5, 10.0]]
    >>> km.labels_.tolist(), km.inertia_
    ([0, 0, 1, 1], 1.0)
    >>> km.predict(np.array([[1.0, 1], [8, 8]])).tolist()
    [0, 1]
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
        """Fit the centres to the rows of X.

        Parameters
        ----------
        X : array_like, shape (n, d)
            The descriptors, one per row: a numpy, cupy, dask or xarray array of bools,
            integers, float32 or float64, with at least ``n_clusters`` rows. A dask input is
            persisted on the cluster for the iterations.

        Returns
        -------
        self : KMeans
            Fitted: ``cluster_centers_``, ``inertia_``, ``n_iter_`` and, for a numpy or cupy
            input, ``labels_``.

        Raises
        ------
        ValueError
            X not 2-D, with fewer rows than ``n_clusters``, or an ``init`` array of another
            shape than (n_clusters, d).
        TypeError
            X of a dtype distconv does not process (complex, float16, object, strings).

        Examples
        --------
        >>> X = np.array([[0.0, 0], [0, 2], [10, 10], [10, 12]])
        >>> km = dc.KMeans(2, seed=0).fit(X)
        >>> sorted(km.cluster_centers_.tolist()), km.inertia_
        ([[0.0, 1.0], [10.0, 11.0]], 4.0)
        """
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
        """The nearest fitted centre of each row of X (:func:`kmeans_assign` with
        ``cluster_centers_``).

        Parameters
        ----------
        X : array_like, shape (n, d)
            The descriptors: a numpy, cupy, dask or xarray array, as wide as the centres.

        Returns
        -------
        labels : ndarray, cupy.ndarray or dask.array.Array
            int32, shape (n,), of X's kind; lazy for dask.

        Raises
        ------
        AttributeError
            The model is not fitted yet.
        ValueError
            X not 2-D, or of another width than the centres.

        Examples
        --------
        >>> km = dc.KMeans(2, init=np.array([[0.0, 0], [10, 10]])).fit(np.array([[0.0, 0], [10, 10]]))
        >>> km.predict(np.array([[1.0, 1], [8, 8], [4, 4]])).tolist()
        [0, 1, 0]
        """
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
