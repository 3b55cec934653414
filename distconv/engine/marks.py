"""An output's owner mark and completion mark, changed only by compare-and-swap.

The owner mark (``.distconv-output``, written first) says distconv made the output, records
the job that writes it (steps, input identity, layout: --resume continues only that job) and
names two things: the job's token, which its block marks carry and --resume keeps, and the
run that may write now, with that run's lease (host, pid, since when, last heartbeat). The
completion mark (``.distconv-complete``, written last) names the run and token that finished
the output: it counts only while the owner mark still names them, so a run that claimed the
output after it was marked is not taken for finished. A run that finishes or stops ends its
lease.

Every change of the owner mark reads it, derives the new one and writes it only while the
mark is still what was read (atomic.replace), so two runs into one output never both think
they hold it. A run is alive while its lease is fresh: its process refreshes the heartbeat
every ``BEAT_S`` seconds; a lease is stale once its heartbeat is older than ``STALE_S`` (six
missed beats), or at once when its process (on this host) has ended.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import weakref
from dataclasses import dataclass

from . import atomic
from .location import Location

OWNER = ".distconv-output"        # written first, before any data: "distconv made this"
COMPLETE = ".distconv-complete"   # written last: the output is whole
BLOCKS = ".distconv-blocks"       # per-block write marks while a run is under way
ASIDE = ".distconv-aside"         # block files written aside, before they are moved into place
REMOVING = "removing"             # the owner mark's state while --overwrite removes the old files
# What distconv itself puts at the top level of an output (Zarr v3 store or bovw folder).
OWN_ENTRIES = {OWNER, COMPLETE, BLOCKS, ASIDE, "zarr.json", "c", "bovw.json", "bovw.npz",
               atomic.LOCK, OWNER + atomic.NEW, COMPLETE + atomic.NEW}

BEAT_S = 10.0    # a live run refreshes its lease this often
STALE_S = 60.0   # a lease not refreshed for this long is a dead run's
SETTLE_S = 900.0  # on object storage, longer than a stopped run's last move (one request) may take


class OutputError(ValueError):
    """An output path distconv may not write to (or may not replace)."""


class Superseded(RuntimeError):
    """A block of a run that no longer owns its output (stopped, or another run claimed it)."""


@dataclass(frozen=True)
class Claim:
    """An output made ours: where its owner mark lives, the job's token (its block marks
    carry it; the same across --resume) and this run's name (the owner mark's while it runs)."""
    output: str
    token: str
    run: str
    resuming: bool = False


def read_owner(output: str) -> tuple:
    """(the owner mark as a dict, its version for atomic.replace); ({}, None) when there is
    none. A mark being created (empty for an instant) is read again."""
    path = Location(output).child(OWNER).path
    for _ in range(50):
        data, version = atomic.read(path)
        if data is None:
            return {}, None
        try:
            doc = json.loads(data)
            return (doc if isinstance(doc, dict) else {}), version
        except ValueError:
            time.sleep(0.02)
    return {}, version


def owner(output: str) -> dict:
    """The owner mark of ``output`` ({} when there is none or it is unreadable)."""
    return read_owner(output)[0]


def update(output: str, change) -> dict | None:
    """Change the owner mark by compare-and-swap: ``change(doc)`` gives the new mark, or None
    to leave it; read again and retried when another process changed it meanwhile. Returns
    the mark written, or None (also where there is no mark: create_owner writes the first)."""
    path = Location(output).child(OWNER).path
    for _ in range(200):
        doc, version = read_owner(output)
        if version is None:
            return None
        new = change(doc)
        if new is None:
            return None
        if atomic.replace(path, json.dumps(new).encode(), version):
            return new
        time.sleep(0.005)
    raise RuntimeError(f"the owner mark of {output!r} kept changing while distconv changed it")


def create_owner(output: str, doc: dict) -> bool:
    """Write the first owner mark of ``output``; False when another run wrote one first."""
    return atomic.create(Location(output).child(OWNER).path, json.dumps(doc).encode())


def owns(claim: Claim) -> bool:
    """Does ``claim``'s run still own its output (the owner mark names its job and run)?"""
    return held_by(owner(claim.output), claim)


def held_by(doc: dict, claim: Claim) -> bool:
    """Does the owner mark ``doc`` name ``claim``'s job and run?"""
    return doc.get("token") == claim.token and doc.get("run") == claim.run


def own_entries(output: str) -> set:
    """What distconv writes at the top level, plus the entries this output's mark records
    (a dataset output's variable and coordinate arrays)."""
    recorded = owner(output).get("entries", [])
    return OWN_ENTRIES | {str(n) for n in recorded if isinstance(n, str)}


def record_entries(output: str, names):
    """Note in the owner mark that distconv wrote these top-level entries."""
    update(output, lambda doc: {**doc, "entries": sorted(set(doc.get("entries", [])) | set(map(str, names)))})


# -- the lease of the run writing now


def lease(run: str) -> dict:
    """The owner mark's fields that name ``run`` as this process's, alive now."""
    now = time.time()
    return {"run": run, "host": socket.gethostname(), "pid": os.getpid(), "since": now, "beat": now}


def writer(output: str, doc: dict | None = None) -> str | None:
    """Who is writing ``output`` now, in words (None when no live run is): a run that claimed it
    and neither finished nor stopped, or one removing it for --overwrite, whose lease is fresh."""
    doc = owner(output) if doc is None else doc
    run, beat = doc.get("run"), doc.get("beat")
    if not run or not isinstance(beat, (int, float)):
        return None  # no run, or an older distconv's mark, which kept no lease
    if doc.get("state") != REMOVING and finished(output, doc):
        return None
    if time.time() - beat > STALE_S:
        return None
    host, pid = doc.get("host"), doc.get("pid")
    if host == socket.gethostname() and isinstance(pid, int):
        if pid == os.getpid():
            if not BEATS.beating(run):
                return None  # a run of this process that ended without being stopped
        elif not _alive(pid):
            return None
    doing = "removing it to write it again" if doc.get("state") == REMOVING else "writing it"
    return (f"another run is {doing} (pid {pid} on {host}, since {when(doc.get('since'))}; its last "
            f"heartbeat {time.time() - beat:.0f} s ago)")


