"""Batch workflows (``distconv run wf.yaml``): spec (the YAML schema, checked whole before
anything runs), steps (registry lookup), inputs, runner, outputs, report, bovw."""

from .identity import output_identity  # noqa: F401
from .runner import done_summary, format_summary, preflight, run  # noqa: F401
from .spec import MARKER, load  # noqa: F401
from .workflow import Workflow, WorkflowError  # noqa: F401
