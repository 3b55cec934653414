"""Conditional writes to a store, the few that distconv's marks and fenced block writes need,
on a local folder and on object storage alike.

- ``read`` gives a file's bytes and a version; ``replace`` writes new bytes only while the
  version is still the one read (compare-and-swap); ``create`` writes only where nothing is.
- ``exclusive(folder)`` is held around a change that must not interleave with another
  process's (a mark's change, a block's move into place).
- ``move`` puts a file written aside into place; ``fingerprint`` tells whether a file is still
  the one a write left there.

On a local folder the versions are the bytes themselves and ``exclusive`` is an advisory
lock (``flock``) on a lock file beside the marks, released by the kernel when its holder dies.
On S3 the store itself checks: a put with ``If-None-Match: *`` creates, a put with ``If-Match``
replaces the version (ETag) read. fsspec's ``memory://`` lives in this process: a lock here.
Other object stores offer no conditional put that fsspec exposes: refused by ``check``.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import threading
from pathlib import Path

from .location import is_url

LOCK = ".distconv-lock"   # the lock file of a local output (flock; never removed while in use)
NEW = ".new"              # a replacement written beside its file, then renamed over it

CONDITIONAL = ("s3", "s3a", "memory")  # object stores whose puts distconv can make conditional


class Unsupported(ValueError):
    """A store where distconv cannot change its marks by compare-and-swap."""


def _plain(path) -> str:
    """``path`` as given, or a ``file://`` URL as the local path it names (a disk's own calls
    then serve it)."""
    path = str(path)
    return path[len("file://"):] if path.startswith("file://") else path


def _fs(path: str):
    import fsspec

    return fsspec.core.url_to_fs(path, use_listings_cache=False)


def _protocol(fs) -> str:
    return fs.protocol[0] if isinstance(fs.protocol, tuple) else fs.protocol


def check(path: str):
    """Raise Unsupported where ``path`` lies in a store whose writes cannot be made conditional."""
    path = _plain(path)
    if not is_url(path):
        return
    proto = _protocol(_fs(path)[0])
    if proto not in CONDITIONAL:
        raise Unsupported(f"{path!r}: distconv guards its output marks with conditional writes, which it "
                          f"makes on local folders, s3:// and memory://, not on {proto}://")


# -- one process's lock, reentrant per thread, beside the lock between processes

_guard = threading.Lock()
_locks: dict = {}            # folder -> this process's lock of it
_depth = threading.local()   # .held: folder -> how deep this thread holds it
_memory = threading.RLock()


def _thread_lock(folder: str) -> threading.RLock:
    with _guard:
        return _locks.setdefault(folder, threading.RLock())


@contextlib.contextmanager
def exclusive(folder: str):
    """Hold the output ``folder``'s lock: no other process or thread changes its marks or moves
    a block into it meanwhile. Reentrant within a thread. Object storage has no lock (its
    conditional puts stand in for one): a no-op there, except for ``memory://``."""
    folder = _plain(folder)
    if is_url(folder):
        if _protocol(_fs(folder)[0]) == "memory":
            with _memory:
                yield
        else:
            yield
        return
    import fcntl

    key = os.path.realpath(folder)
    lock = _thread_lock(key)
    held = _depth.__dict__.setdefault("held", {})
    with lock:
        if held.get(key):  # this thread holds it already
            held[key] += 1
            try:
                yield
            finally:
                held[key] -= 1
            return
        fd = os.open(os.path.join(key, LOCK), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held[key] = 1
            try:
                yield
            finally:
                held[key] = 0
        finally:
            os.close(fd)  # releases the flock


# -- versions, create, replace


def read(path: str):
    """(bytes, version) of the file at ``path``; (None, None) when there is none."""
    path = _plain(path)
    if not is_url(path):
        try:
            data = Path(path).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None, None
        return data, data
    fs, key = _fs(path)
    if _protocol(fs) in ("s3", "s3a"):
        return _s3_get(fs, key)
    try:
        data = fs.cat_file(key)
    except FileNotFoundError:
        return None, None
    return data, data


def create(path: str, data: bytes) -> bool:
    """Write ``data`` to a new file at ``path``; False (nothing written) when one is there."""
    path = _plain(path)
    if not is_url(path):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, data)  # a mark is small: one write (readers retry an empty one)
        finally:
            os.close(fd)
        return True
    fs, key = _fs(path)
    if _protocol(fs) in ("s3", "s3a"):
        return _s3_put(fs, key, data, mode="create")
    with _memory:
        if fs.exists(key):
            return False
        fs.pipe_file(key, data)
        return True


def _s3_put(fs, key: str, data: bytes, **condition) -> bool:
    """A conditional put (``mode="create"``: If-None-Match, ``IfMatch``: the version read); False
    when the condition failed, nothing written."""
    # a create finds the file there; a replace finds it gone
    failed = FileExistsError if condition.get("mode") == "create" else FileNotFoundError
    return _s3_conditional(lambda: fs.pipe_file(key, data, **condition), failed)


def _s3_conditional(call, failed) -> bool:
    """``call()``, a conditional S3 request: False when its condition failed (``failed``, or
    S3's 412/409 answer), True when it was done."""
    try:
        call()
    except failed:
        return False
    except OSError as e:
        if _s3_conflict(e):
            return False
        raise
    return True


