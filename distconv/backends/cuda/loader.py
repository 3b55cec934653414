"""Kernel sources -> compiled cupy RawModules, lazily, memoized per device.

Sources live in kernels/<pattern>.cu, shipped inside the wheel (distconv/kernels) and found
beside the package when running from a source tree. ``#include "common.cuh"`` is inlined so
cupy's compile cache key covers the header. Compilation happens on first use in the process
that launches (a dask worker), never at import and never in a client without blocks on GPU.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import re
import threading
import time
from pathlib import Path

PATTERNS = ("convolve", "rank", "scan", "reduce", "histogram", "kmeans", "transpose", "zstd")
_INCLUDE = re.compile(r'^#include "([\w.]+)"\s*$', re.M)
_OPTIONS = ("-std=c++17", "-DNDEBUG")


def kernel_dir() -> Path:
    """Directory holding the .cu/.cuh sources (installed wheel first, then the source tree)."""
    packaged = importlib.resources.files("distconv") / "kernels"
    if packaged.is_dir():
        return Path(str(packaged))
    tree = Path(__file__).resolve().parents[3] / "kernels"
    if tree.is_dir():
        return tree
    raise FileNotFoundError(f"distconv kernel sources not found in {packaged} or {tree}")


@functools.cache
def source(pattern: str) -> str:
    """The pattern's CUDA source with its local headers inlined."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")
    root = kernel_dir()

    def inline(text: str, seen: set) -> str:
        def repl(m):
            name = m.group(1)
            if name in seen:
                return ""
            seen.add(name)
            return inline((root / name).read_text(), seen)

        return _INCLUDE.sub(repl, text)

    return inline((root / f"{pattern}.cu").read_text(), set())


_DEFINE = re.compile(r"^#define\s+(DC_\w+)\s+(-?\d+)\b", re.M)


@functools.cache
def defines() -> dict:
    """Every ``#define DC_NAME <integer>`` of the kernel sources: the numbers a launcher shares
    with its kernel (block sizes, tiles, constant-memory slots) are read from here, never
    written again in Python."""
    out: dict = {}
    for f in sorted(kernel_dir().glob("*.cu*")):
        for name, value in _DEFINE.findall(f.read_text()):
            if out.get(name, int(value)) != int(value):
                raise ValueError(f"{name} is defined twice with different values in kernels/")
            out[name] = int(value)
    return out


def define(name: str) -> int:
    return defines()[name]


_lock = threading.Lock()
_modules: dict = {}


def module(pattern: str, name_expression: str):
    """The RawModule holding one kernel instantiation on the current device (compiled once)."""
    import cupy

    key = (cupy.cuda.runtime.getDevice(), pattern, name_expression)
    mod = _modules.get(key)
    if mod is None:
        with _lock:
            mod = _modules.get(key)
            if mod is None:
                t0 = time.perf_counter()
                mod = cupy.RawModule(code=source(pattern), options=_OPTIONS,
                                     name_expressions=[name_expression])
                mod.compile()
                _modules[key] = mod
                _log_load(pattern, name_expression, time.perf_counter() - t0)
    return mod


def _log_load(pattern: str, name_expression: str, seconds: float):
    """One line per kernel loaded into a process, appended to the file DISTCONV_KERNEL_LOG names
    (unset: nothing): which instantiations a run's processes build or find in the cache, and
    how long each took (a compile takes ~0.3-1 s, a cache hit ~ms). Tab-separated: pid, the
    process's name (multiprocessing's: a dask worker's, or MainProcess), seconds, pattern, kernel."""
    path = os.environ.get("DISTCONV_KERNEL_LOG")
    if path:
        import multiprocessing

        line = "\t".join([str(os.getpid()), multiprocessing.current_process().name, f"{seconds:.3f}", pattern,
                          name_expression])
        try:
            with open(path, "a") as f:  # one short write a line: the processes' lines do not mix
                f.write(line + "\n")
        except OSError:  # a diagnostic: a log that cannot be written never fails a block
            pass


def function(pattern: str, name_expression: str, shared_bytes: int = 0):
    """The compiled kernel, its dynamic shared-memory limit raised when it needs > 48 KiB."""
    fn = module(pattern, name_expression).get_function(name_expression)
    if shared_bytes > 48 * 1024 and fn.max_dynamic_shared_size_bytes < shared_bytes:
        fn.max_dynamic_shared_size_bytes = shared_bytes
    return fn


def template(name: str, *args) -> str:
    """C++ name expression ``name<a, b, ...>`` from validated Python values (no user text)."""
    parts = []
    for a in args:
        if isinstance(a, bool):
            parts.append("true" if a else "false")
        elif isinstance(a, int):
            parts.append(str(int(a)))
        elif isinstance(a, str) and re.fullmatch(r"[A-Za-z_][\w ]*", a):
            parts.append(a)
        else:
            raise ValueError(f"bad template argument {a!r}")
    return f"{name}<{', '.join(parts)}>"


def warm_cupy():
    """CuPy's own kernels that blocks launch, loaded into this process ahead of its first block
    (engine/prewarm.py), and built into the node's cache on a fresh node (engine/rehearsal.py):
    the strided copies of block rows out of decoded chunks (engine/plain_chunks.gather sees a
    chunk row's frames of n-D data as 2 n - 1 axes: up to 3-D data here) and of trims, and the
    finite check before a correlate (convolve.finite: isfinite, then CUB's two-pass ``all``,
    whose source holds its block size: 512 threads from 2048 items a pass on). A process's
    first CuPy kernel of a set of compile options first asks NVRTC for its version by
    compiling an empty file, and each kernel is loaded at its first launch: a fresh worker's
    first blocks paid these at once in every slot. float32 here: a job's kernels of other
    dtypes and shapes are launched by its workers before its blocks (rehearsal.prepare)."""
    import cupy

    for nd in range(1, 6):
        src = cupy.zeros((3,) * nd, cupy.float32)
        cupy.ascontiguousarray(src.T)  # every axis strided, into a new array
        dst = cupy.empty((3,) * nd, cupy.float32)
        dst[(slice(0, 2),) * nd] = src[(slice(1, 3),) * nd]  # a view into a view
    for dtype in (cupy.float32, cupy.float64):
        bool(cupy.isfinite(cupy.zeros(2048 * 2048, dtype)).all())
    cupy.cuda.get_current_stream().synchronize()


def cache_dir() -> str:
    """CuPy's kernel cache folder (CUPY_CACHE_DIR, default ~/.cupy/kernel_cache): compiled
    modules on disk, shared by every process of the node, so a kernel is built once a node."""
    return os.environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache")


def cached_kernels() -> int:
    """How many compiled modules the kernel cache holds (not the sources CuPy may save beside
    them: CUPY_CACHE_SAVE_CUDA_SOURCE)."""
    try:
        return sum(1 for e in os.scandir(cache_dir()) if e.is_file() and not e.name.endswith(".cu"))
    except OSError:
        return 0


def build_id() -> str:
    """What a compiled kernel depends on besides its name expression: the kernel sources, the
    compile options, CuPy's version and this GPU's architecture (a digest)."""
    import hashlib

    import cupy

    what = repr(([source(p) for p in PATTERNS], _OPTIONS, cupy.__version__, cupy.cuda.Device().compute_capability))
    return hashlib.sha256(what.encode()).hexdigest()[:16]
