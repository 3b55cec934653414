"""Zarr's plain zstd chunks decoded on the GPU a batch of blocks at a time (the direct path's
read stage for the layout zarr and dask write by default: unsharded 64 MiB chunks).

nvCOMP decodes a 64 MiB zstd frame on one unit of the GPU, slower than the host's cores, and a batch
of up to ~190 such frames in about the same time as one. So the GPU pays only with many frames in
flight: a worker's range of blocks is cut into batches (``cut_batches``), and a process's Reader
decodes several batches at once ahead of the blocks, each on its own stream, their chunk files read one
batch at a time in block order (the first block waits for one batch's files only). A batch decodes
its own blocks' chunk rows; a block's halo rows come from the neighbouring batch of its worker, so
only a worker's first and last batch decode the chunk rows beyond its range.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import threading

import numpy as np

from ..backends.device import device
from . import plain_chunks
from .source import view

PIECES = "batch"  # names the pinned pieces the batches' files go through (engine/prewarm.py too)
READERS = 4      # batches decoding at once per process (each holds its decoded rows)
READ_AHEAD = 3   # batches of its worker a block starts besides its own (the lowest not started)
KEEP = 8         # batches held per process at most (blocks dask moved to another worker never
                 # take theirs): beyond it the oldest is dropped, and decoded again if needed


_reader = threading.local()  # a reader thread's number in its pool, 0..READERS-1


def _number_reader(numbers):
    _reader.number = next(numbers)


def reader_slot(k: int) -> tuple:
    """The device slot (its stream) of reader thread ``k``: the same streams in every pool, so
    the memory a worker's warm-up reserved on them serves each job's batches."""
    return ("batch", k)


def worker_of(i: int, n: int, workers: int) -> int:
    """The worker given block ``i`` of ``n``: contiguous ranges of blocks, one per worker."""
    return i * workers // n


def cut_batches(row_blocks: tuple, row_bytes: int, workers: int, limit: int) -> tuple:
    """Per block (b0, b1, w1): the blocks b0..b1 decoded in one batch with it (its worker's
    range cut into runs of at most ``limit`` bytes of rows, at least one block each) and the
    end w1 of that range."""
    n = len(row_blocks)
    out: list = []
    for i, (r0, r1) in enumerate(row_blocks):
        w = worker_of(i, n, workers)
        b0 = out[-1][0] if out and worker_of(i - 1, n, workers) == w else i
        if (r1 - row_blocks[b0][0]) * row_bytes > limit:
            b0 = i
        out.append((b0, w))
    ends = {}  # the end of each batch and of each worker's range
    for i, (b0, w) in enumerate(out):
        ends[("batch", b0)] = ends[("worker", w)] = i + 1
    return tuple((b0, ends[("batch", b0)], ends[("worker", w)]) for b0, w in out)


def _prev(batches: tuple, b0: int):
    """The batch before batch ``b0`` in its worker's range (its first block), or None."""
    return batches[b0 - 1][0] if b0 > 0 and batches[b0 - 1][2] == batches[b0][2] else None


def _next(batches: tuple, b0: int):
    """The batch after batch ``b0`` in its worker's range, or None."""
    b1, w1 = batches[b0][1:]
    return b1 if b1 < w1 else None


def span(job, b0: int) -> tuple:
    """Rows decoded by batch ``b0``: its blocks' rows, and the halo rows beyond them where no
    batch of its worker holds those (the first and the last of a worker's range)."""
    (first, n0), (above, below) = job.row_limits(), job.stencil.depth[0]
    lo, hi = job.row_blocks[b0][0], job.row_blocks[job.batches[b0][1] - 1][1]
    if _prev(job.batches, b0) is None:
        lo = max(first, lo - above)
    if _next(job.batches, b0) is None:
        hi = min(n0, hi + below)
    return lo, hi


def sources(job, i: int, lo: int, hi: int) -> list | None:
    """Rows lo..hi of block ``i`` (its rows and halo) as [(batch, a, b), ...] in row order:
    its own batch's rows and a neighbouring batch's; None if a halo reaches past them."""
    g = job.batches[i][0]
    s0, s1 = span(job, g)
    out = [(g, max(lo, s0), min(hi, s1))]
    for nb, a, b in ((_prev(job.batches, g), lo, s0), (_next(job.batches, g), s1, hi)):
        if a < b:
            n0, n1 = span(job, nb) if nb is not None else (b, a)
            if not (n0 <= a and b <= n1):
                return None
            out.append((nb, a, b))
    return sorted(out, key=lambda s: s[1])


def _takers(job, b0: int, runs=None) -> int:
    """How many blocks read rows of batch ``b0`` (its own, and its neighbours' edge blocks),
    counting only blocks ``i`` with ``runs(i)`` (all by default; a resumed job skips those
    already written)."""
    (first, n0), (above, below) = job.row_limits(), job.stencil.depth[0]
    b1 = job.batches[b0][1]
    near = range(max(0, b0 - 1), min(len(job.row_blocks), b1 + 1))
    count = 0
    for i in near:
        if job.batches[i][2] != job.batches[b0][2] or (runs is not None and not runs(i)):
            continue  # another worker's block, or one that will not run
        r0, r1 = job.row_blocks[i]
        src = sources(job, i, max(first, r0 - above), min(n0, r1 + below)) or ()
        count += any(s[0] == b0 for s in src)
    return count


@dataclasses.dataclass(frozen=True)
class Decoded:
    """A batch's chunks (plain_chunks.Chunks) decoded on the device, chunk-major in ``flat``."""
    flat: object
    chunks: plain_chunks.Chunks


