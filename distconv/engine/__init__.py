"""The engine: Zarr in, a stencil chain (and a scan, a histogram), Zarr out, one dask task per
block from read to write, behind every face (`distconv run`, ``dc.to_zarr``, the xarray
accessor's ``to_zarr``).

- chain.py: what the engine runs of a lazy result (its declared chain), planned, or why not
- compute.py: the one write pipeline of every face (create, compute, finish); an interrupted or
  failed run stops its blocks
- plan.py: the job (its blocks, the output's layout, which blocks run in this run)
- job.py: a block's task and the dask graph of a job's blocks
- placement.py: which worker runs which blocks, and a block whose worker died runs elsewhere
- read.py, output.py: a block's read stage, and the output array it writes into
- slots.py, config.py: who runs when in a worker, and the dask config keys it reads
- process.py: what a process keeps between the blocks it runs, in one owner (STATE)
- progress.py: a write's blocks and bytes shown as they finish (a bar, or a line every few seconds)
- prewarm.py: a GPU worker's one-time costs (page-locked staging, nvCOMP's first calls) at its start
- carries.py: a scan's carry across blocks
- shards.py, plain_chunks.py, batches.py, chunk_heads.py: the store formats it reads and writes
- storage.py (dask's reads and writes), location.py (local folders and object stores alike)
- ownership.py (who may write an output: the path checks, the claim), marks.py (the owner and
  completion marks, changed by compare-and-swap: atomic.py), removal.py (what --overwrite may
  remove), fencing.py (block writes that land only while their run owns the output)
"""

from .chain import WRAP_REASON, Plan, engine_chain, gpu_blocks, plan_write, stencil_chain
from .compute import compute, write
from .config import batch_bytes, device_blocks, held_bytes, io_slots, open_with_settings, prewarm_enabled, zarr_settings
from .job import graph, run_block
from .placement import workers
from .progress import Progress
from .plan import Job, block_mark, plan
from .slots import local_blocks
from .output import create_output, shard_shape

__all__ = ["Job", "Plan", "Progress", "WRAP_REASON", "batch_bytes", "block_mark", "compute", "create_output",
           "device_blocks", "engine_chain", "gpu_blocks", "graph", "held_bytes", "io_slots", "local_blocks",
           "open_with_settings", "plan", "plan_write", "prewarm_enabled", "run_block", "shard_shape",
           "stencil_chain", "workers", "write", "zarr_settings"]
