"""Workflow inputs: a Zarr array or a dataset variable (synthetic.py writes one a workflow
defines), cut to a region, planned into compute chunks and, on GPU workers, moved to the GPU."""

from __future__ import annotations

from ..core.planned import Planned, lazy_of
from ..engine.location import Location
from ..engine.source import Stored, read_stored
from .workflow import Workflow, WorkflowError, region_edges


def ensure_input(wf: Workflow, client=None, progress: bool = False) -> float:
    """Write the synthetic input when it is asked for and not written whole from this
    definition (on ``client``; ``progress``: shown as it is written); refuse a missing input.
    Returns the seconds spent writing it (0.0 when nothing was written)."""
    from . import synthetic

    inp = wf.input
    if wf.opened is not None and wf.opened[1][1] is None:
        wf.opened = None  # the synthetic definition (written here, or by another workflow): open it stored
    if "synthetic" not in inp:
        if not Location(inp["path"]).exists():
            raise WorkflowError(f"input.path {inp['path']!r} does not exist")
        return 0.0
    if synthetic.is_written(inp):
        return 0.0
    return synthetic.write(inp, client, progress)


def lazy_input(wf: Workflow):
    """The input as whole_input gives it, region applied when it is cut before the steps."""
    arr = whole_input(wf)
    if wf.input.get("region") is not None and _cut_first(wf):
        arr = _region(arr, wf.input["region"])
    return arr


def whole_input(wf: Workflow):
    """The whole input: an array as planned (core.planned: its shape, dtype and stored
    description, read from its metadata), a dataset variable as a lazy DataArray; nothing read
    but metadata and coordinates. A synthetic input not written yet is planned from its
    definition, so a workflow can be checked whole before anything runs. Opened once for
    ``wf``, and handed down from there: the check, the job's identity, the plan and the run all
    read this one."""
    inp = wf.input
    key = (inp["path"], inp.get("variable"), repr(inp.get("synthetic")))
    if wf.opened is None or wf.opened[0] != key:
        wf.opened = (key, _open(wf))
    return wf.opened[1][0]


def stored_input(wf: Workflow):
    """What ``wf``'s input was opened from: the stored array's description (engine.source.Stored),
    or the xarray Dataset of a variable (None for a synthetic input not written yet)."""
    whole_input(wf)
    return wf.opened[1][1]


def _open(wf: Workflow):
    """(the whole input: planned, or a lazy DataArray; its Stored or Dataset, or None when
    synthetic)."""
    from ..engine import storage

    from . import synthetic

    inp = wf.input
    if "synthetic" in inp and not synthetic.is_written(inp):
        if "variable" in inp:  # nothing read: the check runs on its definition
            return synthetic.definition(inp)[inp["variable"]], None
        spec = inp["synthetic"]
        return Planned.root(spec["shape"], spec.get("dtype", "float32"), None,
                            lambda: synthetic.definition(inp)), None
    if not Location(inp["path"]).exists():
        raise WorkflowError(f"input.path {inp['path']!r} does not exist")
    if "variable" in inp:
        try:
            ds = open_dataset(inp["path"])
        except Exception as e:  # noqa: BLE001 - not a dataset: say which key and value
            raise WorkflowError(f"input.path {inp['path']!r} is not a Zarr dataset: {e}") from None
        if inp["variable"] not in ds.data_vars:
            raise WorkflowError(f"input.variable {inp['variable']!r} is not in {inp['path']!r}; "
                                f"it has {', '.join(map(str, ds.data_vars)) or 'no variables'}")
        return ds[inp["variable"]], ds
    path = inp["path"]
    stored = read_stored(path)  # a local array's metadata file, read as JSON
    if stored is None:  # anything else: zarr-python reads it
        try:
            arr = storage.open_array(path)
        except (ValueError, FileNotFoundError) as e:
            raise WorkflowError(f"input.path: {e}") from None
        z = storage.zarr_source(arr)[0]
        where = storage.store_path(z)[0] if z is not None else None
        stored = Stored.of_zarr(z, where or path) if z is not None else None
        return Planned.root(arr.shape, arr.dtype, stored, lambda: arr), stored
    return Planned.root(stored.shape, stored.dtype, stored, lambda: storage.open_array(path)), stored


# attributes of an input array that say how its stored values are encoded (CF, xarray) or
# where its dims are: they do not describe a result computed from the values as stored
_ENCODING_ATTRS = {"_FillValue", "missing_value", "scale_factor", "add_offset", "_Unsigned", "dtype",
                   "_ARRAY_DIMENSIONS", "distconv"}


def array_dims(wf: Workflow) -> list | None:
    """The dimension names of ``wf``'s input array (Zarr v3's ``dimension_names``, or the
    ``_ARRAY_DIMENSIONS`` xarray gives a Zarr v2 array), which its output keeps; None for a
    dataset variable (its dims come with it), a synthetic input or an array without names."""
    from ..engine.source import dims_of

    z = stored_input(wf) if "variable" not in wf.input else None
    if z is None:
        return None
    dims = dims_of(z.meta)
    return None if dims is None else list(dims)


def array_attrs(wf: Workflow) -> dict:
    """The attributes of ``wf``'s input array that its output keeps (those that describe the
    data, not how its stored values are encoded); {} for a dataset variable or a synthetic
    input."""
    z = stored_input(wf) if "variable" not in wf.input else None
    if z is None:
        return {}
    return {k: v for k, v in dict(z.attrs).items() if k not in _ENCODING_ATTRS}


