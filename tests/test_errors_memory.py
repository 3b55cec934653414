"""A memory_limit that cannot hold the job's blocks is refused before the output is claimed,
naming the key, the value, the block size and what to do."""

import os

import numpy as np
import pytest
import yaml
import zarr

from distconv import batch
from distconv.batch.memory import memory_problem


@pytest.fixture
def workflow(tmp_path):
    x = np.zeros((4096, 4096), np.float32)  # 67 MB: 4 blocks of 16.8 MB (two shards each) on one worker
    zarr.create_array(str(tmp_path / "in.zarr"), shape=x.shape, chunks=(512, 4096), dtype=x.dtype)[...] = x
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump({
        "input": {"path": "in.zarr"}, "steps": [{"op": "gaussian_filter", "sigma": 1.0}],
        "outputs": {"path": "out.zarr"}, "device": "cpu"}))
    return batch.load(tmp_path / "wf.yaml")


def _job(wf):
    from distconv.batch.direct import direct_job

    return direct_job(wf, False)[0]


def test_a_limit_too_small_for_the_blocks_a_worker_runs_at_once_is_named(workflow):
    job = _job(workflow)
    msg = memory_problem(job, {"w": {"memory_limit": 400 * 10**6, "nthreads": 8}})
    assert msg.startswith("cluster key 'memory_limit' is 400 MB per worker, too little for this job's blocks: "
                          "16.8 MB each, a worker runs 4 at once (threads_per_worker 8)"), msg
    assert msg.endswith("raise the cluster's memory_limit to at least 475 MB or lower threads_per_worker to 2"), msg


@pytest.mark.parametrize("workers", [{"w": {"memory_limit": 2 * 10**9, "nthreads": 8}},
                                     {"w": {"memory_limit": 0, "nthreads": 8}},  # no limit
                                     {"w": {"memory_limit": 400 * 10**6, "nthreads": 1}}])
def test_limits_that_hold_the_blocks_pass(workflow, workers):
    assert memory_problem(_job(workflow), workers) is None


def test_a_run_on_such_workers_is_refused_before_the_output_is_claimed(workflow, tmp_path):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=8, processes=False, memory_limit="400MB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        with pytest.raises(batch.WorkflowError, match="cluster key 'memory_limit' is 400 MB per worker"):
            batch.run(workflow, client, progress=False)
    assert not os.path.exists(tmp_path / "out.zarr")


def test_fewer_blocks_in_flight_by_the_io_slots_setting_are_counted(workflow):
    import dask

    with dask.config.set({"distconv.io-slots": 1}):
        assert memory_problem(_job(workflow), {"w": {"memory_limit": 400 * 10**6, "nthreads": 8}}) is None
