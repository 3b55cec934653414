"""A run owns its work to the end (issue 50): an interrupted or failed run stops its blocks on
the cluster before it returns, a block writes only while its run owns the output, and a run
counts only the block marks of its own job, so the next --overwrite never adopts another's."""

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi
import zarr

import distconv as dc
from distconv import batch
from distconv.engine import job as engine_job
from distconv.engine import fencing, marks, ownership, storage
from distconv.engine.marks import BLOCKS, COMPLETE, OWNER

from .helpers import small_engine_blocks, stored_workflow

X = np.random.default_rng(50).standard_normal((96, 40)).astype(np.float32)


@pytest.fixture
def small_blocks(monkeypatch):
    small_engine_blocks(monkeypatch)


def _workflow(tmp_path, name, steps):
    return stored_workflow(tmp_path, name, steps, X)


STARTED = threading.Event()  # a block has started (module-level: the graph pickles it by reference)
_REAL = {"encode": engine_job.shards.encode_block, "to_host": storage.to_host}


def _slow_encode(*a, **kw):
    STARTED.set()
    time.sleep(0.6)
    return _REAL["encode"](*a, **kw)


def _slow_to_host(*a, **kw):
    STARTED.set()
    time.sleep(0.6)
    return _REAL["to_host"](*a, **kw)


def _slow_blocks(monkeypatch):
    """Every block of the engine (and of dask's writes) takes a while before it writes, as a
    big median block does, and says it started."""
    STARTED.clear()
    monkeypatch.setattr(engine_job.shards, "encode_block", _slow_encode)
    monkeypatch.setattr(storage, "to_host", _slow_to_host)


def _interrupt_once_started(futures):
    """A progress display (engine.Progress.watch) that presses Ctrl-C once the first block has
    started."""
    STARTED.wait(30)
    raise KeyboardInterrupt


@pytest.mark.parametrize("general", [False, True])
def test_ctrl_c_then_overwrite_never_adopts_the_interrupted_blocks(tmp_path, monkeypatch, small_blocks, general):
    """The issue's case on a kept cluster: a (sigma 4, median) interrupted mid-job, b (sigma 3)
    with --overwrite at once: b's output is b's, bit for bit, and stays so."""
    from distconv.engine.progress import Progress

    mode = "wrap" if general else "reflect"  # wrap: the general path
    a = _workflow(tmp_path, "a", [{"op": "gaussian_filter", "sigma": 4.0, "mode": mode},
                                  {"op": "median_filter", "size": 3, "mode": mode}])
    b = _workflow(tmp_path, "b", [{"op": "gaussian_filter", "sigma": 3.0, "mode": mode}])
    with dc.cluster({"type": "cpu", "n_workers": 1, "threads_per_worker": 2, "processes": False,
                     "dashboard_address": ":0"}, quiet=True) as client:
        _slow_blocks(monkeypatch)
        monkeypatch.setattr(Progress, "watch", lambda self, futures: _interrupt_once_started(futures))
        with pytest.raises(KeyboardInterrupt):
            batch.run(a, client, progress=True)
        owner = json.loads((tmp_path / "out.zarr" / OWNER).read_text())
        assert owner["run"] is None  # stopped: no block of a may begin a write
        assert not fencing.WRITES.busy(owner.get("run") or "")
        monkeypatch.setattr(Progress, "watch", lambda self, futures: None)
        s = batch.run(b, client, overwrite=True, progress=True)
        assert s["path"] == ("general" if general else "direct")
        want = ndi.gaussian_filter(X, 3.0, mode=mode)
        got = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...]
        np.testing.assert_array_equal(got, zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        time.sleep(1.5)  # anything of a's still running would have written by now
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...], got)
    assert (tmp_path / "out.zarr" / COMPLETE).is_file()


def test_a_block_of_a_superseded_run_writes_nothing(tmp_path):
    """A block whose run no longer owns the output (another run claimed it) raises before it
    writes; a stopped run's claim writes nothing either."""
    out = str(tmp_path / "o")
    first = ownership.claim(out)
    fencing.stop(first)  # another run takes the output only once this one no longer writes
    second = ownership.claim(out, overwrite=True)
    assert first.token != second.token
    Path(out, BLOCKS).mkdir()
    with pytest.raises(marks.Superseded):
        with fencing.block_write(first, out, "0-1"):
            pytest.fail("the superseded run's block must not write")
    with fencing.block_write(second, out, "0-1"):
        pass
    fencing.stop(second)
    with pytest.raises(marks.Superseded):
        with fencing.block_write(second, out, "0-1"):
            pytest.fail("a stopped run's block must not write")
    # --resume keeps the job's token (its marks count), under a new run
    resumed = ownership.claim(out, resume=True)
    assert resumed.resuming and resumed.token == second.token and resumed.run != second.run


