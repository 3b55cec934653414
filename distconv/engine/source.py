"""The input array as a job sees it: where it lives, a fingerprint of its metadata, which codec
pipeline reads it (and why, where it is not the fast one), its dimension names; and the array
opened once per process for each such view.

A worker outlives jobs (a kept cluster, a notebook's ``dc.cluster()``), and an input may be
rewritten in place between them with another dtype, chunking or codecs. Everything a process
keeps of an input is keyed by the view (path and fingerprint), so a changed input is opened
again, and an input that changed between a job's plan and its blocks is refused by name
rather than decoded with the old metadata.

The pipeline is chosen when the job is planned, from the array's metadata: zarrs (the Rust codec
pipeline, when installed) for what it reads, zarr-python's own for the rest (object storage,
codecs zarrs lacks, Zarr v2 chunks in Fortran order). Blocks always decode into memory of the
native byte order; zarrs swaps a big-endian array's bytes as it decodes into it.
"""

from __future__ import annotations

import collections
import hashlib
import json
import threading
from dataclasses import dataclass

import numpy as np

from .location import is_url, join
from .process import STATE

ZARRS = "zarrs"
ZARR_PYTHON = "zarr-python"
_PIPELINES = {ZARRS: "zarrs.ZarrsCodecPipeline", ZARR_PYTHON: "zarr.core.codec_pipeline.BatchedCodecPipeline"}
_METADATA_FILES = ("zarr.json", ".zarray")  # Zarr v3's, then v2's
_CONFIG_LOCK = threading.Lock()


@dataclass(frozen=True)
class Source:
    """An input array as a job reads it.

    Attributes
    ----------
    path : str
        Its folder or URL.
    meta_digest : str
        A digest of its metadata document (dtype, shape, chunks, codecs, fill value...).
    stamp : str
        The metadata file's modification time and size (object storage: its ETag), as planned.
    pipeline : str
        ``"zarrs"`` or ``"zarr-python"``: the codec pipeline that decodes it.
    why : str or None
        Why zarr-python's pipeline reads it (None where zarrs does).
    dims : tuple of str or None
        Its dimension names (Zarr v3's ``dimension_names``, or xarray's ``_ARRAY_DIMENSIONS``
        attribute of a Zarr v2 array), None where it has none.
    """

    path: str
    meta_digest: str
    stamp: str
    pipeline: str
    why: str | None = None
    dims: tuple | None = None

    @property
    def key(self) -> tuple:
        """What a process keys its state of this input by: the path and the fingerprint."""
        return (self.path, self.meta_digest, self.stamp)


@dataclass(frozen=True)
class Stored:
    """A stored Zarr array as its metadata says, nothing opened: what a plan reads of its input.
    ``dtype`` is as stored (any byte order); ``chunks`` its chunks (a sharded array's inner
    ones), ``shards`` its shards or None; ``meta`` its metadata document
    (``zarr.Array.metadata.to_dict()``'s keys), ``attrs`` its attributes; ``meta_digest`` the
    digest of the metadata as read here, so a job planned from it refuses an input rewritten
    since (a later read would describe the new array under the old plan)."""

    path: str
    shape: tuple
    dtype: np.dtype
    chunks: tuple
    shards: tuple | None
    meta: dict
    attrs: dict
    meta_digest: str | None = None

    @classmethod
    def of_zarr(cls, z, path: str) -> Stored:
        """The description of the opened zarr.Array ``z`` that lives at ``path``."""
        meta = z.metadata.to_dict()
        return cls(str(path), tuple(z.shape), np.dtype(z.dtype), tuple(z.chunks), getattr(z, "shards", None),
                   meta, dict(z.attrs), digest(metadata_document(str(path)) or meta))


# Zarr v3 data types read here without zarr (any other: zarr-python reads the metadata)
_V3_TYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
             "float32", "float64", "complex64", "complex128"}


