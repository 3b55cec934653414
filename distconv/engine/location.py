"""Where a store lives: a local folder, or a URL fsspec knows (``s3://bucket/key``, ``gs://``,
``memory://``). One small set of file operations for both, so the ownership marks, the resume
marks and the checks before a run read the same on object storage as on a disk.

Object stores have no folders: a "folder" exists while a key lies under it, and is created by
writing one. Listings are not cached (another process may have written since).

The engine's byte-level reads and writes of chunk and shard files (size, read_into, read_tail,
write_pieces) go through the same two branches: system calls on a disk, fsspec's ranged GETs
and PUTs on object storage, so a block reads and writes the same byte ranges on both.
"""

from __future__ import annotations

import posixpath
from pathlib import Path


def is_url(path) -> bool:
    return "://" in str(path)


def absolute(path) -> str:
    """A local path made absolute against this process's folder (a URL as written): what is
    handed to workers, whose folder may be another's (a kept cluster started elsewhere)."""
    return str(path) if is_url(path) else str(Path(path).expanduser().absolute())


def join(path, *names) -> str:
    if is_url(path):
        return posixpath.join(str(path).rstrip("/"), *names)
    return str(Path(path, *names))


def basename(path) -> str:
    return posixpath.basename(str(path).rstrip("/")) if is_url(path) else Path(path).name


def _fs(path: str):
    """(fsspec file system, key) of a URL."""
    import fsspec

    return fsspec.core.url_to_fs(path, use_listings_cache=False)


def size(path) -> int:
    """Bytes in the file at ``path``; -1 when there is none."""
    if is_url(path):
        fs, key = _fs(str(path))
        try:
            return int(fs.size(key))
        except FileNotFoundError:
            return -1
    import os

    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return -1


def read_into(path, start: int, dest) -> None:
    """Bytes start.. of the file at ``path`` into ``dest`` (a numpy array, filled whole; on a
    disk without an intermediate copy)."""
    view = memoryview(dest).cast("B")
    if is_url(path):
        fs, key = _fs(str(path))
        data = fs.cat_file(key, start=start, end=start + len(view))
        if len(data) < len(view):
            raise OSError(f"{path}: ends before byte {start + len(view)}")
        view[:] = data
        return
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        got = 0
        while got < len(view):
            n = fh.readinto(view[got:])
            if not n:
                raise OSError(f"{path}: ends before byte {start + len(view)}")
            got += n


def read_tail(path, nbytes: int) -> bytes | None:
    """The last ``nbytes`` bytes of the file at ``path``; None when there is no such file."""
    if is_url(path):
        n = size(path)
        if n < 0:
            return None
        fs, key = _fs(str(path))
        return fs.cat_file(key, start=max(0, n - nbytes), end=n)
    try:
        with open(path, "rb") as fh:
            fh.seek(-nbytes, 2)
            return fh.read(nbytes)
    except FileNotFoundError:
        return None


def write_pieces(path, pieces) -> int:
    """A new file at ``path`` made of ``pieces`` (buffers, written in order: on a disk with one
    call, on object storage as one PUT); its folder must exist on a disk. Returns its bytes."""
    if is_url(path):
        fs, key = _fs(str(path))
        data = b"".join(memoryview(p).cast("B") for p in pieces)
        fs.pipe_file(key, data)
        return len(data)
    with open(path, "wb") as f:
        f.writelines(pieces)
    return sum(len(memoryview(p).cast("B")) for p in pieces)


