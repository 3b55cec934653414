"""Who owns an output path: distconv writes only where nothing is, or into a store it created.

``--overwrite`` removes a path only when distconv's owner mark is there and every entry at its
top level is one distconv writes; anything else (a folder holding user files, a plain file, a
Zarr store someone else wrote) is refused with a message, never deleted. The same rules hold
on object storage (``s3://...``, graph/location.py).
"""

from __future__ import annotations

import json
import time

from .location import Location

OWNER = ".distconv-output"        # written first, before any data: "distconv made this"
COMPLETE = ".distconv-complete"   # written last: the output is whole
BLOCKS = ".distconv-blocks"       # per-block write marks while a run is under way
# What distconv itself puts at the top level of an output (Zarr v3 store or bovw folder).
OWN_ENTRIES = {OWNER, COMPLETE, BLOCKS, "zarr.json", "c", "bovw.json", "bovw.npz"}


class OutputError(ValueError):
    """An output path distconv may not write to (or may not replace)."""


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def check_separate(output: str, inputs: dict[str, str]):
    """Refuse an output that is, holds or lies inside an input (``inputs``: key -> path)."""
    out = Location(output).key()
    for key, path in inputs.items():
        p = Location(path).key()
        if out == p:
            raise OutputError(f"{key} is the input path {p!r}; choose another")
        if _inside(p, out):
            raise OutputError(f"{key} {out!r} holds the input {p!r}; replacing it would "
                              "delete the input: choose a path of its own")
        if _inside(out, p):
            raise OutputError(f"{key} {out!r} lies inside the input {p!r}; choose a path "
                              "outside it")


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


def check_target(output: str, overwrite: bool = False, resume: bool = False, key: str = "outputs.path"):
    """Check, before any work, that ``output`` may be written; raises OutputError otherwise."""
    p = Location(output)
    if p.is_dangling_link():
        raise OutputError(f"{key} {output!r} is a dangling link; choose another path")
    if p.is_file():
        raise OutputError(f"{key} {output!r} exists and is a file; distconv writes a folder there "
                          "and never deletes what it did not create: choose another path")
    names = p.names()
    if not names:
        return  # nothing there, or an empty folder: writing there replaces nothing
    if OWNER not in names or not p.child(OWNER).is_file():
        raise OutputError(f"{key} {output!r} exists and was not written by distconv; distconv "
                          "never deletes what it did not create: choose another path or remove it "
                          "yourself")
    own = _own_entries(p)
    foreign = sorted(n for n in names if n not in own)
    if foreign:
        raise OutputError(f"{key} {output!r} was written by distconv but now also holds "
                          f"{foreign[0]!r}; distconv will not delete it: choose another path")
    complete = COMPLETE in names
    if resume and complete:
        raise OutputError(f"{key} {output!r} is already complete: nothing to resume (pass "
                          "--overwrite to run again)")
    if resume or overwrite:
        return
    if not complete:
        raise OutputError(f"{key} {output!r} is incomplete (an interrupted run); pass --resume to "
                          "finish it or --overwrite to start again")
    raise OutputError(f"{key} {output!r} exists (a finished distconv output); pass --overwrite "
                      "to replace it")


def claim(output: str, overwrite: bool = False, resume: bool = False, key: str = "outputs.path",
          who: str = "distconv") -> bool:
    """Make ``output`` ours to write: check it, remove an owned store when ``overwrite`` (and not
    ``resume``), create the folder with the owner mark. Returns True when resuming an existing
    output."""
    check_target(output, overwrite, resume, key)
    p = Location(output)
    if p.child(OWNER).is_file():
        if resume:
            return True
        p.remove_tree()  # check_target proved it ours and free of foreign entries
    p.make_dir()
    p.child(OWNER).write_text(json.dumps({"by": who, "created": time.time()}))
    return False


def mark_complete(output: str, info: dict):
    Location(output).child(COMPLETE).write_text(json.dumps({**info, "finished": time.time()}))


def block_name(extent) -> str:
    """A block's mark names the region it wrote, ((start, stop) per axis) -> "0-16_0-80", not
    its index in one chunking: a resumed run whose blocks differ (other chunks, another
    cluster) then skips only blocks whose region was written whole, and rewrites the rest."""
    return "_".join(f"{int(a)}-{int(b)}" for a, b in extent)


def block_mark(path: str, name: str) -> Location:
    """Where a block's write mark lives in the output at ``path``."""
    return Location(path).child(BLOCKS, name)


def written_blocks(path: str) -> set:
    """Names of the blocks an interrupted run already wrote (their per-block marks)."""
    return set(Location(path).child(BLOCKS).names())


def drop_block_marks(path: str):
    """Drop the per-block marks once the whole output is written."""
    Location(path).child(BLOCKS).remove_tree()
