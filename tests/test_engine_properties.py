"""The engine against the general path and scipy, over random chains: 1-3 stencil steps
(linear filters, derivatives, rank filters, with and without ``output=``), any input dtype, the
input's layout (zarr's plain chunks, shards, uncompressed), odd shapes and chunkings, through
both faces (a workflow file, ``dc.to_zarr``). The engine's output equals the general dask path
bit for bit and scipy.ndimage on the whole array, bit for bit where the steps run scipy's own
arithmetic (every step but a floating uniform_filter, which sums 1/size taps where scipy keeps
a running sum). A step that changes the dtype anywhere in a chain is the case this guards:
the engine planned its output from one dtype and its blocks came out in another."""

import math
import tempfile
import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import distconv as dc
from distconv import batch
from distconv.engine import chain

from .helpers import TOL, small_engine_blocks

INPUT_DTYPES = ("float32", "float64", "int16", "int32", "uint8")
OUTPUTS = (None, "float32", "float64", "int32")  # widening or in range: scipy's casts are defined
MODES = ("reflect", "constant", "nearest", "mirror")  # wrap takes the general path
LAYOUTS = ("plain", "sharded", "uncompressed")
RANK = ("median_filter", "minimum_filter", "maximum_filter")
OPS = ("uniform_filter", "gaussian_filter", "correlate", "convolve", "correlate1d", "sobel", *RANK,
       "derivative", "laplace")
TAPS = (-2.0, -1.0, -0.5, 0.5, 1.0, 3.0)  # exact in every float dtype
# central differences (order, accuracy): the rationals, correctly rounded
DIFFERENCES = {(1, 2): [-0.5, 0.0, 0.5], (1, 4): [1 / 12, -2 / 3, 0.0, 2 / 3, -1 / 12],
               (2, 2): [1.0, -2.0, 1.0], (2, 4): [-1 / 12, 4 / 3, -5 / 2, 4 / 3, -1 / 12]}
ABSENT = 2**64 - 1  # a shard index entry of an inner chunk never written


def _result_dtype(op: str, params: dict, dtype: np.dtype) -> np.dtype:
    if params.get("output"):
        return np.dtype(params["output"])
    if op in ("derivative", "laplace") and dtype.kind in "iu":  # a difference quotient: float64
        return np.dtype(np.float64)
    return dtype