def replace(path: str, data: bytes, version) -> bool:
    """Write ``data`` over the file at ``path`` while it is still ``version`` (from ``read``;
    None: while there is no file); False, nothing written, when it changed meanwhile."""
    path = _plain(path)
    if version is None:
        return create(path, data)
    if not is_url(path):
        with exclusive(os.path.dirname(path)):
            try:
                if Path(path).read_bytes() != version:
                    return False
            except FileNotFoundError:
                return False
            put(path, data)
            return True
    fs, key = _fs(path)
    if _protocol(fs) in ("s3", "s3a"):
        return _s3_put(fs, key, data, IfMatch=version)
    with _memory:
        try:
            if fs.cat_file(key) != version:
                return False
        except FileNotFoundError:
            return False
        fs.pipe_file(key, data)
        return True


def put(path: str, data: bytes):
    """Write ``data`` to ``path`` whole: readers see the old bytes or the new, never a part
    (on a disk written beside it and renamed over it)."""
    path = _plain(path)
    if is_url(path):
        fs, key = _fs(path)
        fs.pipe_file(key, data)
        return
    new = path + NEW
    with open(new, "wb") as f:
        f.write(data)
    os.replace(new, path)


def delete(path: str, version=None) -> bool:
    """Remove the file at ``path`` (while it is still ``version``, when given); True when removed."""
    path = _plain(path)
    if not is_url(path):
        with exclusive(os.path.dirname(path)) if version is not None else contextlib.nullcontext():
            try:
                if version is not None and Path(path).read_bytes() != version:
                    return False
                os.unlink(path)
            except FileNotFoundError:
                return False
            return True
    fs, key = _fs(path)
    if _protocol(fs) in ("s3", "s3a") and version is not None:
        import fsspec.asyn

        bucket, k, _ = fs.split_path(key)
        return _s3_conditional(lambda: fsspec.asyn.sync(fs.loop, fs._call_s3, "delete_object", Bucket=bucket,
                                                        Key=k, IfMatch=version), FileNotFoundError)
    with _memory if _protocol(fs) == "memory" else contextlib.nullcontext():
        try:
            if version is not None and fs.cat_file(key) != version:
                return False
            fs.rm_file(key)
        except FileNotFoundError:
            return False
        return True


# -- blocks written aside, moved into place


def move(src: str, dst: str):
    """Put the file ``src`` (written aside, in the same store) at ``dst``: a rename on a disk
    (atomic), a server-side copy and delete on object storage."""
    src, dst = _plain(src), _plain(dst)
    if not is_url(src):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.replace(src, dst)
        return
    fs, a = _fs(src)
    _, b = _fs(dst)
    fs.mv(a, b)


def fingerprint(path: str):
    """What identifies the file now at ``path`` (a JSON value; None when there is none): on a
    disk its inode, size and modification time, on object storage its ETag (or size and time)."""
    path = _plain(path)
    if not is_url(path):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return [st.st_ino, st.st_size, st.st_mtime_ns]
    fs, key = _fs(path)
    try:
        return _print_of(fs.info(key))
    except FileNotFoundError:
        return None


def fingerprints(folder: str) -> dict:
    """``fingerprint`` of every file below ``folder``, by path relative to it (one listing)."""
    folder = _plain(folder)
    if not is_url(folder):
        out = {}
        for top, _, names in os.walk(folder):
            for n in names:
                p = os.path.join(top, n)
                out[os.path.relpath(p, folder).replace(os.sep, "/")] = fingerprint(p)
        return out
    fs, key = _fs(folder)
    if not fs.isdir(key):
        return {}
    root = key.rstrip("/") + "/"
    return {k[len(root):]: _print_of(v) for k, v in fs.find(key, detail=True).items() if k.startswith(root)}


def _print_of(info: dict):
    etag = info.get("ETag") or info.get("etag")
    if etag:
        return str(etag).strip('"')
    created = info.get("created") or info.get("mtime") or info.get("LastModified")
    if hasattr(created, "timestamp"):  # a listing and a lookup may give one as a number, one as a date
        created = created.timestamp()
    return [int(info.get("size") or 0), str(created)]


def aside_name(folder: str, name: str) -> str:
    """A path in ``folder`` (the same store as the file it stands in for) named ``name``."""
    folder = _plain(folder)
    return posixpath.join(folder.rstrip("/"), name) if is_url(folder) else os.path.join(folder, name)


# -- S3


def _s3_get(fs, key):
    """(bytes, ETag) of one GET: the version is the one those bytes have."""
    import fsspec.asyn

    bucket, k, _ = fs.split_path(key)

    async def get():
        resp = await fs._call_s3("get_object", Bucket=bucket, Key=k)
        try:
            return await resp["Body"].read(), resp["ETag"]
        finally:
            resp["Body"].close()

    try:
        return fsspec.asyn.sync(fs.loop, get)
    except FileNotFoundError:
        return None, None


def _s3_conflict(e: BaseException) -> bool:
    """Did S3 refuse a conditional request (the object changed, or another conditional write
    to it was under way)?"""
    cause = e.__cause__ or e.__context__
    code = getattr(cause, "response", {}).get("Error", {}).get("Code", "")
    return code in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409")
