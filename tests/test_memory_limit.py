"""A memory limit that cannot work is refused by the check, naming the key, the value and the
least that works; one larger than the machine is said once, not once per worker; a command's
cluster that does not close (workers restarting) does not hold the command."""

import threading

import pytest

import distconv as dc
from distconv.session.config import ClusterConfigError, load_config


@pytest.mark.parametrize("value, says", [("1MB", "'1MB' (1 MB per worker)"), (100_000, "0.1 MB per worker"),
                                         ("lots", "'lots'; give a size"), (True, "True; give a size")])
def test_a_memory_limit_that_cannot_work_is_refused_naming_the_key_value_and_minimum(value, says):
    with pytest.raises(ClusterConfigError) as e:
        load_config({"type": "cpu", "memory_limit": value})
    assert "cluster key 'memory_limit'" in str(e.value) and says in str(e.value), str(e.value)
    if value != "lots" and value is not True:
        assert "at least 512 MB" in str(e.value)


@pytest.mark.parametrize("value", ["auto", None, 0, "4GiB", 0.5, "600 MB", 8 * 10**9])
def test_memory_limits_that_work_pass(value):
    assert load_config({"type": "cpu", "memory_limit": value})["memory_limit"] == value


def test_a_scheduler_at_an_address_keeps_its_workers_own_limits():
    assert load_config({"type": "address", "address": "tcp://h:8786", "memory_limit": "1MB"})


def test_a_limit_above_the_machines_memory_is_one_line_for_all_workers(capsys):
    cfg = {"type": "cpu", "n_workers": 3, "threads_per_worker": 1, "processes": False,
           "memory_limit": "900TB", "dashboard_address": None}
    with dc.cluster(cfg, quiet=True) as client:
        limits = {w["memory_limit"] for w in client.scheduler_info()["workers"].values()}
    out, err = capsys.readouterr()
    assert len(limits) == 1 and limits.pop() < 900 * 10**12
    assert out.count("more than this machine's memory") == 1 and "Ignoring provided memory limit" not in err, (out, err)


def test_a_commands_cluster_that_does_not_close_in_time_does_not_hold_it(capsys, monkeypatch):
    from distributed import LocalCluster

    from distconv.session.interrupt import cli_policy

    real = LocalCluster.close
    asked = []

    def stuck(self, timeout=None):
        asked.append(timeout)
        real(self)
        raise TimeoutError  # as distributed's close raises when workers restart past its timeout

    monkeypatch.setattr(LocalCluster, "close", stuck)
    cfg = {"type": "cpu", "n_workers": 1, "threads_per_worker": 1, "processes": False, "dashboard_address": None}
    with cli_policy(), dc.cluster(cfg, quiet=True):
        pass
    assert asked and asked[0] is not None  # bounded
    assert "did not close within" in capsys.readouterr().err


_RELEASE = threading.Event()  # the in-process worker's tasks end once the test has its answer


def _held(i):
    _RELEASE.wait(60)
    return i


def test_a_commands_cluster_that_lost_every_worker_ends_its_wait_with_the_users_line(monkeypatch):
    import dask

    from distconv.engine.compute import compute
    from distconv.session import cluster as cluster_mod
    from distconv.session import failures
    from distconv.session.interrupt import cli_policy

    monkeypatch.setattr(cluster_mod, "NO_WORKERS_S", 0.5)
    cfg = {"type": "cpu", "n_workers": 1, "threads_per_worker": 1, "processes": False, "dashboard_address": None,
           "memory_limit": "600MB"}
    with cli_policy(), dc.cluster(cfg, quiet=True) as client:
        # the cluster's workers gone and none started again (as a nanny that gave up on a worker
        # killed for memory leaves it), while the tasks wait
        workers = dict(client.cluster.workers)
        threading.Timer(0.5, client.cluster.workers.clear).start()
        with pytest.raises(Exception) as e:
            compute([dask.delayed(_held)(i, dask_key_name=f"held-{i}") for i in range(2)], client, None)
        _RELEASE.set()
        client.cluster.workers.update(workers)  # closed with the cluster
    code, text = failures.explain(e.value, cluster=cfg)
    assert code == 2 and "workers died" in text and "'600MB'" in text, text
