"""``import distconv`` registers the ``.distconv`` xarray accessor (distconv/xarray.py) — at
once when xarray is already imported, else the moment xarray is: importing xarray and pandas
costs a run on a Zarr array ~0.3-0.5 s of start-up in the client and in every worker (NOTES.md,
issue 13), for an accessor such a run never uses."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when xarray is about to load, wraps its loader so that the
    accessor module is imported right after xarray's own code has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "xarray":
            return None
        sys.meta_path.remove(self)  # the other finders locate the real package
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            importlib.import_module("distconv.xarray")

        spec.loader.exec_module = exec_module
        return spec


def register():
    if "xarray" in sys.modules:
        importlib.import_module("distconv.xarray")
    elif not any(isinstance(f, _RegisterOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterOnImport())
