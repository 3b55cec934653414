"""Who owns an output path: distconv writes only where nothing is, or into a store it created.

``--overwrite`` removes a path only when distconv's owner mark is there and every file below
it, at any depth, is one distconv writes (marks, Zarr metadata, chunk files on the array's
grid); anything else (a user's file anywhere inside, a plain file, a Zarr store someone else
wrote) is refused with a message, never deleted. The owner mark records the job that writes
the output (steps, input identity, layout), so --resume continues only that job. The same
rules hold on object storage (``s3://...``, graph/location.py).

A claim gives the output two names: the job's token (its block marks carry it, and --resume
keeps it, so a run counts only the marks of its own job) and the run's (the owner mark names
the one run that may write now). Every block write checks both just before it writes
(``block_write``); a run that is interrupted or fails names no run in the mark (``stop``) and
waits for the writes already under way, so nothing of it lands after the command returns,
and a later ``--overwrite`` never adopts its blocks.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass

from .location import Location

OWNER = ".distconv-output"        # written first, before any data: "distconv made this"
COMPLETE = ".distconv-complete"   # written last: the output is whole
BLOCKS = ".distconv-blocks"       # per-block write marks while a run is under way
# What distconv itself puts at the top level of an output (Zarr v3 store or bovw folder).
OWN_ENTRIES = {OWNER, COMPLETE, BLOCKS, "zarr.json", "c", "bovw.json", "bovw.npz"}


class OutputError(ValueError):
    """An output path distconv may not write to (or may not replace)."""


class Superseded(RuntimeError):
    """A block of a run that no longer owns its output (stopped, or another run claimed it)."""


# How each face spells the flags its messages suggest (None: the face has no such flag).
CLI_WORDS = {"overwrite": "--overwrite", "resume": "--resume"}
PYTHON_WORDS = {"overwrite": "overwrite=True", "resume": None}


@dataclass(frozen=True)
class Claim:
    """An output made ours: where its owner mark lives, the job's token (its block marks
    carry it; the same across --resume) and this run's name (the owner mark's while it runs)."""
    output: str
    token: str
    run: str
    resuming: bool = False


def _own_entries(path: Location) -> set:
    """What distconv writes at the top level, plus the entries this output's mark records
    (a dataset output's variable and coordinate arrays)."""
    try:
        recorded = json.loads(path.child(OWNER).read_text()).get("entries", [])
    except (OSError, ValueError):
        recorded = []
    return OWN_ENTRIES | set(recorded)


def record_entries(output: str, names):
    """Note in the owner mark that distconv wrote these top-level entries."""
    mark = Location(output).child(OWNER)
    doc = json.loads(mark.read_text())
    doc["entries"] = sorted(set(doc.get("entries", [])) | set(map(str, names)))
    mark.write_text(json.dumps(doc))


def check_target(output: str, overwrite: bool = False, resume: bool = False, key: str = "outputs.path",
                 job: dict | None = None, words: dict = CLI_WORDS) -> str:
    """Check, before any work, that ``output`` may be written, and say what a run does with it:
    ``"new"`` (nothing there), ``"resume"`` (an unfinished output of this same ``job``: write the
    missing blocks), ``"done"`` (a finished output of this job, with ``resume``: nothing to do)
    or ``"replace"`` (remove what distconv wrote there first). ``job`` describes what writes
    the output (the workflow's steps, the input's identity, the layout); resume takes up only
    an output of the same job. With both flags: resume when it is this job's, else replace.
    Raises OutputError otherwise, before anything is touched; ``words``: how the caller's face
    spells the flags (CLI_WORDS, PYTHON_WORDS)."""
    ow, re_ = words["overwrite"], words["resume"]
    p = Location(output)
    if p.is_dangling_link():
        raise OutputError(f"{key} {output!r} is a dangling link; choose another path")
    if p.is_file():
        raise OutputError(f"{key} {output!r} exists and is a file; distconv writes a folder there "
                          "and never deletes what it did not create: choose another path")
    names = p.names()
    if not names:
        return "new"  # nothing there, or an empty folder: writing there replaces nothing
    if OWNER not in names or not p.child(OWNER).is_file():
        raise OutputError(f"{key} {output!r} exists and was not written by distconv; distconv "
                          "never deletes what it did not create: choose another path or remove it "
                          "yourself")
    own = _own_entries(p)
    foreign = sorted(n for n in names if n not in own)
    if foreign:
        raise OutputError(f"{key} {output!r} was written by distconv but now also holds "
                          f"{foreign[0]!r}; distconv will not delete it: choose another path")
    mark = _owner(p)
    if mark.get("state") == REMOVING:  # an --overwrite was interrupted while it removed files
        if resume or overwrite:
            return _replace(p, key, output)
        raise OutputError(f"{key} {output!r} is half removed (an interrupted {ow}); pass "
                          f"{ow} to start it again")
    complete = COMPLETE in names
    if resume:
        changed = _changes(mark.get("job"), job)
        if not changed:
            return "done" if complete else "resume"
        if overwrite:
            return _replace(p, key, output)
        raise OutputError(f"{key} {output!r} was written by another job, so {re_} would mix two "
                          f"in one output: {changed}; pass {ow} to start again")
    if overwrite:
        return _replace(p, key, output)
    if not complete:
        finish = f"pass {re_} to finish it or {ow} to start again" if re_ else f"pass {ow} to start again"
        raise OutputError(f"{key} {output!r} is incomplete (an interrupted run); {finish}")
    raise OutputError(f"{key} {output!r} exists (a finished distconv output); pass {ow} "
                      "to replace it")


REMOVING = "removing"   # the owner mark's state while --overwrite removes the old files


def _owner(p: Location) -> dict:
    try:
        doc = json.loads(p.child(OWNER).read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _replace(p: Location, key: str, output: str) -> str:
    """"replace", once every file below is known to be distconv's own (raises otherwise)."""
    _owned_files(p, key, output)
    return "replace"


def _changes(before, now) -> str:
    """What differs between the job recorded in an output and this run's, in words ('' when
    the same)."""
    if now is None:
        return ""
    if before is None:
        return "it records no job (written by an older distconv)"
    diffs = []

    def walk(a, b, where):
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b), key=str):
                walk(a.get(k), b.get(k), f"{where}.{k}" if where else str(k))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (u, v) in enumerate(zip(a, b)):
                walk(u, v, f"{where}[{i}]")
        elif a != b:
            diffs.append(f"{where}: {a!r} then, {b!r} now")

    walk(before, now, "")
    return "; ".join(diffs[:5]) + (f"; and {len(diffs) - 5} more" if len(diffs) > 5 else "")


