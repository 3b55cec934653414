"""dtype -> C++ type names, from an allow-list (no user text reaches the compiler)."""

from __future__ import annotations

import numpy as np

CTYPES = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.int8): "signed char",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.bool_): "bool",
}


def ctype(dtype) -> str:
    dt = np.dtype(dtype)
    try:
        return CTYPES[dt]
    except KeyError:
        raise TypeError(f"dtype {dt} has no GPU kernel") from None


def scalar(value, dtype):
    """A kernel argument of exactly this dtype."""
    return np.dtype(dtype).type(value)


def taps(T, values) -> np.void:
    """A DcTaps<T, len(values)> kernel argument (passed by value)."""
    struct = np.zeros((), np.dtype([("w", T, (len(values),))], align=True))
    struct["w"] = values
    return struct[()]
