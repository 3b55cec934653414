"""Check a workflow against its input before anything runs: every step is applied lazily to
the input (its metadata, or the lazy definition of a synthetic input not written yet), so a
bad sigma, mode, axis, dim, dtype or histogram is reported at load, all at once, naming the
step and the key. Nothing is computed or written here."""

from __future__ import annotations

import difflib
import inspect
import warnings

import numpy as np

from .spec import Workflow, WorkflowError
from .steps import step_function


def check(wf: Workflow):
    """Raise one WorkflowError listing every problem found (or return quietly)."""
    from .inputs import lazy_input

    arr = lazy_input(wf)
    problems = []
    dtype = np.dtype(arr.dtype)
    if dtype.kind not in "biuf" or dtype == np.float16:
        problems.append(f"the input has dtype {dtype}, which distconv does not process; "
                        "use float32/float64, integers or bool")
    dims = hasattr(arr, "dims")
    for i, (op, params) in enumerate(wf.steps, 1):
        fn = step_function(op, dims)
        bad = _unknown_keys(fn, params)
        if bad:
            problems.append(f"step {i} ({op}): {bad}")
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # chunk merges are reported when the run plans
                arr = fn(arr, **params)
        except (ValueError, TypeError, KeyError) as e:
            problems.append(f"step {i} ({op}): {_for_yaml(str(e))}")
    hist = wf.outputs.get("histogram")
    if hist:
        problems += _histogram(hist, dtype)
    if problems:
        raise WorkflowError("; ".join(problems))


def _unknown_keys(fn, params: dict) -> str | None:
    sig = inspect.signature(fn)
    names = [n for n, p in list(sig.parameters.items())[1:]
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in params:
        if key not in names:
            near = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            return f"unknown key {key!r}{hint}; allowed: {', '.join(names)}"
    missing = [n for n, p in list(sig.parameters.items())[1:]
               if p.default is inspect.Parameter.empty and p.kind != p.VAR_KEYWORD and n not in params]
    if missing:
        return f"missing key {missing[0]!r}"
    return None


def _for_yaml(msg: str) -> str:
    """Messages of the Python API name the array 'x'; in a workflow it is the input."""
    return "the input" + msg[1:] if msg.startswith("x ") else msg


def _histogram(spec: dict, dtype) -> list:
    from ..ops.histograms import bin_edges

    probe = np.array([0, 1], dtype=dtype if dtype.kind in "biuf" else np.float64)
    try:
        bin_edges(probe, spec.get("bins", 256), spec.get("range"))
    except (ValueError, TypeError) as e:
        return [f"outputs.histogram: {e}"]
    return []
