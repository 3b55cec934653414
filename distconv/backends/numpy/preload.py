"""Imported by the process CPU workers fork from (session.forkserver): numba and the
compiled kernels' module imported once there (compiled.warm) instead of in every worker at its
first block; a machine without numba imports nothing more."""

from .compiled import warm

try:
    warm()
except Exception:  # noqa: BLE001 - a head start only: a failure here must not stop the server
    pass           # (multiprocessing's forkserver stops on an import's error); blocks import as before