def read_stored(path: str) -> Stored | None:
    """The local Zarr v2 or v3 array at ``path`` read from its metadata file as JSON (zarr is not
    imported); None where that does not describe it plainly (object storage, a group, a data
    type or chunk grid of another kind): zarr-python reads those."""
    import os

    if is_url(str(path)):
        return None
    try:
        doc = metadata_document(str(path))
        return None if doc is None else _stored_of(os.path.abspath(str(path)), doc)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _stored_of(path: str, doc: dict) -> Stored | None:
    shape, attrs = tuple(doc["shape"]), dict(doc.get("attributes") or {})
    if doc.get("zarr_format") == 2:
        dt = np.dtype(doc["dtype"])
        if dt.fields is not None or dt.kind not in "biufc":
            return None
        return Stored(path, shape, dt, tuple(doc["chunks"]), None, doc, attrs, digest(doc))
    grid = doc.get("chunk_grid") or {}
    if doc.get("node_type") != "array" or grid.get("name") != "regular" or doc.get("data_type") not in _V3_TYPES:
        return None
    chunks, shards, codecs = tuple(grid["configuration"]["chunk_shape"]), None, doc.get("codecs") or []
    if len(codecs) == 1 and codecs[0].get("name") == "sharding_indexed":
        shards, codecs = chunks, codecs[0]["configuration"].get("codecs") or []
        chunks = tuple(doc["codecs"][0]["configuration"]["chunk_shape"])
    # in v3 the byte order is the bytes codec's (``meta`` keeps it for the shard reader), not the
    # data type's: zarr-python reports the data type in native order, and so does this
    dt = np.dtype(doc["data_type"])
    return Stored(path, shape, dt, chunks, shards, doc, attrs, digest(doc))


def metadata_document(path: str) -> dict | None:
    """The array's metadata document as stored: Zarr v3's zarr.json, or v2's .zarray with its
    .zattrs as ``attributes``; None where neither is there."""
    for name in _METADATA_FILES:
        raw = _read_text(join(path, name))
        if raw is None:
            continue
        doc = json.loads(raw)
        if name == ".zarray":
            doc["attributes"] = json.loads(_read_text(join(path, ".zattrs")) or "{}")
        return doc
    return None


def _read_text(f: str) -> str | None:
    if is_url(f):
        import fsspec

        try:
            with fsspec.open(f, "rt") as h:
                return h.read()
        except FileNotFoundError:
            return None
    try:
        with open(f) as h:
            return h.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def view(job) -> tuple:
    """What a process keys its state of a job's input by (its decode batches, its halo rows):
    the job's run and, where the job has one, its view of the input (path and fingerprint)."""
    source = getattr(job, "source", None)
    return (job.run,) + (source.key if source is not None else (job.src,))


def native(dtype) -> np.dtype:
    """``dtype`` in this machine's byte order (blocks read and compute in it)."""
    dt = np.dtype(dtype)
    return dt if dt.isnative else dt.newbyteorder("=")


def describe(path: str, meta: dict, meta_digest: str | None = None) -> Source:
    """The view a job planned now has of the Zarr array at ``path`` whose metadata document is
    ``meta`` (``zarr.Array.metadata.to_dict()``); ``meta_digest``: its digest as the plan read it
    (else of the metadata as it is now)."""
    pipeline, why = pipeline_of(path, meta)
    return Source(str(path), meta_digest or digest(metadata_document(str(path)) or meta), stamp(path), pipeline,
                  why, dims_of(meta))


def digest(meta: dict) -> str:
    """A digest of what decides how an array's chunks decode (its attributes left out), of its
    metadata document as stored (metadata_document) wherever there is one, so that a plan made
    from the file and a worker's zarr-python agree."""
    doc = {k: v for k, v in meta.items() if k != "attributes"}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=repr).encode()).hexdigest()[:32]


def stamp(path: str) -> str:
    """The array's metadata file as it is now: modification time and size (an ETag where object
    storage gives one); '' when there is none to read."""
    for name in _METADATA_FILES:
        f = join(path, name)
        if is_url(f):
            import fsspec

            fs, key = fsspec.core.url_to_fs(f, use_listings_cache=False)
            try:
                info = fs.info(key)
            except FileNotFoundError:
                continue
            tag = info.get("ETag") or info.get("etag") or info.get("md5Hash")
            return str(tag) if tag else f"{info.get('mtime') or info.get('LastModified')}:{info.get('size')}"
        import os

        try:
            st = os.stat(f)
        except FileNotFoundError:
            continue
        return f"{st.st_mtime_ns}:{st.st_size}"
    return ""


def dims_of(meta: dict) -> tuple | None:
    """The array's dimension names: Zarr v3's ``dimension_names``, else the
    ``_ARRAY_DIMENSIONS`` attribute xarray gives a Zarr v2 array; None where it has none (or
    not one per axis)."""
    names = meta.get("dimension_names")
    if names is None:
        names = (meta.get("attributes") or {}).get("_ARRAY_DIMENSIONS")
    if not names or len(names) != len(meta.get("shape", ())) or any(n is None for n in names):
        return None
    return tuple(str(n) for n in names)


