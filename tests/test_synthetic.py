"""Synthetic workflow inputs: written whole or taken for unwritten, written again when their
definition changes, never over a user's data; their writing shown and timed on its own."""

import json
import time

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

from distconv import batch
from distconv.batch import synthetic


def _workflow(tmp_path, seed=0, variable=None):
    spec = {"shape": [64, 48], "chunks": [16, 48], "seed": seed}
    inp = {"path": "in.zarr", "synthetic": spec}
    if variable:
        inp |= {"path": "ds.zarr", "variable": variable}
        spec["dims"] = ["lat", "lon"]
    step = {"op": "gaussian_filter", "sigma": 1.0} if not variable else {"op": "gaussian_filter", "sigma": {"lat": 1.0}}
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump({"input": inp, "steps": [step], "outputs": {"path": "out.zarr"}}))
    return batch.load(p)


def _stored(wf):
    if "variable" in wf.input:
        import xarray as xr

        return xr.open_zarr(wf.input["path"])[wf.input["variable"]].values
    return zarr.open_array(wf.input["path"], mode="r")[...]


def _defined(wf):
    made = synthetic.definition(wf.input)
    return (made[wf.input["variable"]].values if "variable" in wf.input else made.compute())


@pytest.mark.parametrize("variable", [None, "t"])
def test_an_interrupted_synthetic_input_is_written_again_whole(tmp_path, monkeypatch, variable):
    """Interrupted after some of its blocks, a synthetic input is not taken for written: the
    same command writes it again, and its output has no NaN (the missing chunks' fill)."""
    real = synthetic.definition

    def half_written(inp):
        made = real(inp)

        def stop(block, block_info=None):
            if block_info[0]["chunk-location"][0] == 2:
                raise RuntimeError("interrupted")
            return block

        if "variable" in inp:
            v = made[inp["variable"]]
            return made.assign({inp["variable"]: v.copy(data=v.data.map_blocks(stop, dtype=v.dtype))})
        return made.map_blocks(stop, dtype=made.dtype)

    monkeypatch.setattr(synthetic, "definition", half_written)
    wf = _workflow(tmp_path, variable=variable)
    with pytest.raises(RuntimeError, match="interrupted"):
        batch.run(wf, progress=False)
    monkeypatch.setattr(synthetic, "definition", real)
    wf = _workflow(tmp_path, variable=variable)
    batch.run(wf, progress=False)
    src = _stored(wf)
    np.testing.assert_array_equal(src, _defined(wf))
    out = (zarr.open_array(str(tmp_path / "out.zarr" / variable), mode="r")[...] if variable
           else zarr.open_array(wf.outputs["path"], mode="r")[...])
    assert not np.isnan(out).any()
    np.testing.assert_allclose(out, ndi.gaussian_filter(src, (1.0, 0.0) if variable else 1.0), rtol=1e-5, atol=1e-5)


def test_an_edited_definition_writes_the_input_again(tmp_path):
    batch.run(_workflow(tmp_path, seed=0), progress=False)
    first = _stored(_workflow(tmp_path, seed=0))
    wf = _workflow(tmp_path, seed=5)
    batch.run(wf, progress=False, overwrite=True)
    now = _stored(wf)
    assert not np.array_equal(now, first)
    np.testing.assert_array_equal(now, _defined(wf))
    mark = json.loads((tmp_path / "in.zarr" / ".distconv-output").read_text())
    assert mark["job"]["synthetic"]["seed"] == 5


def test_a_users_data_at_the_path_is_refused_and_kept(tmp_path):
    """A path that holds data distconv did not write as a synthetic input: refused at load,
    naming input.path and what to do; nothing of it is touched."""
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=(8, 8), chunks=(8, 8), dtype="float32")
    z[:] = 7
    before = sorted(p.name for p in (tmp_path / "in.zarr").rglob("*"))
    with pytest.raises(batch.WorkflowError, match=r"input.path '.*in.zarr' holds data distconv did not write "
                                                  r"as input.synthetic.*remove input.synthetic"):
        _workflow(tmp_path)
    assert sorted(p.name for p in (tmp_path / "in.zarr").rglob("*")) == before
    assert (zarr.open_array(str(tmp_path / "in.zarr"), mode="r")[...] == 7).all()