def test_marks_of_another_job_do_not_count(tmp_path):
    out = str(tmp_path / "o")
    c = ownership.claim(out)
    Path(out, BLOCKS).mkdir()
    fencing.block_mark(out, "0-8_0-40", c.token).touch()
    fencing.block_mark(out, "8-16_0-40", "f" * 32).touch()
    Path(out, BLOCKS, "16-24_0-40").touch()  # an older distconv's mark: no job
    assert fencing.written_blocks(out, c.token) == {"0-8_0-40"}
    fencing.stop(c)
    again = ownership.claim(out, overwrite=True)  # every mark is distconv's to remove
    assert again.token != c.token and not Path(out, BLOCKS).exists()


def test_python_face_stops_its_run_when_interrupted(tmp_path, monkeypatch, small_blocks):
    """dc.to_zarr interrupted: the output's run is stopped, and overwrite=True then writes the
    new result whole."""
    import dask.array as da

    zarr.create_array(str(tmp_path / "in.zarr"), data=X, chunks=(8, 40))
    with dc.cluster({"type": "cpu", "n_workers": 1, "threads_per_worker": 2, "processes": False,
                     "dashboard_address": ":0"}, quiet=True) as client:
        _slow_blocks(monkeypatch)
        real_gather = client.gather
        monkeypatch.setattr(client, "gather", lambda futures, *a, **kw: _interrupt_once_started(futures))
        x = da.from_zarr(str(tmp_path / "in.zarr"))
        with pytest.warns(UserWarning, match="chunks too thin"):  # chunks of 8 rows, halos of 16 and 12
            y4, y3 = dc.gaussian_filter(x, 4.0), dc.gaussian_filter(x, 3.0)
        with pytest.raises(KeyboardInterrupt):
            dc.to_zarr(y4, str(tmp_path / "out.zarr"))
        assert json.loads((tmp_path / "out.zarr" / OWNER).read_text())["run"] is None
        monkeypatch.setattr(client, "gather", real_gather)
        report = dc.to_zarr(y3, str(tmp_path / "out.zarr"), overwrite=True)
        assert report["path"] == "engine"
        time.sleep(1.5)
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...],
                               ndi.gaussian_filter(X, 3.0), rtol=1e-5, atol=1e-6)


def test_relative_paths_are_the_callers_not_the_workers(tmp_path, monkeypatch):
    """A kept cluster started in another folder: dc.to_zarr's and the accessor's relative
    output paths land in the caller's folder."""
    import dask.array as da
    import xarray as xr

    started_in, caller = tmp_path / "a", tmp_path / "b"
    started_in.mkdir(), caller.mkdir()
    monkeypatch.chdir(started_in)
    with dc.cluster({"type": "cpu", "n_workers": 1, "threads_per_worker": 1, "processes": True,
                     "dashboard_address": ":0"}, quiet=True) as client:
        monkeypatch.chdir(caller)
        zarr.create_array("in.zarr", data=X, chunks=(16, 40))
        x = da.from_zarr("in.zarr")
        assert dc.to_zarr(dc.gaussian_filter(x, 2.0), "out.zarr", client=client)["path"] == "engine"
        assert dc.to_zarr(dc.gaussian_filter(x, 2.0, mode="wrap"), "wrap.zarr", client=client)["path"] == "general"
        da_ = xr.DataArray(x, dims=("y", "x"), name="t")
        da_.distconv.gaussian_filter({"y": 1.0, "x": 2.0}).distconv.to_zarr("acc.zarr", client=client)
    assert not any(started_in.iterdir())  # nothing landed in the workers' folder
    np.testing.assert_allclose(zarr.open_array(str(caller / "out.zarr"))[...], ndi.gaussian_filter(X, 2.0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(zarr.open_array(str(caller / "wrap.zarr"))[...],
                               ndi.gaussian_filter(X, 2.0, mode="wrap"), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xr.open_zarr(str(caller / "acc.zarr")).t.values,
                               ndi.gaussian_filter(X, (1.0, 2.0)), rtol=1e-5, atol=1e-6)
