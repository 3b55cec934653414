"""Zarr data as users have it, on every face: Zarr v2 and v3, blosc/zstd/gzip/lz4, either byte
order, Fortran-ordered v2 chunks, sparse arrays (chunks left out: their fill value), arrays
sharded by zarr-python, dimension names. Each layout is made by zarr-python (odd shapes, chunks
that do not divide them), run as a stencil chain and a carried scan through `distconv run`,
``dc.to_zarr`` and the xarray accessor, and compared with scipy/numpy on the values zarr reads.
Float outputs fill with NaN, so an element no block wrote shows up."""

import json

import numcodecs
import numpy as np
import pytest
import scipy.ndimage as ndi
import xarray as xr
import yaml
import zarr
import zarr.codecs as zc

import dask.array as da
import distconv as dc

from .helpers import small_engine_blocks

SHAPE, CHUNKS = (43, 23), (10, 7)  # edge chunks of 3 and 2: not a multiple, not thinner than a halo
WEIGHTS = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]  # integer taps: integer results are exact
DIMS = ("y", "x")

# name -> (zarr.create_array keywords, which chunks to leave unwritten: None = all written)
LAYOUTS = {
    "v2-blosc-lz4-big-endian": dict(zarr_format=2, dtype=">f4", compressors=numcodecs.Blosc(cname="lz4")),
    "v2-zstd-f8": dict(zarr_format=2, dtype="<f8", compressors=numcodecs.Zstd()),
    "v2-gzip-big-endian-int": dict(zarr_format=2, dtype=">i4", compressors=numcodecs.GZip()),
    "v2-lz4": dict(zarr_format=2, dtype="<f4", compressors=numcodecs.LZ4()),  # zarrs lacks it
    "v2-order-F": dict(zarr_format=2, dtype="<f4", compressors=numcodecs.Zstd(), order="F"),
    "v2-sparse": dict(zarr_format=2, dtype="<f8", compressors=numcodecs.Zstd(), fill_value=-2.0),
    "v3-zstd": dict(zarr_format=3, dtype="f4", compressors=zc.ZstdCodec()),
    "v3-gzip": dict(zarr_format=3, dtype="f8", compressors=zc.GzipCodec()),
    "v3-blosc-zstd": dict(zarr_format=3, dtype="f4", compressors=zc.BloscCodec(cname="zstd")),
    "v3-big-endian": dict(zarr_format=3, dtype="f4", serializer=zc.BytesCodec(endian="big"),
                          compressors=zc.ZstdCodec()),
    "v3-int16": dict(zarr_format=3, dtype="i2", compressors=zc.ZstdCodec()),
    "v3-sparse": dict(zarr_format=3, dtype="f4", compressors=zc.ZstdCodec(), fill_value=1.5),
    "v3-sharded-zstd-sparse": dict(zarr_format=3, dtype="f4", shards=(20, 14), compressors=zc.ZstdCodec()),
    "v3-sharded-zstd": dict(zarr_format=3, dtype="f8", shards=(20, 21), compressors=zc.ZstdCodec()),
    "v3-sharded-gzip": dict(zarr_format=3, dtype="f4", shards=(20, 14), compressors=zc.GzipCodec()),
}


def _make(root, name: str) -> np.ndarray:
    """The layout ``name`` as the array ``v`` of a group at ``root/name.zarr`` (its dims named
    as xarray writes them: v3's dimension_names, v2's _ARRAY_DIMENSIONS), with an attribute
    that describes its data; returns what zarr reads of it."""
    kw = dict(LAYOUTS[name])
    fmt = kw.pop("zarr_format")
    dt = np.dtype(kw["dtype"])
    rng = np.random.default_rng(len(name))
    x = (rng.integers(-300, 300, SHAPE) if dt.kind == "i" else rng.standard_normal(SHAPE)).astype(dt)
    g = zarr.open_group(str(root / f"{name}.zarr"), mode="w", zarr_format=fmt)
    attrs = {"long_name": f"made as {name}"}
    if fmt == 3:
        kw["dimension_names"] = DIMS
    else:
        attrs["_ARRAY_DIMENSIONS"] = list(DIMS)
    z = g.create_array("v", shape=SHAPE, chunks=CHUNKS, attributes=attrs, **kw)
    if "sparse" in name:  # some chunks (a whole shard) never written: they read as the fill value
        z[:10, :14] = x[:10, :14]
        z[20:31, 7:] = x[20:31, 7:]
    else:
        z[...] = x
    return z[...]


