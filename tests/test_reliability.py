"""Faults survived and monitoring: a worker killed mid-job, the dashboard over HTTP while a job
runs, and every public op refusing bad input before any work."""

import contextlib
import os
import signal
import threading
import time
import urllib.request

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc
from distconv import batch as workflow

from .helpers import assert_matches, chunking_case
from .test_workflow import read, small


@pytest.mark.parametrize("kind, n_workers", [("cpu", 2), ("cpu", 1), pytest.param("cuda", 1, marks=pytest.mark.gpu)])
def test_worker_killed_mid_workflow_output_identical(tmp_path, kind, n_workers):
    """The job finishes on the other worker or, where the killed one was the only one, on the
    worker its nanny restarts (a new address: engine/placement.py lets its blocks move)."""
    from pathlib import Path

    from distconv.engine.marks import BLOCKS

    wf = small("demo", tmp_path, shape=[1024, 256], chunks=[32, 256])
    wf.chunks = [32, 256]
    wf.steps = [*wf.steps, ("median_filter", {"size": 5})]  # blocks slow enough to land in
    blocks = 1024 // 32
    cfg = {"type": kind, "n_workers": n_workers, "threads_per_worker": 1,
           "dashboard_address": "127.0.0.1:0"}
    marks = Path(wf.outputs["path"]) / BLOCKS
    with dc.cluster(cfg, quiet=True) as client:
        workflow.run(wf, client, progress=False)
        clean = read(wf.outputs["path"])
        pids = list(client.run(os.getpid).values())
        seen = []

        def kill_one():
            """Kill a worker once the first block is written, before the last is."""
            deadline = time.time() + 60
            while time.time() < deadline and not (marks.is_dir() and any(marks.iterdir())):
                time.sleep(0.001)
            seen.append(len(list(marks.iterdir())) if marks.is_dir() else 0)
            os.kill(pids[0], signal.SIGKILL)

        killer = threading.Thread(target=kill_one)
        killer.start()
        workflow.run(wf, client, overwrite=True, progress=False)
        killer.join()
    assert 0 < seen[0] < blocks, f"the kill must land mid-job: {seen[0]} of {blocks} blocks written"
    np.testing.assert_array_equal(read(wf.outputs["path"]), clean)


def test_dashboard_serves_task_names_over_http_while_a_job_runs(rng):
    cfg = {"type": "cpu", "n_workers": 1, "threads_per_worker": 2, "processes": False,
           "dashboard_address": "127.0.0.1:0"}
    with dc.cluster(cfg, quiet=True) as client:
        port = client.scheduler_info()["services"]["dashboard"]
        x = da.from_array(rng.standard_normal((2048, 512)), chunks=(64, 512))
        fut = client.compute(dc.correlate(x, np.ones((9, 9))).sum())
        seen = ""
        for _ in range(50):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                seen = r.read().decode()
            if "distconv-correlate" in seen:
                break
            time.sleep(0.1)
        fut.result()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as r:
            assert r.status == 200
    assert "distconv-correlate" in seen


