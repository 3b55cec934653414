"""The client's wait for its workers' warm-up (engine/prewarm.wait), on the CPU: the warm-up
replaced by a sleep, on an in-process worker and on a hand-started one (`type: address`)."""

import threading
import time

import pytest
from distributed import Client, LocalCluster

from distconv.engine import prewarm

from .helpers import hand_started


@pytest.fixture
def fresh(monkeypatch):
    """This process as a worker no warm-up was asked of yet (in-process workers share it)."""
    monkeypatch.setattr(prewarm, "_ended", None)


@pytest.fixture
def client(fresh):
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            Client(lc) as c:
        yield c


def test_the_wait_returns_once_the_warm_up_has_ended(client, monkeypatch):
    monkeypatch.setattr(prewarm, "warm", lambda *imports: time.sleep(1.0))
    prewarm.register(client)
    assert not prewarm._ended.is_set()
    start = time.monotonic()
    waited = prewarm.wait(client, 10)
    assert prewarm._ended.is_set() and time.monotonic() - start >= 0.9
    assert len(waited) == 1 and all(s is not None for s in waited.values()), waited


def test_a_worker_without_a_warm_up_answers_at_once(client):
    start = time.monotonic()
    waited = list(prewarm.wait(client, 10).values())
    assert len(waited) == 1 and waited[0] < 0.1, waited
    assert time.monotonic() - start < 1.0 and prewarm._ended is None


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_warm_up_that_raises_still_ends_the_wait(client, monkeypatch):
    def fails(*imports):
        time.sleep(0.3)
        raise RuntimeError("no GPU after all")

    monkeypatch.setattr(prewarm, "warm", fails)
    prewarm.register(client)
    start = time.monotonic()
    assert all(s is not None for s in prewarm.wait(client, 10).values())
    assert prewarm._ended.is_set() and time.monotonic() - start < 5


def test_the_plugin_hands_its_workers_the_modules_to_import_first(client, monkeypatch):
    """What distconv's own workers import before they fork, a hand-started worker imports in
    its warm-up: the plugin carries the names, warm imports them (an unknown one is skipped)."""
    import sys

    got = []
    monkeypatch.setattr(prewarm, "warm", lambda *imports: got.append(imports))
    prewarm.register(client, ("json",), ("gpu.only",), ("cpu.only",))
    prewarm.wait(client, 10)
    assert got == [(("json",), ("gpu.only",), ("cpu.only",))]
    sys.modules.pop("colorsys", None)
    monkeypatch.undo()
    prewarm.warm(("colorsys", "no_such_module_here"))
    assert "colorsys" in sys.modules


def test_the_wait_is_bounded(client, monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(prewarm, "warm", lambda *imports: release.wait(30))
    prewarm.register(client)
    try:
        start = time.monotonic()
        assert list(prewarm.wait(client, 0.3).values()) == [None]  # still warming
        assert time.monotonic() - start < 3
    finally:
        release.set()


def test_a_disabled_warm_up_counts_as_ended(fresh):
    import dask

    with dask.config.set({"distconv.prewarm": False}):
        prewarm.dask_setup(None)
    assert prewarm._ended.is_set()


# A hand-started worker whose warm-up (the plugin cluster() registers) takes 1.5 s
SLOW_WARMUP = """
import time
from distconv.engine import prewarm

def dask_setup(worker):
    prewarm.warm = lambda *imports: time.sleep(1.5)
"""


@pytest.fixture
def scheduler(tmp_path):
    """A `dask scheduler` and one `dask worker` started by hand, its warm-up slow."""
    (tmp_path / "slow_warmup.py").write_text(SLOW_WARMUP)
    with hand_started(tmp_path, 1, "--preload", str(tmp_path / "slow_warmup.py")) as address:
        yield address


def test_cluster_on_an_address_waits_for_its_workers_warm_up(scheduler):
    import distconv as dc

    def ended():
        from distconv.engine import prewarm

        return prewarm._ended is not None and prewarm._ended.is_set()

    with dc.cluster({"type": "address", "address": scheduler}, quiet=True) as client:
        assert list(client.run(ended).values()) == [True]  # not while its 1.5 s were running
        # the scheduler loaded the job placement's plugin as the client connected (a scheduler
        # started by hand imports distconv's engine for it: that was inside the first job)
        plugins = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.plugins))
        assert "distconv-loose-restrictions" in plugins
