"""distconv_terms2d's x pass adds mirrored pairs of the window once for both terms (SYM) when
both x masks read the same backwards in float32: the Laplacian's Gaussian and second
derivative do, the gradient magnitude's first derivative does not (backends/cuda/terms.py)."""

import numpy as np
import pytest

from distconv.backends.cuda.terms import _mirrored
from distconv.ops.smooth import gaussian_kernel1d


@pytest.mark.parametrize("sigma", [0.8, 1.0, 2.0, 3.7])
def test_the_laplacians_masks_take_the_mirrored_pairs(sigma):
    r = int(4 * sigma + 0.5)
    g, d1, d2 = (gaussian_kernel1d(sigma, order, r).astype(np.float32) for order in (0, 1, 2))
    assert _mirrored(g, d2)
    assert not _mirrored(g, d1)


def test_only_odd_masks_equal_to_their_reverse():
    assert _mirrored(np.array([1, 2, 1], np.float32))
    assert not _mirrored(np.array([1, 2, 2, 1], np.float32))  # no centre tap
    assert not _mirrored(np.array([1, 2, 1], np.float32), np.array([1, 2, 1.5], np.float32))
