"""Workflow steps: an op name from the registry -> the function a step calls."""

from __future__ import annotations

import difflib

from ..ops.registry import OPS, STEPS


class UnknownStep(ValueError):
    pass


def step_function(op: str, dims: bool):
    """The callable for a step: the array function, or (``dims``: the input is a dataset
    variable) the named form that takes dimension names."""
    if op not in STEPS:
        near = difflib.get_close_matches(str(op), list(STEPS), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise UnknownStep(f"unknown op {op!r}{hint}; allowed: {', '.join(STEPS)}")
    return OPS[op].named if dims else OPS[op].func
