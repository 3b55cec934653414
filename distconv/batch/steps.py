"""Workflow steps: an op name from the registry -> the function a step calls."""

from __future__ import annotations

import functools

from ..core.arrays import array_kind
from ..core.checks import did_you_mean
from ..core.planned import NotPlannable
from ..ops.registry import OPS, STEPS


class UnknownStep(ValueError):
    pass


def step_function(op: str, dims: bool):
    """The callable for a step: the array function, or (``dims``: the input is a dataset
    variable) the named form that takes dimension names. On a planned input (core.planned) the
    array function plans its result; where it cannot make one step of it, it runs on the
    input's lazy dask array instead (and every later step with it)."""
    if op not in STEPS:
        raise UnknownStep(f"unknown op {op!r}{did_you_mean(op, STEPS)}; allowed: {', '.join(STEPS)}")
    return OPS[op].named if dims else _planning(OPS[op].func)


def _planning(fn):
    @functools.wraps(fn)
    def step(x, *args, **params):
        if array_kind(x) != "planned":
            return fn(x, *args, **params)
        try:
            result = fn(x, *args, **params)
        except (NotPlannable, AttributeError):  # not one step of a plan: dask's lazy array decides
            return fn(x.lazy(), *args, **params)
        if array_kind(result) != "planned":
            return result
        return result.made_by(x, lambda d: fn(d, *args, **params))

    return step
