"""A write's progress by blocks and bytes while it runs: each block's task and the bytes of
input it covers, added up as the blocks finish. On a terminal a bar (tqdm: GB done, GB/s, time
left); on a pipe or in a log a line every few seconds and one at the end; the
samples (seconds, bytes) kept for the run's summary. dask config ``distconv.progress-every``
sets the seconds between lines. On a cluster the scheduler hears the same (dashboard.py: the
job's facts and start-up phases, its blocks and bytes as they finish, how it ended), so the
dashboard's distconv page shows the job whether or not anything is shown here."""

from __future__ import annotations

import sys
import threading
import time
import uuid

from ..core import keys
from . import dashboard

TELL_EVERY_S = 0.5  # seconds between the progress messages the scheduler's page is sent


class Progress:
    """Counts the bytes of the blocks that have finished and shows them: engine.write says
    which tasks are blocks (``expect``: task key -> bytes of input it covers), then follows a
    cluster's futures (``watch``) or dask's local threads (``local``, a dask callback)."""

    def __init__(self, label: str = "distconv", stream=None, every: float | None = None, bar: bool | None = None,
                 show: bool = True, about: dict | None = None):
        self.label = label
        self.every = float(keys.get(keys.PROGRESS_EVERY)) if every is None else every
        self.stream = stream or sys.stdout
        self.show = show
        self.sizes, self.total, self._order = {}, 0, []
        self.done, self.blocks, self.samples = 0, 0, []
        self.bar = show and (self.stream.isatty() if bar is None else bar)
        self._lock = threading.Lock()
        self._t0 = self._last = None
        self._tqdm = None
        # what the dashboard's page says of the job: its id there, workflow, input, output, ...
        self.id = uuid.uuid4().hex
        self.about = {"name": label.removeprefix("distconv: "), **(about or {})}
        self.prefix = None   # the job's task names (engine: job.task_prefix), for the summary
        self._graph = ()     # what was computed: the job's own tasks are its keys
        self._client = None
        self._told = 0.0
        self._submitted = None
        self._printed = None  # the blocks the last printed line counted
        self._announced = False
        self.page = None     # the job's address on the dashboard's page, once begun on a cluster

    def expect(self, sizes: dict, plan=None, dst: str | None = None, graph=()):
        """The blocks' tasks (key -> bytes of input each covers), in block order; ``plan``
        (chain.Plan), ``dst`` and ``graph`` (the collections computed): what the dashboard
        and the summary say of the job."""
        self.sizes = {k: int(v) for k, v in sizes.items()}
        self.total = sum(self.sizes.values())
        self._order = list(self.sizes)
        self._graph = tuple(graph)
        self._submitted = time.time()  # the graph goes to the cluster next (watch starts after)
        if plan is not None:
            job = plan.job
            if job is not None:
                from .job import task_prefix

                self.prefix = task_prefix(job)
            self.about |= {"path": "general" if job is None else "engine", "why": plan.why,
                           "run": None if job is None else job.run, "name": self.prefix or self.about["name"]}
            if job is not None:
                self.about.setdefault("input", job.src)
        if dst is not None:
            self.about.setdefault("output", str(dst))
        self._announced = False
        self._announce()  # before the graph goes out, so the page hears of its first blocks

    def _announce(self):
        """Tell the page the job's blocks (their keys and bytes) and what it runs, once."""
        if self._announced or not self._client:
            return
        self._announced = True
        self._tell("blocks", keys=self._order, sizes=[self.sizes[k] for k in self._order],
                   about={k: v for k, v in self.about.items() if v is not None}, submitted=self._submitted)

    def begin(self, client, at: float | None = None):
        """Tell ``client``'s scheduler the job began (``at``, epoch seconds: now by default);
        its page shows the job from then on, before its first block. Again does nothing."""
        if client is None or self._client is not None:
            return
        self._client = client
        if dashboard.register(client):
            served = client.scheduler_info().get("services", {}).get("dashboard")
            link = dashboard.page_url(client.dashboard_link) if served else None
            self.page = f"{link}?job={self.id}" if link else None
            self._tell("begin", about={k: v for k, v in self.about.items() if v is not None},
                       client=getattr(client, "id", None), at=time.time() if at is None else at)
        else:
            self._client = False

    def phase(self, name: str, at: float | None = None):
        """A start-up phase of the job ended (``at``, epoch seconds: now by default): the
        command's check and cluster, the claim, the submission."""
        self._tell("phase", name=name, at=time.time() if at is None else at)

    def end(self, state: str, message: str | None = None):
        """How the job ended (done, cancelled or failed, with the message)."""
        self._tell("end", state=state, message=message)
        if self._client:
            dashboard.forget(self._client)

    def keys(self) -> set:
        """Every task key of what was computed (the job's own tasks, for its summary)."""
        out: set = set()
        for collection in self._graph:
            out.update(collection.__dask_graph__().keys())
        return out

    def _tell(self, kind: str, **msg):
        if not self._client:
            return
        try:
            self._client.log_event(dashboard.JOB_TOPIC, {"kind": kind, "id": self.id, "at": time.time()} | msg)
        except Exception:  # noqa: BLE001 - a scheduler gone or busy: the page only misses a line
            pass

    def start(self):
        self._t0 = self._last = time.perf_counter()
        self.samples = [(0.0, 0)]
        if self.bar:
            import shutil

            from tqdm import tqdm

            # a terminal that reports no size (a pseudo-terminal nobody sized) would hide the bar:
            # tqdm draws nothing on a screen it thinks has no rows
            size = shutil.get_terminal_size((100, 20))
            self._tqdm = tqdm(total=self.total, unit="B", unit_scale=True, unit_divisor=1000, desc=self.label,
                              file=self.stream, ncols=size.columns or 100, nrows=size.lines or 20, leave=True)

    def finished(self, key):
        """Block ``key`` finished (a key that is not a block's is not counted)."""
        nbytes = self.sizes.pop(key, None)
        if nbytes is None:
            return
        with self._lock:
            self.done += nbytes
            self.blocks += 1
            now = time.perf_counter()
            self.samples.append((round(now - self._t0, 3), self.done))
            if self._tqdm is not None:
                self._tqdm.update(nbytes)
            elif self.show and now - self._last >= self.every:
                self._last = now
                self._line(now)
            tell = now - self._told >= TELL_EVERY_S or self.blocks == len(self._order)
            if tell:
                self._told = now
        if tell:
            self._tell_progress(now)

    def _tell_progress(self, now: float):
        self._tell("progress", blocks=self.blocks, bytes=self.done, seconds=round(now - self._t0, 3))

    def close(self):
        if self._tqdm is not None:
            self._tqdm.close()
        elif self.show and self._t0 is not None and self.blocks and self._printed != self.blocks:
            self._line(time.perf_counter())  # the last count, unless the last line said it

    def _line(self, now: float):
        self._printed = self.blocks
        seconds = max(now - self._t0, 1e-9)
        rate = self.done / seconds
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta = f", {left:.0f} s left" if self.done < self.total else ""
        unit, scale = ("GB", 1e9) if self.total >= 1e9 else ("MB", 1e6)
        blocks = f"{self.blocks} block{'s' * (self.blocks != 1)}"
        print(f"{self.label}: {self.done / scale:.2f} of {self.total / scale:.2f} {unit} ({blocks}), "
              f"{rate / scale:.2f} {unit}/s{eta}", file=self.stream, flush=True)

    def watch(self, futures):
        """Follow a cluster's futures until every block has finished (or failed), telling the
        scheduler's page how the job goes and how it ended."""
        from distributed import as_completed
        from distributed.client import futures_of

        futures = futures_of(futures)
        blocks = [f for f in futures if f.key in self.sizes]
        if futures:
            self.begin(futures[0].client)
        self._announce()
        self.start()
        state, message = "cancelled", "interrupted"
        try:
            failed = cancelled = None
            for f in as_completed(blocks):
                if f.status == "finished":
                    self.finished(f.key)
                elif f.status == "error" and failed is None:
                    failed = f
                elif f.status == "cancelled":
                    cancelled = f
            if failed is not None:
                state, message = "failed", _message(failed)
            elif cancelled is not None:
                state, message = "cancelled", "its tasks were cancelled"
            else:
                state, message = "done", None
        except KeyboardInterrupt:
            state, message = "cancelled", "interrupted (Ctrl-C)"
            raise
        except BaseException as e:
            state, message = "failed", f"{type(e).__name__}: {e}"
            raise
        finally:
            self.close()
            if self._t0 is not None:
                self._tell_progress(time.perf_counter())
            self.end(state, message)

    def local(self):
        """A dask callback counting the blocks dask's local threads finish."""
        from dask.callbacks import Callback

        progress = self

        class _Count(Callback):
            def _start(self, dsk):
                progress.start()

            def _posttask(self, key, result, dsk, state, worker_id):
                progress.finished(key)

            def _finish(self, dsk, state, errored):
                progress.close()

        return _Count()

    def summary(self) -> dict:
        """What the run's summary keeps: the blocks and bytes counted and (seconds, bytes)
        samples as the blocks finished."""
        return {"blocks": self.blocks, "bytes": self.done, "samples": self.samples}


def _message(future) -> str:
    """A failed block's error, one line."""
    try:
        e = future.exception(timeout=5)
        return f"{type(e).__name__}: {e}".splitlines()[0]
    except Exception:  # noqa: BLE001 - the scheduler no longer has it
        return "a block failed"
