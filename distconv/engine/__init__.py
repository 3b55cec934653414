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
- source.py: the input as a job sees it (fingerprint, codec pipeline and why, dims), opened per view
- slots.py, settings.py: who runs when in a worker, and the dask config keys it reads
- process.py: what a process keeps between the blocks it runs, in one owner (STATE)
- progress.py: a write's blocks and bytes shown as they finish (a bar, or a line every few seconds)
- prewarm.py: a GPU worker's one-time costs (page-locked staging, nvCOMP's first calls) at its start
- rehearsal.py: a job's first block run on zeros, so its kernels are in the node's cache first
- dashboard.py: distconv's page on the scheduler's dashboard (its files in static/)
- carries.py: a scan's carry across blocks
- shards.py, plain_chunks.py, batches.py, chunk_heads.py: the store formats it reads and writes
- storage.py (dask's reads and writes), location.py (local folders and object stores alike)
- ownership.py (who may write an output: the path checks, the claim), marks.py (the owner and
  completion marks, changed by compare-and-swap: atomic.py), removal.py (what --overwrite may
  remove), fencing.py (block writes that land only while their run owns the output), paths.py
  (where a command may write: never over, around or inside what it reads)
"""

# Names are loaded on first use (PEP 562), so that importing one module of the engine (a
# worker's block code, the scheduler's placement plugin) does not import them all, and
# dask.array with them.
_WHERE = {
    "chain": ("WRAP_REASON", "Plan", "engine_chain", "gpu_blocks", "plan_write", "stencil_chain"),
    "compute": ("write",),
    "settings": ("batch_bytes", "device_blocks", "held_bytes", "io_slots", "prewarm_enabled", "zarr_settings"),
    "job": ("graph", "run_block"),
    "placement": ("workers",),
    "progress": ("Progress",),
    "plan": ("Job", "block_mark", "plan_job"),
    "slots": ("local_blocks",),
    "output": ("create_output", "shard_shape"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    import importlib

    module = _MODULE_OF.get(name)
    if module is None:  # a submodule (engine.chain, ...) read as an attribute
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
