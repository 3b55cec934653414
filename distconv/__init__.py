"""distconv: convolution, stencils, scans, reductions, histograms and k-means over large
N-D arrays (numpy, cupy, dask, xarray), on every GPU of a node.

Importing distconv never imports cupy and never touches a GPU. It imports none of dask.array,
xarray or zarr either: the ops load on first use (``dc.gaussian_filter`` and the others,
``dc.to_zarr``), and the ``.distconv`` accessor is there as soon as xarray is imported,
before or after distconv (the ops load when it is first looked up). So a `distconv run` handed to the process kept warm beside a running
cluster (distconv/session/handoff.py) starts in a fraction of a second.
"""

import importlib
import sys

from .session.cluster import cluster  # noqa: F401  (the function)

__version__ = "0.1.0"


def __getattr__(name: str):
    """The public ops of the registry and ``to_zarr``, imported on first use."""
    if name.startswith("__") and name != "__all__":
        raise AttributeError(name)
    from .ops.registry import OPS

    if name == "__all__":
        return ["cluster", "to_zarr", *OPS]
    if name == "to_zarr":
        from .ops.stores import to_zarr as found
    elif name in OPS:
        found = OPS[name].func
    else:
        raise AttributeError(f"module 'distconv' has no attribute {name!r}")
    globals()[name] = found
    return found


def __dir__():
    return sorted({*globals(), *__getattr__("__all__")})


class _AccessorStandIn:
    """``.distconv`` on xarray's DataArray and Dataset until it is first looked up (the class's
    ``help()`` and ``dir()`` included): then distconv/xarray.py, which defines the accessors
    whole from the ops' registry, registers them in its place. The ops are not imported inside
    xarray's own import, where the import of an op that pulled xarray in is still under way."""

    stand_in = True  # how distconv/xarray.py knows it (without importing this module back)

    def __get__(self, obj, cls):
        from . import xarray  # noqa: F401  (replaces this stand-in with the accessor)

        if any(vars(c).get("distconv") is self for c in cls.__mro__):  # looked up while that import runs
            raise AttributeError(f"{cls.__name__}.distconv is being defined")
        return getattr(cls if obj is None else obj, "distconv")


def _stand_in(xr):
    for cls in (xr.DataArray, xr.Dataset):
        if "distconv" not in vars(cls):
            setattr(cls, "distconv", _AccessorStandIn())


class _AccessorOnXarrayImport:
    """A finder ahead of the others that, the first time xarray is imported, puts the
    accessor's stand-in on its classes right after xarray's own module has run (that imports
    nothing, so it is safe inside any import that pulls xarray in)."""

    def find_spec(self, name, path=None, target=None):
        if name != "xarray":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:  # another thread's import of xarray took it first
            return None
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _stand_in(module)

            spec.loader.exec_module = exec_module
        return spec


if "xarray" in sys.modules:
    _stand_in(sys.modules["xarray"])
else:
    import importlib.util

    sys.meta_path.insert(0, _AccessorOnXarrayImport())
