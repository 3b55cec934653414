"""A workflow's steps planned without dask (core.planned): the same fused stencil and scan as the
lazy dask path declares, a step that is not one stencil planned over dask instead, arguments
checked either way, and the stored input described from its metadata file as zarr-python reads it."""

import subprocess
import sys
import textwrap

import dask.array as da
import numpy as np
import pytest
import yaml
import zarr

from distconv import batch
from distconv.batch import direct
from distconv.core.planned import NotPlannable, Planned
from distconv.engine import chain, source
from distconv.ops.registry import OPS

SOBEL = [[0, 1, 0], [1, -4, 1], [0, 1, 0]]
CHAINS = [
    [("gaussian_filter", {"sigma": 2.0}), ("correlate", {"weights": SOBEL, "mode": "nearest"})],
    [("gaussian_filter", {"sigma": 1.5}), ("laplace", {})],
    [("uniform_filter", {"size": 3}), ("cumsum", {"axis": 0})],
    [("cummax", {"axis": 1})],
    [("sobel", {"axis": 0}), ("median_filter", {"size": 3}), ("derivative", {"axis": 1, "order": 2})],
    [("gaussian_filter", {"sigma": 1.0, "mode": "wrap"})],
    [("gaussian_filter", {"sigma": 1.0}), ("correlate1d", {"weights": [1, 2, 1], "mode": "wrap"})],
    [("gaussian_gradient_magnitude", {"sigma": 1.0}), ("convolve1d", {"weights": [1, -1], "axis": 0})],
]


def _stencil_facts(found):
    """What names a chain: (its name, halo, mode, dtype, kind of block function), the scan's."""
    st, scan = found[1], found[2]
    facts = (st.name, st.depth, st.mode, st.dtype, type(st.func).__name__)
    return facts, None if scan is None else (scan.op, scan.axis, scan.exclusive, np.dtype(scan.dtype))


@pytest.mark.parametrize("steps", CHAINS)
def test_a_planned_chain_is_the_one_dask_declares(steps):
    x = da.zeros((64, 48), np.float32, chunks=(64, 48))
    p = root = Planned.root(x.shape, x.dtype, None, lambda: x)
    for op, params in steps:
        x = OPS[op].func(x, **params)
        p = OPS[op].func(p, **params)
    assert isinstance(p, Planned) and p.shape == x.shape and p.dtype == x.dtype
    want, got = chain.stencil_chain(x), chain.stencil_chain(p)
    assert (want[1] is None) == (got[1] is None) and want[0] == got[0]
    if want[1] is not None:
        assert _stencil_facts(got[1]) == _stencil_facts(want[1]) and got[1][0] is root


@pytest.mark.parametrize("op, params", [
    ("gaussian_filter", {"sigma": 1.0, "nan_policy": "omit"}),
    ("cumsum", {}),                                          # axis None: the flattened array
    ("derivative", {"axis": 0, "edge_order": 1}),            # numpy.gradient's ends
])
def test_a_step_that_is_not_one_stencil_is_not_planned(op, params):
    p = Planned.root((16, 12), np.float32, None, lambda: da.zeros((16, 12), np.float32))
    with pytest.raises((NotPlannable, AttributeError)):
        OPS[op].func(p, **params)


def _workflow(tmp_path, steps, **inp):
    zarr.create_array(str(tmp_path / "in.zarr"), data=np.ones((40, 30), np.float32), chunks=(10, 30),
                      overwrite=True)
    doc = {"input": {"path": "in.zarr", **inp}, "steps": [{"op": o, **p} for o, p in steps],
           "outputs": {"path": "out.zarr"}}
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump(doc))
    return batch.load(str(tmp_path / "wf.yaml"))


@pytest.mark.parametrize("steps, why", [
    ([("gaussian_filter", {"sigma": 1.0, "nan_policy": "omit"})], "nan_policy: omit"),
    ([("uniform_filter", {"size": 3}), ("cumsum", {"axis": None})], "axis: null"),
    ([("derivative", {"axis": 0, "edge_order": 2})], "is not one stencil the engine runs"),
])
def test_a_workflow_with_a_step_dask_plans_says_why_as_before(tmp_path, steps, why):
    wf = _workflow(tmp_path, steps)
    result, unfused = direct.planned_steps(wf)
    assert not isinstance(result, Planned) and why in unfused
    assert not direct.takes(wf)


def test_arguments_are_checked_on_the_plan(tmp_path):
    with pytest.raises(batch.WorkflowError, match=r"step 1 \(gaussian_filter\).*sigma"):
        _workflow(tmp_path, [("gaussian_filter", {"sigma": "2"})])
    with pytest.raises(batch.WorkflowError, match=r"step 2 \(correlate\).*mode"):
        _workflow(tmp_path, [("gaussian_filter", {"sigma": 2}), ("correlate", {"weights": SOBEL, "mode": "bad"})])


