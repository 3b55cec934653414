"""dc.cluster() leaves the process as it found it: however its block ends (done, an error,
Ctrl-C raised in it or arriving mid-job), the SIGINT handler and signal mask, every logger's
level, filters and handlers, multiprocessing's forkserver and its preload list, os.environ and
dask's config are as they were before."""

import copy
import logging
import os
import signal
import threading

import pytest

import distconv as dc

PROCESSES = {"type": "cpu", "n_workers": 1, "threads_per_worker": 1, "dashboard_address": None}
THREADS = {**PROCESSES, "processes": False}


def _logger(lg) -> tuple:
    from distributed.utils import DequeHandler

    # a distributed server's own log buffer goes when the server is collected, which
    # distributed's own references delay past its close (a plain LocalCluster leaves it too)
    handlers = tuple(h for h in lg.handlers if not isinstance(h, DequeHandler))
    return lg.level, tuple(lg.filters), handlers, lg.disabled, lg.propagate


def _snapshot() -> dict:
    import multiprocessing.forkserver as fs

    import dask
    import distributed  # noqa: F401 - its loggers exist before the snapshot, as in any session

    loggers = {name: _logger(lg) for name, lg in list(logging.Logger.manager.loggerDict.items())
               if isinstance(lg, logging.Logger)}
    loggers[""] = _logger(logging.getLogger())
    return {
        "sigint": signal.getsignal(signal.SIGINT),
        "mask": signal.pthread_sigmask(signal.SIG_BLOCK, []),
        "loggers": loggers,
        "forkserver": (fs._forkserver._forkserver_pid, list(fs._forkserver._preload_modules)),
        "environ": dict(os.environ),
        "dask": copy.deepcopy(dask.config.config),
    }


def _assert_as_before(before: dict):
    after = _snapshot()
    changed = {name: (state, after["loggers"].get(name)) for name, state in before["loggers"].items()
               if after["loggers"].get(name) != state}
    assert not changed, changed
    for key in ("sigint", "mask", "forkserver", "environ", "dask"):
        assert after[key] == before[key], key


def _slow_job(client):
    """A job through the engine's compute, interrupted by a real SIGINT to the main thread
    while it waits (as a terminal's Ctrl-C arrives)."""
    import time

    import dask

    from distconv.engine.compute import compute

    main = threading.main_thread().ident
    timer = threading.Timer(1.0, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    try:
        compute(dask.delayed(time.sleep)(6), client, None)
    finally:
        timer.cancel()


@pytest.mark.slow
@pytest.mark.parametrize("config", [PROCESSES, THREADS], ids=["processes", "threads"])
@pytest.mark.parametrize("ending", ["done", "error", "interrupt", "interrupt mid-job"])
def test_the_process_is_left_as_found(config, ending):
    before = _snapshot()
    expected = {"done": None, "error": ValueError, "interrupt": KeyboardInterrupt,
                "interrupt mid-job": KeyboardInterrupt}[ending]
    with pytest.raises(expected) if expected else _nothing():
        with dc.cluster(config, quiet=True) as client:
            assert len(client.scheduler_info()["workers"]) == 1
            if ending == "error":
                raise ValueError("the user's error")
            if ending == "interrupt":
                raise KeyboardInterrupt
            if ending == "interrupt mid-job":
                _slow_job(client)
    _assert_as_before(before)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_next_interrupt_after_the_cluster_is_a_keyboard_interrupt_again():
    """After Ctrl-C closed a cluster, the process's next Ctrl-C raises KeyboardInterrupt (it
    ended a notebook's kernel with 130)."""
    with pytest.raises(KeyboardInterrupt):
        with dc.cluster(THREADS, quiet=True):
            raise KeyboardInterrupt
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert logging.getLogger("distributed").level < logging.CRITICAL


def test_only_the_cli_policy_keeps_the_logs_silent_and_exits_at_a_second_interrupt():
    from distconv.session.interrupt import cli_policy

    before = _snapshot()
    with cli_policy():
        with pytest.raises(KeyboardInterrupt):
            with dc.cluster(THREADS, quiet=True):
                raise KeyboardInterrupt
        # the command prints its one line and ends: until then a second Ctrl-C ends it at once
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        assert logging.getLogger("distributed").level > logging.CRITICAL
    _assert_as_before(before)


def test_a_forkserver_of_someone_elses_is_neither_used_nor_stopped():
    """A server this process already runs (the user's own multiprocessing) is not ours to
    preload or to end: the cluster's workers spawn instead."""
    import subprocess
    import sys

    script = (
        "import multiprocessing as mp, multiprocessing.forkserver as fs, os\n"
        "from distconv.session.forkserver import serving, start\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('forkserver')\n"
        "    ctx.set_forkserver_preload(['json'])\n"
        "    fs.ensure_running()\n"
        "    pid = fs._forkserver._forkserver_pid\n"
        "    with serving(['distconv'], {'DISTCONV_PROBE': '1'}) as ours:\n"
        "        print(ours, start(['distconv'], {}))\n"
        "    print(fs._forkserver._forkserver_pid == pid, fs._forkserver._preload_modules,\n"
        "          'DISTCONV_PROBE' in os.environ)\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:2] == ["False False", "True ['json'] False"], res.stdout


def test_the_warm_up_asked_of_a_running_scheduler_leaves_dask_config_alone():
    """It connects from a thread of its own beside the command's check: its client is not
    dask's default (one that failed to connect stayed so until it was collected)."""
    import gc

    import dask

    from distconv.session.worker_imports import warm_workers

    before = copy.deepcopy(dask.config.config)
    assert warm_workers({"type": "address", "address": "tcp://127.0.0.1:1", "timeout": "1s"}) is False
    for t in threading.enumerate():
        if t.name == "distconv-warmup":
            t.join(30)
    assert dask.config.config == before
    gc.collect()
    assert dask.config.config == before
