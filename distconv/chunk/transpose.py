"""Transpose of one block: numpy's view on the CPU, kernels/transpose.cu on the GPU."""

from __future__ import annotations

import numpy as np

from . import is_cupy


def transpose(block, axes: tuple):
    if is_cupy(block):
        from ..cuda import transpose as cuda_transpose

        return cuda_transpose.transpose(block, axes)
    return np.transpose(block, axes)
