"""Check a workflow against its input before anything runs: every step is applied lazily to
the input (its metadata, or the lazy definition of a synthetic input not written yet), so a
bad sigma, mode, axis, dim, dtype or histogram is reported at load, all at once, naming the
step and the key, with every problem of the files it writes beside its output
(outputs.file_problems). Nothing is computed or written here."""

from __future__ import annotations

import inspect
import warnings
from dataclasses import replace

import numpy as np

from ..core.checks import did_you_mean
from .inputs import cut_result, lazy_input, region_problems, whole_input
from .outputs import file_problems
from .steps import step_function
from .synthetic import synthetic_dtype_problem
from .workflow import Workflow, WorkflowError, region_edges


def check(wf: Workflow, numbers: list | None = None) -> list[str]:
    """Every problem of the steps, the region and the histogram against the input, as
    messages naming the step and the key (none: the workflow runs). ``numbers``: each step's
    place in the file (steps that named an unknown op were left out)."""
    numbers = numbers or list(range(1, len(wf.steps) + 1))
    synth = wf.input.get("synthetic")
    if isinstance(synth, dict) and synthetic_dtype_problem(synth.get("dtype", "float32")):
        # spec reports the dtype; the steps are still checked, on a float32 input
        wf = replace(wf, input={**wf.input, "synthetic": {**synth, "dtype": "float32"}})
    region = wf.input.get("region")
    files = file_problems(wf)  # the histogram's and report's files: checked whatever the input is
    try:
        arr = whole_input(wf)
    except (WorkflowError, KeyError, TypeError, ValueError) as e:
        return [str(e), *files]
    problems = files
    if region is not None:
        problems += region_problems(region, arr.shape, list(arr.dims) if hasattr(arr, "dims") else None)
    if problems:
        region = None  # the steps are still checked, on the whole input
    elif region is not None and region_edges(wf.input) == "mode":
        arr = lazy_input(wf)
    dtype = np.dtype(arr.dtype)
    # complex data go to each step, which says whether it takes them (the linear filters do)
    if dtype.kind not in "biufc" or dtype == np.float16:
        problems.append(f"the input has dtype {dtype}, which distconv does not process; "
                        "use float32/float64, integers or bool")
        # said once: the steps are checked on a float32 stand-in (nothing is computed)
        arr = (arr.real if dtype.kind == "c" else arr).astype(np.float32)
    dims = hasattr(arr, "dims")
    broken = False
    for i, (op, params) in zip(numbers, wf.steps):
        fn = step_function(op, dims)
        bad = _unknown_keys(fn, params) or _ragged(params)
        if bad:
            problems.append(f"step {i} ({op}): {bad}")
            broken = True
            continue
        try:  # after a broken step, later ones are checked on the last result that was made
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # chunk merges are reported when the run plans
                result = fn(arr, **params)
            arr = arr if broken else result
        except (ValueError, TypeError, KeyError) as e:
            problems.append(f"step {i} ({op}): {_for_yaml(str(e))}")
            broken = True
    if region is not None and not broken:
        arr = cut_result(wf, arr)
    hist = wf.outputs.get("histogram")
    if hist:
        problems += _histogram(hist, np.dtype(arr.dtype))
    return problems


def _unknown_keys(fn, params: dict) -> str | None:
    sig = inspect.signature(fn)
    names = [n for n, p in list(sig.parameters.items())[1:]
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in params:
        if key not in names:
            return f"unknown key {key!r}{did_you_mean(key, names)}; allowed: {', '.join(names)}"
    missing = [n for n, p in list(sig.parameters.items())[1:]
               if p.default is inspect.Parameter.empty and p.kind != p.VAR_KEYWORD and n not in params]
    if missing:
        return f"missing key {missing[0]!r}"
    return None


def _ragged(params: dict) -> str | None:
    """The first key holding nested lists that are not one rectangular array (numpy's own
    error names no key)."""
    for key, value in params.items():
        if isinstance(value, list) and any(isinstance(v, list) for v in value):
            try:
                np.asarray(value)
            except ValueError:
                return (f"{key} must be a rectangular array (every row of one length), got {value!r}")
    return None


def _for_yaml(msg: str) -> str:
    """Messages of the Python API name the array 'x'; in a workflow it is the input."""
    return "the input" + msg[1:] if msg.startswith("x ") else msg


def _histogram(spec: dict, dtype) -> list:
    from ..ops.bin_edges import bin_edges

    if dtype.kind == "c":
        return [f"outputs.histogram: the steps' result is {dtype} (complex input), and a histogram counts "
                "real values only; drop outputs.histogram (in Python, dc.histogram(abs(out)) counts magnitudes)"]
    probe = np.array([0, 1], dtype=dtype if dtype.kind in "biuf" else np.float64)
    try:
        bin_edges(probe, spec.get("bins", 256), spec.get("range"))
    except (ValueError, TypeError) as e:
        return [f"outputs.histogram: {e}"]
    return []
