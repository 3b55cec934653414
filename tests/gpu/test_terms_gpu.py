"""gaussian_laplace and gaussian_gradient_magnitude of 2-D planes as one kernel
(distconv_terms2d): close to scipy for every mode, odd sizes over many tiles, halo tiles of dask
chunks at every kind of edge, 3-D arrays filtered along two axes; the kernel is seen to run,
and cases it cannot take (constant with cval, 3 terms, float64) take the passes; outputs
poisoned first."""

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc

from ..helpers import assert_matches, count_calls, host, poison_gpu_pool

pytestmark = pytest.mark.gpu
MODES = ["reflect", "nearest", "mirror", "wrap", "constant"]
NAMES = ["gaussian_laplace", "gaussian_gradient_magnitude"]


@pytest.fixture
def launches(monkeypatch):
    """The kernel's launches during a test."""
    from distconv.backends.cuda import terms

    return count_calls(monkeypatch, terms, "_launch")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", MODES)
def test_fused_terms_match_scipy(gpu, rng, launches, name, mode):
    fn, ref_fn = getattr(dc, name), getattr(ndi, name)
    for shape, sigma in (((131, 203), 2.0), ((70, 9), (0.8, 2.0)), ((257, 64), 1.0), ((5, 400), 3.0)):
        a = rng.standard_normal(shape).astype(np.float32)
        assert_matches(host(gpu.run(fn, a, sigma=sigma, mode=mode)), ref_fn(a, sigma, mode=mode))
    assert len(launches) == 4


@pytest.mark.parametrize("name", NAMES)
def test_fused_terms_of_3d_planes_and_of_chunks(gpu, rng, launches, name):
    import cupy

    fn, ref_fn = getattr(dc, name), getattr(ndi, name)
    a = rng.standard_normal((6, 90, 77)).astype(np.float32)
    assert_matches(host(gpu.run(fn, a, sigma=1.5, axes=(1, 2))), ref_fn(a, 1.5, axes=(1, 2)))
    # scipy's gradient magnitude smooths axis 0 too: three passes per term, not the kernel's two
    assert len(launches) == (name == "gaussian_laplace")
    poison_gpu_pool(a.nbytes * 8)
    x = da.from_array(cupy.asarray(a[0]), chunks=(31, 40))  # halo tiles at every kind of edge
    got = fn(x, 2.0, mode="mirror").compute()
    assert_matches(cupy.asnumpy(got), ref_fn(a[0], 2.0, mode="mirror"))
    assert len(launches) > 1


@pytest.mark.parametrize("name", NAMES)
def test_what_the_kernel_cannot_take_runs_the_passes(gpu, rng, launches, name):
    fn, ref_fn = getattr(dc, name), getattr(ndi, name)
    a = rng.standard_normal((40, 33)).astype(np.float32)
    assert_matches(host(gpu.run(fn, a, sigma=1.0, mode="constant", cval=0.5)), ref_fn(a, 1.0, mode="constant", cval=0.5))
    assert_matches(host(gpu.run(fn, a, sigma=1.0, mode=["reflect", "nearest"])), ref_fn(a, 1.0, mode=["reflect", "nearest"]))
    b = rng.standard_normal((12, 13, 14)).astype(np.float32)
    assert_matches(host(gpu.run(fn, b, sigma=1.0)), ref_fn(b, 1.0))
    c = a.astype(np.float64)
    assert_matches(host(gpu.run(fn, c, sigma=1.0)), ref_fn(c, 1.0))
    assert not launches


def test_the_laplacian_adds_mirrored_pairs_once_for_both_terms(gpu, rng, monkeypatch):
    """gaussian_laplace's x masks (Gaussian, second derivative) are symmetric: its kernel build
    adds each mirrored pair once (SYM); the gradient magnitude's first derivative is not."""
    from distconv.backends.cuda import loader

    names, real = [], loader.function
    monkeypatch.setattr(loader, "function", lambda pattern, name, *a: (names.append(name), real(pattern, name, *a))[1])
    a = rng.standard_normal((301, 157)).astype(np.float32)
    for name, sym in (("gaussian_laplace", "true"), ("gaussian_gradient_magnitude", "false")):
        for mode in MODES[:4]:
            assert_matches(host(gpu.run(getattr(dc, name), a, sigma=2.0, mode=mode)),
                           getattr(ndi, name)(a, 2.0, mode=mode))
        assert names[-1].startswith("distconv_terms2d<") and names[-1].endswith(f", {sym}>"), names[-1]
