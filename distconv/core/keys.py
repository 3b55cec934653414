"""distconv's dask config keys (``distconv.*``), each declared once with its default and what it
does; every module reads its keys through this one (``get``, ``positive``, ``flag``, ``size``),
where the work runs, so a dask worker reads its own config. A bad value raises naming the key.
dask is imported only when a key is read."""

from __future__ import annotations

from dataclasses import dataclass

_SAME = object()


@dataclass(frozen=True)
class Key:
    """One ``distconv.*`` key: its name, its default (on CPUs; ``gpu_default`` where a GPU
    worker's differs; None: worked out where it is read, as ``doc`` says) and what it does."""

    name: str
    default: object
    doc: str
    gpu_default: object = _SAME

    def fallback(self, gpu: bool = False):
        """The default on this kind of device."""
        return self.gpu_default if gpu and self.gpu_default is not _SAME else self.default


FUSE = Key("distconv.fuse", True,
           "consecutive stencils on a dask array fuse into one task per chunk (false: one halo pass per op)")
BLOCK_BYTES = Key("distconv.block-bytes", 2 * 2**30,
                  "bytes of the runs of cupy chunks along axis 0 that one task handles (a size such as "
                  "'4 GiB'; 0: one task per chunk)")
IO_SLOTS = Key("distconv.io-slots", None,
               "blocks of an engine job in flight per worker process (2 on a GPU, one per thread on CPUs)",
               gpu_default=2)
DEVICE_BLOCKS = Key("distconv.device-blocks", 2, "blocks in their device stage at once per worker process")
DECODE_BATCH_BYTES = Key("distconv.decode-batch-bytes", 4 * 2**30,
                         "most bytes of rows of zarr's plain zstd chunks decoded by nvCOMP in one batch")
SCAN_HOLD_BYTES = Key("distconv.scan-hold-bytes", 2**30,
                      "bytes of a carried scan's blocks a process holds between their two tasks (8 GiB on a "
                      "GPU, 1 GiB on CPUs)", gpu_default=8 * 2**30)
PREWARM = Key("distconv.prewarm", True,
              "a GPU worker of distconv's local cluster page-locks its staging and calls nvCOMP as it starts")
PROGRESS_EVERY = Key("distconv.progress-every", 5.0,
                     "seconds between the progress lines of a run whose output is piped or logged")
CLUSTER_STATE = Key("distconv.cluster-state", None,
                    "the state file of the kept cluster (default ~/.cache/distconv/cluster.json)")

_UNSET = object()


def get(key: Key, default=_UNSET, gpu: bool = False):
    """``key``'s value in dask config, else ``default`` (the key's own default on this device
    when not given)."""
    import dask

    return dask.config.get(key.name, key.fallback(gpu) if default is _UNSET else default)


def positive(key: Key, default=_UNSET, gpu: bool = False) -> int:
    """A positive integer."""
    n = get(key, default, gpu)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"dask config {key.name!r} must be a positive integer, got {n!r}")
    return n


def flag(key: Key) -> bool:
    """True or false."""
    v = get(key)
    if not isinstance(v, bool):
        raise ValueError(f"dask config {key.name!r} must be true or false, got {v!r}")
    return v


def size(key: Key) -> int:
    """Bytes >= 0, given as a number or a string such as "4 GiB" (None or false: 0)."""
    from dask.utils import parse_bytes

    value = get(key)
    if value in (None, False):
        return 0
    try:
        n = parse_bytes(value) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise ValueError(f"dask config {key.name!r} must be a size in bytes (or 0), got {value!r}") from None
    if n < 0:
        raise ValueError(f"dask config {key.name!r} must be >= 0, got {value!r}")
    return n
