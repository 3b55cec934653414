"""Launchers for kernels/reduce.cu."""

from __future__ import annotations

import functools
import threading

import numpy as np

from ...core.ops import FUNCTORS, identity, kernel_dtype
from . import GRID_YZ, guard_memory, loader, resident_blocks, sm_count
from .types import ctype

BLOCK = loader.define("DC_BLOCK")  # threads per block, from kernels/common.cuh
UNROLL = loader.define("DC_REDUCE_UNROLL")  # packs in flight per thread of the whole-array kernel


@guard_memory
def reduce(block, op: str, axes: tuple, dtype, keepdims: bool):
    import cupy

    dtype = np.dtype(dtype)
    T = kernel_dtype(dtype)
    a = block
    if a.size == 0:
        if op in ("min", "max") and any(a.shape[ax] == 0 for ax in axes):
            name = {"min": "minimum", "max": "maximum"}[op]
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        shape = tuple(1 if i in axes else s for i, s in enumerate(a.shape)) if keepdims else \
            tuple(s for i, s in enumerate(a.shape) if i not in axes)
        return cupy.full(shape, identity(op, dtype), dtype=dtype)
    if len(axes) == a.ndim:
        res = _reduce_all(cupy.ascontiguousarray(a), op, T)
        res = res.reshape((1,) * a.ndim) if keepdims else res.reshape(())
    else:
        res = a
        for ax in reversed(axes):  # one strided or contiguous pass per axis, innermost first
            res = _reduce_axis(cupy.ascontiguousarray(res), op, ax, T)
        if not keepdims:
            res = res.reshape(tuple(s for i, s in enumerate(a.shape) if i not in axes))
    return res if res.dtype == dtype else res.astype(dtype)


def _reduce_all(a, op, T):
    import cupy

    vec = 16 // a.itemsize if a.data.ptr % 16 == 0 else 1
    fn, grid, partials, ticket = _launch_state(cupy.cuda.runtime.getDevice(), cupy.cuda.get_current_stream().ptr,
                                               threading.get_ident(), a.dtype.str, np.dtype(T).str, op, vec)
    blocks = min(grid, -(-a.size // (BLOCK * UNROLL * vec)))
    out = cupy.empty(1, dtype=T)
    fn((blocks,), (BLOCK,), (a, np.int64(a.size), partials, out, ticket))
    return out


@functools.cache  # never evicted: a buffer freed here while its launch runs could go to another stream
def _launch_state(device: int, stream: int, thread: int, tin: str, t: str, op: str, vec: int):
    """The whole-array kernel, its one-wave grid, and the partials and zeroed ticket of the
    launches on one stream of one thread (they run one after another there, per-thread
    default streams included; the kernel leaves the ticket at zero). One cached lookup: a
    launch over 1 GiB takes ~0.25 ms, so Python's per-call work shows in its time."""
    import cupy

    name = loader.template("distconv_reduce_all", ctype(np.dtype(tin)), ctype(np.dtype(t)), FUNCTORS[op], vec)
    kernel = loader.function("reduce", name)
    grid = resident_blocks(kernel, BLOCK)
    return kernel, grid, cupy.empty(grid, dtype=t), cupy.zeros(1, dtype=np.uint32)


def _reduce_axis(a, op, axis, T):
    import cupy

    outer = int(np.prod(a.shape[:axis], dtype=np.int64))
    n = a.shape[axis]
    inner = int(np.prod(a.shape[axis + 1:], dtype=np.int64))
    kshape = a.shape[:axis] + (1,) + a.shape[axis + 1:]
    tin, t, fn = ctype(a.dtype), ctype(T), FUNCTORS[op]
    if inner == 1:
        out = cupy.empty(outer, dtype=T)
        name = loader.template("distconv_reduce_rows", tin, t, fn)
        loader.function("reduce", name)((int(min(outer, GRID_YZ * 4)),), (BLOCK,),
                                        (a, np.int64(outer), np.int64(n), out))
        return out.reshape(kshape)
    strips = outer * -(-inner // BLOCK)
    segs = int(max(1, min(64, n // 64, (sm_count() * 16) // max(strips, 1))))  # ~16 blocks per SM
    part = cupy.empty((segs, outer, inner), dtype=T)
    name = loader.template("distconv_reduce_cols", tin, t, fn)
    fn_k = loader.function("reduce", name)
    fn_k((int(min(strips, GRID_YZ * 4)), segs), (BLOCK,), (a, np.int64(outer), np.int64(n), np.int64(inner), part))
    if segs == 1:
        return part.reshape(kshape)
    out = cupy.empty((1, outer * inner), dtype=T)  # fold the segment partials: (1, segs, outer*inner)
    name2 = loader.template("distconv_reduce_cols", t, t, fn)
    loader.function("reduce", name2)((int(min(-(-outer * inner // BLOCK), GRID_YZ * 4)), 1), (BLOCK,),
                                     (part, np.int64(1), np.int64(segs), np.int64(outer * inner), out))
    return out.reshape(kshape)


INSTANTIATIONS = [
    loader.template("distconv_reduce_all", tin, t, fn, vec)
    for tin, t, vec in (("float", "float", 4), ("float", "float", 1), ("double", "double", 2),
                        ("int", "long long", 4), ("bool", "long long", 16), ("unsigned char", "unsigned int", 16))
    for fn in ("DcAdd", "DcMul", "DcMin", "DcMax")
] + [
    loader.template(k, tin, t, fn)
    for k in ("distconv_reduce_rows", "distconv_reduce_cols")
    for tin, t in (("float", "float"), ("double", "double"), ("int", "long long"), ("long long", "long long"))
    for fn in ("DcAdd", "DcMin", "DcMax")
]
