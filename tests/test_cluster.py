"""cluster.yaml handling and the in-process CPU cluster."""

import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc
from distconv.session.config import ClusterConfigError, load_config

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


@pytest.mark.parametrize("cfg", [{"type": "address", "address": "tcp://127.0.0.1:1"},
                                 {"type": "cpu", "processes": False},
                                 {"typo_key": 1}])
def test_warm_workers_does_nothing_without_local_worker_processes(cfg):
    """No server for a running scheduler, in-process workers, or a config the cluster itself
    will reject (its error then comes from there, naming the key)."""
    import multiprocessing.forkserver as fs

    from distconv.session.worker_imports import warm_workers

    before = fs._forkserver._forkserver_pid
    assert warm_workers(cfg) is False
    assert fs._forkserver._forkserver_pid == before


WARMED = """
import sys
from distconv.session.cluster import cluster
from distconv.session.worker_imports import warm_workers
import numpy as np, scipy.ndimage as ndi
if __name__ == "__main__":
    cfg = {"type": "cpu", "n_workers": 2, "threads_per_worker": 1, "dashboard_address": None}
    assert warm_workers(cfg)
    with cluster(cfg, quiet=True) as client:
        # forked from the warmed server: the block code is imported before any task ran
        print(sorted(set(client.run(lambda: "distconv.engine.job" in sys.modules).values())))
        import os  # a CPU cluster's workers see no GPU, so its blocks run on the CPUs on any node
        print(sorted(set(client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES")).values())))
        import dask.array as da
        import distconv as dc
        x = np.random.default_rng(3).standard_normal((67, 45)).astype(np.float32)
        w = np.random.default_rng(4).standard_normal((5, 3))
        got = dc.correlate(da.from_array(x, chunks=(20, 17)), w, mode="mirror").compute()
        print(np.abs(got - ndi.correlate(x, w, mode="mirror")).max() < 1e-4)
    # the server ended with the cluster (it held the command's stdout open past its exit)
    import multiprocessing.forkserver as fs
    print(fs._forkserver._forkserver_pid is None)
    with cluster(cfg, quiet=True) as client:  # a second cluster forks from a new server
        print(sorted(set(client.run(lambda: "distconv.engine.job" in sys.modules).values())))
    print(fs._forkserver._forkserver_pid is None)
"""


@pytest.mark.slow
def test_warmed_workers_fork_from_the_server_and_compute(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "warmed.py"
    script.write_text(WARMED)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split("\n")[:6] == ["[True]", "['']", "True", "True", "[True]", "True"], \
        res.stdout + res.stderr[-2000:]


@pytest.mark.parametrize("asked", [True, False])
def test_a_port_taken_between_the_look_and_the_bind_is_distconvs_line_not_dasks_warning(capsys, monkeypatch,
                                                                                       asked):
    import socket
    import warnings

    from distconv.session import local

    monkeypatch.setattr(local, "_free_dashboard", lambda address: address)  # taken after the look
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cfg = {"type": "cpu", "n_workers": 1, "threads_per_worker": 1, "processes": False,
               "dashboard_address": f"127.0.0.1:{port}" if asked else None}
        if not asked:  # no dashboard asked for: the HTTP server's own default port is the busy one
            import distributed.node

            start = distributed.node.ServerNode.start_http_server
            monkeypatch.setattr(distributed.node.ServerNode, "start_http_server",
                                lambda self, routes, address, default_port=0, **kw:
                                start(self, routes, address, default_port=port, **kw))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with dc.cluster(cfg, quiet=True):
                pass
    assert not [w for w in caught if "already in use" in str(w.message)], [str(w.message) for w in caught]
    out = capsys.readouterr().out
    assert (f"dashboard port {port} is in use; using port" in out) == asked, out


def test_a_script_without_a_main_guard_gets_one_line_saying_what_to_add(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "noguard.py"
    script.write_text("import distconv as dc\n\nwith dc.cluster({'type': 'cpu', 'n_workers': 1, "
                      "'dashboard_address': None}, quiet=True) as c:\n    print('ran')\n")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 1 and "ran" not in res.stdout, res.stderr
    assert res.stderr.count("\n") <= 1 and "Traceback" not in res.stderr, res.stderr
    assert f"{script}:3" in res.stderr and 'if __name__ == "__main__":' in res.stderr, res.stderr
    guarded = tmp_path / "guarded.py"
    guarded.write_text("import distconv as dc\n\nif __name__ == '__main__':\n    with dc.cluster({'type': 'cpu', "
                       "'n_workers': 1, 'dashboard_address': None}, quiet=True) as c:\n        print('ran')\n")
    res = subprocess.run([sys.executable, str(guarded)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 0 and "ran" in res.stdout, res.stderr


def test_distributeds_forkserver_preload_mark_is_set_while_our_server_runs(tmp_path):
    """Set while our server runs (distributed, forking its first worker, would otherwise import
    its optional packages, pandas among them, in this process to preload a server that already
    runs), given back after."""
    import subprocess
    import sys

    script = tmp_path / "mark.py"
    script.write_text(
        "import sys\nimport distconv as dc, distributed.utils as du\n"
        "if __name__ == '__main__':\n"
        "    before = du._forkserver_preload_set\n"
        "    with dc.cluster({'type': 'cpu', 'n_workers': 1, 'threads_per_worker': 1,\n"
        "                     'dashboard_address': None}, quiet=True) as c:\n"
        "        during, pandas = du._forkserver_preload_set, 'pandas' in sys.modules\n"
        "    print(before, during, du._forkserver_preload_set, pandas)\n")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "True", "False", "False"], res.stdout
