"""The dashboard a user watches a job on: task names whose first characters say the steps, one
name per job (dask's key_split still groups a job's blocks); distconv's page on the scheduler's
dashboard (/distconv) with every job's facts, blocks, bytes and end, fed by the client's progress
and the workers' stage clocks; a run's summary from its own tasks; a Ctrl-C that cancels only
the run's own futures and leaves the scheduler's log clean; the page in a real browser."""

import html.parser
import json
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid

import numpy as np
import pytest
import zarr

from .helpers import small_engine_blocks

SHAPE, CHUNKS = (256, 64), (16, 64)


def _job(name):
    from distconv.engine.job import task_prefix

    class Job:
        run = uuid.uuid4().hex

    Job.name = name
    return task_prefix(Job)


@pytest.mark.parametrize("steps, shown", [
    ("distconv-gaussian-median", "gaussian-median-"), ("distconv-gaussian-uniform-median", "gaussian-uniform-median-"),
    ("distconv-absolute-cumsum", "absolute-cumsum-"), ("distconv-correlate1d-2d", "correlate1d_2d-"),
    ("distconv-laplace", "laplace-")])
def test_task_names_say_the_steps_in_12_characters_and_differ_per_job(steps, shown):
    from dask.utils import key_split

    a, b = _job(steps), _job(steps)
    assert a != b  # two jobs of the same steps: two bars
    assert a.startswith(shown) and len(a) == len(shown) + 3  # the steps first, then the job's tag
    token = uuid.uuid4().hex
    for key in (f"{a}-{token}-3", f"merge_{a}-{token}-0-1", f"scan_{a}-{token}-2", f"carry_{a}-{token}-4"):
        split = key_split(key)
        assert split.endswith(a) and split != key_split(key.replace(a, b))  # one job's keys, one name


def _array(tmp_path, name="in.zarr"):
    x = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    zarr.create_array(str(tmp_path / name), data=x, chunks=CHUNKS)
    return x


class Gate:
    """Blocks after the first ``free`` wait until ``open()``: a run held mid-way."""

    def __init__(self, monkeypatch, free):
        from distconv.engine import job

        self.free, self.count, self.lock, self.event = free, 0, threading.Lock(), threading.Event()
        real = job._run_block

        def held(*args, **kwargs):
            with self.lock:
                self.count += 1
                wait = self.count > self.free
            if wait:
                self.event.wait(60)
            return real(*args, **kwargs)

        monkeypatch.setattr(job, "_run_block", held)

    def open(self):
        self.event.set()


def _board(port, job=None):
    url = f"http://127.0.0.1:{port}/distconv/jobs.json" + (f"?job={job}" if job else "")
    return json.loads(urllib.request.urlopen(url, timeout=10).read())


def _until(check, timeout=60):
    """``check()``'s first true answer (a page not there yet, before the first job registered
    it, is no answer yet)."""
    deadline, last = time.time() + timeout, None
    while time.time() < deadline:
        try:
            got = check()
        except urllib.error.HTTPError as e:
            got, last = None, e
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out ({last})")


@pytest.fixture
def cluster():
    """A cluster as distconv starts one: its scheduler loads the board as it starts and keeps it."""
    from distributed import Client, LocalCluster

    from distconv.engine.dashboard import scheduler_kwargs

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0",
                      scheduler_kwargs=scheduler_kwargs(dashboard=True)) as lc, Client(lc) as client:
        yield lc, client, client.scheduler_info()["services"]["dashboard"]


def _two_jobs(tmp_path, client):
    import dask.array as da

    import distconv as dc

    src = da.from_zarr(str(tmp_path / "in.zarr"))
    done = {}

    def go(k):
        done[k] = dc.to_zarr(dc.median_filter(dc.gaussian_filter(src, 1.0), 3), str(tmp_path / f"out{k}.zarr"),
                             client=client)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    return threads, done


