"""Boundary modes: scipy.ndimage names, aliases and the codes kernels/common.cuh uses."""

MODES = {"constant": 0, "reflect": 1, "nearest": 2, "mirror": 3, "wrap": 4}
ALIASES = {"grid-constant": "constant", "grid-mirror": "reflect", "grid-wrap": "wrap"}


def canonical_mode(mode: str) -> str:
    """The scipy mode name behind ``mode`` (aliases resolved); ValueError naming the value."""
    if isinstance(mode, str):
        name = ALIASES.get(mode, mode)
        if name in MODES:
            return name
    allowed = ", ".join(sorted(MODES) + sorted(ALIASES))
    if isinstance(mode, (list, tuple)):  # scipy: RuntimeError for a sequence where one mode is taken
        raise ModeSequenceError(f"mode must be one of {allowed} (one mode for this filter); got {mode!r}")
    raise ValueError(f"mode must be one of {allowed}; got {mode!r}")


class ModeSequenceError(ValueError, RuntimeError):
    """A sequence of modes where a filter takes one (scipy raises RuntimeError)."""
