"""distconv's page on the scheduler's dashboard, at ``/distconv`` beside dask's ``/status``:
every job the cluster is running or ran lately, one row each, and the selected job's blocks
as a map.

A scheduler plugin (``JobBoard``) holds the jobs. It is fed by what the engine already counts:
the client's progress (engine.Progress: a job begins with its facts and start-up phases, its
blocks and bytes as they finish, how it ended) and each block's stage clock from its worker
(job.run_block: a block took its slot, a block ended with its seconds per stage), both as
distributed events (``log_event``: the client's and the workers' messages to the scheduler);
the scheduler's own task states say which blocks wait, run or failed. The plugin adds the
page's routes to the scheduler's web server as it is registered, so the page is there on any
scheduler distconv's client connects to (one it started, a kept cluster, one started by hand);
``routes`` is also a module of routes for ``distributed.scheduler.http.routes``.

A scheduler distconv starts loads the board as it starts (this module is its preload,
``dask_setup``) and keeps it, with the jobs it ran. On a scheduler distconv did not start, the
board a client added leaves once no job of it is running: a user's own scheduler is left as it
was found after a write (the page's routes stay, saying no job is there).
"""

from __future__ import annotations

import json
import logging
import math
import time
import weakref
from importlib import resources

try:
    from distributed.diagnostics.plugin import SchedulerPlugin
    from distributed.http.utils import RequestHandler
except ImportError:  # dask's local scheduler: no scheduler, no page
    SchedulerPlugin = RequestHandler = object

PLUGIN = "distconv-jobs"
JOB_TOPIC = "distconv-job"      # the client's messages: begin, blocks, phase, progress, end
BLOCK_TOPIC = "distconv-block"  # the workers': a block's start and end (its stage seconds)
PAGE = "distconv"               # the page's path on the dashboard (its data: distconv/jobs.json)
KEEP_ENDED = 30                 # finished jobs the page keeps

# the stage clock's laps (engine/slots.Clock) as the page's five stages and the waits
STAGES = {"read files": "read", "rows": "read", "decode": "decode", "upload": "decode",
          "compute": "compute", "scan": "compute", "carry": "compute", "histogram": "compute",
          "encode": "encode", "write files": "write",
          "slot wait": "wait", "batch wait": "wait", "device wait": "wait"}


