"""Where numba keeps the compiled CPU kernels (compiled.py, _kernels.py) on this machine, found
without importing numba, and the mark of a compile under way there (session.builds compiles a
fresh machine's kernels beside a first run, whose blocks run scipy meanwhile)."""

from __future__ import annotations

import os

# the kernels a Python call enters (the others compile inside them); a compile is one of these
# for one combination of argument types
ENTRIES = ("correlate_nd", "pass_last", "pass_mid", "extremum_last", "extremum_mid", "rank_nd", "rank_omit_nd")


def cache_dirs() -> list:
    """The folders numba may keep the kernels' compiled code in, as its locators choose them
    (NUMBA_CACHE_DIR's alone where it is set; else beside _kernels.py, or the user's cache folder
    where that is read-only), found without importing numba: every process of the machine (the
    command, each worker) reads the same one."""
    import hashlib

    here = os.path.dirname(os.path.abspath(__file__))
    sub = "_".join([os.path.basename(here), hashlib.sha1(here.encode()).hexdigest()])  # numba's subpath
    user = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given:
        return [os.path.join(given, sub)]
    return [os.path.join(here, "__pycache__"), os.path.join(user, "numba", sub)]


def cached_here() -> bool:
    """Has this machine compiled kernels before (numba's index of the N-D correlate in one of
    cache_dirs)? Then a command starts no compile of its own (session.builds)."""
    import glob

    return any(glob.glob(os.path.join(d, "_kernels.correlate_nd-*.nbi")) for d in cache_dirs())


COMPILING = "distconv-compiling"  # the marker, in one of cache_dirs(), of a compile under way (its pid)


def compiling() -> bool:
    """Is a compile of the kernels under way on this machine (session.builds, while a first
    run's blocks run)? Its blocks run scipy meanwhile (the same numbers) rather than compile
    the same kernels again each. The compile holds a lock on its marker: a marker left by one
    that was killed counts for nothing, whatever process has its pid since."""
    for folder in cache_dirs():
        try:
            f = open(os.path.join(folder, COMPILING))
        except OSError:
            continue
        with f:
            if held(f):
                return True
    return False


def held(f) -> bool:
    """Does another process hold the lock on the open file ``f`` (kernel_cache's marker)? This
    process's own marker (the compile's own calls) counts for nothing."""
    try:
        pid = int(f.read().strip() or 0)
    except ValueError:
        return False
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        import fcntl
    except ImportError:  # no advisory locks here: the pid written in it, alive
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:  # alive, another user's
            pass
        return True
    try:
        fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    fcntl.flock(f, fcntl.LOCK_UN)
    return False


def compiled_count() -> int:
    """Kernels this process compiled (not found in the cache): one per entry and argument types."""
    from . import _kernels as k

    return sum(len(getattr(k, name).stats.cache_misses) for name in ENTRIES)


def cache_path() -> str:
    """The folder numba keeps this process's compiled kernels in."""
    from . import _kernels

    return _kernels.correlate_nd.stats.cache_path
