"""Where a command may write: never over, around or inside what it reads, and a plain file only
where nothing is or where distconv wrote the file before.

Every face asks before anything is removed or written. An output folder is checked against
the inputs a workflow names (``check_separate``) or, for ``dc.to_zarr`` and the accessor,
against every Zarr store the lazy result reads (``check_apart``). A file output (a run's
summary, a histogram, a report and its plots) replaces only a file carrying distconv's mark:
a JSON document with the key ``MARK_KEY``, a PNG with that text chunk, a Markdown report whose
first line is ``MARK_LINE`` (``file_problem``). Local paths are compared after symbolic links
are resolved, so a link to an input is the input.
"""

from __future__ import annotations

import json
import os

from .location import Location, absolute, is_url
from .ownership import OutputError

MARK_KEY, MARK_VALUE = "written_by", "distconv"  # in a JSON document and a PNG's text chunks
MARK_LINE = "<!-- written by distconv: a later run may replace this file -->"  # a report's first line
KINDS = {"json": (), "png": (".png",), "markdown": ()}  # the suffix a kind needs (matplotlib reads it)


def key(path) -> str:
    """``path`` as comparable with another: absolute, symbolic links resolved (a URL: its
    protocol and key)."""
    return Location(absolute(path)).key()


def inside(child: str, parent: str) -> bool:
    """Is the key ``child`` the key ``parent`` or below it?"""
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def check_separate(output: str, inputs: dict[str, str]):
    """Refuse an output that is, holds or lies inside an input (``inputs``: key -> path)."""
    out = Location(output).key()
    for name, path in inputs.items():
        p = Location(path).key()
        if out == p:
            raise OutputError(f"{name} is the input path {p!r}; choose another")
        if inside(p, out):
            raise OutputError(f"{name} {out!r} holds the input {p!r}; replacing it would "
                              "delete the input: choose a path of its own")
        if inside(out, p):
            raise OutputError(f"{name} {out!r} lies inside the input {p!r}; choose a path "
                              "outside it")


def clash(shown: str, path: str, other: str, label: str) -> str | None:
    """Why ``path`` (named ``shown`` in the message) may not be written beside ``label``
    ``other``: one is, holds or lies inside the other (None: they are apart)."""
    a, b = key(path), key(other)
    if a != absolute(path):  # through a link (or ".."): say where it leads
        shown = f"{shown} (that is {a!r})"
    if a == b:
        return f"{shown} is {label} {b!r}"
    if inside(b, a):
        return f"{shown} holds {label} {b!r}"
    if inside(a, b):
        return f"{shown} lies inside {label} {b!r}"
    return None


def stores_read(x) -> list[str]:
    """The Zarr stores a lazy result reads (their roots: local folders or URLs), found on its
    dask graph: the zarr arrays behind ``da.from_zarr`` and ``xr.open_zarr``, and the arrays
    distconv's declared layers read (graph/declared.py). A numpy or cupy array reads none."""
    from dask.blockwise import Blockwise

    from ..core import checks
    from ..graph.declared import Declared

    if checks.array_kind(x) == "xarray":
        datas = [v.data for v in x.variables.values()] if hasattr(x, "variables") else [x.data]
        datas += [c.data for c in getattr(x, "coords", {}).values()]
    else:
        datas = [x]
    found: dict = {}
    walk = _zarr_finder(found)
    layers_seen: set = set()
    todo = [d for d in datas if checks.array_kind(d) == "dask"]
    while todo:
        graph = todo.pop().__dask_graph__()
        for name, layer in getattr(graph, "layers", {"": graph}).items():
            if name in layers_seen:
                continue
            layers_seen.add(name)
            if isinstance(layer, Declared) and checks.array_kind(layer.source) == "dask":
                todo.append(layer.source)  # its tasks read only its source: not walked one by one
            elif isinstance(layer, Blockwise):  # its task, once, and its constant arguments
                walk(layer.task)
                walk([value for value, index in layer.indices if index is None])
            else:
                for value in dict(layer).values():
                    walk(value)
    roots = (_store_root(z.store) for z in found.values())
    return sorted({r for r in roots if r is not None})