def _step(draw, ndim: int, dtype: np.dtype, exact: bool):
    """(op, params as a workflow file writes them): every value YAML and scipy both take."""
    op = draw(st.sampled_from(OPS))
    axis = st.integers(0, ndim - 1)
    params: dict = {}
    if op == "uniform_filter":
        params["size"] = draw(st.integers(1, 4))
    elif op == "gaussian_filter":
        params |= {"sigma": draw(st.sampled_from([0.6, 1.0, 1.4])), "truncate": 2.0}
    elif op in ("correlate", "convolve"):
        shape = draw(st.tuples(*[st.integers(1, 3)] * ndim))
        taps = draw(st.lists(st.sampled_from(TAPS), min_size=math.prod(shape), max_size=math.prod(shape)))
        params["weights"] = np.reshape(taps, shape).tolist()
    elif op == "correlate1d":
        params |= {"weights": draw(st.lists(st.sampled_from(TAPS), min_size=1, max_size=5)), "axis": draw(axis)}
    elif op == "sobel":
        params["axis"] = draw(axis)
    elif op in RANK:
        params["size"] = draw(st.integers(1, 3) | st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    elif op == "derivative":
        order, accuracy = draw(st.sampled_from(sorted(DIFFERENCES)))
        params |= {"axis": draw(axis), "order": order, "accuracy": accuracy}
    params["mode"] = draw(st.sampled_from(MODES))
    if params["mode"] == "constant" and op not in ("derivative", "laplace"):
        cvals = [0.0, 1.5, -2.0]
        if op in RANK and dtype.kind in "iu":
            # the rank filters cast cval to an integer input's dtype where scipy keeps it for a
            # float output: a mismatch of their own, whatever the engine does
            cvals = [0.0] if dtype.kind == "u" else [0.0, -2.0]
        params["cval"] = draw(st.sampled_from(cvals))
    if op not in ("derivative", "laplace"):
        # after an inexact step an integer cast could truncate its last-bit differences apart
        output = draw(st.sampled_from(OUTPUTS if exact else OUTPUTS[:3]))
        if output:
            params["output"] = output
    return op, params


def _runs_scipys_arithmetic(op: str, params: dict, result: np.dtype) -> bool:
    """Is the step bit for bit scipy's? A floating uniform_filter sums size taps of 1/size."""
    return not (op == "uniform_filter" and result.kind == "f" and params["size"] > 1)


@st.composite
def cases(draw):
    ndim = draw(st.sampled_from([2, 2, 3]))
    sizes = (9, 41) if ndim == 2 else (3, 11)
    shape = draw(st.tuples(*[st.integers(*sizes)] * ndim))
    chunks = tuple(draw(st.integers(max(1, n // 6), n)) for n in shape)
    dtype = np.dtype(draw(st.sampled_from(INPUT_DTYPES)))
    steps, exact, dt = [], True, dtype
    for _ in range(draw(st.integers(1, 3))):
        op, params = _step(draw, ndim, dt, exact)
        dt = _result_dtype(op, params, dt)
        exact = exact and _runs_scipys_arithmetic(op, params, dt)
        steps.append((op, params))
    return {
        "shape": shape, "chunks": chunks, "dtype": dtype, "steps": steps,
        "layout": draw(st.sampled_from(LAYOUTS)),
        "shard_factor": draw(st.integers(1, 3)),
        "face": draw(st.sampled_from(["workflow", "python"])),
        # the engine's blocks and inner chunks: one shard row per block up to one block
        "block_bytes": draw(st.sampled_from([1, 3000, 20000, 2**30])),
        "inner_bytes": draw(st.sampled_from([64, 700, 2**20])),
        "general_chunks": tuple(draw(st.integers(1, n)) for n in shape),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def _input(path: str, case: dict) -> np.ndarray:
    """The input array written in the case's layout; its values."""
    rng = np.random.default_rng(case["seed"])
    dtype, shape, chunks = case["dtype"], case["shape"], case["chunks"]
    if dtype.kind == "f":
        x = (rng.standard_normal(shape) * 20).astype(dtype)
    else:
        x = rng.integers(0 if dtype.kind == "u" else -50, 60, shape).astype(dtype)
    kw = {"chunks": chunks}
    if case["layout"] == "sharded":
        kw["shards"] = tuple(c * case["shard_factor"] for c in chunks)
    if case["layout"] == "uncompressed":
        kw["compressors"] = None
    zarr.create_array(path, shape=shape, dtype=dtype, **kw)[...] = x
    return x


def _scipy_step(x: np.ndarray, op: str, params: dict) -> np.ndarray:
    p = dict(params)
    if "output" in p:
        p["output"] = np.dtype(p["output"])
    if "weights" in p:
        p["weights"] = np.asarray(p["weights"], dtype=np.float64)
    widened = np.float64 if x.dtype.kind in "iu" else None
    if op == "derivative":
        taps = DIFFERENCES[(p.pop("order"), p.pop("accuracy"))]
        return ndi.correlate1d(x, taps, axis=p.pop("axis"), output=widened, **p)
    if op == "laplace":
        star = np.zeros((3,) * x.ndim)
        for a in range(x.ndim):
            star[tuple(slice(None) if b == a else 1 for b in range(x.ndim))] += [1.0, -2.0, 1.0]
        return ndi.correlate(x, star, output=widened, **p)
    return getattr(ndi, op)(x, **p)


def _scipy(x: np.ndarray, steps: list):
    """scipy on the whole array, step by step: (result, scale, later, coarsest). From the first
    step that is not scipy's arithmetic on: ``scale`` the largest magnitude of a step's result,
    ``later`` the steps after it, ``coarsest`` the narrowest float dtype of their results;
    (result, None, 0, None) when every step is scipy's arithmetic."""
    scale, later, coarsest = None, 0, None
    for op, params in steps:
        x = _scipy_step(x, op, params)
        if scale is None and not _runs_scipys_arithmetic(op, params, x.dtype):
            scale = 0.0
        elif scale is not None:
            later += 1
        if scale is not None:
            scale = max(scale, float(np.abs(x).max(initial=0)))
            if x.dtype.kind == "f" and (coarsest is None or x.dtype.itemsize < coarsest.itemsize):
                coarsest = x.dtype
    return x, scale, later, coarsest


def _lazy_steps(y, steps: list):
    for op, params in steps:
        y = getattr(dc, op)(y, **params)
    return y


def _run_engine(tmp: Path, case: dict) -> None:
    """The case's chain from in.zarr to out.zarr on the engine, through the case's face;
    fails unless the engine (not the general path) ran it."""
    if case["face"] == "workflow":
        doc = {"input": {"path": str(tmp / "in.zarr")},
               "steps": [{"op": op, **params} for op, params in case["steps"]],
               "outputs": {"path": str(tmp / "out.zarr")}, "device": "cpu"}
        (tmp / "wf.yaml").write_text(yaml.safe_dump(doc))
        summary = batch.run(batch.load(tmp / "wf.yaml"), progress=False)
        assert summary["path"] == "direct", summary
    else:
        report = dc.to_zarr(_lazy_steps(da.from_zarr(str(tmp / "in.zarr")), case["steps"]), str(tmp / "out.zarr"))
        assert report["path"] == "engine", report


def _every_inner_chunk_written(path: Path) -> None:
    """Every shard file is there and indexes every inner chunk: a block the engine skipped
    would read back as zarr's fill value, which may equal the expected value."""
    z = zarr.open_array(str(path), mode="r")
    assert z.shards is not None
    per = math.prod(s // c for s, c in zip(z.shards, z.chunks))
    for key in np.ndindex(*(-(-n // s) for n, s in zip(z.shape, z.shards))):
        tail = (path / "c").joinpath(*map(str, key)).read_bytes()[-(16 * per + 4):]
        index = np.frombuffer(tail[:-4], dtype="<u8").reshape(per, 2)
        assert (index[:, 0] != ABSENT).all(), f"shard {key} misses inner chunks"


def _case(dtype, shape, chunks, steps, face, layout="plain"):
    return {"shape": shape, "chunks": chunks, "dtype": np.dtype(dtype), "steps": steps, "layout": layout,
            "shard_factor": 2, "face": face, "block_bytes": 2**30, "inner_bytes": 2**20,
            "general_chunks": chunks, "seed": 1}


WEIGHTS = {"weights": [[1.0, 2.0, 3.0, 2.0, 1.0]], "output": "float64"}


# issue 50: a chain whose last step widens the dtype (a pair of steps planned as one dtype),
# and a step after a widening one planned on the input's dtype (a workflow's steps)
@example(_case("float32", (997, 547), (288, 249), [("uniform_filter", {"size": 3}), ("correlate", WEIGHTS)],
               "workflow"))
@example(_case("int32", (97, 54), (28, 24), [("median_filter", {"size": 3}), ("sobel", {}), ("correlate", WEIGHTS)],
               "python", "sharded"))
@example(_case("int16", (37, 29), (8, 9), [("laplace", {}), ("uniform_filter", {"size": 2})], "workflow",
               "uncompressed"))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_engine_equals_general_path_and_scipy(case):
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings(), \
            pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")  # thin chunks merged for a halo: reported, not wrong
        small_engine_blocks(mp, case["block_bytes"], case["inner_bytes"])
        mp.setattr(chain, "gpu_blocks", lambda client: False)  # the CPU engine: scipy's arithmetic
        tmp = Path(folder)
        x = _input(str(tmp / "in.zarr"), case)
        _run_engine(tmp, case)
        _every_inner_chunk_written(tmp / "out.zarr")
        got = zarr.open_array(str(tmp / "out.zarr"), mode="r")[...]
        general = _lazy_steps(da.from_zarr(str(tmp / "in.zarr"), chunks=case["general_chunks"]), case["steps"])
        general = general.compute()
    ref, scale, later, coarsest = _scipy(x, case["steps"])
    assert got.dtype == ref.dtype == general.dtype, (got.dtype, ref.dtype, general.dtype)
    np.testing.assert_array_equal(got, general)
    if scale is None:
        np.testing.assert_array_equal(got, ref)
    else:  # last-bit differences of the uniform step, grown by the steps after it
        rtol = TOL[coarsest][0]
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * max(scale, 1.0) * 8**later)
