"""Who may write an output path: distconv writes only where nothing is, or into a store it
created, and takes an output only from a run that is no longer writing it.

``--overwrite`` removes a path only when distconv's owner mark is there and every file below
it, at any depth, is one distconv writes (removal.py); anything else (a user's file anywhere
inside, a plain file, a Zarr store someone else wrote) is refused with a message, never
deleted. The owner mark records the job that writes the output, so --resume continues only
that job (marks.py). The same rules hold on object storage (``s3://...``, location.py).

``claim`` makes an output a run's: the path checked, a live run writing it refused, what
distconv wrote there removed when replacing, then the owner mark written by compare-and-swap
against the mark the decision read, so of two runs that claim one output at once only one
gets it. Its blocks then write through fencing.block_write.
"""

from __future__ import annotations

import json
import time
import uuid

from . import atomic, marks, removal
from .location import Location
from .marks import COMPLETE, OWNER, REMOVING, Claim, OutputError

# How each face spells the flags its messages suggest (None: the face has no such flag).
CLI_WORDS = {"overwrite": "--overwrite", "resume": "--resume"}
PYTHON_WORDS = {"overwrite": "overwrite=True", "resume": None}




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


def _owner(p: Location) -> dict:
    return marks.owner(p.path)


def _own_entries(p: Location) -> set:
    return marks.own_entries(p.path)


_changes = marks.job_changes


def _replace(p: Location, key: str, output: str) -> str:
    """"replace", once every file below is known to be distconv's own (raises otherwise)."""
    removal.owned_files(p, key, output)
    return "replace"


def decide(output: str, overwrite: bool = False, resume: bool = False, key: str = "outputs.path",
           job: dict | None = None, words: dict = CLI_WORDS) -> str:
    """What a run does with ``output`` (check_target's "new", "resume", "done" or "replace"),
    having first refused an output that a live run is writing now (OutputError naming it); a
    finished output counts as "done" only while its completion mark names the run the owner
    mark names (else a run that claimed it after it was marked is still writing, or was
    interrupted: "resume")."""
    try:
        atomic.check(str(output))
    except atomic.Unsupported as e:
        raise OutputError(f"{key}: {e}") from None
    marks.refuse_if_writing(str(output), key)
    try:
        action = check_target(output, overwrite, resume, key, job, words)
    except OutputError:
        marks.refuse_if_writing(str(output), key)  # a run that claimed it meanwhile is the one to name
        raise
    if action == "done" and not marks.finished(str(output)):
        return "resume"
    return action


def claim(output: str, overwrite: bool = False, resume: bool = False, key: str = "outputs.path",
          who: str = "distconv", job: dict | None = None, words: dict = CLI_WORDS) -> Claim:
    """Make ``output`` ours to write: decide what to do with it (``decide``), remove what
    distconv wrote there when replacing, and write the owner mark with ``job``, the job's
    token (kept when resuming an unfinished output of the same job) and a new run's name and
    lease, each change by compare-and-swap against the mark the decision read (decided again
    when another run changed it meanwhile). Returns the Claim; its lease is kept fresh while
    the Claim lives, until the run stops or finishes."""
    output = str(output)
    p = Location(output)
    run = uuid.uuid4().hex
    for _ in range(20):
        _, seen = marks.read_owner(output)
        action = decide(output, overwrite, resume, key, job, words)
        doc, version = marks.read_owner(output)
        if version != seen:
            continue  # changed while deciding
        if action in ("resume", "done"):
            ours = Claim(output, doc.get("token") or uuid.uuid4().hex, run, resuming=True)  # older marks: no token
            new = {k: v for k, v in doc.items() if k not in ("stopped", "state")}
            new = {**new, "token": ours.token, **marks.lease(run)}
            if _taken(ours, lambda: atomic.replace(p.child(OWNER).path, json.dumps(new).encode(), version)):
                return ours
            continue
        ours = Claim(output, uuid.uuid4().hex, run)
        fresh = {"by": who, "created": time.time(), "token": ours.token, **marks.lease(run)}
        if job is not None:
            fresh["job"] = job
        if action == "replace":
            def take():
                return removal.remove_owned(output, key, marks.lease(run), version) and marks.update(
                    output, lambda d: {**fresh, "since": d.get("since", fresh["since"]),
                                       # a stopped run's writes not confirmed ended: still to wait out
                                       **({"unsettled": d["unsettled"]} if "unsettled" in d else {})}
                    if d.get("run") == run else None) is not None
        else:
            p.make_dir()

            def take():
                return marks.create_owner(output, fresh)
        if _taken(ours, take):
            return ours
    marks.refuse_if_writing(output, key)
    raise OutputError(f"{key} {output!r} is being claimed by other runs at the same time; try again")


def _taken(ours: Claim, take) -> bool:
    """``take()`` (a change of the owner mark that names ``ours``), with its lease kept fresh
    from before the mark names it (a removal takes a while), and ended if it fails."""
    marks.BEATS.start(ours.output, ours.run, ours)
    try:
        if take():
            return True
    except BaseException:
        marks.BEATS.end(ours.run)
        raise
    marks.BEATS.end(ours.run)
    return False
