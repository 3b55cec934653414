"""Shared test helpers: per-dtype tolerances, numpy-oracle comparisons, poisoned GPU memory."""

from __future__ import annotations

import numpy as np

# (rtol, atol) scaled by the reference's magnitude: float32 kernels accumulate in float32
TOL = {np.dtype(np.float32): (2e-5, 2e-5), np.dtype(np.float64): (1e-11, 1e-11)}


def host(a):
    if hasattr(a, "compute"):
        a = a.compute()
    if type(a).__module__.split(".")[0] == "xarray":
        a = a.data
    return a.get() if hasattr(a, "get") and type(a).__module__.startswith("cupy") else np.asarray(a)


def assert_matches(got, ref, dtype=None, scale=None):
    """``got`` equals the numpy/scipy reference within the dtype's tolerance; NaN where NaN."""
    got, ref = host(got), host(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    dt = np.dtype(dtype or ref.dtype)
    if dt.kind != "f":
        np.testing.assert_array_equal(got, ref)
        return
    rtol, atol = TOL[dt]
    finite = np.isfinite(ref)
    mag = scale if scale is not None else (np.abs(ref[finite]).max() if finite.any() else 1.0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got[finite], ref[finite], rtol=rtol, atol=atol * max(mag, 1.0))


def poison_gpu_pool(nbytes: int, value=np.nan):
    """Fill and free a block of the cupy memory pool so the next allocations reuse NaN-filled
    memory: an element a kernel fails to write then shows up as NaN."""
    import cupy

    blk = cupy.full(max(nbytes // 4, 1) + 1024, value, dtype=np.float32)
    del blk


def count_calls(monkeypatch, module, name: str) -> list:
    """A list that grows by one at every call of ``module.name`` (still called) in a test."""
    seen, real = [], getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: (seen.append(1), real(*a, **k))[1])
    return seen


def chunking_case(data, sizes=(3, 14)):
    """A hypothesis draw for chunking-invariance tests: (shape, chunks, boundary mode, rng)."""
    from hypothesis import strategies as st

    shape = data.draw(st.tuples(st.integers(*sizes), st.integers(*sizes)))
    chunks = tuple(data.draw(st.integers(1, s)) for s in shape)
    mode = data.draw(st.sampled_from(["reflect", "constant", "nearest", "mirror", "wrap"]))
    return shape, chunks, mode, np.random.default_rng(data.draw(st.integers(0, 2**31)))


def small_engine_blocks(monkeypatch, block_bytes=6000, inner_bytes=300):
    """The engine's blocks (on CPUs and GPUs alike) and shards made small, so a small array has
    many blocks and shards and its halos cross them."""
    from distconv.engine import output, plan, shards

    monkeypatch.setattr(plan, "CPU_CHUNK_BYTES", block_bytes)
    monkeypatch.setattr(plan, "GPU_CHUNK_BYTES", block_bytes)
    monkeypatch.setattr(output, "SHARD_MIN_BYTES", 0)
    monkeypatch.setattr(shards, "INNER_BYTES", inner_bytes)


def write_block(path: str, layout, block, row0: int, encode) -> int:
    """A block's shard files as the engine writes them: ``block`` (rows row0.. of the array,
    row0 on a shard boundary) encoded by ``encode``, then written; returns bytes written."""
    from distconv.engine import shards

    return shards.write_encoded(path, layout, shards.encode_block(layout, block, encode), block.shape[0], row0)


def read_rows(path: str, layout, lo: int, hi: int, decode, alloc=None):
    """Rows lo..hi of a sharded array written in ``layout`` as the engine reads them (its
    frames, then ``decode``); None when an inner chunk is absent."""
    from distconv.engine import shards

    fr = shards.read_frames(path, layout, lo, hi, alloc)
    return None if fr is None else shards.decode_rows(fr, lo, hi, decode)


def leave_block_marks(out, names):
    """The block marks an interrupted run of the output's job leaves (named with its token)."""
    import json
    from pathlib import Path

    from distconv.engine.fencing import block_mark
    from distconv.engine.marks import BLOCKS, OWNER

    token = json.loads((Path(out) / OWNER).read_text())["token"]
    (Path(out) / BLOCKS).mkdir(exist_ok=True)
    for name in names:
        block_mark(str(out), name, token).touch()


def hand_started(tmp_path, workers: int, *worker_args: str):
    """A `dask scheduler` and ``workers`` `dask worker` processes on 127.0.0.1, started by hand
    as a multi-node user starts them (one thread, 2 GB each; ``worker_args`` added): a context
    manager that yields the scheduler's address once the workers joined, and stops them all."""
    import contextlib
    import json
    import subprocess
    import sys
    import time

    @contextlib.contextmanager
    def started():
        sfile = tmp_path / "scheduler.json"
        procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                   "--port", "0", "--dashboard-address", "127.0.0.1:0", "--scheduler-file",
                                   str(sfile)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)]
        try:
            deadline = time.time() + 60
            while not sfile.exists() and time.time() < deadline:
                time.sleep(0.2)
            assert sfile.exists(), "the scheduler did not start"
            for _ in range(workers):
                procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                               str(sfile), "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                                               "--memory-limit", "2GB", *worker_args],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path))
            address = json.loads(sfile.read_text())["address"]
            from distributed import Client

            with Client(address, timeout="30s") as c:
                c.wait_for_workers(workers, timeout=60)
            yield address
        finally:
            for p in procs[::-1]:
                p.terminate()
            for p in procs:
                p.wait(timeout=30)

    return started()


def stored_workflow(tmp_path, name: str, steps: list, x):
    """A workflow ``name`` of ``steps`` over ``x`` stored as tmp_path/in.zarr (written once,
    chunks of 8 rows), into tmp_path/out.zarr; loaded and checked."""
    import yaml
    import zarr

    from distconv import batch

    if not (tmp_path / "in.zarr").exists():
        zarr.create_array(str(tmp_path / "in.zarr"), data=x, chunks=(8, x.shape[1]))
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump({"name": name, "input": {"path": "in.zarr"}, "steps": steps,
                                 "outputs": {"path": "out.zarr"}}))
    return batch.load(str(p))


def claims_at_once(output: str) -> tuple[list, list]:
    """Two threads claiming ``output`` at the same instant: (the claims got, the refusals' messages)."""
    import threading

    from distconv.engine import marks, ownership

    start, got, refused = threading.Barrier(2), [], []

    def one():
        start.wait()
        try:
            got.append(ownership.claim(output))
        except marks.OutputError as e:
            refused.append(str(e))

    threads = [threading.Thread(target=one) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return got, refused