class JobBoard(SchedulerPlugin):
    """The jobs a scheduler runs and ran lately, as the page shows them (``snapshot``)."""

    name = PLUGIN
    idempotent = True

    def __init__(self, resident: bool = False):
        self.resident = resident            # loaded as its scheduler started: it stays
        self.jobs: dict = {}                # id -> the job's record (insertion order: oldest first)
        self._keys: dict = {}               # a block task's key -> (job id, block index)
        self._runs: dict = {}               # an engine job's run -> job id
        self.scheduler = None

    async def start(self, scheduler=None):
        self.scheduler = scheduler
        add_routes(scheduler)

    # --- what arrives ------------------------------------------------------------------------
    def log_event(self, topic, msg):
        try:
            if topic == JOB_TOPIC:
                self.job_message(msg)
            elif topic == BLOCK_TOPIC:
                self.block_message(msg)
        except Exception:  # noqa: BLE001 - a malformed message never harms the scheduler
            logging.getLogger(__name__).debug("distconv: dropped a dashboard message", exc_info=True)

    def job_message(self, msg: dict):
        """A message of a job's client (engine.Progress)."""
        kind, jid = msg["kind"], msg["id"]
        if kind == "begin":
            self.jobs[jid] = {"id": jid, "state": "starting", "message": None, "started": msg.get("at", time.time()),
                              "ended": None, "phases": [], "blocks": 0, "bytes": 0, "done": 0, "done_bytes": 0,
                              "seconds": 0.0, "stages": {}, "keys": [], "sizes": [], "block": {},
                              "client": msg.get("client"), **msg.get("about", {})}
            self._forget_old()
            return
        job = self.jobs.get(jid)
        if job is None:
            return
        if kind == "phase":
            job["phases"].append([msg["name"], msg["at"]])
        elif kind == "blocks":
            job.update(msg.get("about", {}))
            # a tuple key (dask's array tasks) arrives as a list
            job["keys"] = [tuple(k) if isinstance(k, list) else k for k in msg["keys"]]
            job["sizes"] = [int(s) for s in msg["sizes"]]
            job["blocks"], job["bytes"], job["state"] = len(job["keys"]), sum(job["sizes"]), "running"
            job["phases"].append(["submitted", msg.get("submitted") or msg["at"]])  # its graph goes out
            self._keys.update({k: (jid, i) for i, k in enumerate(job["keys"])})
            if job.get("run"):
                self._runs[job["run"]] = jid
        elif kind == "progress":
            job["done"], job["done_bytes"], job["seconds"] = msg["blocks"], msg["bytes"], msg["seconds"]
        elif kind == "end":
            job["state"], job["message"], job["ended"] = msg["state"], msg.get("message"), msg.get("at", time.time())
            for k in job["keys"]:
                self._keys.pop(k, None)
            self._leave_if_idle()

    def _leave_if_idle(self):
        """A board a client added to a scheduler distconv did not start leaves it once none of
        its jobs is running (the scheduler runs its plugins' hooks over a copy of the list)."""
        plugins = getattr(self.scheduler, "plugins", None)
        if self.resident or plugins is None or plugins.get(PLUGIN) is not self:
            return
        if all(job["ended"] is not None for job in self.jobs.values()):
            self.scheduler.remove_plugin(PLUGIN)

    def block_message(self, msg: dict):
        """A worker's message of one block (job.run_block): it took its slot, or it ended."""
        jid = self._runs.get(msg["run"])
        job = self.jobs.get(jid)
        if job is None:
            return
        b = job["block"].setdefault(msg["i"], {})
        # the scheduler sets "worker" to the sender's address: its name travels as "name"
        b["worker"] = msg.get("name") or self._worker_name(msg.get("worker"))
        if msg["event"] == "start":
            b.setdefault("start", msg["at"])
            if not any(p[0] == "first block" for p in job["phases"]):
                job["phases"].append(["first block", msg["at"]])
        else:
            b["end"], b["laps"] = msg["at"], msg.get("laps", {})
            b["start"] = b.get("start", msg["at"])
            for lap, s in b["laps"].items():
                stage = STAGES.get(lap)
                if stage is not None:
                    job["stages"][stage] = job["stages"].get(stage, 0.0) + float(s)

    def transition(self, key, start, finish, *args, **kwargs):
        where = self._keys.get(key)
        if where is None:
            return
        job = self.jobs.get(where[0])
        if job is None:
            return
        b = job["block"].setdefault(where[1], {})
        if finish == "memory":
            spans = [s for s in kwargs.get("startstops", ()) if s.get("action") == "compute"]
            if spans:
                b.setdefault("start", spans[0]["start"])
                b.setdefault("end", spans[-1]["stop"])
            b["done"] = True
            b.setdefault("worker", self._worker_name(kwargs.get("worker")))
        elif finish == "erred":
            b["failed"] = str(kwargs.get("exception_text") or "failed")
            if job["message"] is None:
                job["message"] = f"block {where[1]}: {b['failed']}"

    def remove_client(self, scheduler=None, client=None):
        for job in self.jobs.values():
            if job.get("client") == client and job["ended"] is None:
                job["state"], job["ended"] = "lost", time.time()
                job["message"] = job["message"] or "its client went away before the job ended"
                for k in job["keys"]:
                    self._keys.pop(k, None)

    # --- what the page reads -----------------------------------------------------------------
    def snapshot(self, selected: str | None = None) -> dict:
        """The page's data: every job's row (newest first) and, for ``selected`` (default: the
        newest job), its blocks."""
        rows = [self.row(j) for j in reversed(self.jobs.values())]
        chosen = selected if selected in self.jobs else (rows[0]["id"] if rows else None)
        return {"now": time.time(), "jobs": rows, "selected": chosen,
                "blocks": self.blocks(chosen) if chosen else []}

    def row(self, job: dict) -> dict:
        """One job as the page's table shows it: its facts, blocks and bytes done (the blocks the
        scheduler saw finish, so a pause between the client's samples leaves no stale count),
        GB/s from the client's samples, time left at that rate, stage seconds, start-up phases."""
        now = job["ended"] or time.time()
        states = list(self._states(job))
        done = [i for i, s in enumerate(states) if s == "done"]
        done_bytes = max(job["done_bytes"], sum(job["sizes"][i] for i in done))
        rate = job["done_bytes"] / job["seconds"] if job["seconds"] > 0 else None
        left = (job["bytes"] - done_bytes) / rate if rate and job["ended"] is None else None
        return {k: job.get(k) for k in ("id", "workflow", "name", "input", "output", "path", "why", "state",
                                          "message", "blocks", "bytes", "started", "ended")} | {
            "done": max(job["done"], len(done)), "done_bytes": done_bytes,
            "phases": _durations(job["started"], job["phases"]),
            "elapsed": round(now - job["started"], 3), "GBps": None if rate is None else rate / 1e9,
            "left_s": None if left is None else round(left, 1),
            "stages": {k: round(v, 3) for k, v in job["stages"].items()},
            "running": states.count("running"), "failed": states.count("failed")}

    def blocks(self, jid: str) -> list:
        """The job's blocks in order: [state, seconds, worker, bytes, stage seconds]; state one of
        waiting, queued (on a worker, not yet in a slot), running, done, failed, stopped (the
        job ended before it ran)."""
        job = self.jobs[jid]
        out = []
        for i, state in enumerate(self._states(job)):
            b = job["block"].get(i, {})
            secs = None
            if b.get("start") is not None:
                secs = round((b.get("end") or time.time()) - b["start"], 3)
            laps = {k: round(float(v), 3) for k, v in (b.get("laps") or {}).items() if k in STAGES}
            out.append([state, secs, b.get("worker"), job["sizes"][i], laps])
        return out

    def _states(self, job: dict):
        tasks = getattr(self.scheduler, "tasks", {})
        for i, key in enumerate(job["keys"]):
            b = job["block"].get(i, {})
            if b.get("failed"):
                yield "failed"
            elif b.get("done") or b.get("end") is not None:
                yield "done"
            elif job["ended"] is not None:
                yield "stopped"  # the job ended (cancelled, failed) before this block ran
            elif b.get("start") is not None:
                yield "running"
            else:
                ts = tasks.get(key)
                if ts is not None and ts.state == "processing":
                    # the engine's block says when it starts; dask's tasks run once processing
                    yield "queued" if job.get("path") == "engine" else "running"
                else:
                    yield "waiting"

    def _worker_name(self, address):
        ws = getattr(self.scheduler, "workers", {}).get(address)
        return str(ws.name) if ws is not None else address

    def _forget_old(self):
        ended = [j for j, job in self.jobs.items() if job["ended"] is not None]
        for jid in ended[:max(0, len(ended) - KEEP_ENDED)]:
            job = self.jobs.pop(jid)
            self._runs.pop(job.get("run"), None)


