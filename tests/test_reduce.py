"""Reductions against numpy: every op, dtype, axis, chunking; tree-reduced on dask."""

import dask.array as da
import numpy as np
import pytest

import distconv as dc

from .helpers import assert_matches, host
from .test_scan import DTYPES, sample


@pytest.mark.parametrize("name", ["sum", "prod", "min", "max", "mean"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_match_numpy(backend, rng, name, dtype):
    a = sample(rng, (9, 8, 7), dtype, "mul" if name == "prod" else "add")
    for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
        for keepdims in (False, True):
            ref = getattr(np, name)(a, axis=axis, keepdims=keepdims)
            got = backend.run(getattr(dc, name), a, axis=axis, keepdims=keepdims)
            assert_matches(host(got), np.asarray(ref))


def test_nan_propagates_in_min_max(rng):
    a = rng.standard_normal(100)
    a[37] = np.nan
    x = da.from_array(a, chunks=9)
    assert np.isnan(dc.min(x).compute()) and np.isnan(dc.max(x).compute())


def test_empty_min_is_numpy_error():
    with pytest.raises(ValueError, match="zero-size array"):
        dc.min(np.zeros((0,)))
    assert dc.sum(np.zeros((0, 3)), axis=0).tolist() == [0, 0, 0]


def test_tree_reduction_layers(rng):
    x = da.random.random((1000,), chunks=10)
    y = dc.sum(x)
    assert any(n.startswith("distconv-reduce-add") for n in y.dask.layers)
    assert np.isclose(y.compute(), x.compute().sum())


def test_bad_axis():
    with pytest.raises(ValueError, match="axis=4"):
        dc.sum(np.zeros((2, 2)), axis=4)
    with pytest.raises(ValueError, match="repeats"):
        dc.sum(np.zeros((2, 2)), axis=(0, 0))