def _cut_first(wf: Workflow) -> bool:
    """Is the region cut from the input before the steps (its edges get the steps' boundary
    modes: ``region_edges: mode``), rather than from the result (``data``: the values the
    whole array's result has there)?"""
    return region_edges(wf.input) == "mode"


def cut_result(wf: Workflow, arr):
    """The step's result cut to the region when the region is cut after the steps."""
    region = wf.input.get("region")
    return arr if not region or _cut_first(wf) else _region(arr, region)


def region_problems(region, shape, dims=None) -> list[str]:
    """Every problem of ``input.region`` against an array of ``shape`` (and ``dims``, the
    dimension names of a dataset variable), as messages naming the key and value."""
    if not isinstance(region, dict) or not region:
        return [f"input.region must be a mapping {{axis or dim: [start, stop]}}, got {region!r}"]
    problems, seen = [], set()
    for key, bounds in region.items():
        where = f"input.region[{key!r}]"
        if dims is not None:
            if str(key) not in map(str, dims):
                problems.append(f"{where}: {key!r} is not a dimension of the input; its dims are "
                                f"{', '.join(map(str, dims))}")
                continue
            axis = [str(d) for d in dims].index(str(key))
        else:
            try:
                axis = int(key) if not isinstance(key, bool) else None
            except (TypeError, ValueError):
                axis = None
            if axis is None or str(axis) != str(key).strip() or not 0 <= axis < len(shape):
                hint = " (names need input.variable)" if isinstance(key, str) and not str(key).isdigit() else ""
                problems.append(f"{where}: the key must be an axis 0..{len(shape) - 1} of the input's "
                                f"{len(shape)} axes, got {key!r}{hint}")
                continue
        if axis in seen:
            problems.append(f"{where}: axis {axis} is given twice")
        seen.add(axis)
        n = shape[axis]
        ok = (isinstance(bounds, (list, tuple)) and len(bounds) == 2
              and all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds))
        if not ok:
            problems.append(f"{where} must be [start, stop] (integers, or null for the edge), got {bounds!r}")
            continue
        start, stop = 0 if bounds[0] is None else bounds[0], n if bounds[1] is None else bounds[1]
        if not 0 <= start < stop <= n:
            problems.append(f"{where} is {list(bounds)!r}; it needs 0 <= start < stop <= {n} "
                            f"(axis {axis} has {n} elements)")
    return problems


def region_box(region, shape, dims=None) -> tuple:
    """((start, stop), ...) per axis of an array of ``shape`` (``dims``: its dimension names)
    that ``region`` selects, null edges filled in (checked first: a WorkflowError names every
    problem)."""
    problems = region_problems(region, shape, dims)
    if problems:
        raise WorkflowError("; ".join(problems))
    names = [str(d) for d in dims] if dims is not None else None
    box = [(0, n) for n in shape]
    for key, (start, stop) in region.items():
        axis = names.index(str(key)) if names is not None else int(key)
        box[axis] = (0 if start is None else start, shape[axis] if stop is None else stop)
    return tuple(box)


def _region(arr, region):
    """``arr`` cut to ``region`` (checked first: a WorkflowError names every problem)."""
    dims = list(arr.dims) if hasattr(arr, "dims") else None
    cut = tuple(slice(a, b) for a, b in region_box(region, arr.shape, dims))
    return arr.isel(dict(zip(dims, cut))) if dims is not None else arr[cut]


def dataset_attrs(wf: Workflow) -> dict:
    """The attributes of the dataset a variable input comes from (title, history, ...), which a
    dataset output keeps."""
    return dict(stored_input(wf).attrs)


def open_dataset(path: str):
    """``xr.open_zarr`` of ``path``: its consolidated metadata where it has them, else its
    arrays' own (consolidated=None did the same, with a RuntimeWarning for a dataset written
    without them that its user cannot act on)."""
    import xarray as xr

    try:
        return xr.open_zarr(path, consolidated=True)
    except (ValueError, KeyError):  # no consolidated metadata: zarr says so with a ValueError
        return xr.open_zarr(path, consolidated=False)


def open_input(wf: Workflow, gpu: bool):
    """The input as a dask array (or DataArray) in compute chunks, with its storage chunks and
    size."""
    from ..engine import storage

    ensure_input(wf)
    arr = lazy_of(lazy_input(wf))
    if hasattr(arr, "dims"):
        stored = tuple(c[0] for c in arr.data.chunks)
        data = compute_chunks(arr.data, wf.chunks, gpu)
        if gpu:
            data = storage.to_device_blocks(data)
        arr = arr.copy(data=data)
        return arr, {"storage": stored, "nbytes": cut_result(wf, arr).nbytes, "array": arr}
    stored = tuple(c[0] for c in arr.chunks)
    arr = compute_chunks(arr, wf.chunks, gpu)
    if gpu:
        arr = storage.to_device_blocks(arr)
    return arr, {"storage": stored, "nbytes": cut_result(wf, arr).nbytes, "array": arr}


def compute_chunks(arr, chunks, gpu: bool):
    """``arr`` in the chunks the workflow's ``chunks:`` asks for (auto: the path's default bytes)."""
    from ..engine import storage

    if chunks == "auto":
        return storage.compute_chunks(arr, storage.GPU_CHUNK_BYTES if gpu else storage.CPU_CHUNK_BYTES)
    if chunks is not None:
        return arr.rechunk(tuple(chunks))
    return arr
