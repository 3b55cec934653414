"""The plan of decode batches (engine/batches.py) and the Reader's bookkeeping, on the CPU: a
batch is a run of one worker's blocks within the byte limit; a block's rows come from its own
batch and its neighbours' exactly; every batch is dropped once its readers took it; rows read
through the Reader (decoded here by the CPU codec in place of nvCOMP) equal zarr's."""

import types

import numpy as np
import pytest
import zarr

from distconv.backends.numpy import zstd as cpu_zstd
from distconv.engine import batches, plain_chunks, shards, slots


def _job(rows, n0, depth, workers, limit, width=9, src="in"):
    layout = shards.Layout((n0, width), (7, width), (7, width), "<f4")
    job = types.SimpleNamespace(row_blocks=rows, layout=layout, stencil=types.SimpleNamespace(depth=(depth, (0, 0))),
                                src=src, run="r", row_limits=lambda: (0, n0))
    job.batches = batches.cut_batches(rows, width * 4, workers, limit)
    return job


def _blocks(n0, step):
    return tuple((a, min(a + step, n0)) for a in range(0, n0, step))


@pytest.mark.parametrize("workers, limit", [(1, 10**9), (2, 10**9), (3, 2500), (2, 1), (5, 4000)])
def test_batches_cut_each_workers_range(workers, limit):
    rows = _blocks(61, 7)
    got = _job(rows, 61, (0, 0), workers, limit).batches
    n = len(rows)
    assert len(got) == n
    for i, (b0, b1, w1) in enumerate(got):
        owner = batches.worker_of(i, n, workers)
        mine = [j for j in range(n) if batches.worker_of(j, n, workers) == owner]
        assert w1 == mine[-1] + 1 and b0 <= i < b1 <= w1 and b0 >= mine[0]
        assert all(got[j][:2] == (b0, b1) for j in range(b0, b1))
        assert b1 - b0 == 1 or (rows[b1 - 1][1] - rows[b0][0]) * 9 * 4 <= limit
        if b1 < w1:  # a batch is cut only where the next block would pass the limit
            assert (rows[b1][1] - rows[b0][0]) * 9 * 4 > limit


@pytest.mark.parametrize("depth", [(0, 0), (2, 3), (7, 1), (0, 5)])
@pytest.mark.parametrize("workers, limit", [(1, 10**9), (2, 2000), (3, 1), (1, 600)])
def test_a_blocks_rows_come_from_its_batch_and_neighbours(depth, workers, limit):
    n0 = 83
    rows = _blocks(n0, 8)
    job = _job(rows, n0, depth, workers, limit)
    readers = {}
    for i, (r0, r1) in enumerate(rows):
        lo, hi = max(0, r0 - depth[0]), min(n0, r1 + depth[1])
        parts = batches.sources(job, i, lo, hi)
        assert parts[0][1] == lo and parts[-1][2] == hi
        assert all(a[2] == b[1] for a, b in zip(parts, parts[1:])) and all(a < b for _, a, b in parts)
        for b0, a, b in parts:
            s0, s1 = batches.span(job, b0)
            assert s0 <= a and b <= s1 and job.batches[b0][2] == job.batches[i][2]  # this worker's
            readers[b0] = readers.get(b0, 0) + 1
    for b0 in {b[0] for b in job.batches}:
        assert batches._takers(job, b0) == readers[b0]
        s0, s1 = batches.span(job, b0)  # beyond its blocks only at its worker's ends
        first, last = b0 == 0 or job.batches[b0 - 1][2] != job.batches[b0][2], job.batches[b0][1] == job.batches[b0][2]
        assert s0 == (max(0, rows[b0][0] - depth[0]) if first else rows[b0][0])
        assert s1 == (min(n0, rows[job.batches[b0][1] - 1][1] + depth[1]) if last else rows[job.batches[b0][1] - 1][1])