def _zarr_finder(found: dict):
    """A function that adds to ``found`` the zarr arrays inside one graph value (a task, its
    arguments, xarray's lazy wrappers)."""
    import functools

    import zarr

    try:
        from dask._task_spec import DataNode, Task
    except ImportError:  # a dask whose tasks are plain tuples
        DataNode = Task = ()
    plain = (str, bytes, int, float, complex, slice, range, type(None))

    def walk(obj, depth: int = 0):
        if depth > 32 or isinstance(obj, plain):
            return
        if isinstance(obj, zarr.Array):
            found[id(obj)] = obj
        elif isinstance(obj, Task):
            for a in (*obj.args, *obj.kwargs.values()):
                walk(a, depth + 1)
        elif isinstance(obj, DataNode):
            walk(obj.value, depth + 1)
        elif isinstance(obj, (tuple, list, set, frozenset)):
            for a in obj:
                walk(a, depth + 1)
        elif isinstance(obj, dict):
            for a in obj.values():
                walk(a, depth + 1)
        elif isinstance(obj, functools.partial):
            for a in (*obj.args, *(obj.keywords or {}).values()):
                walk(a, depth + 1)
        elif type(obj).__module__.startswith("xarray."):  # xarray's lazy indexing wrappers
            for attr in ("array", "_array"):
                inner = getattr(obj, attr, None)
                if inner is not None:
                    walk(inner, depth + 1)

    return walk


def _store_root(store) -> str | None:
    """Where a zarr store lives: its local folder or its URL (None: in memory or unknown)."""
    root = getattr(store, "root", None)  # LocalStore
    if root is not None:
        return absolute(str(root))
    fs, path = getattr(store, "fs", None), getattr(store, "path", None)
    if fs is None or path is None:
        return None
    protocol = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
    if protocol in ("file", "local"):
        return absolute(path)
    return f"{protocol}://{str(path).strip('/')}"


def check_apart(output: str, x, name: str = "path"):
    """Refuse, before anything is removed or written, an ``output`` that is, holds or lies
    inside a Zarr store the lazy result ``x`` reads (stores_read): replacing it would delete
    the data the result is computed from. Raises OutputError naming the argument and both
    paths."""
    for store in stores_read(x):
        why = clash(f"{name}={str(output)!r}", output, store, "the Zarr store")
        if why is not None:
            raise OutputError(f"{why}, which the data to write is read from; writing there would "
                              "replace or change it before it is read: choose a path outside it")


def mark_json(doc):
    """``doc`` (a summary, or a list of them) carrying distconv's mark."""
    if isinstance(doc, list):
        return [mark_json(d) for d in doc]
    return {**doc, MARK_KEY: MARK_VALUE} if isinstance(doc, dict) else doc


def write_json(path: str, doc, indent: int | None = None):
    """Write ``doc`` with distconv's mark to ``path`` (its folder made where missing)."""
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(mark_json(doc), indent=indent, default=str))


PNG_METADATA = {MARK_KEY: MARK_VALUE}  # matplotlib's savefig(metadata=...): a PNG text chunk


def is_ours(path: str, kind: str) -> bool:
    """Does the existing file at ``path`` carry distconv's mark for its ``kind``?"""
    try:
        if kind == "json":
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            docs = doc if isinstance(doc, list) and doc else [doc]
            return all(isinstance(d, dict) and d.get(MARK_KEY) == MARK_VALUE for d in docs)
        if kind == "png":
            from PIL import Image

            with Image.open(path) as im:
                return im.format == "PNG" and getattr(im, "text", {}).get(MARK_KEY) == MARK_VALUE
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline().rstrip("\n") == MARK_LINE
    except Exception:  # noqa: BLE001 - unreadable, not JSON, not an image: not a file of ours
        return False


def file_problem(name: str, path: str, kind: str) -> str | None:
    """Why the plain file output ``path`` (``name``: the option or key, ``kind``: json, png or
    markdown) may not be written, or None: a URL, a wrong suffix, a folder there, a file
    distconv did not write there, or a folder that cannot be made or written."""
    shown = f"{name} {path!r}"
    if is_url(path):
        return f"{shown} is written as a local file; give a local path"
    need = KINDS[kind]
    if need and not str(path).lower().endswith(need):
        return f"{shown} must end in {' or '.join(need)} (it is written as {kind.upper()})"
    if os.path.isdir(path):
        return f"{shown} is a folder; give a file path"
    if os.path.lexists(path):
        if not os.path.isfile(path):
            return f"{shown} exists and is not a plain file; choose another path"
        if not is_ours(path, kind):
            return (f"{shown} exists and was not written by distconv; distconv never replaces what it did "
                    "not write: choose another path or remove it yourself")
        if not os.access(path, os.W_OK):
            return f"{shown} is not writable"
        return None
    folder = os.path.dirname(os.path.abspath(path))
    existing = folder
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{shown}: {existing!r} is a file, so the folder {folder!r} cannot be made"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{shown}: the folder {existing!r} is not writable"
    return None