class Location:
    """A path in a store, local or remote; ``child`` names an entry below it."""

    def __init__(self, path):
        self.path = str(path)
        self.url = is_url(path)
        if self.url:
            self.fs, self._key = _fs(self.path)
        else:
            self.local = Path(path)

    def child(self, *names) -> Location:
        return Location(join(self.path, *names))

    def exists(self) -> bool:
        return self.fs.exists(self._key) if self.url else self.local.exists()

    def is_dir(self) -> bool:
        return self.fs.isdir(self._key) if self.url else self.local.is_dir()

    def is_file(self) -> bool:
        return self.fs.isfile(self._key) if self.url else self.local.is_file()

    def is_dangling_link(self) -> bool:
        return not self.url and self.local.is_symlink() and not self.local.exists()

    def names(self) -> list[str]:
        """Entries directly below (none when it does not exist)."""
        if self.url:
            if not self.fs.isdir(self._key):
                return []
            return [posixpath.basename(p.rstrip("/")) for p in self.fs.ls(self._key, detail=False)]
        return [e.name for e in self.local.iterdir()] if self.local.is_dir() else []

    def files(self) -> list[str]:
        """Every file below, as paths relative to this one ('c/0/1'), symbolic links included
        (a link is listed, never followed); none when it does not exist."""
        if self.url:
            if not self.fs.isdir(self._key):
                return []
            root = self._key.rstrip("/") + "/"
            return sorted(k[len(root):] for k in self.fs.find(self._key) if k.startswith(root))
        import os

        out = []
        for top, dirs, names in os.walk(self.local):
            rel = Path(top).relative_to(self.local)
            out += [(rel / n).as_posix() for n in names]
            out += [(rel / d).as_posix() for d in dirs if (Path(top) / d).is_symlink()]
        return sorted(out)

    def stamp(self) -> dict:
        """What changes when anything below changes: how many files, their bytes and the
        newest modification time (seconds; object stores: their LastModified)."""
        if self.url:
            found = self.fs.find(self._key, detail=True) if self.fs.isdir(self._key) else {}
            times = [_mtime(v) for v in found.values()]
            return {"files": len(found), "bytes": int(sum(v.get("size") or 0 for v in found.values())),
                    "modified": max([t for t in times if t is not None], default=None)}
        import os

        n = size = 0
        newest = self.local.stat().st_mtime if self.local.exists() else None
        for top, _, names in os.walk(self.local):
            for name in names:
                st = os.stat(os.path.join(top, name), follow_symlinks=False)
                n, size, newest = n + 1, size + st.st_size, max(newest, st.st_mtime)
        return {"files": n, "bytes": size, "modified": newest}

    def remove_files(self, rels: list[str]):
        """Delete these files (paths relative to this one), then the folders they leave empty;
        nothing else is touched."""
        if not rels:
            return
        if self.url:
            self.fs.rm([posixpath.join(self._key, r) for r in rels])
            return
        dirs = set()
        for r in rels:
            f = self.local / r
            if f.is_symlink() or f.exists():
                f.unlink()
            dirs.update(f.parents)
        for d in sorted((d for d in dirs if self.local in d.parents), key=lambda d: -len(d.parts)):
            try:
                d.rmdir()  # only when empty: a file that appeared meanwhile stays, with its folder
            except OSError:
                pass

    def read_text(self) -> str:
        return self.fs.cat_file(self._key).decode() if self.url else self.local.read_text()

    def write_text(self, text: str):
        if self.url:
            self.fs.pipe_file(self._key, text.encode())
        else:
            self.local.write_text(text)

    def touch(self):
        self.write_text("")

    def make_dir(self):
        """Local: the folder and its parents. Object storage: nothing (keys make folders)."""
        if not self.url:
            self.local.mkdir(parents=True, exist_ok=True)

    def key(self) -> str:
        """Where it is, comparable with another Location's: an absolute local path, or the
        URL's protocol and key."""
        if self.url:
            proto = self.fs.protocol[0] if isinstance(self.fs.protocol, tuple) else self.fs.protocol
            return f"{proto}://{self._key.rstrip('/')}"
        return str(self.local.resolve())


def _mtime(info: dict):
    """A listing entry's modification time in epoch seconds (fsspec backends name it
    differently), or None."""
    for k in ("mtime", "LastModified", "last_modified", "created"):
        v = info.get(k)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return float(v.timestamp())
        try:
            return float(v)
        except (TypeError, ValueError):
            continue
    return None
