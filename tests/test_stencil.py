"""Finite differences: exact on polynomials, convergence order, numpy.gradient agreement."""

import dask.array as da
import numpy as np
import pytest

import distconv as dc
from distconv.ops.stencils import central_coefficients

from .helpers import assert_matches, host


def test_classic_eighth_order_coefficients():
    c = central_coefficients(1, 8)
    np.testing.assert_allclose(c[5:], [4 / 5, -1 / 5, 4 / 105, -1 / 280], rtol=1e-15)
    np.testing.assert_allclose(c, -c[::-1], rtol=1e-15)
    np.testing.assert_allclose(central_coefficients(2, 2), [1, -2, 1])


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("accuracy", [2, 4, 6, 8])
def test_exact_on_polynomials_up_to_the_accuracy(order, accuracy):
    h = 0.1
    x = np.arange(60) * h
    deg = order + accuracy - 1  # central schemes of this accuracy are exact up to this degree
    p = np.polynomial.Polynomial(np.arange(1, deg + 2) / 10)
    f, ref = p(x), p.deriv(order)(x)
    r = len(central_coefficients(order, accuracy)) // 2
    got = dc.derivative(da.from_array(f, chunks=13), 0, order, accuracy, spacing=h).compute()
    np.testing.assert_allclose(got[r:-r], ref[r:-r], rtol=1e-7, atol=1e-7 * np.abs(ref).max())


@pytest.mark.parametrize("accuracy", [2, 4, 6, 8])
def test_convergence_rate_on_a_periodic_sine(accuracy):
    errs = []
    for n in (32, 64):
        x = np.arange(n) * 2 * np.pi / n
        got = dc.derivative(np.sin(x), 0, 1, accuracy, spacing=2 * np.pi / n, mode="wrap")
        errs.append(np.abs(got - np.cos(x)).max())
    rate = np.log2(errs[0] / errs[1])
    assert abs(rate - accuracy) < 0.5, (accuracy, rate)


def test_accuracy_two_equals_numpy_gradient_in_the_interior(rng):
    f = rng.standard_normal((20, 30))
    for axis in (0, 1):
        got = dc.derivative(da.from_array(f, chunks=(7, 8)), axis, spacing=0.5).compute()
        ref = np.gradient(f, 0.5, axis=axis)
        sl = [slice(None)] * 2
        sl[axis] = slice(1, -1)
        np.testing.assert_allclose(got[tuple(sl)], ref[tuple(sl)], rtol=1e-12)


def test_any_chunking_same_result_and_laplace(backend, rng):
    f = rng.standard_normal((17, 19, 11))
    ref = dc.derivative(f, 1, 2, 6, spacing=0.3)
    for _ in range(3):
        assert_matches(backend.run(dc.derivative, f, axis=1, order=2, accuracy=6, spacing=0.3), ref)
    lap = sum(dc.derivative(f, ax, 2, 4, spacing=h) for ax, h in enumerate((0.5, 1.0, 2.0)))
    assert_matches(backend.run(dc.laplace, f, accuracy=4, spacing=(0.5, 1.0, 2.0)), lap)


@pytest.mark.parametrize("call, match", [
    (lambda f: dc.derivative(f, 0, accuracy=3), "accuracy must be an even"),
    (lambda f: dc.derivative(f, 0, accuracy=0), "accuracy must be an even"),
    (lambda f: dc.derivative(f, 0, order=0), "order must be >= 1"),
    (lambda f: dc.derivative(f, 4), "axis=4"),
    (lambda f: dc.derivative(f, 0, spacing=0), "spacing must not be zero"),
])
def test_bad_input(rng, call, match):
    with pytest.raises(ValueError, match=match):
        call(rng.standard_normal((5, 5)))


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_edge_order_gives_numpy_gradients_one_sided_ends(backend, rng, edge_order, dtype):
    a = (rng.standard_normal((13, 9)) * 10).astype(dtype)
    for axis, h in ((0, 0.5), (1, 2.0)):
        got = backend.run(dc.derivative, a, axis=axis, spacing=h, edge_order=edge_order)
        want = np.gradient(a, h, axis=axis, edge_order=edge_order)
        got = host(got.compute() if hasattr(got, "compute") else got)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=1e-5)


def test_edge_order_refuses_what_numpy_gradient_cannot_do():
    a = np.arange(10.0)
    for kw, match in (({"edge_order": 3}, "edge_order must be 1 or 2"),
                      ({"edge_order": 1, "order": 2}, "order 1, accuracy 2"),
                      ({"edge_order": 1, "accuracy": 4}, "order 1, accuracy 2")):
        with pytest.raises(ValueError, match=match):
            dc.derivative(a, 0, **kw)
    with pytest.raises(ValueError, match="at least 3 elements"):
        dc.derivative(np.arange(2.0), 0, edge_order=2)
