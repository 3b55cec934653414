"""Workflow steps: an op name from the registry -> the function a step calls."""

from __future__ import annotations

from ..core.checks import did_you_mean
from ..ops.registry import OPS, STEPS


class UnknownStep(ValueError):
    pass


def step_function(op: str, dims: bool):
    """The callable for a step: the array function, or (``dims``: the input is a dataset
    variable) the named form that takes dimension names."""
    if op not in STEPS:
        raise UnknownStep(f"unknown op {op!r}{did_you_mean(op, STEPS)}; allowed: {', '.join(STEPS)}")
    return OPS[op].named if dims else OPS[op].func
