"""`distconv run --report DIR`: a Markdown report of the run (steps and their arguments, input
and output, seconds per stage) with a plot of the job's timeline, built from the run's own
record (the --json summary's ``timeline``: one entry per engine block); bad folders refused
before any work; a workflow's own report lists its steps; the engine's block tasks are named
after the steps on the dashboard."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
import zarr
from click.testing import CliRunner

from distconv import batch
from distconv.cli import main
from distconv.engine import paths

from .helpers import small_engine_blocks

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


def _files(tmp_path, steps, name="wf", out="out.zarr", workers=2, dashboard=None):
    x = np.random.default_rng(6).standard_normal((256, 64)).astype(np.float32)
    if not (tmp_path / "in.zarr").exists():
        zarr.create_array(str(tmp_path / "in.zarr"), data=x, chunks=(16, 64))
    wf = tmp_path / f"{name}.yaml"
    wf.write_text(yaml.safe_dump({"name": name, "input": {"path": "in.zarr"}, "steps": steps,
                                  "outputs": {"path": out}}, sort_keys=False))
    c = tmp_path / "cluster.yaml"
    c.write_text(yaml.safe_dump({"cluster": {"type": "cpu", "n_workers": workers, "threads_per_worker": 2,
                                             "processes": False, "dashboard_address": dashboard}}))
    return x, wf, c


def _run(*args):
    return CliRunner().invoke(main, ["run", *map(str, args)])


def _valid_png(path: Path):
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == PNG and data[12:16] == b"IHDR", path
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 100 and height > 100


STEPS = [{"op": "correlate", "weights": [[0, 1, 0], [1, 2, 1], [0, 1, 0]]},
         {"op": "gaussian_filter", "sigma": 1.5, "mode": "nearest"}]


def test_report_names_steps_arrays_stages_and_draws_the_timeline(tmp_path, monkeypatch):
    small_engine_blocks(monkeypatch, 4000, 1000)  # 16 blocks of 16 rows
    monkeypatch.chdir(tmp_path)
    x, wf, c = _files(tmp_path, STEPS, dashboard="127.0.0.1:0")
    res = _run(wf, "--cluster", c, "--json", "s.json", "--report", "rep")
    assert res.exit_code == 0, res.output
    assert "distconv: report: rep/report.md" in res.output
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["path"] == "direct"
    # the timeline: one entry per block, each (worker, start < end, its rows' bytes), all the input
    timeline = s["timeline"]
    assert len(timeline) == s["progress"]["blocks"] == 16
    assert all(0 <= t0 < t1 for _, t0, t1, _ in timeline)
    assert {w for w, *_ in timeline} <= {"0", "1"}
    assert sum(b for *_, b in timeline) == s["bytes_in"] == x.nbytes
    assert s["step_arguments"] == [{"weights": [[0, 1, 0], [1, 2, 1], [0, 1, 0]]}, {"sigma": 1.5, "mode": "nearest"}]
    assert s["arrays"]["input"] == {"path": str(tmp_path / "in.zarr"), "shape": [256, 64], "dtype": "float32",
                                    "chunks": [16, 64], "shards": None}
    assert s["arrays"]["output"]["path"] == str(tmp_path / "out.zarr") and s["arrays"]["output"]["shape"] == [256, 64]

    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.startswith(paths.MARK_LINE + "\n# distconv run report") and "## wf" in md
    assert "| 1 | `correlate` | `weights=[[0, 1, 0], [1, 2, 1], [0, 1, 0]]` |" in md
    assert "| 2 | `gaussian_filter` | `sigma=1.5, mode='nearest'` |" in md
    assert f"| input | `{tmp_path / 'in.zarr'}` | (256, 64) | float32 | (16, 64) | — |" in md
    out = s["arrays"]["output"]
    assert f"| output | `{tmp_path / 'out.zarr'}` | (256, 64) | float32 | {tuple(out['chunks'])} | " \
           f"{tuple(out['shards'])} |" in md
    for stage, seconds in s["stage_seconds"].items():
        assert f"| {stage} | {seconds:.3f} |" in md
    assert re.search(r"\| `correlate-gaussian-[a-z]{3}` \|", md)  # busy seconds, by the dashboard's name
    assert f"- on the dashboard: {s['dashboard']}" in md and "/distconv?job=" in s["dashboard"]  # the job's page
    assert "| first_task |" in md and f"{s['wall_s']:.2f} s from the command's start" in md
    assert "![timeline](timeline.png)" in md and "16 blocks on " in md
    _valid_png(tmp_path / "rep" / "timeline.png")


def test_report_of_several_workflows_and_the_general_paths_timeline(tmp_path, monkeypatch):
    """The general path's timeline (a wrap mode): the job's tasks from the cluster's task
    stream, bytes on its chunk writes; one report, a section and a plot per workflow."""
    small_engine_blocks(monkeypatch, 4000, 1000)
    x, wf1, c = _files(tmp_path, STEPS, "direct", "a.zarr", workers=1)
    _, wf2, _ = _files(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0, "mode": "wrap"}], "general", "b.zarr",
                       workers=1)
    res = _run(wf1, wf2, "--cluster", c, "--no-progress", "--json", tmp_path / "s.json", "--report",
               tmp_path / "rep")
    assert res.exit_code == 0, res.output
    direct, general = json.loads((tmp_path / "s.json").read_text())
    assert general["path"] == "general" and direct["path"] == "direct"
    assert len(general["timeline"]) > 16 and all(0 <= t0 <= t1 for _, t0, t1, _ in general["timeline"])
    assert sum(b for *_, b in general["timeline"]) == general["bytes_out"] == x.nbytes
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## direct" in md and "## general" in md and "`sigma=1.0, mode='wrap'`" in md
    assert "a block is several tasks" in md
    for k in (1, 2):
        assert f"![timeline](timeline-{k}.png)" in md
        _valid_png(tmp_path / "rep" / f"timeline-{k}.png")


@pytest.mark.parametrize("where", ["file", "output", "input"])
def test_a_bad_report_folder_is_refused_before_any_work(tmp_path, where):
    _, wf, c = _files(tmp_path, STEPS)
    (tmp_path / "notes.txt").write_text("mine")
    folder = {"file": tmp_path / "notes.txt", "output": tmp_path / "out.zarr" / "rep",
              "input": tmp_path / "in.zarr" / "rep"}[where]
    res = _run(wf, "--cluster", c, "--report", folder)
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert f"--report {str(folder)!r}" in res.output
    assert {"file": "is an existing file", "output": "lies inside the output",
            "input": "lies inside the input"}[where] in res.output
    assert not (tmp_path / "out.zarr").exists() and not folder.with_name("rep").exists()
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_report_folder_holding_the_users_own_report_is_refused_and_left_as_it_was(tmp_path):
    """A --report folder whose report.md (or timeline plots) distconv did not write is refused
    before any work; one that holds distconv's own report is written again."""
    _, wf, c = _files(tmp_path, STEPS)
    for name, text in (("report.md", "# my notes\n"), ("timeline.png", "not a plot")):
        folder = tmp_path / f"mine-{name}"
        folder.mkdir()
        (folder / name).write_text(text)
        res = _run(wf, "--cluster", c, "--report", folder)
        assert res.exit_code == 2 and "did not write" in res.output and f"--report {str(folder)!r}" in res.output
        assert (folder / name).read_text() == text and not (tmp_path / "out.zarr").exists()
    for k in range(2):  # the second run replaces the first's report
        res = _run(wf, "--cluster", c, "--report", tmp_path / "rep", "--overwrite")
        assert res.exit_code == 0, res.output
    assert (tmp_path / "rep" / "report.md").read_text().startswith(paths.MARK_LINE + "\n# distconv run report\n")


