"""A stopped run writes nothing more into its output, marks change by compare-and-swap, and
an output a live run is writing is not taken from it (engine/fencing.py, marks.py, atomic.py)."""

import json
import os
import re
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

import distconv as dc
from distconv import batch
from distconv.engine import atomic, fencing, marks, ownership, storage
from distconv.engine import job as engine_job
from distconv.engine.marks import ASIDE, BLOCKS, COMPLETE, OWNER

from .helpers import claims_at_once, small_engine_blocks, stored_workflow

X = np.random.default_rng(61).standard_normal((96, 40)).astype(np.float32)
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"


def _workflow(tmp_path, name, steps):
    return stored_workflow(tmp_path, name, steps, X)


# -- a stopped run's writes under way land nothing

STALLED = threading.Event()   # a write of the first run has begun
RELEASE = threading.Event()   # ... and may go on
SLOW = threading.Event()      # writes stall (the first run's only)
_REAL = {"write_encoded": engine_job.shards.write_encoded, "to_host": storage.to_host}


def _stall():
    if SLOW.is_set():
        STALLED.set()
        RELEASE.wait(30)


def _slow_write_encoded(*a, **kw):  # module-level: the graph pickles it by reference
    _stall()
    return _REAL["write_encoded"](*a, **kw)


def _slow_to_host(*a, **kw):
    _stall()
    return _REAL["to_host"](*a, **kw)


def _interrupt_once_stalled(futures):
    STALLED.wait(30)
    raise KeyboardInterrupt


@pytest.mark.parametrize("general", [False, True])
def test_a_write_still_running_when_its_run_stopped_never_lands(tmp_path, monkeypatch, capfd, general):
    """The stop's wait runs out while a block of the interrupted run is still writing (slow
    storage); the next --overwrite run writes the output whole; then the stalled write goes
    on: the output stays the second run's, bit for bit, and the stop said it could not
    confirm that write ended."""
    import importlib

    from distconv.engine.progress import Progress

    compute = importlib.import_module("distconv.engine.compute")  # the module (engine.compute is its function)

    small_engine_blocks(monkeypatch)
    mode = "wrap" if general else "reflect"  # wrap: the general path
    a = _workflow(tmp_path, "a", [{"op": "gaussian_filter", "sigma": 4.0, "mode": mode}])
    b = _workflow(tmp_path, "b", [{"op": "gaussian_filter", "sigma": 2.0, "mode": mode}])
    STALLED.clear(), RELEASE.clear(), SLOW.set()
    monkeypatch.setattr(compute, "STOP_WAIT_S", 0.3)
    monkeypatch.setattr(engine_job.shards, "write_encoded", _slow_write_encoded)
    monkeypatch.setattr(storage, "to_host", _slow_to_host)
    try:
        with dc.cluster({"type": "cpu", "n_workers": 1, "threads_per_worker": 2, "processes": False,
                         "dashboard_address": ":0"}, quiet=True) as client:
            monkeypatch.setattr(Progress, "watch", lambda self, futures: _interrupt_once_stalled(futures))
            with pytest.raises(KeyboardInterrupt):
                batch.run(a, client, progress=True)
            SLOW.clear()
            monkeypatch.setattr(Progress, "watch", lambda self, futures: None)
            s = batch.run(b, client, overwrite=True, progress=True)
            assert s["path"] == ("general" if general else "direct")
            got = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...]
            RELEASE.set()
            deadline = time.monotonic() + 10
            while any(fencing.WRITES._count.values()) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
    finally:
        RELEASE.set(), SLOW.clear()
    np.testing.assert_allclose(got, ndi.gaussian_filter(X, 2.0, mode=mode), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...], got)
    assert (tmp_path / "out.zarr" / COMPLETE).is_file()
    if not general:  # the engine's block was inside its write (dask's had not begun one)
        assert "could not confirm that the writes of the stopped run ended" in capfd.readouterr().err


