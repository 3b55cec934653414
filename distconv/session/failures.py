"""What a failed run says to the user: the one place an exception becomes (exit code, text).

A failure the user can act on (a damaged input chunk, an output that cannot be written, a full
disk, workers out of memory) is one line naming the array, chunk, path or setting and what to
do, exit 2; only what is none of these, our own bug, is the internal-error text with its
traceback, exit 1. Exceptions come back from the workers through dask as the worker's own type
(KilledWorker for a worker that died), with the block that failed noted on them by the
engine's write (``distconv_block``: the input, the block's index, rows and bytes).
"""

from __future__ import annotations

import errno
import os
import traceback

USER, INTERNAL = 2, 1  # exit codes
RESUME = "then run again with --resume: the blocks already written are kept"
_CODEC_FILES = ("/numcodecs/", "/zarrs/", "/zarr/codecs/", "/zarr/core/codec_pipeline", "/zstandard/",
                "/blosc", "/zarr/abc/codec")
_DECODE_WORDS = ("incomplete frame", "decompress", "corrupt", "unknown frame descriptor", "blosc",
                 "invalid block type", "checksum", "src size is incorrect", "error -3 while")
WORKERS_GONE = "the cluster's workers all died and none was started again"
_CHUNK_SEARCH_S = 20.0  # longest the search for the damaged chunk decodes chunks here


def explain(exc: BaseException, *, input_path: str | None = None, output: str | None = None,
            cluster: dict | None = None, log: str | None = None) -> tuple[int, str]:
    """(exit code, text) for ``exc`` raised by a run that reads ``input_path`` and writes
    ``output`` on a cluster of config ``cluster`` (config.load_config's dict) that logs to
    ``log`` (where the text may point for the cluster's own account)."""
    from ..engine.marks import Superseded

    if isinstance(exc, Superseded):  # another run took the output (or a synthetic input) over: it says which
        return USER, str(exc)
    block = getattr(exc, "distconv_block", None) or {}
    source = block.get("input") or input_path
    if _is_killed(exc) or isinstance(exc, MemoryError) or WORKERS_GONE in str(exc):
        return USER, _memory(exc, block, source, cluster, log)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        where = exc.filename or output
        return USER, (f"no space left on the disk holding {where!r}{_free(where)}; free space (or choose "
                      f"another outputs.path), {RESUME}")
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        where = exc.filename or output
        reading = bool(where and source and _inside(str(where), str(source)))
        what = "reading the input" if reading else "writing the output"
        fix = "make it readable by this user" if reading else \
            "make it writable by this user (or choose another outputs.path)"
        return USER, f"{os.strerror(exc.errno).lower()} {what}: {where!r}; {fix}, {RESUME}"
    if source and _is_decode_error(exc):
        # damaged only where a chunk is found that does not decode: a read that failed for another
        # reason (a network error on object storage) passes through the same codec pipeline
        rows = block.get("rows")
        chunk = _damaged_chunk(source, rows) or (_damaged_chunk(source) if rows else None)
        if chunk:
            return USER, (f"the input {source!r} cannot be decoded: chunk {chunk} is damaged "
                          f"({type(exc).__name__}: {exc}); mend or rewrite it, then run again with --overwrite "
                          f"(--resume refuses an input changed since the run began)")
        if isinstance(exc, OSError):
            return USER, (f"reading the input {source!r} or writing the output failed "
                          f"({type(exc).__name__}: {exc}); every chunk of the input decodes, so this may pass: "
                          f"{RESUME}")
    return INTERNAL, internal(exc) + (f"\n(the cluster's log: {log})" if log else "")


def internal(exc: BaseException) -> str:
    """Our own bug: said so, with the traceback to report."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
    return ("internal error (not a problem with the workflow file; please report it with the traceback "
            "below):\n" + tb)


def _is_killed(exc) -> bool:
    return type(exc).__name__ == "KilledWorker" and type(exc).__module__.startswith("distributed")


def _memory(exc, block: dict, source, cluster: dict | None, log=None) -> str:
    """Workers that died running a block, most often for memory: the limit and the block's size."""
    limit = _limit(cluster)
    size = f"; a block reads {_size(block['bytes'])} of input" if block.get("bytes") else ""
    which = f"block {block['index']}" if block.get("index") is not None else "a task"
    of = f" of {source!r}" if source else ""
    what = "ran out of memory" if isinstance(exc, MemoryError) else \
        f"died (most often: out of memory; {'its log ' + log if log else 'the cluster log'} says)"
    return (f"workers {what} running {which}{of}, with memory_limit {limit} per worker{size}; "
            f"raise the cluster's memory_limit or lower threads_per_worker (a worker runs that many blocks at "
            f"once), {RESUME}")


