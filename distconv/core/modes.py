"""Boundary modes: scipy.ndimage names, aliases and the codes kernels/common.cuh uses."""

from __future__ import annotations

MODES = {"constant": 0, "reflect": 1, "nearest": 2, "mirror": 3, "wrap": 4}
ALIASES = {"grid-constant": "constant", "grid-mirror": "reflect", "grid-wrap": "wrap"}
_ALLOWED = ", ".join(sorted(MODES) + sorted(ALIASES))


def canonical_mode(mode: str) -> str:
    """The scipy mode name behind ``mode`` (aliases resolved); ValueError naming the value."""
    if isinstance(mode, str):
        name = ALIASES.get(mode, mode)
        if name in MODES:
            return name
    if isinstance(mode, (list, tuple)):  # scipy: RuntimeError for a sequence where one mode is taken
        raise ModeSequenceError(f"mode must be one of {_ALLOWED} (one mode for this filter); got {mode!r}")
    raise ValueError(f"mode must be one of {_ALLOWED}; got {mode!r}")


def canonical_modes(mode, n: int) -> tuple:
    """One mode per axis (``n`` of them) from one mode or a sequence of ``n`` (the separable
    filters take either, as scipy's do)."""
    if not isinstance(mode, (list, tuple)):
        return (canonical_mode(mode),) * n
    if len(mode) != n:
        raise ModeSequenceError(f"mode needs one entry per filtered axis ({n}), got {mode!r}")
    return tuple(canonical_mode(m) for m in mode)


def one_mode(modes):
    """``modes`` as one name when every axis has the same mode, else the tuple."""
    if isinstance(modes, str):
        return modes
    return modes[0] if len(set(modes)) == 1 else tuple(modes)


def mode_of(modes, axis: int) -> str:
    """The mode along ``axis`` of one mode or a per-axis tuple."""
    return modes if isinstance(modes, str) else modes[axis]


class ModeSequenceError(ValueError, RuntimeError):
    """A sequence of modes where a filter takes one, or of the wrong length (scipy raises
    RuntimeError)."""
