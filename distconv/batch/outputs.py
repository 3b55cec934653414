"""Workflow outputs beside the array: the histogram (JSON + PNG)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..core.arrays import to_host
from ..ops.histograms import histogram
from .workflow import WorkflowError


def histogram_output(data, spec, client):
    """The histogram of ``data`` (numpy semantics) written as the spec asks. Without a range it
    takes a first pass for the data's min and max; the summary says so (why_general), so the
    Python API's warning about that pass is not repeated here."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="histogram without range computes")
        try:
            hist, edges = histogram(data, bins=spec.get("bins", 256), range=spec.get("range"))
        except ValueError as e:  # no range, and the result holds inf or nothing but NaN: the user's to fix
            if spec.get("range") is not None:
                raise
            raise WorkflowError(f"outputs.histogram: {e} (in the workflow: outputs.histogram.range: "
                                "[lo, hi])") from None
    return write_histogram(to_host(hist.compute() if hasattr(hist, "compute") else hist), edges, spec)


def write_histogram(counts, edges, spec) -> dict:
    """JSON (counts, edges) and PNG where the spec names them; returns those paths."""
    out = {"bins": len(edges) - 1, "counts": counts.tolist(), "edges": edges.tolist()}
    if "json" in spec:
        Path(spec["json"]).parent.mkdir(parents=True, exist_ok=True)
        Path(spec["json"]).write_text(json.dumps(out))
    if "png" in spec:
        from .report import histogram_png

        histogram_png(counts, edges, spec["png"])
    return {k: spec[k] for k in ("json", "png") if k in spec}


def jsonable(obj):
    return json.loads(json.dumps(obj, default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o)))
