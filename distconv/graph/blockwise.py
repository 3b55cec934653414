"""Graphs with no halo: per-block functions mapped or reduced over a dask array, keys named
after the op (distconv-...) and tokenized, so two calls in one graph never collide."""

from __future__ import annotations

from functools import partial

import dask.array as da
from dask.base import tokenize

from ..core.ops import FAN_IN


def tree_reduce(x: da.Array, block_fn, axes: tuple, keepdims: bool, dtype, name: str) -> da.Array:
    """``block_fn(block, axes, keepdims)`` over each block, then over the partials, FAN_IN at a time."""
    chunk = partial(_reduce_block, block_fn=block_fn)
    return da.reduction(x, chunk, chunk, combine=chunk, axis=axes, keepdims=keepdims, dtype=dtype,
                        split_every=FAN_IN, name=name, meta=x._meta.astype(dtype))


def _reduce_block(block, axis=None, keepdims=False, *, block_fn, computing_meta=False):
    axes = tuple(range(block.ndim)) if axis is None else tuple(sorted(a % block.ndim for a in axis))
    return block_fn(block, axes=axes, keepdims=keepdims)


def transpose(x: da.Array, block_fn, perm: tuple) -> da.Array:
    """Blocks permuted (the block grid with them)."""
    ind = tuple(range(x.ndim))
    return da.blockwise(partial(block_fn, axes=perm), tuple(ind[a] for a in perm), x, ind,
                        dtype=x.dtype, name=f"distconv-transpose-{tokenize(x, perm)}",
                        meta=x._meta.transpose(perm) if x._meta.ndim == x.ndim else None)


def map_rows(X: da.Array, block_fn, *args, dtype, name: str) -> da.Array:
    """``block_fn(rows, *args)`` -> one value per row, for (n, d) blocks chunked along n."""
    return X.map_blocks(block_fn, *args, drop_axis=1, dtype=dtype,
                        meta=X._meta.astype(dtype).reshape(0), name=f"{name}-{tokenize(X, *args)}")