BAD = {
    "wrong dtype": (lambda f: f(np.array(["a", "b"])), TypeError),
    "complex": (lambda f: f(np.ones(8, complex)), TypeError),
    "float16": (lambda f: f(np.ones(8, np.float16)), TypeError),
}
OPS = {
    "correlate": lambda x: dc.correlate(x, np.ones(3)),
    "convolve": lambda x: dc.convolve(x, np.ones(3)),
    "correlate1d": lambda x: dc.correlate1d(x, [1, 2]),
    "gaussian_filter": lambda x: dc.gaussian_filter(x, 1.0),
    "uniform_filter": lambda x: dc.uniform_filter(x, 3),
    "sobel": lambda x: dc.sobel(x),
    "median_filter": lambda x: dc.median_filter(x, 3),
    "minimum_filter": lambda x: dc.minimum_filter(x, 3),
    "derivative": lambda x: dc.derivative(x, 0),
    "laplace": lambda x: dc.laplace(x),
    "cumsum": lambda x: dc.cumsum(x),
    "scan": lambda x: dc.scan(x, "max"),
    "sum": lambda x: dc.sum(x),
    "histogram": lambda x: dc.histogram(x, bins=4, range=(0, 1)),
    "transpose": lambda x: dc.transpose(x),
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("case", list(BAD))
def test_every_op_refuses_bad_dtypes_naming_the_argument(op, case):
    call, exc = BAD[case]
    if case == "complex" and op in COMPLEX_OK:  # as scipy: filtered part by part
        out = call(OPS[op])  # ones + 0j: the real part is the op on real ones, the imaginary 0
        assert out.dtype == np.complex128 and np.all(out.imag == 0)
        assert_matches(out.real, OPS[op](np.ones(8)))
        return
    with pytest.raises(exc, match=r"\bx\b"):
        call(OPS[op])


# the linear filters take complex data, as scipy's do (tests/test_filters.py checks the values)
COMPLEX_OK = {"correlate", "convolve", "correlate1d", "gaussian_filter", "uniform_filter", "sobel",
              "derivative", "laplace"}


@pytest.mark.parametrize("op", ["correlate", "gaussian_filter", "derivative", "cumsum", "sum", "histogram"])
def test_nan_inf_and_noncontiguous_match_numpy_paths(rng, op):
    a = rng.standard_normal((12, 14))
    a[2, 3], a[5, 5] = np.nan, np.inf
    view = a[::2, ::-1]  # non-contiguous
    ref = {"correlate": lambda v: ndi.correlate(v, np.ones((3, 3))),
           "gaussian_filter": lambda v: ndi.gaussian_filter(v, 1.0),
           "derivative": lambda v: ndi.correlate1d(v, [-0.5, 0, 0.5], axis=0, mode="nearest"),
           "cumsum": lambda v: np.cumsum(v),
           "sum": lambda v: np.sum(v),
           "histogram": lambda v: np.histogram(v, bins=4, range=(-1, 1))[0]}[op]
    got = {"correlate": lambda v: dc.correlate(v, np.ones((3, 3))),
           "gaussian_filter": lambda v: dc.gaussian_filter(v, 1.0),
           "derivative": lambda v: dc.derivative(v, 0),
           "cumsum": lambda v: dc.cumsum(v),
           "sum": lambda v: dc.sum(v),
           "histogram": lambda v: dc.histogram(v, bins=4, range=(-1, 1))[0]}[op]
    for data in (view, da.from_array(np.ascontiguousarray(view), chunks=(3, 4))):
        thin = op == "gaussian_filter" and not isinstance(data, np.ndarray)  # halo 4 > chunks of 3
        with pytest.warns(UserWarning, match="chunks too thin") if thin else contextlib.nullcontext():
            g = got(data)
        g = np.asarray(g.compute() if hasattr(g, "compute") else g)
        np.testing.assert_allclose(g, ref(view), rtol=1e-12, equal_nan=True)


def test_empty_and_zero_d_inputs():
    assert dc.cumsum(np.zeros(0)).shape == (0,)
    assert dc.correlate(np.zeros((0, 3)), np.ones((1, 1))).shape == (0, 3)
    with pytest.raises(ValueError, match="at least one dimension"):
        dc.gaussian_filter(np.float64(3.0), 1.0)
    assert dc.sum(np.float64(3.0)) == 3.0


@pytest.mark.parametrize("shape", [(0, 37), (19, 0), (0, 0, 5)])
def test_empty_dask_arrays_give_scipys_empty_results(shape):
    """A dask array with an empty axis: every stencil (and a chain, and a histogram counted
    in the stencil's own tasks) gives scipy's empty result, not an error cutting halos of
    nothing."""
    x = np.zeros(shape, np.float32)
    d = da.from_array(x, chunks=16)
    for got, ref in ((dc.gaussian_filter(d, 1.0), ndi.gaussian_filter(x, 1.0)),
                     (dc.median_filter(d, size=3), ndi.median_filter(x, size=3)),
                     (dc.laplace(dc.gaussian_filter(d, 1.0)), ndi.laplace(ndi.gaussian_filter(x, 1.0))),
                     (dc.correlate(d, np.ones((3,) * len(shape))), ndi.correlate(x, np.ones((3,) * len(shape))))):
        out = got.compute()
        assert out.shape == ref.shape and out.dtype == ref.dtype
    counts = dc.histogram(dc.laplace(dc.gaussian_filter(d, 1.0)), bins=8, range=(0, 1))[0]
    np.testing.assert_array_equal(np.asarray(counts.compute() if hasattr(counts, "compute") else counts),
                                  np.zeros(8, np.int64))


def test_oom_message_names_chunk_free_memory_and_a_size_to_try():
    from distconv.backends.cuda import oom_message

    msg = oom_message((65536, 65536), np.float32, free=8 * 2**30, total=80 * 2**30)
    assert "(65536, 65536) float32 (16.00 GiB)" in msg and "8.00 GiB free of 80.00 GiB" in msg
    assert "Rechunk to about (23170, 23170)" in msg


# ---- chunking invariance of every op on the CPU path (property-based) ------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PROPERTY_OPS = {
    "gaussian_filter": lambda x, m: dc.gaussian_filter(x, 1.2, mode=m),
    "correlate1d": lambda x, m: dc.correlate1d(x, [1.0, -2.0, 0.5], axis=0, mode=m),
    "derivative": lambda x, m: dc.derivative(x, 1, 2, 4, mode=m),
    "laplace": lambda x, m: dc.laplace(x, mode=m),
    "cumsum0": lambda x, m: dc.cumsum(x, axis=0),
    "cummax1": lambda x, m: dc.cummax(x, axis=1),
    "sum": lambda x, m: dc.sum(x, axis=1),
    "max": lambda x, m: dc.max(x, axis=0),
    "histogram": lambda x, m: dc.histogram(x, bins=7, range=(-2, 2))[0],
    "transpose": lambda x, m: dc.transpose(x),
}


@pytest.mark.parametrize("op", list(PROPERTY_OPS))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_results_never_depend_on_the_chunking(op, data):
    import warnings

    shape, chunks, mode, rng = chunking_case(data)
    a = rng.standard_normal(shape)
    whole = np.asarray(PROPERTY_OPS[op](a, mode))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = PROPERTY_OPS[op](da.from_array(a, chunks=chunks), mode).compute()
    np.testing.assert_allclose(np.asarray(got), whole, rtol=1e-12, atol=1e-12)
