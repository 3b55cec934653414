"""How a checked workflow is written, path by path: ``Direct`` (the engine's job: one task per
block from read to write) where the engine takes it, else ``General`` (the steps as a dask graph
over the input's chunks, written chunk-aligned by dask). Each gives the runner the same things:
the output's array path and dataset frame, the engine's plan (engine.write runs it, once the
output is claimed), the histogram, the byte counts and what the summary says of the path."""

from __future__ import annotations

from .. import engine
from ..core.planned import lazy_of
from ..engine import fencing
from . import direct
from .inputs import cut_result, open_input, whole_input
from .outputs import histogram_output, write_histogram
from .steps import step_function
from .workflow import Workflow


class General:
    """The general path: the steps as a dask graph over the input's chunks (on GPU workers
    moved to the GPU), written chunk-aligned by dask (storage.store_into)."""

    def __init__(self, wf: Workflow, gpu: bool, why: str | None):
        arr, src = open_input(wf, gpu)
        for op, params in wf.steps:
            arr = step_function(op, hasattr(arr, "dims"))(arr, **params)
        arr = cut_result(wf, arr)
        self.wf, self.why, self.source, self.nbytes_in = wf, why, src["array"], src["nbytes"]
        self.frame = arr if hasattr(arr, "dims") else None
        self.data = arr.data if hasattr(arr, "dims") else arr
        self.storage_chunks = wf.outputs.get("chunks") or src["storage"]
        self.array_path, self.shape, self.dtype = str(wf.outputs["path"]), self.data.shape, self.data.dtype
        self.skipped = 0
        self.engine = engine.Plan(data=self.data, why=why)  # dask's writes, chunk-aligned
        self.codec = wf.outputs.get("codec", "zstd")

    def count(self, array_path, claim):
        """What this run reads and writes (a resumed one: the blocks not written yet)."""
        from ..engine import storage

        self.skipped = (storage.written_bytes(self.data, array_path, claim.token, self.storage_chunks)
                        if claim.resuming else 0)
        self.bytes_in, self.bytes_out = self.nbytes_in - self.skipped, self.data.nbytes - self.skipped

    def histogram(self, results, client):
        hist = self.wf.outputs.get("histogram")
        return histogram_output(self.data, hist, client) if hist else None

    def says(self, results) -> dict:
        return {"path": "general", "why_general": self.why}


class Direct:
    """The direct path: the engine's job, one task per block from read to write (an array, or
    a dataset variable written into a dataset with its coordinates)."""

    def __init__(self, wf: Workflow, job, edges, src, frame):
        import numpy as np

        self.wf, self.job, self.edges, self.frame = wf, job, edges, frame
        self.engine, self.codec, self.storage_chunks = engine.Plan(job=job), "zstd", None
        self.array_path = job.dst
        self.shape, self.dtype = job.layout.shape, job.layout.dtype  # the input's, or its region's
        self._row_in = int(np.prod(self.shape[1:])) * src.dtype.itemsize
        self._row_out = int(np.prod(self.shape[1:])) * np.dtype(self.dtype).itemsize

    @property
    def source(self):
        """The input, lazy (the report's thumbnails read it)."""
        whole = lazy_of(whole_input(self.wf))
        return getattr(whole, "data", whole)

    def count(self, array_path, claim):
        """What this run reads and writes (a resumed one: the blocks this job has not written)."""
        job, resuming = self.job, claim.resuming
        done = fencing.written_blocks(array_path, claim.token) if resuming else set()
        skipped_rows = sum(r1 - r0 for i, (r0, r1) in enumerate(job.row_blocks) if engine.block_mark(job, i) in done)
        # a resumed run with a histogram or a carried scan still reads every block, writes the missing
        rereads = self.edges is not None or job.carried
        self.bytes_in = (self.shape[0] - (0 if rereads else skipped_rows)) * self._row_in
        self.bytes_out = (self.shape[0] - skipped_rows) * self._row_out
        self.skipped = skipped_rows * self._row_out

    def histogram(self, results, client):
        if self.edges is None:
            return None
        return write_histogram(results[1][0], self.edges, self.wf.outputs["histogram"])

    def says(self, results) -> dict:
        stages = results[1][1]
        return {"path": "direct", "why_reader": direct.why_reader(self.job),
                "stage_seconds": {k: round(v, 3) for k, v in stages.items()}}


def choose(wf: Workflow, gpu: bool):
    """The direct plan where the engine takes ``wf``, else the general one (saying why)."""
    plan = _direct(wf, gpu)
    return General(wf, gpu, plan) if isinstance(plan, str) else plan


def _direct(wf: Workflow, gpu: bool):
    """The direct path's plan, or why it cannot run the workflow."""
    why = direct.why_not(wf)
    if why is not None:
        return why
    job, edges, why, src, result = direct.direct_plan(wf, gpu)
    return why if job is None else Direct(wf, job, edges, src, result)
