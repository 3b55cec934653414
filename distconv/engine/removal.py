"""What ``--overwrite`` may remove of an output, and removing it.

An output's files are distconv's when each is one distconv writes: its marks, Zarr metadata,
chunk or shard files on the grid of the array they lie in (at the top level, or in an array
the owner mark records), a bag-of-words result. ``remove_owned`` checks every file first and
removes nothing when one is not.
"""

from __future__ import annotations

import json

from . import atomic, marks
from .fencing import drop_empty_mark_folders, is_block_file
from .location import Location
from .marks import ASIDE, BLOCKS, COMPLETE, OWN_ENTRIES, OWNER, REMOVING, OutputError

# top-level files that stay while an output is removed: the owner mark says "removing" till
# the end and the new run's mark replaces it; the lock may be held by another process
_KEPT = {OWNER, atomic.LOCK, OWNER + atomic.NEW}


def owned_files(p: Location, key: str = "outputs.path", output: str = "") -> list[str]:
    """Every file below ``p`` (relative paths), having checked that each is one distconv
    writes. Raises OutputError naming the first other one."""
    arrays = {"": None}  # folder -> its chunk grid (None: not an array)
    files = p.files()
    for rel in files:
        if rel == "zarr.json" or rel.endswith("/zarr.json"):
            folder = rel[:-len("zarr.json")].rstrip("/")
            arrays[folder] = _grid(p.child(rel))
    recorded = marks.own_entries(p.path) - OWN_ENTRIES
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
    if parts[0] in (BLOCKS, ASIDE):
        return len(parts) == 2 and is_block_file(parts[0], parts[1])
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


def remove_owned(output: str, key: str = "outputs.path", lease: dict | None = None, version=None) -> bool:
    """Remove distconv's own files of ``output`` after checking every one is its own (none
    removed otherwise). The owner mark says "removing" first (by compare-and-swap against
    ``version``, the mark's as read by the caller; None: as it is now), naming no job, so the
    old run's blocks stop writing, and with ``lease`` (marks.lease: the run that removes it)
    so that no other run takes the output meanwhile; it stays last, so an interrupted
    removal leaves an output that --overwrite or --resume takes up again. The completion and
    block marks go before any data, so no mark outlives the data it vouches for. Returns False,
    nothing removed, when the owner mark changed since ``version``."""
    p = Location(output)
    files = owned_files(p, key, output)
    doc, now = marks.read_owner(output)
    if version is not None and now != version:
        return False
    new = {k: v for k, v in doc.items() if k not in ("job", "token", "run", "stopped")}
    new = {**new, "state": REMOVING, **(lease or {})}
    if not atomic.replace(p.child(OWNER).path, json.dumps(new).encode(), now):
        return False

    def stage(rel):
        name = rel.rsplit("/", 1)[-1]
        if rel == COMPLETE:
            return 0
        if any(rel.startswith(f + "/") or f"/{f}/" in rel for f in (BLOCKS, ASIDE)):
            return 1
        return 3 if name == "zarr.json" else 2

    ordered = sorted((f for f in files if f not in _KEPT), key=stage)
    for s in range(4):
        p.remove_files([f for f in ordered if stage(f) == s])
    if not p.url and p.is_dir():  # the mark folders a stopped run left empty, at the top and in a dataset's arrays
        for folder in [p, *(p.child(d.name) for d in p.local.iterdir() if d.is_dir() and not d.is_symlink())]:
            drop_empty_mark_folders(folder)
    return True