@pytest.mark.parametrize("order", ["in order", "reversed", "halves swapped"])
@pytest.mark.parametrize("skipped", [set(), {0, 1, 2, 3}, {2, 5, 6, 7}])
def test_reader_gives_zarrs_rows_and_keeps_nothing(tmp_path, monkeypatch, skipped, order):
    """The Reader's bookkeeping end to end with the CPU codec standing in for nvCOMP: every
    block's rows (its halo from neighbouring batches) equal zarr's, each batch is decoded once
    and dropped once its last reader took it, whatever order the blocks come in (a batch a
    block starts ahead of the others' is kept for them, and one they have all taken is not
    started again); blocks a resumed run skips are not waited for, and a batch only they would
    read is not decoded."""
    n0, depth = 97, (5, 3)
    x = np.random.default_rng(4).standard_normal((n0, 30)).astype(np.float32)
    p = str(tmp_path / "a.zarr")
    z = zarr.create_array(p, shape=x.shape, chunks=(6, 16), dtype="f4")
    z[...] = x
    rows = _blocks(n0, 12)
    job = _job(rows, n0, depth, 2, 12 * 30 * 4 * 2, width=30, src=p)
    decoded = []

    def decode(self, job, src, b0, ticket):
        with self._turn:
            self._turn.wait_for(lambda: self._serving == ticket)
            self._serving += 1
            self._turn.notify_all()
        ch = plain_chunks.locate(src, job.src, *batches.span(job, b0))
        buf = np.empty(ch.nbytes, np.uint8)
        ch.read(buf)
        decoded.append(b0)
        flat = cpu_zstd.decode_frames(buf, ch.starts, ch.sizes, ch.layout.frame_nbytes, np.dtype("f4"))
        return batches.Decoded(flat, ch), {"batches decoded": 1}

    monkeypatch.setattr(batches.Reader, "_decode", decode)
    reader = batches.Reader()
    clock = slots.Clock(False)
    runs = [i for i in range(len(rows)) if i not in skipped]
    if order == "reversed":
        runs = runs[::-1]
    elif order == "halves swapped":
        runs = runs[len(runs) // 2:] + runs[:len(runs) // 2]
    for i in runs:
        lo, hi = max(0, rows[i][0] - depth[0]), min(n0, rows[i][1] + depth[1])
        parts = reader.take(job, i, z, lo, hi, clock, lambda j: j not in skipped)
        got = plain_chunks.gather([(d.flat, d.chunks, a, b) for d, a, b in parts], lo, hi)
        np.testing.assert_array_equal(got, x[lo:hi])
    read = {p[0] for i in runs for p in batches.sources(job, i, max(0, rows[i][0] - depth[0]),
                                                          min(n0, rows[i][1] + depth[1]))}
    assert sorted(decoded) == sorted(read) and not reader._live
    assert clock.laps["batches decoded"] == len(decoded)


def test_a_runs_batches_are_dropped_when_it_ends(tmp_path, monkeypatch):
    """A run that ends or is stopped (its blocks cancelled: they never take their batches)
    leaves no decoded batch in the Reader (device memory, up to decode-batch-bytes each), and
    a late block of it decodes none again; another run's batches stay."""
    n0 = 60
    x = np.random.default_rng(5).standard_normal((n0, 30)).astype(np.float32)
    p = str(tmp_path / "a.zarr")
    zarr.create_array(p, data=x, chunks=(6, 30))
    z = zarr.open_array(p, mode="r")
    rows = _blocks(n0, 12)
    decoded = []

    def decode(self, job, src, b0, ticket):
        with self._turn:
            self._turn.wait_for(lambda: self._serving == ticket)
            self._serving += 1
            self._turn.notify_all()
        ch = plain_chunks.locate(src, job.src, *batches.span(job, b0))
        buf = np.empty(ch.nbytes, np.uint8)
        ch.read(buf)
        decoded.append((job.run, b0))
        return batches.Decoded(cpu_zstd.decode_frames(buf, ch.starts, ch.sizes, ch.layout.frame_nbytes,
                                                      np.dtype("f4")), ch), {}

    monkeypatch.setattr(batches.Reader, "_decode", decode)
    reader, clock = batches.Reader(), slots.Clock(False)
    stopped = _job(rows, n0, (2, 2), 1, 12 * 30 * 4, width=30, src=p)
    other = _job(rows, n0, (2, 2), 1, 12 * 30 * 4, width=30, src=p)
    other.run = "another run"
    assert reader.take(stopped, 0, z, 0, 14, clock) is not None  # block 0 starts batches ahead too
    assert reader.take(other, 0, z, 0, 14, clock) is not None
    held = reader.held()
    assert held > 2
    reader.drop("r")
    assert 0 < reader.held() < held and all(k[0][0] == "another run" for k in reader._live)
    n = len(decoded)
    assert reader.take(stopped, 1, z, 10, 26, clock) is None  # read through zarr, if at all
    assert len(decoded) == n


def test_reader_threads_are_numbered_within_their_pool(monkeypatch):
    """Each reader thread of a Reader's pool has a number 0..READERS-1 (its stream's slot, where a
    worker's warm-up reserved device memory), the same numbers in a second Reader's pool."""
    import threading
    import types

    for _ in range(2):
        seen, go = set(), threading.Barrier(batches.READERS)

        def decode(self, job, src, b0, ticket):
            go.wait(timeout=10)  # every reader thread busy at once: the pool made all of them
            seen.add(batches._reader.number)
            return None, {}

        monkeypatch.setattr(batches.Reader, "_decode", decode)
        monkeypatch.setattr(batches, "_takers", lambda job, b0, runs=None: 1)
        reader = batches.Reader()
        job = types.SimpleNamespace(run="r", src="in.zarr", source=None)
        futs = [reader._start(job, None, b0) for b0 in range(batches.READERS)]
        for f in futs:
            f.result(timeout=20)
        assert seen == set(range(batches.READERS))
        assert {batches.reader_slot(k) for k in seen} == {("batch", k) for k in range(batches.READERS)}