def pipeline_of(path: str, meta: dict) -> tuple:
    """(the codec pipeline that reads the array at ``path`` of metadata ``meta``, why not zarrs
    or None): zarrs where it is installed and reads every codec of the array, else
    zarr-python's own."""
    import importlib.util

    if is_url(path):
        return ZARR_PYTHON, "the input is in object storage, which zarr-python's fsspec store reads"
    if importlib.util.find_spec("zarrs") is None:
        return ZARR_PYTHON, "zarrs is not installed"
    if meta.get("zarr_format") == 2 and meta.get("order", "C") != "C":
        return ZARR_PYTHON, "its Zarr v2 chunks are in Fortran order (order: F), which zarrs does not read"
    refused = None if _plain(meta) else _zarrs_refuses(path, meta)
    if refused:
        return ZARR_PYTHON, f"zarrs does not read its codecs ({refused})"
    return ZARRS, None


# codecs zarrs reads, known without asking it (which imports zarr): the common layouts
_PLAIN_CODECS = {"bytes", "zstd", "gzip", "blosc", "crc32c", "transpose"}
_PLAIN_TYPES = _V3_TYPES - {"float16", "complex64", "complex128"}


def _plain(meta: dict) -> bool:
    """Is ``meta`` a Zarr v3 array of a plain numeric type whose codecs (and its shards') zarrs
    reads? (Anything else is asked of zarrs itself.)"""
    def plain(codecs) -> bool:
        return bool(codecs) and all(isinstance(c, dict) and c.get("name") in _PLAIN_CODECS for c in codecs)

    codecs = meta.get("codecs") or []
    if len(codecs) == 1 and isinstance(codecs[0], dict) and codecs[0].get("name") == "sharding_indexed":
        cfg = codecs[0].get("configuration") or {}
        codecs = (cfg.get("codecs") or []) + (cfg.get("index_codecs") or [])
    key = meta.get("chunk_key_encoding") or {}
    return (meta.get("zarr_format") == 3 and meta.get("data_type") in _PLAIN_TYPES and plain(codecs)
            and not meta.get("storage_transformers") and key.get("name") in ("default", "v2")
            and (meta.get("chunk_grid") or {}).get("name") == "regular")


def _zarrs_refuses(path: str, meta: dict) -> str | None:
    """Why zarrs' own check refuses the array's metadata, or None when it takes it."""
    import zarr
    from zarr.core.metadata import ArrayV2Metadata, ArrayV3Metadata
    from zarrs.pipeline import UnsupportedMetadataError, get_codec_pipeline_impl

    try:
        kind = ArrayV3Metadata if meta.get("zarr_format") == 3 else ArrayV2Metadata
        get_codec_pipeline_impl(kind.from_dict(dict(meta)), zarr.storage.LocalStore(str(path), read_only=True),
                                strict=True)
    except UnsupportedMetadataError as e:
        return str(e.__cause__ or e) or "unsupported metadata"
    except Exception as e:  # noqa: BLE001 - a check that cannot run leaves the array to zarr-python
        return f"its metadata could not be checked: {type(e).__name__}: {e}"
    return None


class Opened:
    """The input arrays this process opened, by view (Source.key); the most recent few kept."""

    KEEP = 8

    def __init__(self):
        self._lock = threading.Lock()
        self._arrays = collections.OrderedDict()

    def get(self, source: Source):
        with self._lock:  # one open at a time: blocks starting together open the input once
            z = self._arrays.get(source.key)
            if z is None:
                z = self._arrays[source.key] = open_source(source)
                while len(self._arrays) > self.KEEP:
                    self._arrays.popitem(last=False)
            self._arrays.move_to_end(source.key)
            return z


def opened(source: Source):
    """The zarr.Array ``source`` reads, opened once per process for each view (its pipeline
    as planned)."""
    return STATE.get("opened inputs", Opened).get(source)


def open_source(source: Source):
    """``source``'s array opened with its planned pipeline; a RuntimeError naming the path when
    its metadata is no longer what the job was planned with (rewritten in place meanwhile)."""
    import zarr

    from .settings import zarr_settings

    # zarrs planned but not installed in this process: zarr-python's pipeline reads the same
    path = _PIPELINES[ZARR_PYTHON] if source.pipeline != ZARRS or not zarr_settings() else _PIPELINES[ZARRS]
    # zarr picks an array's pipeline from its process-wide config as it opens the array: set
    # and restored by one thread at a time (two interleaved restores left it set for good)
    with _CONFIG_LOCK, zarr.config.set({"codec_pipeline.path": path}):
        z = zarr.open_array(source.path, mode="r")
    if digest(metadata_document(source.path) or z.metadata.to_dict()) != source.meta_digest:
        raise RuntimeError(f"the input {source.path!r} changed after this job was planned (its dtype, shape, "
                           f"chunks or codecs are now {z.dtype}, {z.shape}, {z.chunks}); run the job again")
    return z
