"""cluster.yaml handling and the in-process CPU cluster."""

import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc
from distconv.cluster import ClusterConfigError, load_config

from .helpers import assert_matches


def test_defaults_bind_to_localhost():
    cfg = load_config({})
    assert cfg["host"] == "127.0.0.1" and cfg["dashboard_address"].startswith("127.0.0.1:")


def test_yaml_file_and_nested_cluster_key(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("cluster:\n  type: cpu\n  n_workers: 2\n")
    cfg = load_config(str(p))
    assert cfg["type"] == "cpu" and cfg["n_workers"] == 2


@pytest.mark.parametrize("cfg, match", [
    ({"typo_key": 1}, "unknown cluster key 'typo_key'"),
    ({"type": "gpu"}, "cluster key 'type' is 'gpu'"),
    ({"type": "address"}, "'address' is required"),
    ({"n_workers": 0}, "'n_workers' must be a positive integer"),
    ({"protocol": "http"}, "'protocol' is 'http'"),
    ({"tls": {"bogus": 1}}, "'tls' must be a mapping"),
])
def test_bad_config_names_key_and_value(cfg, match):
    with pytest.raises(ClusterConfigError, match=match):
        load_config(cfg)


def test_missing_file():
    with pytest.raises(ClusterConfigError, match="does not exist"):
        load_config("no/such/cluster.yaml")


def test_unreachable_address_is_one_clear_error():
    with pytest.raises(ClusterConfigError, match="cannot reach the scheduler"):
        with dc.cluster({"type": "address", "address": "tcp://127.0.0.1:1", "timeout": "1s"}, quiet=True):
            pass


def test_in_process_cluster_runs_a_filter(rng):
    import dask.array as da

    a = rng.standard_normal((64, 48)).astype(np.float32)
    cfg = {"type": "cpu", "n_workers": 2, "threads_per_worker": 1, "processes": False,
           "dashboard_address": "127.0.0.1:0"}
    with dc.cluster(cfg, quiet=True) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        got = dc.correlate(da.from_array(a, chunks=(16, 48)), np.ones((3, 3)), mode="wrap").compute()
    assert_matches(got, ndi.correlate(a, np.ones((3, 3)), mode="wrap"))


def test_second_run_at_once_takes_a_free_dashboard_port_with_one_line(capsys):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cfg = {"type": "cpu", "n_workers": 1, "threads_per_worker": 1, "processes": False,
               "dashboard_address": f"127.0.0.1:{port}"}
        with dc.cluster(cfg) as client:
            assert client.scheduler_info()["services"]["dashboard"] != port
    out = capsys.readouterr().out
    assert f"dashboard port {port} is in use" in out and f"127.0.0.1:{port}/" not in out