def test_a_users_file_inside_a_synthetic_input_is_never_deleted(tmp_path):
    batch.run(_workflow(tmp_path, seed=0), progress=False)
    (tmp_path / "in.zarr" / "notes.txt").write_text("mine")
    with pytest.raises(batch.WorkflowError, match="notes.txt"):
        _workflow(tmp_path, seed=1)
    assert (tmp_path / "in.zarr" / "notes.txt").read_text() == "mine"


def test_writing_is_shown_and_timed_apart_from_the_run(tmp_path, monkeypatch, capsys):
    """A line (and the progress machinery's lines on a pipe) while the synthetic input is
    written; its seconds are the summary's own field, not in the run's seconds and GB/s."""
    real = synthetic._store

    def slow(*a, **k):
        time.sleep(2.0)
        return real(*a, **k)

    monkeypatch.setattr(synthetic, "_store", slow)
    wf = _workflow(tmp_path)
    t0 = time.perf_counter()
    s = batch.run(wf, progress=True)
    wall = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert f"distconv: writing the synthetic input {wf.input['path']} (64 x 48 float32" in out
    assert "distconv: synthetic input: 0.01 of 0.01 MB (4 blocks)" in out
    assert s["synthetic_input_seconds"] >= 2.0
    assert s["seconds"] <= wall - 2.0
    assert "synthetic input written first" in batch.format_summary(s)
    again = batch.run(_workflow(tmp_path), progress=True, overwrite=True)
    assert "synthetic_input_seconds" not in again
    assert "writing the synthetic input" not in capsys.readouterr().out


def test_the_generator_lives_apart_from_input_opening():
    from distconv.batch import inputs

    assert not hasattr(inputs, "synthetic_dataset") and callable(synthetic.synthetic_dataset)
    lazy = synthetic.synthetic((8, 6), (4, 6), "int16", 0)
    assert isinstance(lazy, da.Array) and lazy.dtype == np.int16


def test_on_object_storage_too(tmp_path, monkeypatch):
    """The same marks on an fsspec URL (memory://): an unfinished input is written again."""
    import uuid

    root = f"memory://{uuid.uuid4().hex}"
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump({"input": {"path": f"{root}/in.zarr", "synthetic": {"shape": [40, 30], "chunks": [10, 30]}},
                                 "steps": [{"op": "cumsum", "axis": 0}], "outputs": {"path": f"{root}/out.zarr"}}))
    real = synthetic.marks.mark_complete

    def interrupted(*a, **k):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(synthetic.marks, "mark_complete", interrupted)
    with pytest.raises(RuntimeError, match="interrupted"):
        batch.run(batch.load(p), progress=False)
    monkeypatch.setattr(synthetic.marks, "mark_complete", real)
    wf = batch.load(p)
    assert not synthetic.is_written(wf.input)
    s = batch.run(wf, progress=False)
    assert s["synthetic_input_seconds"] > 0 and synthetic.is_written(batch.load(p).input)
    np.testing.assert_array_equal(_stored(wf), _defined(wf))


@pytest.mark.parametrize("variable", [None, "t"])
def test_a_failed_synthetic_write_is_fenced_and_stopped_as_an_outputs_is(tmp_path, monkeypatch, variable):
    """Its blocks are the engine's fenced writes: a failure stops the run and waits for the
    writes under way (engine.compute's stop), and the input is written whole next time."""
    from distconv.engine import compute

    wf = _workflow(tmp_path, variable=variable)
    real_definition = synthetic.definition

    def failing(inp):
        made = real_definition(inp)

        def boom(block, block_info=None):
            if block_info[0]["chunk-location"][0] == 2:
                raise OSError("a block that fails")
            return block

        if variable:
            made[variable] = made[variable].copy(data=made[variable].data.map_blocks(boom, dtype=np.float32))
            return made
        return made.map_blocks(boom, dtype=made.dtype)

    stops = []
    real_stop = compute._stop
    monkeypatch.setattr(compute, "_stop", lambda claim, *a: stops.append(claim) or real_stop(claim, *a))
    monkeypatch.setattr(synthetic, "definition", failing)
    with pytest.raises(OSError, match="a block that fails"):
        synthetic.write(wf.input)
    assert len(stops) == 1 and stops[0].output == wf.input["path"]
    monkeypatch.setattr(synthetic, "definition", real_definition)
    assert not synthetic.is_written(wf.input)
    synthetic.write(wf.input)
    np.testing.assert_array_equal(_stored(wf), _defined(wf))