def _reference(x: np.ndarray) -> np.ndarray:
    """A 3x3 correlate (nearest edges), then the cumulative sum along axis 0, as numpy's
    dtype rules give them."""
    y = ndi.correlate(x, np.array(WEIGHTS, dtype=x.dtype), mode="nearest")
    return np.cumsum(y, axis=0)


def _assert_equal(got: np.ndarray, ref: np.ndarray):
    assert got.shape == ref.shape and np.dtype(got.dtype) == np.dtype(ref.dtype).newbyteorder("="), (got.dtype,
                                                                                                   ref.dtype)
    if ref.dtype.kind == "f":
        assert not np.isnan(got).any(), "elements no block wrote"
        scale = max(1.0, float(np.abs(ref).max()))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * scale)
    else:
        np.testing.assert_array_equal(got, ref)


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    """Every layout made once: {name: (group folder, its values)}."""
    root = tmp_path_factory.mktemp("layouts")
    return root, {name: _make(root, name) for name in LAYOUTS}


@pytest.fixture(scope="module")
def cli_runs(layouts):
    """One `distconv run` of every layout's workflow (device: cpu, one cluster of threads in
    this process, so the engine's small test blocks apply): {name: output folder}, and the
    command's JSON summaries."""
    from click.testing import CliRunner

    from distconv.cli import main

    root, _ = layouts
    mp = pytest.MonkeyPatch()
    small_engine_blocks(mp, 900, 300)  # many blocks and shards: halos and carries cross them
    files, outs = [], {}
    for name in LAYOUTS:
        outs[name] = root / f"{name}.cli.zarr"
        doc = {"name": f"layout-{name}", "device": "cpu",
               "input": {"path": str(root / f"{name}.zarr" / "v")},
               "steps": [{"op": "correlate", "weights": WEIGHTS, "mode": "nearest"}, {"op": "cumsum", "axis": 0}],
               "outputs": {"path": str(outs[name])}}
        f = root / f"{name}.yaml"
        f.write_text(yaml.safe_dump(doc))
        files.append(str(f))
    cluster = root / "cluster.yaml"
    cluster.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n  processes: false\n"
                       "  dashboard_address: '127.0.0.1:0'\n")
    import dask

    try:
        with dask.config.set({"distconv.cluster-state": str(root / "no-kept-cluster.json")}):
            res = CliRunner().invoke(main, ["run", *files, "--cluster", str(cluster), "--no-progress",
                                            "--json", str(root / "summary.json")])
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output
    summaries = json.loads((root / "summary.json").read_text())
    return outs, summaries if isinstance(summaries, list) else [summaries]


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_distconv_run_reads_every_layout(layouts, cli_runs, name):
    """The CLI: the engine's path, values equal numpy's, the input's dims and attributes kept,
    zarr-python's pipeline named where it decodes."""
    root, values = layouts
    outs, summaries = cli_runs
    summary = next(s for s in summaries if s["workflow"] == f"layout-{name}")
    assert summary["path"] == "direct", summary
    out = zarr.open_array(str(outs[name]), mode="r")
    _assert_equal(out[...], _reference(values[name]))
    assert tuple(out.metadata.dimension_names) == DIMS
    assert out.attrs["long_name"] == f"made as {name}" and out.attrs["distconv"]["workflow"] == f"layout-{name}"
    slow = name in ("v2-lz4", "v2-order-F")
    assert (summary.get("why_reader") is not None) == slow, summary.get("why_reader")
    if slow:
        assert "zarr-python" in summary["why_reader"]


