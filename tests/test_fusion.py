"""Consecutive stencils on dask arrays fuse into one task per chunk with the summed halo (and a
histogram after them counts inside those tasks); results equal the unfused ops and scipy for
every chunking and mode."""

import contextlib

import numpy as np
import pytest
import scipy.ndimage as ndi

import dask
import dask.array as da
import distconv as dc
from distconv.ops import filters, stencil_ops


def _chain3(x):
    y = dc.gaussian_filter(x, 1.5, mode="nearest")
    y = dc.laplace(y, mode="nearest")
    return dc.derivative(y, axis=1, accuracy=4, mode="mirror")


def _stencil_layers(arr):
    return [n for n in arr.__dask_graph__().layers if n.startswith("distconv-") and "-halo-" not in n]


@pytest.mark.parametrize("chunks", [(16, 20), (9, 41), (50, 7), (50, 41)])
def test_fused_chain_equals_unfused_and_scipy(rng, chunks, monkeypatch):
    x = rng.standard_normal((50, 41)).astype(np.float32)
    d = da.from_array(x, chunks=chunks)
    # chunks thinner than the chain's halo merge, and each call says so
    with pytest.warns(UserWarning, match="chunks too thin") if chunks != (50, 41) else contextlib.nullcontext():
        fused = _chain3(d)
        with dask.config.set({filters.FUSE_KEY: False}):
            unfused = _chain3(d)
    ref = dc.derivative(ndi.laplace(ndi.gaussian_filter(x, 1.5, mode="nearest"), mode="nearest"),
                        axis=1, accuracy=4, mode="mirror")
    f, u = dask.compute(fused, unfused)
    np.testing.assert_allclose(f, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(u, ref, rtol=1e-4, atol=1e-4)
    # one stencil layer over the input: the intermediates are not in the fused graph
    assert len(_stencil_layers(fused)) == 1 and len(_stencil_layers(unfused)) == 3
    assert _stencil_layers(fused)[0].startswith("distconv-gaussian-laplace-derivative")


def test_the_step_is_declared_on_the_graph_and_stops_at_a_changed_array(rng):
    """What made a filter's result is declared on its own graph layer (graph.declared), with
    the separable pass and the mask after it as declared calls that pair into one; a slice, a
    persist or another op is a new array that declares nothing, so nothing fuses past it."""
    from distconv.graph.declared import declared
    from distconv.core.stencil import ScanStep

    x = rng.standard_normal((40, 30)).astype(np.float32)
    d = da.from_array(x, chunks=(15, 30))
    y = dc.laplace(dc.gaussian_filter(d, 1.0))
    source, st = stencil_ops.fused_source(y)
    assert source is d and isinstance(st.func, stencil_ops._Pair)  # one backend call: correlate_pair
    for changed in (y[1:], y.persist(), y + 1, y.astype(np.float64)):
        assert stencil_ops.fused_source(changed) is None
    z = dc.laplace(y[1:])
    assert stencil_ops.fused_source(z)[0].name == y[1:].name  # fused with what it read, no further
    np.testing.assert_allclose(z.compute(), ndi.laplace(ndi.laplace(ndi.gaussian_filter(x, 1.0))[1:]),
                               rtol=1e-4, atol=1e-4)
    c = dc.cumsum(d, axis=1)
    assert declared(c, ScanStep)[0] is d and declared(c, type(st)) is None
    assert declared(dc.cumsum(d, axis=None), ScanStep) is None  # flattened: not the engine's


def test_wrap_does_not_fuse_with_other_modes_and_stays_right(rng):
    x = rng.standard_normal((30, 28))
    d = da.from_array(x, chunks=10)
    y = dc.correlate1d(dc.gaussian_filter(d, 1.0, mode="wrap"), [1.0, 2.0, -1.0], axis=0, mode="reflect")
    ref = ndi.correlate1d(ndi.gaussian_filter(x, 1.0, mode="wrap"), [1.0, 2.0, -1.0], axis=0, mode="reflect")
    np.testing.assert_allclose(y.compute(), ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("chunks", [(12, 15), (40, 40)])
def test_histogram_counts_inside_the_fused_tasks(rng, chunks):
    x = rng.standard_normal((40, 40)).astype(np.float32)
    d = da.from_array(x, chunks=chunks)
    with pytest.warns(UserWarning, match="chunks too thin") if chunks == (12, 15) else contextlib.nullcontext():
        z = dc.laplace(dc.gaussian_filter(d, 2.0))
        h, edges = dc.histogram(z, bins=64, range=(-0.5, 0.5))
    ref = np.histogram(ndi.laplace(ndi.gaussian_filter(x, 2.0), mode="nearest"), bins=64, range=(-0.5, 0.5))
    np.testing.assert_array_equal(h.compute(), ref[0])
    names = {k[0] if isinstance(k, tuple) else k for k in dict(h.__dask_graph__())}
    assert not any("distconv-hist-" in str(n) and "merge" not in str(n) for n in names)


def test_halo_merge_warning_points_at_the_callers_line():
    x = da.from_array(np.zeros((20, 20)), chunks=3)
    with pytest.warns(UserWarning, match="chunks too thin") as rec:
        dc.gaussian_filter(x, 2.0)
    assert rec[0].filename == __file__
