"""Launchers for kernels/scan.cu."""

from __future__ import annotations

import numpy as np

from ...core.ops import FUNCTORS, kernel_dtype
from ...core.arrays import into
from . import guard_memory, loader, target
from .types import ctype

# elements per thread in a row tile, by sizeof(T): 4-byte scans take 32 KiB tiles (the most
# static shared memory allows), one look-back per 32 KiB: 16 KiB tiles spent their time at the
# barrier behind the look-back; 8-byte scans
# keep 16 KiB (64-bit sums over 16 items spilled on sm_80 while a thread held its items in
# registers; not measured since it reads them from shared memory)
ROWS_ITEMS = {4: 32, 8: 8}
COLS_ROWS = {4: 32, 8: 16}   # rows per thread in a column tile

BLOCK = loader.define("DC_BLOCK")  # threads per block, from kernels/common.cuh


def _shape3(shape, axis):
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    return outer, shape[axis], inner


@guard_memory
def scan(block, op: str, axis: int, exclusive: bool, dtype, carry=None, out=None):
    """Inclusive (or exclusive) scan along ``axis`` seeded by ``carry``; ``out``: an array to
    fill and return."""
    import cupy

    dtype = np.dtype(dtype)
    T = kernel_dtype(dtype)
    a = cupy.ascontiguousarray(block)
    outer, n, inner = _shape3(a.shape, axis)
    res = target(out, a.shape, T)
    if a.size == 0:
        return into(out, res.astype(dtype, copy=False))
    c = None if carry is None else cupy.ascontiguousarray(cupy.asarray(carry), dtype=T)
    counter = cupy.zeros(1, dtype=np.uint64)
    tin, t, fn = ctype(a.dtype), ctype(T), FUNCTORS[op]
    if inner == 1:
        items = ROWS_ITEMS[T.itemsize]
        tiles = outer * -(-n // (BLOCK * items))
        flags = cupy.zeros(tiles, dtype=np.int32)
        agg, inc = cupy.empty(tiles, dtype=T), cupy.empty(tiles, dtype=T)
        name = loader.template("distconv_scan_rows", tin, t, fn, items, exclusive)
        loader.function("scan", name)((tiles,), (BLOCK,), (a, res, np.int64(outer), np.int64(n),
                                                         c if c is not None else np.uint64(0),
                                                         flags, agg, inc, counter))
    else:
        rows = COLS_ROWS[T.itemsize]
        tiles = outer * -(-n // rows) * -(-inner // BLOCK)
        flags = cupy.zeros(tiles, dtype=np.int32)
        agg, inc = cupy.empty(tiles * BLOCK, dtype=T), cupy.empty(tiles * BLOCK, dtype=T)
        name = loader.template("distconv_scan_cols", tin, t, fn, rows, exclusive)
        loader.function("scan", name)((tiles,), (BLOCK,), (a, res, np.int64(outer), np.int64(n), np.int64(inner),
                                                         c if c is not None else np.uint64(0),
                                                         flags, agg, inc, counter))
    return into(out, res if T == dtype else res.astype(dtype))


INSTANTIATIONS = [
    loader.template("distconv_scan_rows", tin, t, fn, ROWS_ITEMS[size], excl)
    for tin, t, size in (("float", "float", 4), ("double", "double", 8), ("int", "long long", 8),
                         ("unsigned char", "unsigned int", 4), ("bool", "long long", 8))
    for fn in ("DcAdd", "DcMax") for excl in (False, True)
] + [
    loader.template("distconv_scan_cols", tin, t, fn, COLS_ROWS[size], excl)
    for tin, t, size in (("float", "float", 4), ("double", "double", 8), ("int", "long long", 8))
    for fn in ("DcAdd", "DcMul", "DcMin") for excl in (False, True)
]
