"""A checked workflow and the error a workflow gets: the types the batch rooms share (spec
makes them, validate, inputs, direct, identity and runner read them), kept apart so that none of
those rooms imports another's functions to name them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


# input.region_edges: where a region's edges get their values, "mode" (the default: the region
# is cut before the steps, whose boundary modes apply at its edges) or "data" (it is cut from
# the whole array's result)
REGION_EDGES = ("mode", "data")


def region_edges(inp: dict) -> str:
    """A workflow input's ``region_edges`` (REGION_EDGES[0] when it says none)."""
    return inp.get("region_edges", REGION_EDGES[0])


class WorkflowError(ValueError):
    """A workflow file (or its run) asks for something that cannot be done; says which key."""


@dataclass
class Workflow:
    name: str
    kind: str
    source: Path
    input: dict
    steps: list
    outputs: dict
    chunks: object = "auto"
    overwrite: bool = False
    device: str = "auto"
    report: str | None = None
    # the input as opened for this workflow (batch.inputs.whole_input): opened once, handed down
    opened: object = field(default=None, repr=False, compare=False)
    # the steps planned over that input (batch.direct.planned_steps): the job's identity, the
    # kernel builds and the run read this one
    planned: object = field(default=None, repr=False, compare=False)