def test_the_pages_data_for_two_jobs_at_once(tmp_path, monkeypatch, cluster):
    small_engine_blocks(monkeypatch, 8000, 1000)
    x = _array(tmp_path)
    lc, client, port = cluster
    gate = Gate(monkeypatch, free=2)
    threads, done = _two_jobs(tmp_path, client)
    try:
        running = _until(lambda: (b := _board(port)) and len(b["jobs"]) == 2 and
                         all(j["state"] == "running" for j in b["jobs"]) and b)
        names = {j["name"] for j in running["jobs"]}
        assert len(names) == 2 and all(n.startswith("gaussian-median-") for n in names)
        # two bars on dask's own pages: each job's blocks under its own name
        assert _until(lambda: names <= set(lc.scheduler.task_prefixes))
        for j in running["jobs"]:
            assert j["blocks"] == 16 and j["bytes"] == x.nbytes and j["path"] == "engine" and j["why"] is None
            assert j["output"].endswith(("out0.zarr", "out1.zarr")) and j["input"] == str(tmp_path / "in.zarr")
            assert [p[0] for p in j["phases"]][:1] == ["submitted"]  # then its first block's slot
        held = _until(lambda: (b := _board(port)) and sum(j["done"] for j in b["jobs"]) == 2 and b)
        blocks = held["blocks"]
        assert len(blocks) == 16 and {s for s, *_ in blocks} <= {"done", "queued", "waiting", "running"}
        assert sum(s == "done" for s, *_ in blocks) + sum(s == "done" for s, *_ in _board(
            port, next(j["id"] for j in held["jobs"] if j["id"] != held["selected"]))["blocks"]) == 2
    finally:
        gate.open()
        for t in threads:
            t.join(120)
    assert all(r["path"] == "engine" for r in done.values())
    ended = _until(lambda: (b := _board(port)) and all(j["state"] == "done" for j in b["jobs"]) and b)
    for j in ended["jobs"]:
        assert j["done"] == j["blocks"] == 16 and j["done_bytes"] == j["bytes"] == x.nbytes
        assert j["GBps"] > 0 and j["left_s"] is None and j["message"] is None
        assert j["stages"]["compute"] > 0 and {"read", "decode", "write"} & set(j["stages"])
        assert "first block" in [p[0] for p in j["phases"]]
        blocks = _board(port, j["id"])["blocks"]
        assert [b[0] for b in blocks] == ["done"] * 16
        assert all(b[1] >= 0 and b[3] > 0 and "compute" in b[4] for b in blocks)
        assert {b[2] for b in blocks} <= {"0", "1"}  # the workers by name
        assert sum(b[3] for b in blocks) == x.nbytes


def test_a_failed_and_a_cancelled_job_say_so(tmp_path, monkeypatch, cluster):
    import dask.array as da

    import distconv as dc
    from distconv.engine import job

    small_engine_blocks(monkeypatch, 8000, 1000)
    _array(tmp_path)
    lc, client, port = cluster

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(job, "_run_block", broken)
    src = da.from_zarr(str(tmp_path / "in.zarr"))
    with pytest.raises(RuntimeError, match="disk full"):
        dc.to_zarr(dc.gaussian_filter(src, 1.0), str(tmp_path / "bad.zarr"), client=client)
    failed = _until(lambda: (b := _board(port)) and b["jobs"] and b["jobs"][0]["state"] == "failed" and b)
    assert "disk full" in failed["jobs"][0]["message"]
    assert "failed" in {b[0] for b in failed["blocks"]}


