"""Array kinds without importing cupy, dask or xarray: what a value is and where it lives."""

from __future__ import annotations

import numpy as np


def is_cupy(a) -> bool:
    """True for cupy arrays, without importing cupy."""
    return type(a).__module__.split(".")[0] == "cupy"


def array_kind(x) -> str:
    """'xarray', 'dask', 'cupy', 'planned' (core.planned: a plan's stand-in) or 'numpy' (without
    importing any of them)."""
    mod = type(x).__module__.split(".")[0]
    if mod in ("xarray", "dask"):
        return mod
    if mod == "distconv" and type(x).__name__ == "Planned":
        return "planned"
    return "cupy" if is_cupy(x) else "numpy"


def array_module(a):
    """numpy or cupy, whichever owns ``a``."""
    if is_cupy(a):
        import cupy

        return cupy
    return np


def own_slice(flat, start: int, stop: int):
    """``flat[start:stop]`` of a 1-D array as an array of its own over the same memory. CuPy
    views keep their base's 64-bit indexing (a base over 2 GiB: a batch's decoded chunks), so
    their copies ran slower kernels than a block-sized array's, and other ones than those a
    worker had loaded before its blocks (engine/rehearsal.py); a span under 2 GiB indexes
    with 32 bits."""
    if not (flat.ndim == 1 and flat.flags.c_contiguous and 0 <= start <= stop <= flat.size):
        raise ValueError(f"own_slice takes a contiguous 1-D array and a range within it, got shape "
                         f"{flat.shape} and {start}:{stop}")
    if not is_cupy(flat):
        return flat[start:stop]
    import cupy

    return cupy.ndarray((stop - start,), flat.dtype, memptr=flat.data + start * flat.dtype.itemsize)


def to_host(a) -> np.ndarray:
    return a.get() if is_cupy(a) else np.asarray(a)


def into(out, result):
    """``result`` written into ``out`` and ``out`` returned; ``result`` itself without one."""
    if out is None or result is out:
        return result
    out[...] = result
    return out


def on_data(x, fn):
    """``fn`` applied to a DataArray's data (shape-preserving; dims, coords, attrs kept), or to
    the array itself. The source's encoding (its stored dtype, chunks, fill value, scale) does
    not describe the result: it is dropped, so ``.to_zarr`` writes the result as it is."""
    if array_kind(x) == "xarray":
        out = x.copy(data=fn(x.data))
        out.encoding = {}
        return out
    return fn(x)


class LazyModule:
    """A module imported on its first attribute read: a module-level name for a heavy import
    (dask.array) that a module's functions use, so importing the module does not import it."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self._name), attr)