def test_a_block_moved_in_after_its_run_was_stopped_is_refused(tmp_path):
    """The second look at the owner mark: a run stopped while its block was being written
    aside moves nothing into place, and leaves nothing aside."""
    out = str(tmp_path / "o")
    c = ownership.claim(out)
    Path(out, BLOCKS).mkdir()
    with pytest.raises(marks.Superseded, match="was not written"):
        with fencing.block_write(c, out, "0-1") as aside:
            Path(aside(str(Path(out, "c", "0")))).write_bytes(b"late")
            fencing.stop(c)  # meanwhile: Ctrl-C
    assert not Path(out, "c", "0").exists()
    assert os.listdir(Path(out, ASIDE)) == [] and os.listdir(Path(out, BLOCKS)) == []


def test_a_block_changed_after_it_was_written_keeps_the_output_incomplete(tmp_path):
    """settle, before the completion mark: a block file that is no longer the one its mark
    records (a late write of another run) drops that block's mark and refuses completion."""
    out = str(tmp_path / "o")
    c = ownership.claim(out)
    Path(out, BLOCKS).mkdir()
    for i in range(2):
        with fencing.block_write(c, out, f"{i}-{i + 1}") as aside:
            Path(aside(str(Path(out, "c", str(i))))).write_bytes(b"mine")
    late = Path(out, "c", "1.late")
    late.write_bytes(b"theirs")
    os.replace(late, Path(out, "c", "1"))
    with pytest.raises(marks.Superseded, match=r"1 block\(s\) \(1-2\) were changed"):
        fencing.settle(out, c)
    assert fencing.written_blocks(out, c.token) == {"0-1"}  # --resume writes block 1 again
    assert not Path(out, COMPLETE).exists()


# -- marks by compare-and-swap

def test_two_runs_claiming_one_output_at_once_get_it_once(tmp_path):
    """Of two runs that claim one new output at the same moment, one gets it; the other is
    told another run is writing it."""
    for trial in range(12):
        out = str(tmp_path / f"o{trial}")
        got, refused = claims_at_once(out)
        assert len(got) == 1, (trial, got, refused)
        assert "another run is writing it" in refused[0]
        assert json.loads(Path(out, OWNER).read_text())["run"] == got[0].run
        fencing.stop(got[0])


def test_a_completion_mark_written_as_another_run_claimed_does_not_count(tmp_path):
    """The race the completion mark's run guards against: a run marked the output complete
    just after another run claimed it (and that run was interrupted). --resume must write the
    missing blocks, not say "done"."""
    wf = _workflow(tmp_path, "w", [{"op": "gaussian_filter", "sigma": 2.0}])
    batch.run(wf, progress=False)
    out = tmp_path / "out.zarr"
    finished = json.loads((out / COMPLETE).read_text())
    # the state that race leaves: the completion mark of the first run, the owner mark naming
    # a second run (since interrupted: no live lease) that wrote part of the output
    doc = json.loads((out / OWNER).read_text())
    (out / OWNER).write_text(json.dumps({**doc, "run": "b" * 32, "beat": time.time() - 3600}))
    (out / COMPLETE).write_text(json.dumps({**finished, "run": doc["run"], "token": doc["token"]}))
    zarr.open_array(str(out), mode="r+")[40:] = 0  # what the second run had not written yet
    assert batch.preflight(wf, resume=True) == "resume"
    batch.run(wf, progress=False, resume=True)
    np.testing.assert_allclose(zarr.open_array(str(out), mode="r")[...], ndi.gaussian_filter(X, 2.0),
                               rtol=1e-5, atol=1e-6)
    assert batch.preflight(wf, resume=True) == "done"