def _page(port, job=None):
    """The page as headless Chromium shows it after its script ran: each job row's cells."""
    url = f"http://127.0.0.1:{port}/distconv" + (f"?job={job}" if job else "")
    dom = subprocess.run([shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                          "--virtual-time-budget=4000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120).stdout
    rows = _Rows()
    rows.feed(dom)
    return rows.rows, rows.blocks, dom


class _Rows(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.blocks, self._cell, self._row = [], [], None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-job" in a:
            self._row = {"id": a["data-job"], "state": a["data-state"], "text": {}}
            self.rows.append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = [f"c{self._row.setdefault('cells', 0)}", *(a.get("class") or "").split()]
            self._row["cells"] += 1
            for name in self._cell:
                self._row["text"][name] = ""
        elif tag == "div" and "data-state" in a:
            self.blocks.append((a["data-state"], a.get("title", "")))

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = self._cell = None

    def handle_data(self, data):
        if self._row is not None and self._cell is not None:
            for name in self._cell:
                self._row["text"][name] += data.strip() + " "


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="headless Chromium is not installed (Debian: apt-get install -y chromium; .ci/run does)")
def test_the_page_in_a_browser_shows_the_job_as_it_runs_and_how_it_ended(tmp_path, monkeypatch, cluster):
    import dask.array as da

    import distconv as dc

    small_engine_blocks(monkeypatch, 8000, 1000)
    x = _array(tmp_path)
    lc, client, port = cluster
    gate = Gate(monkeypatch, free=4)
    src = da.from_zarr(str(tmp_path / "in.zarr"))
    t = threading.Thread(target=dc.to_zarr, args=(dc.uniform_filter(src, 3), str(tmp_path / "out.zarr")),
                         kwargs={"client": client})
    t.start()
    try:
        _until(lambda: (b := _board(port)) and b["jobs"] and b["jobs"][0]["done"] == 4)
        rows, blocks, dom = _page(port)
        assert len(rows) == 1, dom[-3000:]
        row = rows[0]
        assert row["state"] == "running"
        assert "uniform-" in row["text"]["c0"] and "out.zarr" in row["text"]["c1"]
        assert row["text"]["blocks"].startswith("4 / 16")
        assert "of 65.5 kB" in row["text"]["bytes"], row  # the input's bytes: 256 x 64 float32
        assert len(blocks) == 16 and sum(s == "done" for s, _ in blocks) == 4
        assert all("block" in title and "kB" in title for _, title in blocks)
    finally:
        gate.open()
        t.join(120)
    _until(lambda: _board(port)["jobs"][0]["state"] == "done")
    rows, blocks, dom = _page(port)
    row = rows[0]
    assert row["state"] == "done" and row["text"]["blocks"].startswith("16 / 16")
    assert f"{x.nbytes / 1e3:.1f} kB" in row["text"]["bytes"]
    assert "done" in row["text"]["state"] and "engine" in row["text"]["route"]
    assert "compute" in row["text"]["stages"]
    assert [s for s, _ in blocks] == ["done"] * 16
    assert all(" in " in title and "on worker" in title for _, title in blocks)


def test_the_page_is_on_a_scheduler_started_by_hand(tmp_path):
    from distributed import Client

    from distconv.engine import placement

    from .helpers import hand_started

    with hand_started(tmp_path, 1) as address, Client(address) as client:
        port = client.scheduler_info()["services"]["dashboard"]
        with pytest.raises(urllib.error.HTTPError):
            _board(port)  # nothing of distconv's before its client connects
        placement.register(client)  # what session.cluster does as it connects
        assert _board(port)["jobs"] == []
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/distconv", timeout=10).read().decode()
        assert "distconv jobs" in page and "jobs.json" in page


def test_a_runs_summary_counts_its_own_tasks_only(tmp_path, monkeypatch, cluster):
    import yaml

    from distconv import batch

    small_engine_blocks(monkeypatch, 8000, 1000)
    _array(tmp_path)
    lc, client, port = cluster
    gate = Gate(monkeypatch, free=2)
    summaries = {}

    def go(k):
        wf = tmp_path / f"wf{k}.yaml"
        wf.write_text(yaml.safe_dump({"name": f"job{k}", "input": {"path": str(tmp_path / "in.zarr")},
                                      "steps": [{"op": "gaussian_filter", "sigma": 1.0}],
                                      "outputs": {"path": str(tmp_path / f"out{k}.zarr")}}))
        summaries[k] = batch.run(batch.load(wf), client, progress=False)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    try:
        _until(lambda: (b := _board(port)) and len([j for j in b["jobs"] if j["state"] == "running"]) == 2)
    finally:
        gate.open()
        for t in threads:
            t.join(120)
    names = {k: next(j["name"] for j in _board(port)["jobs"] if j["workflow"] == f"job{k}") for k in range(2)}
    assert names[0] != names[1]
    for k in range(2):
        steps = summaries[k]["step_seconds"]
        assert steps and all(names[k] in n for n in steps), (names, steps)  # none of the other job's
        assert summaries[k]["first_task_at"] >= summaries[k]["submitted_at"]
        assert len(summaries[k]["timeline"]) == 16


def test_ctrl_c_cancels_only_the_runs_futures_and_leaves_the_scheduler_log_clean(tmp_path, monkeypatch, cluster):
    import dask.array as da

    import importlib

    import distconv as dc
    from distconv import engine

    compute = importlib.import_module("distconv.engine.compute")  # the module (engine.compute is its function)
    small_engine_blocks(monkeypatch, 4000, 1000)  # 32 blocks: merges under the top one
    _array(tmp_path)
    lc, client, port = cluster
    gate = Gate(monkeypatch, free=1)
    other = client.submit(lambda: time.sleep(2) or 7, pure=False)  # another job's work beside the run

    class CtrlC(engine.Progress):
        def finished(self, key):
            super().finished(key)
            raise KeyboardInterrupt

    src = da.from_zarr(str(tmp_path / "in.zarr"))
    plan = engine.plan_write(dc.gaussian_filter(src, 1.0), str(tmp_path / "out.zarr"), False)
    assert len(plan.job.row_blocks) > 8
    logs = []

    class Keep(__import__("logging").Handler):
        def emit(self, record):
            logs.append(record.getMessage() + str(record.exc_info or ""))

    import logging

    handler = Keep(logging.ERROR)
    for name in ("distributed.core", "distributed.scheduler", "distributed.batched"):
        logging.getLogger(name).addHandler(handler)
    monkeypatch.setattr(compute, "prepare_workers", lambda client, job: [])
    try:
        from distconv.engine import ownership

        claim = ownership.claim(str(tmp_path / "out.zarr"), False, False, job={"steps": "gaussian"})
        with pytest.raises(KeyboardInterrupt):
            engine.write(plan, str(tmp_path / "out.zarr"), claim, client, progress=CtrlC(show=False))
        gate.open()
        _until(lambda: not [k for k in lc.scheduler.tasks if "gaussian" in str(k)], 30)
    finally:
        gate.open()
        for name in ("distributed.core", "distributed.scheduler", "distributed.batched"):
            logging.getLogger(name).removeHandler(handler)
    assert not [m for m in logs if "who_wants" in m or "AssertionError" in m], logs
    assert other.result(timeout=30) == 7  # the other work ran on
    ended = _until(lambda: (b := _board(port)) and b["jobs"][0]["state"] == "cancelled" and b)
    assert "interrupted" in ended["jobs"][0]["message"]
    assert {b[0] for b in ended["blocks"]} <= {"done", "stopped"}


@pytest.mark.parametrize("given, page", [
    ("http://127.0.0.1:8787/status", "http://127.0.0.1:8787/distconv"),
    ("http://h:1/prefix/status", "http://h:1/prefix/distconv"),
    ("http://127.0.0.1:8787/distconv", "http://127.0.0.1:8787/distconv"),  # a kept cluster's record, read again
    ("http://127.0.0.1:8787", "http://127.0.0.1:8787/distconv"), (None, None)])
def test_the_pages_address_beside_the_dashboards(given, page):
    from distconv.engine.dashboard import page_url

    assert page_url(given) == page


def test_a_piped_progress_says_its_last_count_once():
    import io

    from distconv.engine import Progress

    out = io.StringIO()
    p = Progress(label="distconv: job", stream=out, every=0.0, bar=False)
    p.expect({"a": 10, "b": 20})
    p.start()
    p.finished("a")
    p.finished("b")
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "(2 blocks)" in lines[-1] and "(2 blocks)" not in lines[0]


def test_a_general_path_job_is_on_the_page_with_its_reason(tmp_path, cluster):
    import dask.array as da

    import distconv as dc

    x = _array(tmp_path)
    lc, client, port = cluster
    got = dc.to_zarr(dc.uniform_filter(da.from_zarr(str(tmp_path / "in.zarr")), 3, mode="wrap"),
                     str(tmp_path / "wrap.zarr"), client=client)
    assert got["path"] == "general"
    board = _until(lambda: (b := _board(port)) and b["jobs"] and b["jobs"][0]["state"] == "done" and b)
    (job,) = board["jobs"]
    assert job["path"] == "general" and "wrap" in job["why"]
    assert job["done"] == job["blocks"] == len(board["blocks"]) > 1 and job["done_bytes"] == x.nbytes
    assert {b[0] for b in board["blocks"]} == {"done"}


def test_a_job_whose_client_went_away_is_lost(cluster):
    from distributed import Client

    from distconv.engine import Progress

    lc, client, port = cluster
    with Client(lc) as other:
        p = Progress(label="distconv: gone", show=False, about={"workflow": "gone"})
        p.begin(other)
        p.expect({"k-0": 5})
        assert _until(lambda: _board(port)["jobs"])[0]["state"] == "running"
    (job,) = _until(lambda: (b := _board(port)) and b["jobs"][0]["state"] == "lost" and b["jobs"])
    assert job["workflow"] == "gone" and "client went away" in job["message"]


def test_the_board_leaves_a_scheduler_distconv_did_not_start_once_its_job_ends(tmp_path):
    import dask.array as da
    from distributed import Client, LocalCluster

    import distconv as dc
    from distconv.engine.dashboard import PLUGIN

    _array(tmp_path)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as lc, \
            Client(lc) as client:
        for k in range(2):  # the next write adds it again, and it leaves again
            got = dc.to_zarr(dc.gaussian_filter(da.from_zarr(str(tmp_path / "in.zarr")), 1.0),
                             str(tmp_path / f"out{k}.zarr"), client=client)
            assert got["path"] == "engine"
            assert _until(lambda: PLUGIN not in lc.scheduler.plugins)
        port = client.scheduler_info()["services"]["dashboard"]
        assert _board(port)["jobs"] == [] and "no distconv client" in _board(port)["note"]


def test_a_scheduler_distconv_starts_keeps_the_board_and_a_users_preloads(cluster, monkeypatch):
    import dask

    from distconv.engine import dashboard

    lc, client, port = cluster
    assert lc.scheduler.plugins[dashboard.PLUGIN].resident
    with dask.config.set({"distributed.scheduler.preload": ["theirs"],
                          "distributed.scheduler.preload-argv": [["--x"]]}):
        assert dashboard.scheduler_kwargs(dashboard=False) == {
            "preload": ["theirs", "distconv.engine.dashboard"], "preload_argv": [["--x"], []], "dashboard": False}
        assert dashboard.scheduler_kwargs(dashboard=True) == {
            "preload": ["theirs", "distconv.engine.dashboard", "distconv.engine.dask_pages"],
            "preload_argv": [["--x"], [], []], "dashboard": False}


def test_dasks_own_pages_join_a_scheduler_distconv_starts_once_it_runs(cluster):
    """The scheduler starts without bokeh's pages (dask_pages.py joins them from a thread): /status
    and the root's redirect to it are there soon after, beside distconv's page."""
    import time
    import urllib.request

    _, _, port = cluster
    deadline, status = time.monotonic() + 20, None
    while status != 200 and time.monotonic() < deadline:
        try:
            status = urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5).status
        except OSError:
            time.sleep(0.1)
    assert status == 200
    assert urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).geturl().endswith("/status")
    assert urllib.request.urlopen(f"http://127.0.0.1:{port}/distconv", timeout=5).status == 200