def refuse_if_writing(output: str, key: str = "outputs.path"):
    """Raise OutputError when a live run is writing ``output`` (``writer``)."""
    who = writer(output)
    if who is not None:
        raise OutputError(f"{key} {output!r}: {who}; wait for it to finish, or stop it, before writing "
                          "there")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def when(t) -> str:
    """Epoch seconds as a local date and time a person reads (``t`` as given if not a number)."""
    if not isinstance(t, (int, float)) or isinstance(t, bool):
        return repr(t)
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(t))


class _Beats:
    """The runs this process holds, their leases refreshed every BEAT_S seconds by one thread
    until the run stops, finishes, loses the output, or whatever holds its claim is gone."""

    def __init__(self):
        self._lock = threading.Lock()
        self._runs: dict = {}   # run -> (output, weak reference to its holder)
        self._thread = None

    def start(self, output: str, run: str, holder):
        with self._lock:
            self._runs[run] = (output, weakref.ref(holder))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="distconv-lease", daemon=True)
                self._thread.start()

    def end(self, run: str):
        with self._lock:
            self._runs.pop(run, None)

    def beating(self, run: str) -> bool:
        with self._lock:
            held = self._runs.get(run)
        return held is not None and held[1]() is not None

    def _loop(self):
        while True:
            time.sleep(BEAT_S)
            with self._lock:
                runs = dict(self._runs)
                if not runs:
                    self._thread = None
                    return
            for run, (output, holder) in runs.items():
                if holder() is None:
                    self.end(run)
                    continue
                try:
                    kept = update(output, lambda doc, r=run: {**doc, "beat": time.time()}
                                  if doc.get("run") == r else None)
                except Exception:  # noqa: BLE001 - a store unreachable for a moment: beat again later
                    continue
                if kept is None:  # the mark names another run now
                    self.end(run)


BEATS = _Beats()


# -- the completion mark


def finished(output: str, doc: dict | None = None) -> bool:
    """Is ``output`` whole: a completion mark that names the run and token the owner mark
    names (an older distconv's names none: it counts as it is)?"""
    data, _ = atomic.read(Location(output).child(COMPLETE).path)
    if data is None:
        return False
    try:
        done = json.loads(data)
    except ValueError:
        return False
    if not isinstance(done, dict) or "run" not in done:
        return True
    doc = owner(output) if doc is None else doc
    return done.get("run") == doc.get("run") and done.get("token") == doc.get("token")


def mark_complete(output: str, info: dict, claim: Claim | None = None):
    """The output is whole: its completion mark, naming ``claim``'s run, written last and only
    while that run owns the output (checked again once written: a mark written just as another
    run claimed the output is taken back). The run's lease ends: its heartbeat leaves the
    owner mark."""
    mark = Location(output).child(COMPLETE).path
    if claim is None:
        atomic.put(mark, json.dumps({**info, "finished": time.time()}).encode())
        return
    doc = {**info, "finished": time.time(), "run": claim.run, "token": claim.token}
    data = json.dumps(doc).encode()
    gone = Superseded(f"{output!r} was not marked complete: another run has claimed it since")
    with atomic.exclusive(output):
        if not owns(claim):
            raise gone
        _settled(output)
        atomic.put(mark, data)
        if not owns(claim):
            now, version = atomic.read(mark)
            if now == data:  # ours still, not the mark of the run that claimed it since
                atomic.delete(mark, version)
            raise gone
        BEATS.end(claim.run)
        update(output, lambda d: {k: v for k, v in d.items() if k != "beat"} if held_by(d, claim) else None)


def _settled(output: str):
    """Raise Superseded while a stopped run's writes to ``output`` on object storage were not
    confirmed to have ended and may still land (fencing.unsettled); forget them once they can
    no longer."""
    doc = owner(output)
    since = (doc.get("unsettled") or {}).get("since")
    if not isinstance(since, (int, float)):
        return
    if Location(output).url and time.time() - since < SETTLE_S:
        raise Superseded(f"{output!r} was not marked complete: a run stopped at {when(since)} did not confirm its "
                         f"writes ended ({', '.join(doc['unsettled'].get('workers', []))}), and one may still land; "
                         f"run again with --resume after {when(since + SETTLE_S)}")
    update(output, lambda d: {k: v for k, v in d.items() if k != "unsettled"})


def job_changes(before, now) -> str:
    """What differs between the job recorded in an output and this run's, in words ('' when
    the same); times (a stamp's ``modified``) as dates."""
    if now is None:
        return ""
    if before is None:
        return "it records no job (written by an older distconv)"
    diffs = []

    def shown(key, v):
        return when(v) if key == "modified" and isinstance(v, (int, float)) else repr(v)

    def walk(a, b, where, key):
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b), key=str):
                walk(a.get(k), b.get(k), f"{where}.{k}" if where else str(k), k)
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (u, v) in enumerate(zip(a, b)):
                walk(u, v, f"{where}[{i}]", key)
        elif a != b:
            diffs.append(f"{where}: {shown(key, a)} then, {shown(key, b)} now")

    walk(before, now, "", "")
    return "; ".join(diffs[:5]) + (f"; and {len(diffs) - 5} more" if len(diffs) > 5 else "")
