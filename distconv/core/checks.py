"""Argument checks shared by the public API: every error names the argument and the value."""

from __future__ import annotations

import numbers
import operator

import numpy as np

from .arrays import array_kind, is_cupy, to_host

SUPPORTED_KINDS = "biuf"  # bool, signed, unsigned, float


# scipy.ndimage raises RuntimeError where these say what is wrong more precisely; subclassing
# both keeps `except ValueError` / `except TypeError` and scipy users' `except RuntimeError` working.
class SequenceLengthError(ValueError, RuntimeError):
    """A per-axis sequence (sigma, origin, mode, ...) of the wrong length."""


class DtypeError(TypeError, RuntimeError):
    """An array dtype distconv does not process (complex, float16, object, ...)."""


def as_array(x, name: str = "x", kinds: str = SUPPORTED_KINDS):
    """``x`` as an array of a supported dtype (numpy/cupy/dask/xarray kept as they are)."""
    if array_kind(x) == "numpy" and not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x)
        except Exception as e:  # noqa: BLE001 - say which argument could not be read
            raise TypeError(f"{name} must be an array, got {type(x).__name__}") from e
    dt = np.dtype(x.dtype)
    if dt.kind not in kinds or dt == np.float16:
        raise DtypeError(f"{name} has dtype {dt}, which is not supported; use one of "
                        f"{_kinds_text(kinds)}")
    return x


def _kinds_text(kinds: str) -> str:
    names = {"b": "bool", "i": "signed integers", "u": "unsigned integers", "f": "float32/float64",
             "c": "complex"}
    return ", ".join(names[k] for k in kinds)


def nonzero_ndim(x, name: str = "x"):
    if x.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension, got a 0-d array")
    return x


def axis(value, ndim: int, name: str = "axis") -> int:
    try:
        a = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}") from None
    if not -ndim <= a < ndim:
        raise ValueError(f"{name}={value} is out of range for an array of {ndim} dimensions")
    return a % ndim


def axes(value, ndim: int, name: str = "axis") -> tuple:
    """None (every axis), an axis or a sequence of distinct axes -> sorted non-negative tuple."""
    if value is None:
        return tuple(range(ndim))
    seq = value if isinstance(value, (tuple, list)) else (value,)
    out = tuple(sorted({axis(a, ndim, name) for a in seq}))
    if len(out) != len(seq):
        raise ValueError(f"{name} {value!r} repeats an axis")
    return out


def axes_in_order(value, ndim: int, name: str = "axes") -> tuple:
    """scipy's ``axes=``: None (every axis) or distinct axes, kept in the order given (per-axis
    arguments follow it)."""
    if value is None:
        return tuple(range(ndim))
    seq = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    out = tuple(axis(a, ndim, name) for a in seq)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} {value!r} repeats an axis")
    return out


def spread(values: tuple, axes: tuple, ndim: int, fill) -> tuple:
    """Per-axis values given for ``axes`` as one per axis of the array (``fill`` elsewhere)."""
    out = [fill] * ndim
    for a, v in zip(axes, values):
        out[a] = v
    return tuple(out)


class FilterArgumentError(ValueError, RuntimeError):
    """A filter argument scipy refuses with RuntimeError (no footprint, a rank outside it, a
    size below one, a percentile out of range)."""


class OutputShapeError(ValueError, RuntimeError):
    """An ``output=`` array of the wrong shape (scipy raises RuntimeError)."""


def real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


def per_axis(value, ndim: int, name: str, cast=float) -> tuple:
    """A scalar broadcast to every axis, or a sequence of exactly ``ndim`` values."""
    def one(v):
        if isinstance(v, (str, bytes)):  # float("2") would pass where scipy raises TypeError
            raise TypeError(f"{name} must be a number, or one per axis, got {value!r}")
        try:
            return cast(v)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number, or one per axis, got {value!r}") from None

    if np.ndim(value) == 0:
        return (one(value),) * ndim
    seq = list(value)
    if len(seq) != ndim:
        raise SequenceLengthError(f"{name} needs one value per axis ({ndim}), got {value!r}")
    return tuple(one(v) for v in seq)


def weights(w, ndim: int | None, name: str = "weights") -> np.ndarray:
    """Host copy of a filter mask; it may arrive as numpy or cupy (moved, never an error)."""
    arr = to_host(w) if is_cupy(w) else np.asarray(w)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have the input's {ndim} dimensions, got shape {arr.shape}")
    return arr.astype(np.float64)


def origins(origin, shape: tuple, name: str = "origin") -> tuple:
    """Per-axis origins, each within the mask as scipy.ndimage requires."""
    org = per_axis(origin, len(shape), name, cast=operator.index)
    for o, k in zip(org, shape):
        if not 0 <= k // 2 + o < k:
            raise ValueError(f"{name}={origin!r} puts the centre outside a mask of shape {shape}")
    return org


def did_you_mean(value, allowed) -> str:
    """The hint an error about an unknown name ends with: `` (did you mean 'x'?)`` naming the
    closest of ``allowed`` to ``value``, or '' when none is close.

    Parameters
    ----------
    value : object
        What was given (compared as text).
    allowed : iterable
        The names that are allowed.

    Returns
    -------
    str
        The hint, with its leading space, or ''.

    Examples
    --------
    >>> did_you_mean("guassian_filter", ["gaussian_filter", "uniform_filter"])
    " (did you mean 'gaussian_filter'?)"
    >>> did_you_mean("xyz", ["gaussian_filter"])
    ''
    """
    import difflib

    near = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


class DistconvWarning(UserWarning):
    """What distconv tells a user who can act on it (pass a range, rechunk, drop an argument);
    one category, so a test suite or a user can turn distconv's own warnings into errors."""


def warn_user(message: str, category=DistconvWarning):
    """Warn pointing at the user's line: the first frame outside the distconv package."""
    import os
    import sys
    import warnings

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
