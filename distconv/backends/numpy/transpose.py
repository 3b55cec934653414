"""Transpose of one block: numpy's view (backends/cuda/transpose.py materializes it)."""

from __future__ import annotations

import numpy as np



def transpose(block, axes: tuple):
    return np.transpose(block, axes)