class Reader:
    """The batches this process decodes: a block starts its own batch, the batches its halo
    rows lie in and READ_AHEAD more of its worker, the lowest not started yet up to READ_AHEAD
    past its own, decoded on READERS threads; a batch is dropped once every block that reads
    it took it (or beyond KEEP). Lowest first, not just those after its own: dask hands a
    worker's blocks over in no set order (the upper half of a worker's blocks may come first,
    and the lower half's batches would then start only once those were done)."""

    def __init__(self):
        self._lock = threading.Lock()
        # keyed (view, b0): the job's run and its view of the input (source.view)
        self._live = collections.OrderedDict()  # (view, b0) -> [future, takers left, first taker]
        self._taken = collections.OrderedDict()  # (view, b0) of batches every taker took
        self._ended = collections.OrderedDict()  # runs ended or stopped: none of theirs is decoded again
        self._pool = None
        self._tickets = itertools.count()
        self._turn = threading.Condition()
        self._serving = 0

    def take(self, job, i: int, src, lo: int, hi: int, clock, runs=None):
        """Rows lo..hi of block ``i`` as [(Decoded, a, b), ...] in row order (waits for their
        batches); None where those rows cannot be read so (not zarr's plain zstd chunks, a
        chunk absent, a halo deeper than a batch): read through zarr then. ``runs(j)``: whether
        block j will run (and take its rows); a batch ahead that no block will take is not
        decoded. The seconds of each batch's stages are counted on the first block that
        takes it."""
        parts = sources(job, i, lo, hi)
        if parts is None or job.run in self._ended:
            return None
        needed = [p[0] for p in parts]
        futures = {b: self._start(job, src, b, runs) for b in needed}
        for b in self._ahead(job, job.batches[i][0]):
            self._start(job, src, b, runs, needed=False)
        out = []
        for b, a, c in parts:
            decoded, seconds = futures[b].result()
            if self._took(view(job), b, futures[b]):
                for stage, t in seconds.items():
                    clock.count(stage, t)
            if decoded is None:
                return None
            out.append((decoded, a, c))
        return out

    def _ahead(self, job, own: int) -> list:
        """Up to READ_AHEAD batches of the worker of batch ``own`` that are neither held nor
        taken, lowest first, from its worker's first batch to READ_AHEAD past ``own``."""
        first = own
        while _prev(job.batches, first) is not None:
            first = _prev(job.batches, first)
        last, b = own, own
        for _ in range(READ_AHEAD):
            b = _next(job.batches, b)
            if b is None:
                break
            last = b
        out, b = [], first
        with self._lock:
            while b is not None and len(out) < READ_AHEAD and b <= last:
                if b != own and (view(job), b) not in self._live and (view(job), b) not in self._taken:
                    out.append(b)
                b = _next(job.batches, b)
        return out

    def _start(self, job, src, b0: int, runs=None, needed: bool = True):
        """Batch b0's future, started unless it is held already; None for a batch not
        ``needed`` now that no block will take."""
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            key = (view(job), b0)
            entry = self._live.get(key)
            if entry is None:
                # a batch ahead that its takers have all had is not decoded again (their blocks,
                # still in flight, have no mark yet, so _takers would count them)
                takers = 0 if key in self._taken else _takers(job, b0, runs)
                if not (takers or needed):
                    return None
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(READERS, thread_name_prefix="distconv-batch",
                                                    initializer=_number_reader, initargs=(itertools.count(),))
                fut = self._pool.submit(self._decode, job, src, b0, next(self._tickets))
                entry = self._live[key] = [fut, max(takers, 1), True]
                while len(self._live) > KEEP:
                    self._live.popitem(last=False)
            return entry[0]

    def drop(self, run: str):
        """Forget every batch of ``run`` (its run ended or was stopped: a cancelled run's blocks
        never take theirs), decoded or decoding, and decode none of it again."""
        with self._lock:
            self._ended[run] = True
            while len(self._ended) > 1024:
                self._ended.popitem(last=False)
            for held in (self._live, self._taken):
                for k in [k for k in held if k[0][0] == run]:
                    del held[k]

    def held(self) -> int:
        """How many batches are held (decoding or decoded, not yet taken by every block)."""
        with self._lock:
            return len(self._live)

    def _took(self, key, b0: int, fut) -> bool:
        """Block taken batch b0 of the job's view ``key``; True for its first taker."""
        with self._lock:
            entry = self._live.get((key, b0))
            if entry is None or entry[0] is not fut:
                return False
            first, entry[2] = entry[2], False
            entry[1] -= 1
            if entry[1] <= 0:
                del self._live[(key, b0)]
                self._taken[(key, b0)] = True
                while len(self._taken) > 1024:
                    self._taken.popitem(last=False)
            return first

    def _decode(self, job, src, b0: int, ticket: int):
        """Batch b0 decoded on this GPU, on the reader thread's own stream: (Decoded or None,
        seconds per stage). Its chunk files are read when its ticket's turn comes (batches'
        files one at a time, in the order they were started), the decode overlaps others'."""
        import time

        dev = device(True)
        with self._turn:
            self._turn.wait_for(lambda: self._serving == ticket)
        t0 = time.perf_counter()
        try:
            ch = plain_chunks.locate(src, job.src, *span(job, b0))
            if ch is None:
                return None, {}
            stream = dev.turn(reader_slot(getattr(_reader, "number", 0)))  # 0: not a reader thread
            with stream:
                raw = dev.upload_pieces(*ch.pieces(), PIECES)
        finally:
            with self._turn:
                self._serving += 1
                self._turn.notify_all()
        t1 = time.perf_counter()
        with stream:
            flat = dev.decode_resident(raw, ch.starts, ch.sizes, ch.layout.frame_nbytes, np.dtype(ch.layout.dtype))
        del raw
        return Decoded(flat, ch), {"batch files to device": t1 - t0, "batch decode": time.perf_counter() - t1,
                                   "batches decoded": 1}