# a block's mark: the region it wrote, then the token of the job that wrote it (marks of older
# outputs carry none; they are still distconv's to remove)
_BLOCK_NAME = re.compile(r"^\d+-\d+(_\d+-\d+)*(\.[0-9a-f]{32})?$")


def _owned_files(p: Location, key: str = "outputs.path", output: str = "") -> list[str]:
    """Every file below ``p`` (relative paths), having checked that each is one distconv
    writes: its marks, Zarr metadata, chunk or shard files on the grid of the array they lie
    in, a bag-of-words result. Raises OutputError naming the first other one."""
    arrays = {"": None}  # folder -> its chunk grid (None: not an array)
    files = p.files()
    for rel in files:
        if rel == "zarr.json" or rel.endswith("/zarr.json"):
            folder = rel[:-len("zarr.json")].rstrip("/")
            arrays[folder] = _grid(p.child(rel))
    recorded = _own_entries(p) - OWN_ENTRIES
    for rel in files:
        if not _is_owned(rel, arrays, recorded):
            raise OutputError(f"{key} {output or p.path!r} was written by distconv but now also holds "
                              f"{rel!r}; distconv will not delete it: move it out, or choose another path")
    return files


def _is_owned(rel: str, arrays: dict, recorded: set) -> bool:
    """Is ``rel`` a file distconv writes: at the top level or inside an array it recorded
    (a dataset's variable and coordinates), a mark, zarr.json, or a chunk key on the grid."""
    parts = rel.split("/")
    folder = ""
    if len(parts) > 1 and parts[0] in recorded:
        folder, parts = parts[0], parts[1:]
    if len(parts) == 1:
        return parts[0] in OWN_ENTRIES
    if parts[0] == BLOCKS:
        return len(parts) == 2 and bool(_BLOCK_NAME.match(parts[1]))
    grid = arrays.get(folder)
    if grid is None or parts[0] != "c" or len(parts) - 1 != len(grid):
        return False
    return all(x.isdigit() and int(x) < n for x, n in zip(parts[1:], grid))


