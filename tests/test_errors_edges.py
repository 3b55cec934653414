"""The halo rows a run's blocks hand through the scheduler (engine/read.py PeerEdges) go with
the run, those a worker left as it died too, and asking for an edge never promised logs no
error on the scheduler (a user's script sees that log on its terminal)."""

import logging

import numpy as np
import pytest

from distconv.engine import process, read

KEY = (("run0", "in.zarr"), 30, 32)


@pytest.fixture
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as cl:
        yield cl


def _left_behind():
    """A block that promised one edge and published another, on a worker that then died (its
    process state never hears that the run ended)."""
    peers = read.PeerEdges()
    peers.promise((KEY[0], 0, 2), 64)
    peers.publish(peers.promise(KEY, 64), np.ones((2, 4)))


def _edges_on(dask_scheduler=None):
    variables = [n for n in dask_scheduler.extensions["variables"].variables if n.startswith("distconv-edge")]
    held = dask_scheduler.task_metadata.get(getattr(read.PeerEdges, "ROOT", "distconv-runs"), {})
    return variables + [f"{run}/{k}" for run, entries in held.items() for k, v in entries.get("edges", {}).items()
                        if v is not None]


def test_the_runs_end_removes_what_its_blocks_left_on_the_scheduler(client):
    client.submit(_left_behind, pure=False).result()
    assert len(client.run_on_scheduler(_edges_on)) == 2
    process.release(client, "run0")  # what the run's end (or its stop) does on the client
    assert client.run_on_scheduler(_edges_on) == []


def _take_unpromised():
    return read.PeerEdges().take(KEY, np.zeros((2, 4)), 5.0)


def test_an_edge_never_promised_logs_no_error_on_the_scheduler(client):
    records = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append
    log = logging.getLogger("distributed")
    log.addHandler(handler)
    try:
        assert client.submit(_take_unpromised, pure=False).result() is False
    finally:
        log.removeHandler(handler)
    assert [r.getMessage() for r in records] == []