@pytest.fixture
def small_blocks(monkeypatch):
    small_engine_blocks(monkeypatch, 900, 300)


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_dc_to_zarr_reads_every_layout(layouts, tmp_path, small_blocks, name):
    """Python: a lazy chain over da.from_zarr runs on the engine; the output keeps the input
    array's dimension names."""
    root, values = layouts
    src = da.from_zarr(str(root / f"{name}.zarr" / "v"))
    y = dc.cumsum(dc.correlate(src, WEIGHTS, mode="nearest"), axis=0)
    report = dc.to_zarr(y, str(tmp_path / "out.zarr"))
    assert report["path"] == "engine" and report["tasks"] > 3, report
    out = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")
    _assert_equal(out[...], _reference(values[name]))
    assert tuple(out.metadata.dimension_names) == DIMS


@pytest.mark.parametrize("decoded", [True, False], ids=["cf-decoded", "as-stored"])
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_the_accessor_reads_every_layout(layouts, tmp_path, small_blocks, name, decoded):
    """xarray: the variable as xr.open_zarr gives it, filtered and scanned by dim names, equal to
    numpy's on those values, its dims kept. As stored (mask_and_scale=False; a big-endian one
    swapped to native order by xarray) it runs on the engine; CF-decoded (a Zarr v2 fill value
    masked to NaN) on dask's path, which says so."""
    root, _ = layouts
    v = xr.open_zarr(str(root / f"{name}.zarr"), consolidated=False, mask_and_scale=decoded).v
    x = v.values
    y = v.distconv.correlate(WEIGHTS, DIMS, mode="nearest").distconv.cumsum("y")
    report = y.distconv.to_zarr(str(tmp_path / "o.zarr"))
    masked = decoded and "_FillValue" in v.encoding
    assert report["path"] == ("general" if masked else "engine"), report
    if masked:
        assert "decoded by xarray" in report["why"]
    back = xr.open_zarr(str(tmp_path / "o.zarr"), consolidated=False).v
    assert back.dims == DIMS
    # xarray's cumsum skips NaN (the masked fill values), as np.nancumsum
    scan = np.nancumsum if x.dtype.kind == "f" else np.cumsum
    _assert_equal(back.values, scan(ndi.correlate(x, np.array(WEIGHTS, x.dtype), mode="nearest"), axis=0))


def test_the_codec_pipeline_is_chosen_when_the_job_is_planned(layouts):
    """From the array's metadata, before any block: zarrs where it reads the codecs (a
    big-endian array too: blocks decode into native memory), else zarr-python's, with why."""
    from distconv.engine import source

    root, _ = layouts
    for name in LAYOUTS:
        z = zarr.open_array(str(root / f"{name}.zarr" / "v"), mode="r")
        s = source.describe(str(root / f"{name}.zarr" / "v"), z.metadata.to_dict())
        assert s.dims == DIMS
        if name == "v2-lz4":
            assert s.pipeline == "zarr-python" and "lz4" in s.why
        elif name == "v2-order-F":
            assert s.pipeline == "zarr-python" and "order: F" in s.why
        else:
            assert s.pipeline == "zarrs" and s.why is None, (name, s.why)


def test_a_workflow_on_dasks_path_keeps_the_inputs_dims_and_data_attributes(tmp_path, rng):
    """`distconv run` where dask's path writes (mode wrap): the output keeps the input's dims
    and the attributes that describe its data, not those that say how its stored values are
    encoded (a scale_factor would have xarray rescale the result)."""
    from distconv import batch

    x = rng.standard_normal(SHAPE).astype(np.float32)
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=SHAPE, chunks=CHUNKS, dtype="f4", dimension_names=DIMS,
                          attributes={"long_name": "rain", "scale_factor": 0.5})
    z[...] = x
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump({"input": {"path": str(tmp_path / "in.zarr")}, "device": "cpu",
                                 "steps": [{"op": "gaussian_filter", "sigma": 1.0, "mode": "wrap"}],
                                 "outputs": {"path": str(tmp_path / "out.zarr")}}))
    s = batch.run(batch.load(p), progress=False)
    assert s["path"] == "general", s
    out = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")
    assert tuple(out.metadata.dimension_names) == DIMS
    assert out.attrs["long_name"] == "rain" and "scale_factor" not in out.attrs
    np.testing.assert_allclose(out[...], ndi.gaussian_filter(x, 1.0, mode="wrap"), rtol=1e-5, atol=1e-5)
