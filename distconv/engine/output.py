"""The output a job writes: its shards' shape, and the sharded Zarr v3 array itself (standard
Zarr: plain zarr-python, TensorStore and zarrs read it)."""

from __future__ import annotations

import base64
import json
import math
import struct

import numpy as np

from . import shards
from .marks import BLOCKS
from .location import Location

SHARD_MIN_BYTES = 16 * 2**20


def shard_shape(storage: tuple, shape: tuple, itemsize: int) -> tuple:
    """Output shards: the input's storage chunks, grown along axis 0 to at least
    SHARD_MIN_BYTES so every shard holds many inner chunks."""
    min_bytes = SHARD_MIN_BYTES
    shard = list(min(s, n) for s, n in zip(storage, shape))
    while math.prod(shard) * itemsize < min_bytes and shard[0] < shape[0]:
        shard[0] = min(shape[0], shard[0] * 2)
    return tuple(shard)


def fill_of(dtype, attrs: dict | None, dims=None) -> tuple:
    """(the fill value, the attributes) of a new output of ``dtype``: NaN for floats, as xarray
    writes them (an element no block wrote then reads as missing, never as a plausible 0), and
    for a variable xarray reads (``dims``) xarray's own ``_FillValue`` attribute beside it
    (xarray's zarr backend stores a float fill value as base64 of its float64 bytes). A
    ``_FillValue`` the input variable's attributes carried (opened with ``mask_and_scale=False``)
    is not the output's: replaced for floats (as a number xarray cannot even read it back),
    dropped for integers (xarray would mask results that equal it). The attributes as JSON
    takes them (xarray hands numpy scalars and arrays)."""
    attrs = json.loads(json.dumps(dict(attrs or {}), default=_plain))
    if np.dtype(dtype).kind != "f":
        if dims is not None:
            attrs.pop("_FillValue", None)
        return None, attrs  # zarr's default, 0, as xarray writes integers
    if dims is not None:
        attrs["_FillValue"] = base64.standard_b64encode(struct.pack("<d", np.nan)).decode()
    return np.nan, attrs


def _plain(value):
    """A numpy value as JSON's (anything else as its text)."""
    return value.tolist() if isinstance(value, (np.ndarray, np.generic)) else str(value)


def create_output(dst: str, shape, dtype, layout: shards.Layout, attrs: dict, dims=None):
    """The job's output array (sharded as ``layout``; ``dims``: Zarr's dimension names, which
    xarray reads)."""
    import zarr

    fill, attrs = fill_of(dtype, attrs, dims)
    z = zarr.create_array(dst, shape=tuple(shape), shards=layout.shard, chunks=layout.inner,
                          dtype=dtype, compressors=zarr.codecs.ZstdCodec(level=1), fill_value=fill,
                          attributes=attrs, overwrite=False, dimension_names=dims)
    if not shards.matches(z.metadata.to_dict(), layout):
        raise RuntimeError(f"zarr wrote a sharding layout distconv cannot write into: {z.metadata}")
    Location(dst).child(BLOCKS).make_dir()
    return z