def test_the_hist_workflows_report_lists_its_steps(tmp_path):
    doc = yaml.safe_load((ROOT / "workflows" / "hist.yaml").read_text())
    doc["input"]["synthetic"].update(shape=[64, 64], chunks=[32, 32])
    (tmp_path / "workflows").mkdir()  # its paths say ../demo-data/
    (tmp_path / "workflows" / "hist.yaml").write_text(yaml.safe_dump(doc))
    s = batch.run(batch.load(tmp_path / "workflows" / "hist.yaml"), progress=False)
    md = Path(s["report"]).read_text()
    assert md.startswith(paths.MARK_LINE + "\n# distconv report: hist")
    assert "| 1 | `gaussian_filter` | `sigma=1.0` |" in md
    assert "| input | " in md and "| output | " in md and "![histogram](hist.png)" in md
    assert "No timeline" in md  # dask's local threads off the engine: said so
    assert Path(s["report"]).with_suffix(".thumbs.png").stat().st_size > 1000


def test_a_carried_scans_timeline_has_both_parts_of_each_block(tmp_path, monkeypatch):
    small_engine_blocks(monkeypatch, 4000, 1000)
    x, wf, _ = _files(tmp_path, [{"op": "laplace"}, {"op": "cumsum", "axis": 0}])
    s = batch.run(batch.load(wf), progress=False)  # dask's local threads: the engine's blocks still time themselves
    assert s["path"] == "direct"
    timeline = s["timeline"]
    assert len(timeline) == 2 * 16 and {w for w, *_ in timeline} == {"local"}
    assert all(t0 < t1 for _, t0, t1, _ in timeline)
    assert sum(b for *_, b in timeline) == s["bytes_in"] == x.nbytes  # read once, by the local parts
    report = Path(tmp_path / "r")
    from distconv.batch.report import write_run_report

    md = Path(write_run_report(report, [s])).read_text()
    assert "32 blocks on 1 worker (local)" in md
    _valid_png(report / "timeline.png")


