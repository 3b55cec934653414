"""Synthetic workflow inputs: the data ``input.synthetic`` defines, and its writing.

A synthetic input is written under distconv's owner mark, which records the definition it was
made from, and is complete only once its completion mark is written last; the mark is what
makes a write interrupted half-way, or made from another definition, distconv's to write again.
A path that holds anything else is a user's data: it is never replaced.
"""

from __future__ import annotations

import json
import time

import numpy as np

from ..core.arrays import LazyModule
from ..engine import fencing, marks, ownership, storage
from ..engine.location import Location, join
from .workflow import WorkflowError

da = LazyModule("dask.array")  # imported where a function first uses it

WRITER = "distconv synthetic input"  # the owner mark's "by": what tells our input from an output


def recorded(inp: dict) -> dict:
    """What the owner mark of ``inp``'s synthetic input records: its definition with the
    defaults filled in, as JSON reads it back (so a rewritten file compares equal)."""
    spec = inp["synthetic"]
    made = {"shape": list(spec["shape"]), "chunks": list(spec["chunks"]),
            "dtype": str(np.dtype(spec.get("dtype", "float32"))), "seed": spec.get("seed", 0)}
    if "variable" in inp:
        made |= {"variable": inp["variable"], "dims": spec.get("dims")}
    return json.loads(json.dumps({"synthetic": made}))


def is_written(inp: dict) -> bool:
    """Is ``inp``'s synthetic input at its path, whole and made from this definition? False
    when nothing is there, or when distconv's own synthetic input there is unfinished or was
    made from another definition (it is written again). Raises WorkflowError when the path
    holds what distconv did not write as a synthetic input: that is never replaced."""
    path = inp["path"]
    where = Location(path)
    if not where.names() and not where.is_file():
        return False
    try:
        mark = json.loads(where.child(marks.OWNER).read_text())
    except (OSError, ValueError):
        mark = None
    if not isinstance(mark, dict) or mark.get("by") != WRITER:
        raise WorkflowError(f"input.path {path!r} holds data distconv did not write as input.synthetic "
                            "(or an older distconv wrote it, recording nothing); distconv never replaces "
                            "it: remove input.synthetic to read that data as the input, or choose another "
                            "input.path")
    try:
        return ownership.check_target(path, overwrite=True, resume=True, key="input.path",
                                      job=recorded(inp)) == "done"
    except marks.OutputError as e:  # a file of someone else's inside it
        raise WorkflowError(str(e)) from None


def definition(inp: dict):
    """The lazy synthetic input ``inp`` defines (a Dataset when input.variable is set)."""
    spec = inp["synthetic"]
    args = (spec["shape"], spec["chunks"])
    if "variable" in inp:
        return synthetic_dataset(inp["variable"], *args, spec.get("dims"), spec.get("dtype", "float32"),
                                 spec.get("seed", 0))
    return synthetic(*args, spec.get("dtype", "float32"), spec.get("seed", 0))


def write(inp: dict, client=None, progress: bool = False) -> float:
    """Write ``inp``'s synthetic input to its path, replacing distconv's own unfinished or
    differently made one there (is_written said which); returns the seconds it took.
    ``progress``: a line saying what is written, then a bar on a terminal (lines on a pipe).
    Its blocks are written as an output's are (engine.write: each a fenced write; failed or
    interrupted, the run is stopped and the writes under way waited for)."""
    from ..engine.progress import Progress

    t0 = time.perf_counter()
    path, lazy = inp["path"], definition(inp)
    claim = ownership.claim(path, overwrite=True, key="input.path", who=WRITER, job=recorded(inp))
    with fencing.stopped_on_failure(claim):  # interrupted or failed: the next run may write it again
        if "variable" in inp:
            dst, data, attrs, dims = _dataset_frame(path, lazy, inp["variable"])
        else:
            dst, data, attrs, dims = path, lazy, None, None
        shown = None
        if progress:
            print(f"distconv: writing the synthetic input {path} ({' x '.join(map(str, data.shape))} "
                  f"{data.dtype}, {data.nbytes / 1e6:.1f} MB)", flush=True)
            shown = Progress(label="distconv: synthetic input")
        _store(data, dst, claim, client, attrs, dims, inp["synthetic"]["chunks"], shown)
        if "variable" in inp:
            storage.consolidate(path)
        marks.mark_complete(path, {"synthetic": True}, claim)
    return time.perf_counter() - t0


def _store(data, dst: str, claim, client, attrs, dims, chunks, shown):
    """``data`` written into a new array at ``dst`` of storage ``chunks`` through the engine's
    writer for dask data, counted by ``shown`` (a Progress) as its blocks finish."""
    from ..engine.chain import Plan
    from ..engine.compute import write as engine_write

    engine_write(Plan(data=data), dst, claim, client, attrs, dims, storage_chunks=chunks, progress=shown)