def test_a_completion_mark_after_another_claim_is_refused_and_taken_back(tmp_path):
    out = str(tmp_path / "o")
    first = ownership.claim(out)
    fencing.stop(first)
    second = ownership.claim(out, resume=True)
    with pytest.raises(marks.Superseded, match="not marked complete"):
        marks.mark_complete(out, {}, first)
    assert not Path(out, COMPLETE).exists()
    marks.mark_complete(out, {}, second)
    assert json.loads(Path(out, COMPLETE).read_text())["run"] == second.run
    assert marks.finished(out)


def test_a_stale_version_does_not_replace_a_mark(tmp_path):
    p = str(tmp_path / "m")
    assert atomic.create(p, b"one") and not atomic.create(p, b"two")
    data, version = atomic.read(p)
    assert atomic.replace(p, b"three", version)
    assert not atomic.replace(p, b"four", version)  # changed since it was read
    assert Path(p).read_bytes() == b"three"


# -- a live run's output is not taken; times a person reads

def test_an_output_a_live_run_is_writing_is_refused_naming_it(tmp_path):
    """A second command on an output another run is writing now: refused with every flag,
    naming that run's pid, host and start as a date; once it stops, the usual choices."""
    wf = _workflow(tmp_path, "w", [{"op": "gaussian_filter", "sigma": 2.0}])
    running = ownership.claim(wf.outputs["path"], job={"steps": []})
    for flags in ({}, {"resume": True}, {"overwrite": True}, {"resume": True, "overwrite": True}):
        with pytest.raises(batch.WorkflowError) as e:
            batch.preflight(wf, **flags)
        msg = str(e.value)
        assert "another run is writing it" in msg and f"pid {os.getpid()}" in msg
        assert socket.gethostname() in msg and re.search(DATE, msg), msg
    fencing.stop(running)
    with pytest.raises(batch.WorkflowError, match="incomplete"):
        batch.preflight(wf)
    assert batch.preflight(wf, overwrite=True) == "replace"


def test_a_lease_is_alive_by_its_process_here_and_by_its_heartbeat_elsewhere(tmp_path):
    out = str(tmp_path / "o")
    c = ownership.claim(out)
    fencing.stop(c)
    doc = json.loads(Path(out, OWNER).read_text())
    dead = max(2, int(Path("/proc/sys/kernel/pid_max").read_text()) - 1)  # no process has it
    now = time.time()
    cases = [({"host": socket.gethostname(), "pid": dead, "beat": now}, False),     # ended here
             ({"host": "elsewhere", "pid": 1, "beat": now - 5}, True),              # beating there
             ({"host": "elsewhere", "pid": 1, "beat": now - marks.STALE_S - 1}, False)]  # gone silent
    for lease, alive in cases:
        Path(out, OWNER).write_text(json.dumps({**doc, "run": "a" * 32, "since": now - 100, **lease}))
        assert (marks.writer(out) is not None) == alive, lease


def test_resume_refusal_shows_the_inputs_times_as_dates(tmp_path):
    wf = _workflow(tmp_path, "w", [{"op": "gaussian_filter", "sigma": 2.0}])
    batch.run(wf, progress=False)
    (tmp_path / "out.zarr" / COMPLETE).unlink()
    time.sleep(0.05)
    zarr.open_array(str(tmp_path / "in.zarr"), mode="r+")[0, 0] = 5.0  # the input changed
    with pytest.raises(batch.WorkflowError, match="another job") as e:
        batch.run(_workflow(tmp_path, "w", [{"op": "gaussian_filter", "sigma": 2.0}]), progress=False,
                  resume=True)
    msg = str(e.value)
    assert re.search(rf"modified: {DATE} \S+ then, {DATE} \S+ now", msg), msg
    assert not re.search(r"\b1\d{9}\.\d+", msg), msg  # no raw epoch seconds


# -- the bag-of-visual-words result goes through the same protocol

