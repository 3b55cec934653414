"""A write's progress by blocks and bytes while it runs: each block's task and the bytes of
input it covers, added up as the blocks finish. On a terminal a bar (tqdm: GB done, GB/s, time
left); on a pipe or in a log a line every few seconds and one at the end; the
samples (seconds, bytes) kept for the run's summary. dask config ``distconv.progress-every``
sets the seconds between lines."""

from __future__ import annotations

import sys
import threading
import time

from ..core import config

class Progress:
    """Counts the bytes of the blocks that have finished and shows them: engine.write says
    which tasks are blocks (``expect``: task key -> bytes of input it covers), then follows a
    cluster's futures (``watch``) or dask's local threads (``local``, a dask callback)."""

    def __init__(self, label: str = "distconv", stream=None, every: float | None = None, bar: bool | None = None):
        self.label = label
        self.every = float(config.get(config.PROGRESS_EVERY)) if every is None else every
        self.stream = stream or sys.stdout
        self.sizes, self.total = {}, 0
        self.done, self.blocks, self.samples = 0, 0, []
        self.bar = self.stream.isatty() if bar is None else bar
        self._lock = threading.Lock()
        self._t0 = self._last = None
        self._tqdm = None

    def expect(self, sizes: dict):
        """The blocks' tasks (key -> bytes of input each covers)."""
        self.sizes = {k: int(v) for k, v in sizes.items()}
        self.total = sum(self.sizes.values())

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
            elif now - self._last >= self.every:
                self._last = now
                self._line(now)

    def close(self):
        if self._tqdm is not None:
            self._tqdm.close()
        elif self._t0 is not None and self.blocks:
            self._line(time.perf_counter())

    def _line(self, now: float):
        seconds = max(now - self._t0, 1e-9)
        rate = self.done / seconds
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta = f", {left:.0f} s left" if self.done < self.total else ""
        unit, scale = ("GB", 1e9) if self.total >= 1e9 else ("MB", 1e6)
        print(f"{self.label}: {self.done / scale:.2f} of {self.total / scale:.2f} {unit} ({self.blocks} blocks), "
              f"{rate / scale:.2f} {unit}/s{eta}", file=self.stream, flush=True)

    def watch(self, futures):
        """Follow a cluster's futures until every block has finished (or failed)."""
        from distributed import as_completed
        from distributed.client import futures_of

        blocks = [f for f in futures_of(futures) if f.key in self.sizes]
        self.start()
        try:
            for f in as_completed(blocks):
                if f.status == "finished":
                    self.finished(f.key)
        finally:
            self.close()

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
