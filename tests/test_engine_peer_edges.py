"""Halo rows handed between blocks on different workers (engine/read.py PeerEdges): a block
whose neighbour on another worker promised its edge rows takes them instead of decoding the
neighbour's chunks again; one whose rows were never promised decodes them at once; the
results equal scipy's either way."""

import time

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

from distconv import batch
from distconv.engine import read

from .helpers import small_engine_blocks

KEY = (("run0", "in.zarr"), 30, 32)


def _publish(delay):
    peers = read.PeerEdges()
    var = peers.promise(KEY, 64)
    time.sleep(delay)
    peers.publish(var, np.arange(8, dtype=np.float64).reshape(2, 4))
    return var is not None


def _take(wait_s):
    dest = np.zeros((2, 4))
    t = time.monotonic()
    took = read.PeerEdges().take(KEY, dest, wait_s)
    return took, dest.tolist(), time.monotonic() - t


@pytest.fixture
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as cl:
        yield cl


def test_a_promised_edge_is_waited_for_and_taken_once(client):
    a, b = list(client.scheduler_info()["workers"])
    pub = client.submit(_publish, 0.5, workers=[a], pure=False)
    time.sleep(0.2)  # promised, not yet published
    took, rows, waited = client.submit(_take, 30.0, workers=[b], pure=False).result()
    assert pub.result() and took and rows == np.arange(8.0).reshape(2, 4).tolist() and waited < 10
    # taken rows are deleted: nothing is promised under that name any more, so no wait
    took, _, waited = client.submit(_take, 30.0, workers=[b], pure=False).result()
    assert not took and waited < 5


def _publish_after_the_run_ended():
    peers = read.PeerEdges()
    var = peers.promise(KEY, 64)
    peers.drop("run0")  # the run was stopped while this block ran
    peers.publish(var, np.arange(8, dtype=np.float64).reshape(2, 4))
    return var is not None, peers.promise(KEY, 64) is None


def test_a_run_dropped_while_its_block_runs_leaves_no_edge_on_the_scheduler(client):
    """A block that publishes, or promises, after its run was dropped on its worker (stopped)
    sets nothing that no one would delete."""
    promised, refused = client.submit(_publish_after_the_run_ended, pure=False).result()
    assert promised and refused
    took, _, waited = client.submit(_take, 30.0, pure=False).result()
    assert not took and waited < 5  # nothing there: neither the promise nor the rows


def test_an_edge_never_promised_is_not_waited_for(client):
    took, rows, waited = client.submit(_take, 30.0, pure=False).result()
    assert not took and rows == np.zeros((2, 4)).tolist() and waited < 5


def test_outside_a_worker_nothing_is_handed():
    peers = read.PeerEdges()
    assert peers.promise(KEY, 64) is None and not peers.take(KEY, np.zeros((2, 4)), 1.0)


def test_blocks_on_two_worker_processes_equal_scipy(tmp_path, monkeypatch):
    """One block a worker, all started at once: the lower block's upper halo comes from the
    upper block's worker (its lower halo from the heads of the chunks below)."""
    from distributed import Client, LocalCluster

    small_engine_blocks(monkeypatch, 32 * 40 * 8, 2000)
    x = np.random.default_rng(3).standard_normal((64, 40))
    zarr.create_array(str(tmp_path / "in.zarr"), shape=x.shape, chunks=(32, 40), dtype=x.dtype,
                      compressors=zarr.codecs.ZstdCodec(level=1))[...] = x
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump({
        "input": {"path": "in.zarr"}, "steps": [{"op": "gaussian_filter", "sigma": 1.0}],
        "outputs": {"path": "out.zarr"}}))
    wf = batch.load(tmp_path / "wf.yaml")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            Client(c) as cl:
        s = batch.run(wf, cl, progress=False)
    assert s["path"] == "direct" and s["stage_seconds"]["halos decoded"] <= 1
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], ndi.gaussian_filter(x, 1.0),
                               rtol=1e-12, atol=1e-12)