def test_bovw_result_is_a_fenced_block_and_its_completion_names_its_run(tmp_path):
    pytest.importorskip("skimage")
    p = tmp_path / "bovw.yaml"
    p.write_text(yaml.safe_dump({"name": "bovw", "kind": "bovw", "input": {"images": ["camera", "coins"]},
                                 "steps": [{"op": "bovw", "patch": 8, "n_clusters": 4, "image_clusters": 2}],
                                 "outputs": {"path": "bovw_out"}}))
    wf = batch.load(str(p))
    batch.run(wf, progress=False)
    out = tmp_path / "bovw_out"
    owner, done = (json.loads((out / n).read_text()) for n in (OWNER, COMPLETE))
    assert done["run"] == owner["run"] and done["token"] == owner["token"] and "beat" not in owner
    assert not (out / BLOCKS).exists() and (out / "bovw.npz").is_file()
    assert json.loads((out / "bovw.json").read_text())["images"] == ["camera", "coins"]
    running = ownership.claim(str(out), overwrite=True)
    with pytest.raises(batch.WorkflowError, match="another run is writing it"):
        batch.run(wf, progress=False, overwrite=True)
    fencing.stop(running)


def test_a_python_write_that_failed_leaves_its_output_free_at_once(tmp_path, monkeypatch):
    """dc.to_zarr of a Dataset failing after its claim (here: writing its coordinates): the
    next call with overwrite=True in the same process takes the output at once (the failed
    run is stopped, not left holding a lease until it lapses)."""
    import xarray as xr

    ds = xr.Dataset({"t": (("y", "x"), X)}, coords={"y": np.arange(96), "x": np.arange(40)})
    real = storage.write_dataset_frame

    def broken(*a, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(storage, "write_dataset_frame", broken)
    with pytest.raises(OSError, match="disk full"):
        dc.to_zarr(ds, str(tmp_path / "ds.zarr"))
    monkeypatch.setattr(storage, "write_dataset_frame", real)
    dc.to_zarr(ds, str(tmp_path / "ds.zarr"), overwrite=True)
    np.testing.assert_array_equal(xr.open_zarr(str(tmp_path / "ds.zarr")).t.values, X)


def test_an_overwrite_keeps_a_stopped_runs_unconfirmed_writes_on_record(tmp_path):
    """A stopped run whose writes were not confirmed ended is recorded in the owner mark; an
    --overwrite that takes the output keeps that record (on object storage no run may then mark
    it complete until the writes can no longer land)."""
    out = str(tmp_path / "o.zarr")
    first = ownership.claim(out)
    fencing.stop(first)
    fencing.unsettled(first, ["tcp://worker-a"])
    recorded = json.loads(Path(out, OWNER).read_text())["unsettled"]
    second = ownership.claim(out, overwrite=True)
    mark = json.loads(Path(out, OWNER).read_text())
    assert mark["run"] == second.run and mark["unsettled"] == recorded
    fencing.stop(second)


def test_an_overwrite_leaves_no_empty_mark_folder_a_stopped_run_made(tmp_path):
    """A stopped run's block that did not land took its file from the aside folder but left the
    folder (other blocks shared it): --overwrite removes such empty folders of distconv's, at the
    top and in a dataset's arrays, so zarr does not read them as unknown nodes."""
    out = str(tmp_path / "o.zarr")
    c = ownership.claim(out)
    marks.record_entries(out, ["t"])  # a dataset's array, as the runner records it
    Path(out, BLOCKS).mkdir()
    Path(out, "t", BLOCKS).mkdir(parents=True)
    with pytest.raises(marks.Superseded):
        with fencing.block_write(c, str(Path(out, "t")), "0-1") as aside:
            Path(aside(str(Path(out, "t", "c", "0")))).write_bytes(b"late")
            fencing.stop(c)
    assert Path(out, "t", ASIDE).is_dir()  # empty, as a stopped run leaves it
    ownership.claim(out, overwrite=True)
    assert not Path(out, "t", ASIDE).exists() and not Path(out, "t", BLOCKS).exists()
    assert not Path(out, BLOCKS).exists()