def test_the_engines_block_tasks_are_named_after_the_steps(tmp_path, monkeypatch):
    """On the dashboard (its task stream and progress group tasks by dask's key_split) the
    blocks read as the job's steps, one name a job; every key is the job's own."""
    import dask.array as da
    from dask.utils import key_split
    from distributed import Client, LocalCluster, get_task_stream

    import distconv as dc
    from distconv import engine

    small_engine_blocks(monkeypatch, 4000, 1000)
    x = np.random.default_rng(8).standard_normal((256, 64)).astype(np.float32)
    zarr.create_array(str(tmp_path / "in.zarr"), data=x, chunks=(16, 64))
    src = da.from_zarr(str(tmp_path / "in.zarr"))
    keys = []
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as lc, \
            Client(lc) as client:
        for out in ("a.zarr", "b.zarr"):
            with get_task_stream(client) as ts:
                dc.to_zarr(dc.gaussian_filter(dc.correlate(src, np.ones((3, 3))), 1.0), str(tmp_path / out),
                           client=client)
            keys.append({t["key"] for t in ts.data if key_split(t["key"]).startswith("correlate-gaussian-")})
    assert len(keys[0]) == len(keys[1]) == 16
    assert not keys[0] & keys[1]  # each run's own keys
    names = [{key_split(k) for k in run} for run in keys]
    assert len(names[0]) == len(names[1]) == 1 and names[0] != names[1]  # one name a job: two bars
    token = {k.rsplit("-", 2)[1] for k in keys[0]}
    assert len(token) == 1 and len(next(iter(token))) == 32
    assert sorted(int(k.rsplit("-", 1)[1]) for k in keys[0]) == list(range(16))

    # a carried scan: each block's own scan and its write, and the carries between them
    plan = engine.plan_write(dc.cumsum(dc.laplace(src), axis=0), str(tmp_path / "c.zarr"), False)
    blocks, merged = engine.graph(plan.job, plan.job.name)
    names = {key_split(k) for k in merged.__dask_graph__()}
    (name,) = {key_split(b.key) for b in blocks}
    assert name.startswith("laplace-cumsum-")
    assert {name, f"scan_{name}", f"carry_{name}", f"merge_{name}"} == names, names


def test_a_run_without_an_array_job_is_reported_without_a_timeline(tmp_path):
    """A bag of visual words (its summary as run_bovw returns it): its steps, no plot."""
    from distconv.batch.report import write_run_report

    s = {"workflow": "bovw", "output": "/o", "seconds": 1.5, "text": "10 images", "steps": ["bovw"],
         "step_arguments": [{"patch": 8, "n_clusters": 32}]}
    md = Path(write_run_report(tmp_path / "r", [s])).read_text()
    assert "| 1 | `bovw` | `patch=8, n_clusters=32` |" in md and "No timeline" in md
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["report.md"]


def test_code_in_the_report_never_nests_backticks_or_breaks_a_table():
    """A dataset's variable, a path or an argument holding a backtick or a pipe: each is one
    inline code span in its cell (CommonMark: a longer fence), the table's columns kept."""
    from distconv.batch.report import run_lines

    s = {"workflow": "w", "output": "/o|ut", "input": "/in`put", "shape": [4, 4], "dtype": "float32",
         "steps": ["correlate"], "step_arguments": [{"weights": "`w`"}], "seconds": 1.0, "GBps": 0.1,
         "bytes_in": 64, "bytes_out": 64, "timeline": [],
         "arrays": {"input": {"path": "/ds.zarr", "variable": "t"}, "output": {"path": "/o|ut"}}}
    md = "\n".join(run_lines(s, "/", "x.png", 2))
    assert "| input | `/ds.zarr` (variable `t`) |" in md, md
    assert "| output | `/o\\|ut` |" in md, md
    assert "| 1 | `correlate` | ``weights='`w`'`` |" in md, md
    assert "``/ds.zarr (variable `t`)``" not in md and "`/ds.zarr (variable `t`)`" not in md
