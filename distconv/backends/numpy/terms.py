"""Sums of separable terms on numpy blocks (gaussian_laplace, gaussian_gradient_magnitude): each
term's passes through scipy, combined in the result's dtype (backends/windows.py)."""

from __future__ import annotations

from ..windows import combine_terms
from .convolve import correlate_passes


def correlate_terms(block, terms: list, cval: float, combine: str, dtype=None):
    """``combine`` ("sum" or "magnitude") of terms = [(passes, mode), ...], each as
    correlate_passes(block, passes, mode, cval, dtype)."""
    return combine_terms(block, terms, cval, combine, dtype, correlate_passes)