def _dataset_frame(path: str, ds, variable: str):
    """A dataset's group, its coordinates and attributes written (its entries recorded in the
    owner mark first); returns (the variable's array path, its data, attributes, dims)."""
    var = ds[variable]
    marks.record_entries(path, [variable, *map(str, var.coords)])
    storage.write_dataset_frame(path, var, dict(ds.attrs))
    return join(path, variable), var.data, dict(var.attrs), list(map(str, var.dims))


def synthetic_dataset(variable: str, shape, chunks, dims=None, dtype="float32", seed: int = 0):
    """A lazy xarray dataset (time, lat, lon by default): a smooth field plus noise, in kelvin,
    on coordinates that look like a globe (lat -90..90, lon 0..360 exclusive, hourly time)."""
    import xarray as xr

    dims = list(dims or ["time", "lat", "lon"][-len(shape):])
    coords = {d: _coordinate(d, n) for d, n in zip(dims, shape)}
    rs = da.random.RandomState(seed)
    unit = [da.from_array(np.linspace(0.0, 1.0, n), chunks=c) for n, c in zip(shape, chunks)]
    grids = da.meshgrid(*unit, indexing="ij")
    field = sum(da.sin(2 * np.pi * (i + 1) * g) for i, g in enumerate(grids))
    field = field + 0.1 * rs.standard_normal(tuple(shape), chunks=tuple(chunks))
    kelvin = np.dtype(dtype).kind == "f"  # integers: the field's anomaly, spread as synthetic()'s
    data = (field + 280.0).astype(dtype) if kelvin else _in_dtype(_spread(field, len(shape), dtype), dtype)
    ds = xr.Dataset({variable: (dims, data.rechunk(tuple(chunks)))}, coords=coords,
                    attrs={"title": "distconv synthetic dataset"})
    if kelvin:
        ds[variable].attrs["units"] = "K"
    for d in dims:
        ds[d].attrs.update(_COORD_ATTRS.get(d, {}))
    return ds


_COORD_ATTRS = {"lat": {"units": "degrees_north", "standard_name": "latitude"},
                "lon": {"units": "degrees_east", "standard_name": "longitude"},
                "time": {"long_name": "time", "units": "hours"}}


def _coordinate(dim: str, n: int) -> np.ndarray:
    if dim == "lat":
        return np.linspace(-90.0, 90.0, n)
    if dim == "lon":
        return np.arange(n) * (360.0 / n)
    return np.arange(n, dtype=np.float64)


def synthetic(shape, chunks, dtype="float32", seed: int = 0):
    """A lazy smooth random field with noise (so filters have structure to act on), in
    ``dtype``: integers spread over up to +-1000 (0..1000 unsigned; within the dtype's range),
    bool where the field is positive."""
    rs = da.random.RandomState(seed)
    noise = rs.standard_normal(tuple(shape), chunks=tuple(chunks))
    grids = da.meshgrid(*[da.linspace(0, 6 * np.pi, n, chunks=c) for n, c in zip(shape, chunks)],
                        indexing="ij")
    field = sum(da.sin(g * (i + 1)) for i, g in enumerate(grids))
    if np.dtype(dtype).kind == "f":  # summed in the dtype itself
        return (field.astype(dtype) + 0.3 * noise.astype(dtype)).rechunk(tuple(chunks))
    return _in_dtype(_spread(field + 0.3 * noise, len(shape), dtype), dtype).rechunk(tuple(chunks))


def _spread(field, ndim: int, dtype):
    """A field of ``ndim`` unit sines plus noise (|field| <= ndim + ~1) scaled for an integer
    ``dtype``, so its integers take many values: up to +-1000 (0..1000 unsigned) within the
    dtype's range; as it is for other dtypes."""
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        return field
    half = min(1000, np.iinfo(dt).max) / (2 if dt.kind == "u" else 1)
    return (field / (ndim + 1.5)).clip(-1, 1) * half + (half if dt.kind == "u" else 0)


def _in_dtype(values, dtype):
    """Float ``values`` as ``dtype``: integers rounded and clipped to its range (a cast alone
    wraps around), bool where positive."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return values > 0
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return da.round(values).clip(info.min, info.max).astype(dt)
    return values.astype(dt)


SYNTHETIC_DTYPES = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "bool")


def synthetic_dtype_problem(value) -> str | None:
    """Why ``input.synthetic.dtype`` cannot be made, or None: it must name a dtype distconv
    processes (float32/float64, integers or bool)."""
    from ..core.checks import did_you_mean

    allowed = ", ".join(SYNTHETIC_DTYPES[:-1]) + f" or {SYNTHETIC_DTYPES[-1]}"
    try:
        dt = np.dtype(value) if isinstance(value, str) else None
    except TypeError:
        dt = None
    if dt is not None and dt.kind in "biuf" and dt != np.float16:
        return None
    if dt is not None:
        return f"input.synthetic.dtype {value!r} is a dtype distconv does not process; allowed: {allowed}"
    return f"input.synthetic.dtype {value!r} is not a dtype{did_you_mean(value, SYNTHETIC_DTYPES)}; allowed: {allowed}"
