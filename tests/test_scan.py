"""Scans against numpy on random chunkings along every axis, every op and dtype."""

import dask.array as da
import numpy as np
import pytest

import distconv as dc

from .helpers import assert_matches

OPS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}
DTYPES = [np.int32, np.int64, np.uint32, np.float32, np.float64, np.bool_, np.uint8]


def sample(rng, shape, dtype, op):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "f":
        lo, hi = (0.9, 1.1) if op == "mul" else (-1, 1)
        return rng.uniform(lo, hi, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)


def reference(a, op, axis, exclusive, dtype=None):
    if op == "add":
        ref = np.cumsum(a, axis=axis, dtype=dtype)
    elif op == "mul":
        ref = np.cumprod(a, axis=axis, dtype=dtype)
    else:
        flat = a.ravel() if axis is None else a
        ref = OPS[op].accumulate(flat, axis=0 if axis is None else axis, dtype=dtype)
    if exclusive:
        ax = 0 if axis is None else axis
        from distconv.core.ops import identity

        first = np.full_like(np.take(ref, [0], axis=ax), identity(op, ref.dtype))
        ref = np.concatenate([first, np.take(ref, np.arange(ref.shape[ax] - 1), axis=ax)], axis=ax)
    return ref


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_scan_matches_numpy_any_chunking(backend, rng, op, dtype):
    a = sample(rng, (11, 7, 9), dtype, op)
    for axis in (0, 1, 2, None):
        for exclusive in (False, True):
            ref = reference(a, op, axis, exclusive)
            got = backend.run(dc.scan, a, op=op, axis=axis, exclusive=exclusive)
            assert isinstance(got, da.Array) == backend.lazy
            assert_matches(got, ref)


def test_numpy_named_wrappers_and_dtype_rules(rng):
    a = rng.integers(-100, 100, (50, 3)).astype(np.int8)
    x = da.from_array(a, chunks=(7, 2))
    assert dc.cumsum(x, axis=0).dtype == np.cumsum(a, axis=0).dtype == np.int64
    assert_matches(dc.cumsum(x, axis=0), np.cumsum(a, axis=0))
    assert_matches(dc.cumsum(x, axis=0, dtype=np.int8), np.cumsum(a, axis=0, dtype=np.int8))  # wraps
    assert_matches(dc.cumprod(x, axis=0), np.cumprod(a, axis=0))  # int64 overflow wraps as numpy
    assert_matches(dc.cummin(x, axis=1), np.minimum.accumulate(a, axis=1))
    assert_matches(dc.cummax(x), np.maximum.accumulate(a.ravel()))


def test_nan_propagates_like_accumulate(rng):
    a = rng.standard_normal(40)
    a[[5, 22]] = np.nan
    x = da.from_array(a, chunks=6)
    for op in OPS:
        assert_matches(dc.scan(x, op), reference(a, op, 0, False))


def test_length_one_chunks_and_empty(rng):
    a = rng.standard_normal(9)
    assert_matches(dc.cumsum(da.from_array(a, chunks=1)), np.cumsum(a))
    e = np.zeros((0, 4), dtype=np.float32)
    assert_matches(dc.cumsum(da.from_array(e, chunks=(1, 2)), axis=1), np.cumsum(e, axis=1))
    assert_matches(dc.cumsum(e, axis=0), np.cumsum(e, axis=0))


def test_carries_are_fused_four_tasks_per_chunk(rng):
    x = da.random.random((40, 40), chunks=(10, 10))
    y = dc.cumsum(x, axis=1)
    own = [n for n in y.dask.layers if n.startswith("distconv-scan")]
    assert {n.rsplit("-", 1)[0] for n in own} == {"distconv-scan", "distconv-scan-total", "distconv-scan-carry"}
    assert sum(len(y.dask.layers[n]) for n in own) / x.npartitions <= 3


def test_xarray_scan_keeps_coords(rng):
    import xarray as xr

    arr = xr.DataArray(rng.standard_normal((5, 6)), dims=("t", "x"), coords={"t": np.arange(5)}, attrs={"a": 1})
    out = dc.cumsum(arr.chunk({"t": 2}), axis=0)
    assert out.dims == arr.dims and out.attrs == arr.attrs
    assert_matches(out.data, np.cumsum(arr.values, axis=0))


@pytest.mark.parametrize("call, exc, match", [
    (lambda a: dc.scan(a, "sub"), ValueError, "op must be one of"),
    (lambda a: dc.scan(a, axis=3), ValueError, "axis=3"),
    (lambda a: dc.cumsum(a, dtype=np.complex64), TypeError, "cannot hold"),
    (lambda a: dc.cumsum(a.astype(np.complex128)), TypeError, "complex128"),
    (lambda a: dc.scan(a, exclusive="yes"), TypeError, "exclusive"),
])
def test_bad_input(rng, call, exc, match):
    with pytest.raises(exc, match=match):
        call(rng.standard_normal((4, 4)))