def test_dasks_pages_are_imported_once_the_first_tasks_arrive(monkeypatch):
    """Not inside the scheduler's start (where a cold command's check and workers need the
    interpreter): at the first graph, once; dask_setup also sets a timer for a waiting cluster."""
    from distconv.engine import dask_pages

    began = []
    monkeypatch.setattr(dask_pages, "_import_then_join", lambda scheduler: began.append(scheduler))

    class Loop:
        def __init__(self):
            self.later = []

        def call_later(self, delay, fn):
            self.later.append((delay, fn))

    class Scheduler:
        loop, plugins = Loop(), {}

        def add_plugin(self, plugin, name, idempotent):
            self.plugins[name] = plugin

    s = Scheduler()
    dask_pages.dask_setup(s)
    pages = s.plugins[dask_pages.PLUGIN]
    assert s.loop.later == [(dask_pages.LATER_S, pages.begin)] and not began
    pages.update_graph(s, client="c", keys=set(), tasks=[], annotations={}, priority={}, stimulus_id="x")
    pages.update_graph(s, client="c", keys=set(), tasks=[], annotations={}, priority={}, stimulus_id="y")
    s.loop.later[0][1]()
    import time

    deadline = time.monotonic() + 10
    while not began and time.monotonic() < deadline:
        time.sleep(0.01)
    assert began == [s]


def test_dasks_pages_are_not_imported_for_a_scheduler_that_closed(monkeypatch):
    """The timer of a scheduler that closed before its first tasks (its loop still running)
    imports nothing."""
    import asyncio
    import threading

    from distconv.engine import dask_pages

    began = []
    monkeypatch.setattr(dask_pages, "_import_then_join", lambda scheduler: began.append(scheduler))

    class Scheduler:
        plugins = {}

        class loop:
            later = []

            @classmethod
            def call_later(cls, delay, fn):
                cls.later.append(fn)

        def add_plugin(self, plugin, name, idempotent):
            self.plugins[name] = plugin

    s = Scheduler()
    dask_pages.dask_setup(s)
    asyncio.run(s.plugins[dask_pages.PLUGIN].close())
    s.loop.later[0]()
    # (a thread begun would be running still, or have been recorded)
    assert not any(t.name == "distconv-dask-pages" for t in threading.enumerate()) and not began
