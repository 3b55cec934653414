"""Per-block implementations: one array (or halo tile) in, one array out, no dask.

Every pattern module here has the numpy path (scipy/numpy, also the test oracle) and the cupy
path (a launcher for kernels/<pattern>.cu) side by side, chosen by the block's type.
"""

from __future__ import annotations

import numpy as np


def is_cupy(a) -> bool:
    """True for cupy arrays, without importing cupy."""
    return type(a).__module__.split(".")[0] == "cupy"


def array_module(a):
    """numpy or cupy, whichever owns ``a``."""
    if is_cupy(a):
        import cupy

        return cupy
    return np


def to_host(a) -> np.ndarray:
    return a.get() if is_cupy(a) else np.asarray(a)
