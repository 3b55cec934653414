"""Nothing a user owns is ever deleted: output paths are checked before any work, and
``--overwrite`` only ever removes a store distconv itself created."""

import subprocess
import sys

import numpy as np
import pytest
import zarr

from distconv.engine import marks as outputs


def _cluster(tmp_path):
    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n  processes: false\n"
                 "  dashboard_address: '127.0.0.1:0'\n")
    return c


def _run(tmp_path, wf_text, *flags):
    wf = tmp_path / "wf.yaml"
    wf.write_text(wf_text)
    cmd = [sys.executable, "-m", "distconv.cli", "run", str(wf), "--no-progress",
           "--cluster", str(_cluster(tmp_path)), *flags]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)


def _victim(tmp_path):
    """The reported layout: proj/ holding the input proj/victim.zarr and a user's notes."""
    proj = tmp_path / "proj"
    proj.mkdir()
    data = np.arange(48 * 40, dtype=np.float32).reshape(48, 40)
    zarr.create_array(str(proj / "victim.zarr"), data=data, chunks=(16, 40))
    (proj / "notes.txt").write_text("my notes")
    return proj, data


@pytest.mark.parametrize("flags", [(), ("--overwrite",), ("--resume",)])
def test_output_folder_holding_the_input_is_refused_and_survives(tmp_path, flags):
    proj, data = _victim(tmp_path)
    res = _run(tmp_path, "input: {path: proj/victim.zarr}\nsteps:\n  - {op: gaussian_filter, sigma: 1.0}\n"
                         "outputs: {path: proj}\n", *flags)
    assert res.returncode == 2, res.stderr
    assert "holds the input" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "--overwrite" not in res.stderr  # no advice that would delete it
    np.testing.assert_array_equal(zarr.open_array(str(proj / "victim.zarr"), mode="r")[...], data)
    assert (proj / "notes.txt").read_text() == "my notes"
    assert sorted(p.name for p in proj.iterdir()) == ["notes.txt", "victim.zarr"]


def test_output_inside_the_input_is_refused(tmp_path):
    proj, data = _victim(tmp_path)
    res = _run(tmp_path, "input: {path: proj/victim.zarr}\nsteps:\n  - {op: gaussian_filter, sigma: 1.0}\n"
                         "outputs: {path: proj/victim.zarr/out}\n", "--overwrite")
    assert res.returncode == 2 and "lies inside the input" in res.stderr, res.stderr
    assert not (proj / "victim.zarr" / "out").exists()


@pytest.mark.parametrize("make, match", [
    (lambda p: p.write_text("a file"), "is a file"),
    (lambda p: (p.mkdir(), (p / "thesis.tex").write_text("x")), "not written by distconv"),
    (lambda p: zarr.create_array(str(p), shape=(4,), dtype="f4"), "not written by distconv"),
])
def test_foreign_output_refused_even_with_overwrite(tmp_path, make, match):
    _victim(tmp_path)
    target = tmp_path / "out.zarr"
    make(target)
    before = sorted(str(q) for q in tmp_path.rglob("*") if q.suffix != ".yaml")
    res = _run(tmp_path, "input: {path: proj/victim.zarr}\nsteps:\n  - {op: gaussian_filter, sigma: 1.0}\n"
                         "outputs: {path: out.zarr}\n", "--overwrite")
    assert res.returncode == 2 and match in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert sorted(str(q) for q in tmp_path.rglob("*") if q.suffix != ".yaml") == before


def test_overwrite_replaces_own_output_but_not_a_user_file_put_inside(tmp_path):
    _victim(tmp_path)
    wf = "input: {path: proj/victim.zarr}\nsteps:\n  - {op: gaussian_filter, sigma: 1.0}\noutputs: {path: out.zarr}\n"
    assert _run(tmp_path, wf).returncode == 0
    out = tmp_path / "out.zarr"
    assert (out / outputs.OWNER).is_file() and (out / outputs.COMPLETE).is_file()
    again = _run(tmp_path, wf)
    assert again.returncode == 2 and "--overwrite" in again.stderr
    assert _run(tmp_path, wf, "--overwrite").returncode == 0
    (out / "keep.txt").write_text("mine")
    res = _run(tmp_path, wf, "--overwrite")
    assert res.returncode == 2 and "'keep.txt'" in res.stderr, res.stderr
    assert (out / "keep.txt").read_text() == "mine"


def test_resume_on_complete_output_is_nothing_to_do_and_another_jobs_is_refused(tmp_path):
    _victim(tmp_path)
    wf = "input: {path: proj/victim.zarr}\nsteps:\n  - {op: gaussian_filter, sigma: 1.0}\noutputs: {path: out.zarr}\n"
    assert _run(tmp_path, wf).returncode == 0
    res = _run(tmp_path, wf, "--resume")
    assert res.returncode == 0 and "already complete" in res.stdout and "nothing to do" in res.stdout, res
    res = _run(tmp_path, wf.replace("sigma: 1.0", "sigma: 2.0"), "--resume")
    assert res.returncode == 2 and "another job" in res.stderr and "sigma" in res.stderr, res.stderr


def test_histogram_and_report_may_not_land_in_the_input(tmp_path):
    _victim(tmp_path)
    res = _run(tmp_path, "input: {path: proj/victim.zarr}\nsteps:\n  - {op: gaussian_filter, sigma: 1.0}\n"
                         "outputs: {path: out.zarr, histogram: {json: proj/victim.zarr/h.json}}\n")
    assert res.returncode == 2 and "outputs.histogram.json" in res.stderr, res.stderr
    assert not (tmp_path / "out.zarr").exists()


def test_python_store_overwrite_keeps_foreign_folder(tmp_path):
    import dask.array as da

    import distconv as dc

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.txt").write_text("x")
    with pytest.raises(outputs.OutputError, match="not written by distconv"):
        dc.to_zarr(da.zeros((4, 4), chunks=2), str(tmp_path / "d"), overwrite=True)
    assert (tmp_path / "d" / "x.txt").read_text() == "x"
