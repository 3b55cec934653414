"""minimum_filter / maximum_filter of 2-D boxes as one kernel (distconv_extremum2d): equal to
scipy (exact: a min is one of the inputs or cval) for every mode, dtype, box and origin, odd
sizes over many tiles, 3-D planes, halo tiles of dask chunks; the kernel is seen to run, and
boxes it cannot take (per-axis modes, three axes) run the passes; outputs poisoned first."""

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc
from distconv.core.checks import DistconvWarning

from ..helpers import count_calls, host, poison_gpu_pool

pytestmark = pytest.mark.gpu
MODES = ["reflect", "nearest", "mirror", "wrap", "constant"]
NAMES = ["minimum_filter", "maximum_filter"]


@pytest.fixture
def launches(monkeypatch):
    """The kernel's launches during a test."""
    from distconv.backends.cuda import rank

    return count_calls(monkeypatch, rank, "_launch_extremum")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", MODES)
def test_fused_boxes_equal_scipy(gpu, rng, launches, name, mode):
    fn, ref_fn = getattr(dc, name), getattr(ndi, name)
    n = 0
    for dtype in (np.float32, np.float64, np.int32, np.uint8):
        a = (rng.standard_normal((131, 203)) * 50).astype(dtype)
        for size, origin in ((5, 0), ((9, 3), (1, -1)), ((2, 33), (0, 0)), (3, 1)):
            got = host(gpu.run(fn, a, size=size, mode=mode, cval=7.0, origin=origin))
            np.testing.assert_array_equal(got, ref_fn(a, size, mode=mode, cval=7.0, origin=origin))
            n += 1
    assert len(launches) == n


@pytest.mark.parametrize("name", NAMES)
def test_fused_boxes_of_3d_planes_and_of_chunks(gpu, rng, launches, name):
    import cupy

    fn, ref_fn = getattr(dc, name), getattr(ndi, name)
    a = rng.standard_normal((5, 70, 97)).astype(np.float32)
    np.testing.assert_array_equal(host(gpu.run(fn, a, size=(1, 5, 7))), ref_fn(a, (1, 5, 7)))
    assert len(launches) == 1
    poison_gpu_pool(a.nbytes * 8)
    x = da.from_array(cupy.asarray(a[0]), chunks=(23, 40))
    with pytest.warns(DistconvWarning, match="chunks too thin"):  # 23-row chunks under a 5-row box
        got = fn(x, (5, 3), mode="mirror").compute()
    np.testing.assert_array_equal(cupy.asnumpy(got), ref_fn(a[0], (5, 3), mode="mirror"))
    assert len(launches) > 1


@pytest.mark.parametrize("name", NAMES)
def test_what_the_kernel_cannot_take_runs_the_passes(gpu, rng, launches, name):
    fn, ref_fn = getattr(dc, name), getattr(ndi, name)
    a = rng.standard_normal((40, 33)).astype(np.float32)
    np.testing.assert_array_equal(host(gpu.run(fn, a, size=3, mode=["reflect", "nearest"])), ref_fn(a, 3, mode=["reflect", "nearest"]))
    b = rng.standard_normal((12, 13, 14)).astype(np.float32)
    np.testing.assert_array_equal(host(gpu.run(fn, b, size=3)), ref_fn(b, 3))
    assert not launches