def _arrays(tmp_path):
    x = np.arange(24 * 20, dtype=np.float32).reshape(24, 20)
    zc = zarr.codecs
    yield zarr.create_array(str(tmp_path / "v3.zarr"), data=x, chunks=(8, 20), attributes={"units": "K"},
                            dimension_names=("y", "x"))
    yield zarr.create_array(str(tmp_path / "shards.zarr"), data=x, chunks=(4, 10), shards=(8, 20))
    yield zarr.create_array(str(tmp_path / "big.zarr"), data=x.astype(">f8"), chunks=(8, 20),
                            serializer=zc.BytesCodec(endian="big"))
    yield zarr.create_array(str(tmp_path / "gzip.zarr"), data=x.astype(np.int16), chunks=(8, 20),
                            compressors=zc.GzipCodec())
    yield zarr.create_array(str(tmp_path / "v2.zarr"), data=x, chunks=(8, 20), zarr_format=2,
                            attributes={"_ARRAY_DIMENSIONS": ["a", "b"]})
    yield zarr.create_array(str(tmp_path / "v2be.zarr"), data=x.astype(">i4"), chunks=(8, 20), zarr_format=2)


def test_the_stored_input_read_as_json_is_what_zarr_reads(tmp_path):
    for z in _arrays(tmp_path):
        path = str(z.store.root)
        # as zarr-python reads the array back (the array it made may still know the data's byte order)
        got, want = source.read_stored(path), source.Stored.of_zarr(zarr.open_array(path, mode="r"), path)
        assert got is not None, path
        assert (got.shape, got.dtype, got.chunks, got.shards, got.attrs) == \
               (want.shape, want.dtype, want.chunks, want.shards, want.attrs), path
        assert source.describe(path, got.meta) == source.describe(path, want.meta), path
        assert source.dims_of(got.meta) == source.dims_of(want.meta), path
        assert source.pipeline_of(path, got.meta) == source.pipeline_of(path, want.meta), path
        assert (source._plain(got.meta) and source._zarrs_refuses(path, got.meta)) in (False, None), path


def test_a_big_endian_v3_input_has_the_data_type_zarr_reports(tmp_path):
    """In Zarr v3 the byte order is the bytes codec's, not the data type's: the check and the
    output's identity see the data type zarr-python reports (a big-endian int16 is int16)."""
    z = zarr.create_array(str(tmp_path / "be.zarr"), shape=(8, 6), chunks=(4, 6), dtype="int16",
                          serializer=zarr.codecs.BytesCodec(endian="big"))
    path = str(tmp_path / "be.zarr")
    got, want = source.read_stored(path), source.Stored.of_zarr(zarr.open_array(path, mode="r"), path)
    assert got.dtype == want.dtype == np.dtype("int16") and z.dtype == np.dtype("int16"), (got.dtype, want.dtype)


def test_an_input_rewritten_after_its_plan_is_refused_by_the_blocks(tmp_path):
    """The job carries the digest of the metadata its plan read: an input rewritten in place
    between the check and the blocks (other chunks) is refused, not read with the old layout."""
    from distconv.core.stencil import identity
    from distconv.engine.plan import plan_job

    path = str(tmp_path / "in.zarr")
    zarr.create_array(path, data=np.ones((64, 8), np.float32), chunks=(16, 8))
    stored = source.read_stored(path)
    zarr.create_array(path, data=np.ones((64, 8), np.float32), chunks=(32, 8), overwrite=True)
    job = plan_job(stored, str(tmp_path / "out.zarr"), identity(2, "distconv-copy"), False)
    with pytest.raises(RuntimeError, match="changed after this job was planned"):
        source.open_source(job.source)


def test_an_input_zarr_python_must_read_is_not_read_as_json(tmp_path):
    zarr.create_group(str(tmp_path / "g.zarr"))
    assert source.read_stored(str(tmp_path / "g.zarr")) is None
    assert source.read_stored(str(tmp_path / "missing.zarr")) is None
    assert source.read_stored("s3://bucket/in.zarr") is None


HEAVY = ("dask.array", "xarray", "distributed", "zarr", "pandas")


def test_the_check_of_an_engine_workflow_imports_no_dask_array_xarray_or_zarr(tmp_path):
    zarr.create_array(str(tmp_path / "in.zarr"), data=np.ones((64, 64), np.float32), chunks=(16, 64))
    (tmp_path / "wf.yaml").write_text(
        "input:\n  path: in.zarr\nsteps:\n  - {op: gaussian_filter, sigma: 2.0}\n"
        "  - {op: correlate, weights: [[0, 1, 0], [1, -4, 1], [0, 1, 0]], mode: nearest}\n"
        "outputs:\n  path: out.zarr\n")
    (tmp_path / "cluster.yaml").write_text("cluster:\n  type: cpu\n")
    code = textwrap.dedent(f"""
        import sys
        import distconv.batch
        loaded = [m for m in {HEAVY!r} if m in sys.modules]
        assert not loaded, ("import distconv.batch", loaded)
        from distconv.cli import main
        main(["run", "--dry-run", {str(tmp_path / 'wf.yaml')!r}, "--cluster", {str(tmp_path / 'cluster.yaml')!r}],
             standalone_mode=False)
        loaded = [m for m in {HEAVY!r} if m in sys.modules]
        assert not loaded, ("--dry-run", loaded)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "the engine" in done.stdout and "halo (9, 9) x (9, 9)" in done.stdout, done.stdout