def _grid(meta: Location):
    """Chunk (or shard) counts per axis of the Zarr v3 array whose zarr.json is ``meta``; None
    for a group, or an array whose chunk keys are not zarr's default 'c/i/j'."""
    try:
        doc = json.loads(meta.read_text())
        if doc.get("node_type") != "array":
            return None
        enc = doc.get("chunk_key_encoding", {})
        if enc.get("name", "default") != "default" or enc.get("configuration", {}).get("separator", "/") != "/":
            return None
        chunk = doc["chunk_grid"]["configuration"]["chunk_shape"]
        return tuple(-(-int(n) // int(c)) for n, c in zip(doc["shape"], chunk))
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        return None


def remove_owned(output: str, key: str = "outputs.path"):
    """Remove distconv's own files of ``output`` after checking every one is its own (none
    removed otherwise). The owner mark says "removing" first and stays last, so an interrupted
    removal leaves an output that --overwrite or --resume takes up again; the completion and
    block marks go before any data, so no mark outlives the data it vouches for."""
    p = Location(output)
    files = _owned_files(p, key, output)
    mark = _owner(p)
    for gone in ("job", "token", "run"):  # the old run's blocks stop writing from here on
        mark.pop(gone, None)
    p.child(OWNER).write_text(json.dumps({**mark, "state": REMOVING}))

    def stage(rel):
        name = rel.rsplit("/", 1)[-1]
        if rel == COMPLETE:
            return 0
        if rel.startswith(BLOCKS + "/"):
            return 1
        return 3 if name == "zarr.json" else 2

    ordered = sorted((f for f in files if f != OWNER), key=stage)
    for s in range(4):
        p.remove_files([f for f in ordered if stage(f) == s])


def claim(output: str, overwrite: bool = False, resume: bool = False, key: str = "outputs.path",
          who: str = "distconv", job: dict | None = None, words: dict = CLI_WORDS) -> Claim:
    """Make ``output`` ours to write: check it (check_target), remove what distconv wrote there
    when replacing, and write the owner mark with ``job``, the job's token (kept when resuming
    an unfinished output of the same job) and a new run's name. Returns the Claim."""
    action = check_target(output, overwrite, resume, key, job, words)
    p = Location(output)
    run = uuid.uuid4().hex
    if action in ("resume", "done"):
        doc = _owner(p)
        token = doc.get("token") or uuid.uuid4().hex  # an older output's marks carry none
        p.child(OWNER).write_text(json.dumps({**doc, "token": token, "run": run}))
        return Claim(str(output), token, run, resuming=True)
    if action == "replace":
        remove_owned(output, key)
    p.make_dir()
    token = uuid.uuid4().hex
    doc = {"by": who, "created": time.time(), "token": token, "run": run}
    if job is not None:
        doc["job"] = job
    p.child(OWNER).write_text(json.dumps(doc))
    return Claim(str(output), token, run)


def owns(claim: Claim) -> bool:
    """Does ``claim``'s run still own its output (the owner mark names its job and run)?"""
    doc = _owner(Location(claim.output))
    return doc.get("token") == claim.token and doc.get("run") == claim.run


class _Writes:
    """The block writes under way in this process, per run: what ``stop`` waits for. One per
    process (a worker's lives as long as the worker)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._count: dict = {}

    def enter(self, run: str):
        with self._lock:
            self._count[run] = self._count.get(run, 0) + 1

    def leave(self, run: str):
        with self._lock:
            self._count[run] -= 1
            if not self._count[run]:
                del self._count[run]

    def busy(self, run: str) -> bool:
        with self._lock:
            return run in self._count


WRITES = _Writes()


@contextlib.contextmanager
def block_write(claim: Claim | None, what: str = "a block"):
    """Around one block's write: counted as under way first, then the owner mark read, so a
    ``stop`` that renamed the run either is seen here (Superseded, nothing written) or waits
    for this write to end. ``claim`` None: an unowned write (tests of the engine alone)."""
    if claim is None:
        yield
        return
    WRITES.enter(claim.run)
    try:
        if not owns(claim):
            raise Superseded(f"{what} of {claim.output!r} was not written: the run that started it "
                             "was stopped, or another run has claimed the output since")
        yield
    finally:
        WRITES.leave(claim.run)


def stop(claim: Claim | None):
    """Name no run in the owner mark (when it is still ``claim``'s): blocks of the run that
    have not begun writing will not write. The token stays, so --resume keeps its blocks."""
    if claim is None or not owns(claim):
        return
    mark = Location(claim.output).child(OWNER)
    mark.write_text(json.dumps({**_owner(Location(claim.output)), "run": None}))


def wait_writes(run: str, timeout: float = 30.0) -> bool:
    """Wait until no block write of ``run`` is under way in this process (True), or
    ``timeout`` seconds (False). Run on every worker once the run is stopped."""
    deadline = time.monotonic() + timeout
    while WRITES.busy(run):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def mark_complete(output: str, info: dict, claim: Claim | None = None):
    """The output is whole: its completion mark, written last (only while ``claim``'s run owns it)."""
    if claim is not None and not owns(claim):
        raise Superseded(f"{output!r} was not marked complete: another run has claimed it since")
    Location(output).child(COMPLETE).write_text(json.dumps({**info, "finished": time.time()}))


def block_name(extent) -> str:
    """A block's mark names the region it wrote, ((start, stop) per axis) -> "0-16_0-80", not
    its index in one chunking: a resumed run whose blocks differ (other chunks, another
    cluster) then skips only blocks whose region was written whole, and rewrites the rest."""
    return "_".join(f"{int(a)}-{int(b)}" for a, b in extent)


def block_mark(path: str, name: str, token: str) -> Location:
    """Where the write mark of block ``name`` of the job ``token`` lives in the array at ``path``."""
    return Location(path).child(BLOCKS, f"{name}.{token}")


def written_blocks(path: str, token: str) -> set:
    """Names of the blocks the job ``token`` already wrote (an interrupted run of it): marks
    of another job, or of a run of no job, do not count."""
    end = "." + token
    return {n[:-len(end)] for n in Location(path).child(BLOCKS).names() if n.endswith(end)}


def drop_block_marks(path: str):
    """Drop the per-block marks once the whole output is written: the marks alone (a file
    someone put among them stays, and so does the folder then)."""
    marks = Location(path).child(BLOCKS)
    marks.remove_files([n for n in marks.names() if _BLOCK_NAME.match(n)])
    if marks.is_dir() and not marks.names() and not marks.url:
        marks.local.rmdir()