def _limit(cluster: dict | None) -> str:
    """The configured memory limit as a worker has it ('auto': its share of this machine's)."""
    value = (cluster or {}).get("memory_limit", "auto")
    if value != "auto" or cluster is None or cluster.get("type") == "address":
        return repr(value)
    try:
        from distributed.system import MEMORY_LIMIT

        from .local import workers_of

        return f"'auto' ({_size(MEMORY_LIMIT // workers_of(cluster)[1])})"
    except Exception:  # noqa: BLE001 - the value alone then
        return repr(value)


def _free(path) -> str:
    """', N free' on the disk that holds ``path`` (its nearest existing folder), or ''."""
    import shutil

    p = os.path.abspath(str(path or "."))
    while p and not os.path.exists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    try:
        return f", {_size(shutil.disk_usage(p).free)} free"
    except OSError:
        return ""


def _size(n: float) -> str:
    from ..batch.memory import size_text  # the batch floor, only once a failure is explained

    return size_text(n)


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _is_decode_error(exc) -> bool:
    """Raised by a codec decoding a stored chunk (the worker's traceback runs through one), or
    says so; never a missing or unreadable file (those name their path)."""
    if isinstance(exc, (FileNotFoundError, PermissionError, MemoryError)) or not isinstance(
            exc, (OSError, ValueError, RuntimeError)):
        return False
    files = [f.filename.replace(os.sep, "/") for f in traceback.extract_tb(exc.__traceback__)]
    return any(c in f for f in files for c in _CODEC_FILES) or \
        any(w in str(exc).lower() for w in _DECODE_WORDS)


def _damaged_chunk(path: str, rows=None) -> str | None:
    """The key of the first stored chunk of the array at ``path`` that does not decode (only
    those holding ``rows`` and their neighbours when given), or None (none found within the
    search's time)."""
    import itertools
    import math
    import time

    try:
        import zarr

        arr = zarr.open_array(path, mode="r")
        grid = getattr(arr, "shards", None) or arr.chunks
        counts = [math.ceil(n / c) for n, c in zip(arr.shape, grid)]
        first = range(counts[0]) if rows is None or not counts else \
            range(max(0, rows[0] // grid[0] - 1), min(counts[0], -(-rows[1] // grid[0]) + 1))
        deadline = time.monotonic() + _CHUNK_SEARCH_S
        for idx in itertools.product(first, *(range(c) for c in counts[1:])):
            if time.monotonic() > deadline:
                return None
            box = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(idx, grid, arr.shape))
            try:
                arr[box]
            except Exception:  # noqa: BLE001 - this one does not decode
                span = ", ".join(f"{s.start}:{s.stop}" for s in box)
                return f"{arr.metadata.encode_chunk_key(idx)!r} (elements [{span}])"
    except Exception:  # noqa: BLE001 - the array cannot be searched: the message names no chunk
        return None
    return None


def interrupted_text(workflow_path: str) -> str:
    """Ctrl-C's one line: what to do, or that the output is complete already (a command that
    was still closing its cluster after the run finished)."""
    try:
        import socket

        from ..batch import load
        from ..engine.location import Location
        from ..engine.marks import finished, owner

        output = str(load(workflow_path).outputs["path"])
        doc = owner(output)
        if not doc and not Location(output).exists():  # stopped before its run claimed it (a synthetic input)
            return f"interrupted before {output!r} was begun: nothing of it was written; run the same command again"
        # complete by this command's own run (its lease names this process), not an older one
        ours = doc.get("pid") == os.getpid() and doc.get("host") == socket.gethostname()
        if ours and finished(output, doc):
            return f"interrupted after the run finished: {output!r} is complete ({workflow_path})"
    except Exception:  # noqa: BLE001 - the workflow as it is now cannot be read: the general line
        pass
    return (f"interrupted; finished blocks are kept: run again with --resume to write only the rest "
            f"({workflow_path})")