def _durations(started: float, phases: list) -> list:
    """[[phase, seconds it took]]: each phase from the end of the one before (the first from
    the job's start), in the order they ended."""
    out, last = [], started
    for name, at in sorted(phases, key=lambda p: p[1]):
        out.append([name, round(max(0.0, at - last), 3)])
        last = max(last, at)
    return out


# --- the page ------------------------------------------------------------------------------------
class JobsPage(RequestHandler):
    def get(self):
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.write(resources.files(__package__).joinpath("static", "jobs.html").read_text(encoding="utf-8"))


class JobsJSON(RequestHandler):
    def get(self):
        board = self.server.plugins.get(PLUGIN) if self.server is not None else None
        data = board.snapshot(self.get_argument("job", None)) if board is not None else \
            {"now": time.time(), "jobs": [], "selected": None, "blocks": [],
             "note": "no distconv client has connected to this scheduler yet"}
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.write(json.dumps(data, default=_jsonable))


def _jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return str(v)


routes = [(PAGE, JobsPage, {}), (PAGE + "/", JobsPage, {}), (PAGE + "/jobs.json", JobsJSON, {})]


def add_routes(scheduler):
    """The page's routes on ``scheduler``'s web server (under its dashboard prefix), unless
    they are there (distributed.scheduler.http.routes named this module, or an earlier
    plugin added them)."""
    import dask

    app = getattr(scheduler, "http_application", None)
    if app is None or getattr(app, "_distconv_page", False):
        return
    if __name__ not in dask.config.get("distributed.scheduler.http.routes", []):
        prefix = _prefix(app)
        app.add_handlers(r".*", [(prefix + url, cls, {**kw, "dask_server": scheduler}) for url, cls, kw in routes])
    app._distconv_page = True


