"""Nothing a user owns is replaced, on any face: ``dc.to_zarr`` and the accessor's ``to_zarr``
refuse an output that is, holds or lies inside a Zarr store the data reads; a plain file output
(``--json``, a workflow's report and its plots, the histogram's JSON and PNG) replaces only a
file distconv wrote, never lies in an input or an output, and is checked before any work."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml
import zarr
from click.testing import CliRunner

import distconv as dc
from distconv.cli import main
from distconv.engine import paths
from distconv.engine.ownership import OutputError


@pytest.fixture
def stored(tmp_path):
    """A distconv output P (so overwrite=True would otherwise replace it) and its values."""
    import dask.array as da

    zarr.create_array(str(tmp_path / "a.zarr"), data=np.arange(20 * 30, dtype=np.float32).reshape(20, 30),
                      chunks=(10, 10))
    P = tmp_path / "P"
    dc.to_zarr(dc.gaussian_filter(da.from_zarr(str(tmp_path / "a.zarr")), 1.0), str(P))
    return P, zarr.open_array(str(P), mode="r")[...]


def _listing(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_size) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("where, says", [("P", "is the Zarr store"), ("P/sub", "lies inside the Zarr store"),
                                         (".", "holds the Zarr store"), ("link", "is the Zarr store")])
@pytest.mark.parametrize("general", [False, True])
def test_to_zarr_over_what_it_reads_is_refused_and_the_input_survives(stored, tmp_path, monkeypatch, where, says,
                                                                      general):
    import dask.array as da

    P, values = stored
    monkeypatch.chdir(tmp_path)
    os.symlink("P", "link")
    before = _listing(P)
    x = da.from_zarr(str(P))
    y = x + 1 if general else dc.gaussian_filter(x, 1.0)
    with pytest.raises(OutputError) as e:
        dc.to_zarr(y, where, overwrite=True)
    msg = str(e.value)
    assert msg.startswith(f"path={where!r}") and says in msg and repr(str(P)) in msg, msg
    if where == "link":
        assert f"(that is {str(P)!r})" in msg
    assert _listing(P) == before
    np.testing.assert_array_equal(zarr.open_array(str(P), mode="r")[...], values)


def test_the_accessors_to_zarr_over_its_own_input_is_refused(tmp_path):
    import xarray as xr

    D = tmp_path / "D.zarr"
    ds = xr.Dataset({"t": (("lat", "lon"), np.arange(20 * 30, dtype=np.float32).reshape(20, 30))},
                    coords={"lon": np.arange(30.0)})
    dc.to_zarr(ds, str(D))
    before = _listing(D)
    for out in (D, D / "t", D / "new"):
        with pytest.raises(OutputError, match=r"^path=.* the Zarr store .*D\.zarr'"):
            xr.open_zarr(str(D)).distconv.derivative("lon").distconv.to_zarr(str(out), overwrite=True)
        with pytest.raises(OutputError, match="Zarr store"):
            xr.open_zarr(str(D))["t"].distconv.derivative("lon").distconv.to_zarr(str(out), overwrite=True)
    assert _listing(D) == before
    np.testing.assert_array_equal(xr.open_zarr(str(D))["t"].values, ds["t"].values)


def test_stores_read_finds_every_store_a_result_reads(stored, tmp_path):
    import dask.array as da
    import xarray as xr

    P, _ = stored
    a = da.from_zarr(str(tmp_path / "a.zarr"))
    both = dc.gaussian_filter(dc.gaussian_filter(da.from_zarr(str(P)), 1.0), 1.0) + a
    assert paths.stores_read(both) == sorted([str(P), str(tmp_path / "a.zarr")])
    assert paths.stores_read(np.zeros(3)) == [] and paths.stores_read(da.zeros(3)) == []
    D = str(tmp_path / "D.zarr")
    xr.Dataset({"t": (("y", "x"), np.zeros((4, 6), np.float32))}).chunk({"y": 2}).to_zarr(D, consolidated=False)
    assert paths.stores_read(xr.open_zarr(D, consolidated=False)) == \
        paths.stores_read(xr.open_zarr(D, consolidated=False)["t"] * 2) == [D]
    dc.to_zarr(dc.gaussian_filter(da.from_zarr(str(P)), 1.0), str(tmp_path / "Q"))  # apart: written


# --- the CLI's plain files -------------------------------------------------------------------

def _project(tmp_path, **extra):
    zarr.create_array(str(tmp_path / "in.zarr"), data=np.ones((32, 32), np.float32), chunks=(16, 32))
    doc = {"name": "wf", "input": {"path": "in.zarr"}, "steps": [{"op": "gaussian_filter", "sigma": 1.0}],
           "outputs": {"path": "out.zarr"}, **extra}
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"cluster": {
        "type": "cpu", "n_workers": 1, "threads_per_worker": 2, "processes": False, "dashboard_address": "127.0.0.1:0"}}))


def _run(tmp_path, *args):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        return CliRunner().invoke(main, ["run", "wf.yaml", "--cluster", "cluster.yaml", "--no-progress", *args])
    finally:
        os.chdir(cwd)


def _refused(tmp_path, res, *says):
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    for s in says:
        assert s in res.output, res.output
    assert not (tmp_path / "out.zarr").exists()  # refused before any work


@pytest.mark.parametrize("path, says", [("wf.yaml", "is the workflow file"),
                                        ("in.zarr/zarr.json", "lies inside the input"),
                                        ("in.zarr/s.json", "lies inside the input"),
                                        ("notes.md", "was not written by distconv")])
def test_json_never_replaces_a_users_file_or_writes_in_an_input(tmp_path, path, says):
    _project(tmp_path)
    (tmp_path / "notes.md").write_text("my notes")
    before = _listing(tmp_path)
    _refused(tmp_path, _run(tmp_path, "--json", path), f"--json {path!r}", says)
    assert _listing(tmp_path) == before


@pytest.mark.parametrize("extra, says", [
    ({"report": "notes.md"}, "report '{t}/notes.md' exists and was not written by distconv"),
    ({"report": "out.zarr/r.md"}, "report '{t}/out.zarr/r.md' lies inside the output '{t}/out.zarr'"),
    ({"outputs": {"path": "out.zarr", "histogram": {"png": "old.png"}}},
     "outputs.histogram.png '{t}/old.png' exists and was not written by distconv"),
    ({"outputs": {"path": "out.zarr", "histogram": {"json": "notes.md"}}},
     "outputs.histogram.json '{t}/notes.md' exists and was not written by distconv"),
    ({"outputs": {"path": "out.zarr", "histogram": {"png": "hist.txt"}}},
     "outputs.histogram.png '{t}/hist.txt' must end in .png"),
    ({"outputs": {"path": "out.zarr", "histogram": {"json": "out.zarr/h.json"}}},
     "outputs.histogram.json '{t}/out.zarr/h.json' lies inside the output"),
    ({"outputs": {"path": "out.zarr", "histogram": {"json": "notes.md/h.json"}}}, "is a file, so the folder"),
    ({"report": "r.md", "outputs": {"path": "out.zarr", "histogram": {"png": "r.thumbs.png"}}},
     "r.thumbs.png' is also outputs.histogram.png"),
])
def test_a_workflows_files_replace_no_users_file_and_are_checked_before_any_work(tmp_path, extra, says):
    _project(tmp_path, **extra)
    (tmp_path / "notes.md").write_text("my notes")
    (tmp_path / "old.png").write_bytes(b"\x89PNG\r\n\x1a\n not distconv's")
    before = _listing(tmp_path)
    _refused(tmp_path, _run(tmp_path), says.format(t=tmp_path))
    assert _listing(tmp_path) == before


def test_every_file_problem_is_said_at_once(tmp_path):
    _project(tmp_path, report="notes.md", outputs={"path": "out.zarr", "histogram": {"png": "h.txt", "json": "wf.yaml"}})
    (tmp_path / "notes.md").write_text("my notes")
    res = _run(tmp_path, "--json", "in.zarr/zarr.json")
    _refused(tmp_path, res, "report ", "outputs.histogram.png", "outputs.histogram.json", "--json")


def test_a_file_written_by_distconv_is_replaced_by_the_next_run(tmp_path):
    """A run's files carry distconv's mark (a JSON key, a PNG text chunk, a report's first
    line), so the next run replaces them, and only them."""
    from PIL import Image

    _project(tmp_path, report="rep.md", outputs={"path": "out.zarr", "histogram": {"json": "h.json", "png": "h.png"}})
    for flags in ((), ("--overwrite",)):
        res = _run(tmp_path, "--json", "s.json", "--report", "R", *flags)
        assert res.exit_code == 0, res.output
    for name in ("s.json", "h.json"):
        assert json.loads((tmp_path / name).read_text())[paths.MARK_KEY] == paths.MARK_VALUE
    for name in ("h.png", "rep.thumbs.png", "R/timeline.png"):
        with Image.open(tmp_path / name) as im:
            assert im.text[paths.MARK_KEY] == paths.MARK_VALUE, name
    for name in ("rep.md", "R/report.md"):
        assert (tmp_path / name).read_text().startswith(paths.MARK_LINE + "\n# distconv ")


def test_two_workflows_may_not_write_into_each_others_paths(tmp_path):
    _project(tmp_path)
    doc = yaml.safe_load((tmp_path / "wf.yaml").read_text())
    doc.update(name="b", outputs={"path": "b.zarr", "histogram": {"json": "out.zarr/h.json"}})
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(doc))
    res = _run(tmp_path, "b.yaml")
    _refused(tmp_path, res, "workflow 'b': outputs.histogram.json", "lies inside the output",
             "of workflow 'wf'")
    assert not (tmp_path / "b.zarr").exists()


# --- the accessor ----------------------------------------------------------------------------

def _python(code: str) -> str:
    res = subprocess.run([sys.executable, "-W", "error::Warning", "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.parametrize("order", ["import distconv, xarray", "import xarray, distconv",
                                   "import distconv.xarray, xarray"])
def test_the_accessors_methods_are_on_its_class_before_first_use(order):
    out = _python(f"{order}\nimport sys\n"
                  "light = 'dask.array' not in sys.modules\n"
                  "import xarray as xr\n"
                  "print(light, 'gaussian_filter' in dir(xr.DataArray.distconv), "
                  "'cumsum' in dir(xr.Dataset.distconv), 'to_zarr' in dir(xr.DataArray.distconv))")
    light, *found = out.split()
    assert found == ["True", "True", "True"], out
    # importing distconv and xarray loads no dask.array (importing the accessor module itself may)
    assert light == "True" or "distconv.xarray" in order, out


def test_the_accessor_is_there_when_an_op_imported_xarray_first():
    """An op's first use imports xarray from inside distconv's own imports: the accessor is
    still there, with its methods, and help() shows them."""
    out = _python("import io, contextlib, distconv as dc\ndc.gaussian_filter\nimport xarray as xr\n"
                  "da = xr.DataArray([1.0, 2.0], dims='x')\n"
                  "print(da.distconv.gaussian_filter(1.0).values.round(3).tolist())\n"
                  "buf = io.StringIO()\n"
                  "with contextlib.redirect_stdout(buf): help(xr.DataArray.distconv)\n"
                  "print('gaussian_filter(' in buf.getvalue())")
    assert out.splitlines() == ["[1.354, 1.646]", "True"]


def test_the_run_report_may_not_write_a_workflows_own_file(tmp_path):
    _project(tmp_path, report="R/report.md")
    res = _run(tmp_path, "--report", "R")
    _refused(tmp_path, res, "--report 'R' would write", "which is report of workflow 'wf'")
    assert not (tmp_path / "R").exists()
