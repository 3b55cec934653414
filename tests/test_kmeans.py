"""k-means assignment, BoVW histograms, Lloyd fits and transpose against numpy references."""

import dask.array as da
import numpy as np
import pytest

import distconv as dc

from .helpers import host


def brute_labels(X, C):
    d = ((X[:, None, :].astype(np.float64) - C[None].astype(np.float64)) ** 2).sum(-1)
    return np.argmin(d, axis=1), d


def assert_labels_ok(labels, X, C):
    """Equal to the float64 argmin, except where the two best distances tie within float32."""
    ref, d = brute_labels(X, C)
    labels = np.asarray(labels)
    off = labels != ref
    scale = (X.astype(np.float64) ** 2).sum(1) + (C.astype(np.float64) ** 2).sum(1).max()
    gap = d[np.arange(len(X)), labels] - d[np.arange(len(X)), ref]
    assert np.all(gap[off] <= 1e-5 * scale[off]), gap[off].max()


@pytest.mark.parametrize("K", [1, 7, 64, 1024])
@pytest.mark.parametrize("D", [37, 64, 128])
def test_assign_matches_brute_force(backend, rng, K, D):
    X = rng.standard_normal((300, D)).astype(np.float32)
    C = rng.standard_normal((K, D)).astype(np.float32)
    got = host(backend.run(lambda x: dc.kmeans_assign(x, C), X))
    assert got.dtype == np.int32
    assert_labels_ok(got, X, C)


def test_exact_ties_take_the_first_centroid():
    C = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 3.0]])
    X = np.array([[0.0, 0.0], [0.0, 0.5]])  # equidistant to centroids 0 and 1
    np.testing.assert_array_equal(dc.kmeans_assign(X, C), [0, 0])


def test_bovw_counts_and_empty_groups(backend, rng):
    X = rng.standard_normal((500, 16)).astype(np.float32)
    C = rng.standard_normal((9, 16))
    groups = rng.integers(0, 6, 500)
    groups[groups == 3] = 4  # group 3 stays empty
    ref = np.zeros((6, 9), dtype=np.int64)
    np.add.at(ref, (groups, brute_labels(X, C)[0]), 1)
    got = host(backend.run(lambda x: dc.bovw_histogram(x, C, groups, n_groups=6), X))
    np.testing.assert_array_equal(got, ref)
    assert got[3].sum() == 0
    np.testing.assert_array_equal(host(backend.run(lambda x: dc.bovw_histogram(x, C), X)), ref.sum(0, keepdims=True))


def numpy_lloyd(X, C, iters):
    for _ in range(iters):
        lab, _ = brute_labels(X, C)
        new = C.copy()
        for k in range(len(C)):
            if (lab == k).any():
                new[k] = X[lab == k].mean(0)
        C = new
    return C


def test_kmeans_matches_numpy_lloyd_from_the_same_start(rng):
    X = rng.standard_normal((600, 5))
    C0 = X[rng.choice(600, 6, replace=False)]
    km = dc.KMeans(6, init=C0, max_iter=5, tol=0.0).fit(da.from_array(X, chunks=(150, 5)))
    np.testing.assert_allclose(km.cluster_centers_, numpy_lloyd(X, C0, 5), rtol=1e-9, atol=1e-9)
    assert km.n_iter_ == 5


def test_kmeans_recovers_separated_blobs(rng):
    means = np.array([[0, 0], [10, 0], [0, 10], [10, 10]], dtype=float)
    X = np.concatenate([rng.normal(m, 0.3, (200, 2)) for m in means])
    km = dc.KMeans(4, seed=1).fit(X)
    found = km.cluster_centers_[np.lexsort(np.round(km.cluster_centers_).T[::-1])]
    np.testing.assert_allclose(found, means[np.lexsort(means.T[::-1])], atol=0.1)
    assert len(np.unique(km.labels_)) == 4
    np.testing.assert_array_equal(km.predict(X), km.labels_)


@pytest.mark.parametrize("shape, axes", [((7, 5), None), ((3, 4, 5), (0, 2, 1)), ((3, 4, 5), (2, 0, 1)),
                                         ((2, 3, 4, 5), (1, 3, 0, 2)), ((6,), None)])
def test_transpose_matches_numpy(backend, rng, shape, axes):
    a = rng.standard_normal(shape)
    np.testing.assert_array_equal(host(backend.run(dc.transpose, a, axes=axes)), np.transpose(a, axes))


@pytest.mark.parametrize("call, match", [
    (lambda X: dc.kmeans_assign(X, np.ones((3, 5))), "centroids have 5 dimensions"),
    (lambda X: dc.kmeans_assign(X, np.ones((0, 4))), "K >= 1"),
    (lambda X: dc.bovw_histogram(X, np.ones((3, 4)), groups=np.zeros(5, int)), "one id per descriptor"),
    (lambda X: dc.KMeans(0), "n_clusters"),
    (lambda X: dc.kmeans_assign(X[:, 0], np.ones((3, 4))), "2-D"),
    (lambda X: dc.transpose(X, (0, 0)), "permutation"),
])
def test_bad_input(rng, call, match):
    with pytest.raises(ValueError, match=match):
        call(rng.standard_normal((10, 4)))


def test_two_assignments_in_one_graph_do_not_collide(rng):
    X = rng.standard_normal((200, 4))
    x = da.from_array(X, chunks=(50, 4))
    C1, C2 = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    a, b = da.compute(dc.kmeans_assign(x, C1), dc.kmeans_assign(x, C2))
    np.testing.assert_array_equal(a, brute_labels(X, C1)[0])
    np.testing.assert_array_equal(b, brute_labels(X, C2)[0])
    t1, t2 = da.compute(dc.transpose(x), dc.transpose(x * 2))
    np.testing.assert_array_equal(t2, 2 * t1)