def _prefix(app) -> str:
    """The dashboard's prefix ("/" unless the scheduler was started with one): where /status is."""
    for sub in getattr(app, "applications", []):
        for path in getattr(sub, "app_paths", ()) or ():
            if str(path).endswith("/status"):
                return str(path)[:-len("status")]
    return "/"


def page_url(status_url: str) -> str:
    """The page's address beside a dashboard's ``/status`` address (or its root, or the
    page's own address); None for None (no dashboard)."""
    if not status_url:
        return status_url
    base = status_url.split("?")[0].rstrip("/")
    if base.endswith("/" + PAGE):  # the page's own address already
        return base
    base = base[:-len("/status")] if base.endswith("/status") else base
    return f"{base}/{PAGE}"


_REGISTERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # clients that registered it


def dask_setup(scheduler):
    """distributed's preload hook, on a scheduler distconv starts: the board from its start,
    kept for the scheduler's life."""
    scheduler.add_plugin(JobBoard(resident=True), name=PLUGIN, idempotent=True)


def scheduler_kwargs(dashboard: bool) -> dict:
    """What a scheduler distconv starts is given so that it loads the board as it starts (this
    module's ``dask_setup``): dask config's scheduler preloads, then this module; with a
    ``dashboard``, dask's own pages join it once it runs (dask_pages.py), not in its start."""
    import dask

    from . import dask_pages

    preload = dask.config.get("distributed.scheduler.preload", None) or []
    preload = [preload] if isinstance(preload, str) else list(preload)
    argv = list(dask.config.get("distributed.scheduler.preload-argv", None) or [])
    per_preload = list(argv) if argv and not isinstance(argv[0], str) else [argv] * len(preload)
    ours = [__name__, dask_pages.__name__] if dashboard else [__name__]
    return {"preload": [*preload, *ours], "preload_argv": [*per_preload, *[[]] * len(ours)], "dashboard": False}


def register(client) -> bool:
    """JobBoard registered on ``client``'s scheduler (asked once a client until a job of it
    ends, ``forget``: a board that is not resident may have left by then; the scheduler keeps
    the one it has whoever registers it again). A scheduler that cannot load distconv runs its
    jobs without the page. Returns whether the board is there."""
    if client in _REGISTERED:
        return _REGISTERED[client]
    try:
        client.register_plugin(JobBoard())
        _REGISTERED[client] = True
    except Exception as e:  # noqa: BLE001 - the jobs run as well without their page
        logging.getLogger(__name__).warning("the scheduler did not take distconv's job page (%s)", e)
        _REGISTERED[client] = False
    return _REGISTERED[client]


def forget(client):
    """A job of ``client`` ended: its next job registers the board again (on a scheduler
    distconv did not start, the board has left once no job of it runs)."""
    _REGISTERED.pop(client, None)


def tell_block(run: str, i: int, event: str, laps: dict | None = None):
    """A worker's message of block ``i`` of the engine job ``run`` (event: start or end; at
    the end its stage seconds): nothing outside a dask worker."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return
    msg = {"run": run, "i": int(i), "event": event, "at": time.time(), "name": str(worker.name)}
    if laps is not None:
        msg["laps"] = {k: float(v) for k, v in laps.items()}
    try:
        worker.log_event(BLOCK_TOPIC, msg)
    except Exception:  # noqa: BLE001 - a closing worker: the page misses a block's clock
        pass

