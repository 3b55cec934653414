"""Fenced block writes: a block lands in an output only while its run owns it.

Every writer of an output's data (the engine's blocks, dask's chunk-aligned writes, the
bag-of-visual-words result) writes through ``block_write``: the block's files are written
aside (in the array's ``.distconv-aside`` folder, in the same store), then, after a second look at the owner
mark, moved into place; the block's mark (its job's token in the name) records what each file
it moved is (atomic.fingerprint). On a local disk that second look and the moves hold the
output's lock, which a stop also takes: once a run is stopped no move of it begins or is under
way, and a write still running lands only aside. On object storage a move (a server-side copy)
may still be under way when a stop returns: ``stop`` and ``wait_writes`` count those, and a
stop that cannot confirm every one ended says so and records it in the owner mark.

``settle``, before an output is marked complete, checks every block's files are still the ones
its mark records (a late move of a stopped run changes them): a block that differs loses its
mark and the output is not marked complete (--resume then writes that block again).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid

from . import atomic, marks
from .location import Location, join
from .marks import ASIDE, BLOCKS, Claim, Superseded

# a block's mark: the region it wrote, then the token of the job that wrote it (marks of older
# outputs carry none; they are still distconv's to remove)
_BLOCK_NAME = re.compile(r"^\d+-\d+(_\d+-\d+)*(\.[0-9a-f]{32})?$")
_ASIDE = re.compile(r"^[0-9a-f]{32}\.part$")   # a block's file written aside, before its move


def is_block_file(folder: str, name: str) -> bool:
    """Is ``name``, a file in an array's ``folder`` BLOCKS or ASIDE, a block mark or a block's
    file written aside?"""
    return bool((_BLOCK_NAME if folder == BLOCKS else _ASIDE).match(name)) if folder in (BLOCKS, ASIDE) else False


class _Writes:
    """The block writes under way in this process, per run: what ``wait_writes`` waits for.
    One per process (a worker's lives as long as the worker)."""

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
def block_write(claim: Claim | None, array: str, name: str, what: str = "a block"):
    """Around one block's write into the array at ``array``: yields ``aside(path)``, where the
    block writes the file meant for ``path`` instead. Checks the run owns the output before
    the body runs and again before the files are moved into place (Superseded otherwise:
    what was written aside is removed, nothing lands); then writes the block's mark ``name``.
    ``claim`` None: an unowned write straight into place (tests of the engine alone)."""
    if claim is None:
        yield lambda path: path
        return
    gone = Superseded(f"{what} of {claim.output!r} was not written: the run that started it was "
                      "stopped, or another run has claimed the output since")
    WRITES.enter(claim.run)
    placed: dict = {}
    folder = join(array, ASIDE)

    def aside(path: str) -> str:
        if not placed:
            Location(folder).make_dir()
        return placed.setdefault(str(path), atomic.aside_name(folder, f"{uuid.uuid4().hex}.part"))

    try:
        if not marks.owns(claim):
            raise gone
        yield aside
        with atomic.exclusive(claim.output):
            if not marks.owns(claim):
                raise gone
            for path, tmp in placed.items():
                atomic.move(tmp, path)
            placed_at = {_relative(path, array): atomic.fingerprint(path) for path in placed}
            block_mark(array, name, claim.token).write_text(json.dumps(placed_at))
            placed.clear()
    finally:
        for tmp in placed.values():  # a write that did not land: nothing of it stays aside
            with contextlib.suppress(OSError):
                atomic.delete(tmp)
        WRITES.leave(claim.run)


def _relative(path: str, array: str) -> str:
    return str(path)[len(str(array).rstrip("/")) + 1:].replace("\\", "/")


@contextlib.contextmanager
def stopped_on_failure(claim: Claim):
    """The block in which ``claim``'s run works: failed or interrupted there (its completion
    refused included), the run is stopped at once, so its lease does not keep the output from
    the next run until it lapses."""
    try:
        yield claim
    except BaseException:
        stop(claim)
        raise


def stop(claim: Claim | None):
    """Name no run in the owner mark (when it is still ``claim``'s): blocks of the run that
    have not moved their files into place will not. The token stays, so --resume keeps its
    blocks. Its lease ends."""
    if claim is None:
        return
    marks.BEATS.end(claim.run)
    try:
        with atomic.exclusive(claim.output):  # a move under way locally ends first
            marks.update(claim.output, lambda doc: {**doc, "run": None, "stopped": time.time()}
                         if marks.held_by(doc, claim) else None)
    except FileNotFoundError:  # the output's folder is gone: nothing of it left to stop
        pass


def wait_writes(run: str, timeout: float = 30.0) -> bool:
    """Wait until no block write of ``run`` is under way in this process (True), or
    ``timeout`` seconds (False). Run on every worker once the run is stopped."""
    deadline = time.monotonic() + timeout
    while WRITES.busy(run):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def unsettled(claim: Claim, where: list) -> str:
    """Record in the owner mark that writes of ``claim``'s stopped run may still be under way
    (``where``: the workers that did not confirm they ended): on object storage, where a move
    may outlast the stop, no run marks the output complete until marks.SETTLE_S have passed.
    Returns the line that says so."""
    marks.update(claim.output, lambda doc: {**doc, "unsettled": {"run": claim.run, "workers": sorted(where),
                                                                 "since": time.time()}})
    line = f"distconv: could not confirm that the writes of the stopped run ended on {', '.join(sorted(where))}"
    if not Location(claim.output).url:  # on a disk the stop held the lock no move happens without
        return line + f"; they can land only beside {claim.output!r}, not in it"
    return (line + f"; a block of it may still land in {claim.output!r}, which no run marks complete before "
            f"{marks.when(time.time() + marks.SETTLE_S)}")


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


def settle(path: str, claim: Claim | None):
    """Once every block of the array at ``path`` is written: check each block's files are still
    those its mark records (Superseded, naming them, after dropping their marks so --resume
    writes them again), then drop the block marks and what was left aside (theirs alone: a
    file someone put among them stays, and so does its folder then)."""
    folder = Location(path).child(BLOCKS)
    names = folder.names()
    if claim is not None:
        changed = _changed_blocks(path, folder, [n for n in names if n.endswith("." + claim.token)])
        if changed:
            folder.remove_files(changed)
            shown = ", ".join(n.rsplit(".", 1)[0] for n in changed[:3]) + (" ..." if len(changed) > 3 else "")
            raise Superseded(f"{claim.output!r} was not marked complete: {len(changed)} block(s) ({shown}) were "
                             "changed after this run wrote them (a write of a run stopped earlier landing late); "
                             "run again with --resume to write them again")
    folder.remove_files([n for n in names if is_block_file(BLOCKS, n)])
    aside = Location(path).child(ASIDE)
    aside.remove_files([n for n in aside.names() if is_block_file(ASIDE, n)])
    drop_empty_mark_folders(Location(path))


def drop_empty_mark_folders(array: Location):
    """The block-mark and aside folders of the array at ``array`` removed where they are empty
    (a stopped run's writes took their files, not the folder; zarr would read it as an unknown
    node). Object stores have no empty folders."""
    if array.url:
        return
    for own in (BLOCKS, ASIDE):
        with contextlib.suppress(OSError):
            (array.local / own).rmdir()  # only when empty


def _changed_blocks(path: str, folder: Location, names: list) -> list:
    """The marks among ``names`` whose files are no longer the ones they record."""
    if not names:
        return []
    now = atomic.fingerprints(path)
    changed = []
    for n in names:
        try:
            recorded = json.loads(folder.child(n).read_text() or "{}")
        except (OSError, ValueError):
            recorded = None
        if not isinstance(recorded, dict):
            changed.append(n)
            continue
        if any(now.get(rel) != fp for rel, fp in recorded.items()):
            changed.append(n)
    return changed
