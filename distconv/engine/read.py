"""A block's read stage and its rows on the device: shard frames read in place, a batch's rows
decoded on the GPU, or zarr decoding on the host's cores with halo rows handed between
neighbouring blocks."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np

from ..backends.device import device
from . import batches, chunk_heads, plain_chunks, shards
from .plan import Job, runs
from .process import SCHEDULER_ROOT, STATE
from .source import describe, native, opened, view


def input_array(job: Job):
    """The zarr.Array the job reads, opened once per process for its view of it (a job made
    without a plan's view gets one from the metadata now)."""
    if job.source is not None:
        return opened(job.source)
    import zarr

    return opened(describe(job.src, zarr.open_array(job.src, mode="r").metadata.to_dict()))


def resumed(job: Job) -> bool:
    """Can a block of ``job`` have been written before this run (its claim resumed an output)?
    A fresh claim's token is new, so no block has its mark: none is looked up (on an object
    store, a request a block and a neighbour)."""
    return job.owner is not None and job.owner.resuming


def fetch(job: Job, i: int, rows: tuple, slot: int, clock):
    """The read stage of block ``i``: rows lo..hi of the input (``rows`` = (lo, r0, r1, hi): the
    block r0..r1 and its halo), as shards.Frames on the host when the input's shards decode on
    this GPU through nvCOMP (the files read straight into pinned memory), as its batch's
    frames decoded on the device when the input is zarr's plain zstd chunks (batches.Reader), else
    as an array decoded by zarr (zarrs when installed; on a GPU straight into pinned memory: a
    pageable upload is many times slower), the halo rows shared with neighbouring blocks."""
    lo, r0, r1, hi = rows
    dev = device(job.gpu)
    src = input_array(job)
    if dev.frames and job.src_layout is None and job.batches:
        parts = STATE.get("batches", batches.Reader).take(job, i, src, lo, hi, clock,
                                                          functools.partial(runs, job) if resumed(job) else None)
        clock.lap("batch wait")
        if parts is not None:
            return Decoded(parts)
    if dev.frames and job.src_layout is not None:
        fr = shards.read_frames(job.src, job.src_layout, lo, hi, dev.frame_staging(slot))
        clock.lap("read files")
        if fr is not None:
            return fr
    host = dev.staging(slot, (hi - lo,) + src.shape[1:], native(src.dtype))
    edges = STATE.get("edge rows", EdgeRows)
    clock.count("halos decoded", edges.read(view(job), src, host, rows, job.stencil.depth[0], elsewhere(job, i)))
    clock.lap("decode")
    return host


def elsewhere(job: Job, i: int) -> tuple:
    """(above, below): do block ``i``'s neighbours run on another worker? (job.graph gives each
    worker a range of blocks, job.batches says where each range ends.)"""
    b = job.batches
    if not b:
        return False, False
    return i > 0 and b[i - 1][2] != b[i][2], i + 1 < len(b) and b[i][2] == i + 1


def to_device(job: Job, fetched, lo: int, hi: int, clock):
    """The fetched rows where the block runs: cut from its batch's decoded chunks, frames
    decoded by nvCOMP, a pinned host array uploaded, or (no GPU) the host array itself."""
    if isinstance(fetched, Decoded):
        ext = plain_chunks.gather([(d.flat, d.chunks, a, b) for d, a, b in fetched.parts], lo, hi)
        clock.lap("rows")
        return ext
    if isinstance(fetched, shards.Frames):
        ext = shards.decode_rows(fetched, lo, hi, device(job.gpu).decode_frames)
        clock.lap("decode")
        return ext
    if not job.gpu:
        return fetched
    ext = device(job.gpu).upload(fetched)
    clock.lap("upload")
    return ext


@dataclass(frozen=True)
class Decoded:
    """A block's rows decoded in batches on the device: [(batches.Decoded, a, b), ...]."""
    parts: list


def decode_into(src, a: int, b: int, dest: np.ndarray):
    """Rows a..b of the zarr array ``src`` decoded straight into ``dest``."""
    try:
        from zarr.core.buffer import default_buffer_prototype

        src.get_basic_selection((slice(a, b),), out=default_buffer_prototype().nd_buffer.from_numpy_array(dest))
    except (TypeError, ValueError, NotImplementedError):
        np.copyto(dest, src[a:b])


class PeerEdges:
    """Edge rows handed to a neighbouring block that runs on another worker (EdgeRows hands
    them within a process), through the scheduler: one entry per edge in its metadata, under
    the run (ROOT, run, "edges", edge), which says "promised" from the block's start, then holds the
    rows once its own rows are decoded. A block whose halo rows were promised waits for them
    (at most twice its own decode), one whose rows were not decodes them from storage, as
    before; where all blocks start at once (a block or a few a worker) no halo is decoded
    twice. Asking for an edge never promised costs no error on the scheduler (a Variable's
    timed-out get logged one with its traceback), and the run's end removes its entries at
    once (process.release), those of a worker that died too. Outside a dask worker, or for an edge
    over MAX_BYTES (the scheduler passes these along), nothing is handed."""

    MAX_BYTES = 8 << 20
    POLL_S = 0.01
    ROOT = SCHEDULER_ROOT  # the run's entry, which process.release removes as the run ends

    def __init__(self):
        import threading

        self._lock = threading.Lock()
        self._mine: dict = {}  # run -> the entries this process set (emptied when it ends)
        self._ended: set = set()  # runs dropped here: a block still running then hands nothing more

    @staticmethod
    def _client():
        try:
            from distributed import get_client, get_worker

            get_worker()
            return get_client()
        except (ImportError, ValueError):
            return None

    @classmethod
    def _entry(cls, key) -> list:
        import hashlib

        return [cls.ROOT, str(_run_of(key[0])), "edges", hashlib.sha1(repr(key).encode()).hexdigest()[:32]]

    def promise(self, key, nbytes: int):
        """The handle of the edge ``key`` (view, a, b), its entry set to "promised"; None where
        nothing is handed."""
        run = _run_of(key[0])
        with self._lock:
            if run in self._ended:  # stopped: its entries were removed, none is set again
                return None
        client = self._client() if nbytes <= self.MAX_BYTES else None
        if client is None:
            return None
        entry = self._entry(key)
        try:
            client.set_metadata(entry, "promised")
        except Exception:  # noqa: BLE001 - no scheduler to hand it through: neighbours decode
            return None
        with self._lock:
            self._mine.setdefault(run, []).append(entry)
        return client, entry

    def publish(self, handle, rows):
        """The promised edge's ``rows`` (None: this block failed, its neighbour decodes them);
        nothing once its run was dropped here (its entry is removed)."""
        client, entry = handle
        with self._lock:
            if entry[1] in self._ended:
                return
        value = "failed" if rows is None else {"rows": rows.tobytes(), "shape": list(rows.shape),
                                               "dtype": rows.dtype.str}
        try:
            client.set_metadata(entry, value)
        except Exception:  # noqa: BLE001 - the neighbour waits its time out and decodes
            pass

    def take(self, key, dest: np.ndarray, wait_s: float) -> bool:
        """Copy the edge ``key`` into ``dest`` if a block on another worker promised it and
        publishes it within ``wait_s``; False otherwise (decode it then)."""
        import time

        client = self._client()
        if client is None:
            return False
        entry, deadline = self._entry(key), time.monotonic() + wait_s
        try:
            while True:
                value = client.get_metadata(entry, None)  # None where nothing was promised
                if isinstance(value, dict):
                    np.copyto(dest, np.frombuffer(value["rows"], value["dtype"]).reshape(value["shape"]))
                    client.set_metadata(entry, None)  # taken: its bytes leave the scheduler
                    return True
                if value != "promised" or time.monotonic() > deadline:
                    return False
                time.sleep(self.POLL_S)
        except Exception:  # noqa: BLE001 - the scheduler is gone: decode
            return False

    def drop(self, run: str):
        """Empty the entries this process set for ``run`` that no neighbour took, and set none
        again (its blocks still running were stopped)."""
        with self._lock:
            self._ended.add(run)
            mine = self._mine.pop(run, [])
        client = self._client() if mine else None
        for entry in mine:
            try:
                client.set_metadata(entry, None)
            except Exception:  # noqa: BLE001 - the scheduler is gone, and its metadata with it
                pass


class EdgeRows:
    """Rows at the edges of the blocks this process decodes, handed to the neighbouring block.

    A block's halo rows lie in its neighbours' storage chunks; with 64 MiB chunks and 1 GiB
    blocks, decoding them again doubled every block's decode work. A lower halo (the
    first rows of the chunks below) of a plain zstd array is decoded from the heads of those
    chunks alone (chunk_heads). Other halo rows: a block first promises its edge rows, decodes
    its own rows, then publishes the edges; a neighbour in flight in this process waits for
    them; one on another worker takes them through PeerEdges; else the rows are decoded from
    storage. Nothing waits before publishing, so no two blocks wait on each other.
    """

    KEEP = 64  # entries not taken (a neighbour on another worker) are dropped oldest first

    def __init__(self):
        import collections
        import threading

        self._lock = threading.Lock()
        self._rows = collections.OrderedDict()
        self._peers = PeerEdges()

    def _promise(self, key):
        from concurrent.futures import Future

        with self._lock:
            fut = self._rows[key] = Future()
            while len(self._rows) > self.KEEP:
                self._rows.popitem(last=False)
        return fut

    def _take(self, key):
        with self._lock:
            return self._rows.pop(key, None)

    def drop(self, run: str):
        """Forget the edge rows of ``run`` (its run ended or was stopped)."""
        with self._lock:
            for k in [k for k in self._rows if _run_of(k[0]) == run]:
                del self._rows[k]
        self._peers.drop(run)

    def read(self, run, src, host: np.ndarray, rows: tuple, depth: tuple, elsewhere=(False, False)):
        """Fill ``host`` with rows lo..hi of ``src``: the block's own rows r0..r1 decoded here,
        its halo rows from a neighbour's published edges where there are any (``run``: the
        job's view, ``view(job)``, or its run's name; edges never cross them). ``depth``: the
        job's halo rows (above, below), the same for every block; ``elsewhere``: whether the
        neighbour above, below runs on another worker (edges handed through PeerEdges).
        Returns how many halo pieces were decoded from whole storage chunks (0, 1 or 2)."""
        lo, r0, r1, hi = rows
        above, below = depth
        own = host[r0 - lo:r1 - lo]
        # the block above takes our first `below` rows as its lower halo (unless it decodes them
        # from the heads of our first chunks: chunk_heads), the block below our last `above`
        # rows as its upper halo
        heads = chunk_heads.plain(src)
        edges = {(run, r1 - above, r1): own[own.shape[0] - above:]}
        if not heads:
            edges[(run, r0, r0 + below)] = own[:below]
        promised = {k: self._promise(k) for k, v in edges.items() if 0 < k[2] - k[1] == v.shape[0]}
        # the edge for the block below is its upper halo (rows up to r1), the other one the block above's
        away = {k for k in promised if elsewhere[1 if k == (run, r1 - above, r1) else 0]}
        remote = {k: var for k in away if (var := self._peers.promise(k, edges[k].nbytes)) is not None}
        t = time.monotonic()
        try:
            decode_into(src, r0, r1, own)
        except BaseException as e:
            for fut in promised.values():
                fut.set_exception(e)
            for var in remote.values():
                self._peers.publish(var, None)
            raise
        own_s = time.monotonic() - t
        for k, fut in promised.items():
            fut.set_result(edges[k].copy())
        for k, var in remote.items():
            self._peers.publish(var, edges[k])
        decoded = 0
        for side, (a, b, dest) in enumerate(((lo, r0, host[:r0 - lo]), (r1, hi, host[r1 - lo:]))):
            if b <= a or (heads and a == r1 and chunk_heads.read(src, a, b, dest)):
                continue
            fut = self._take((run, a, b))
            if fut is not None:
                try:
                    np.copyto(dest, fut.result())
                    continue
                except Exception:  # noqa: BLE001 - the neighbour failed: decode the rows here
                    pass
            elif elsewhere[side] and self._peers.take((run, a, b), dest, 2 * own_s + 0.5):
                continue
            decode_into(src, a, b, dest)
            decoded += 1
        return decoded



def _run_of(key) -> str:
    """The run a state key names (a view: its first part)."""
    return key[0] if isinstance(key, tuple) else key
