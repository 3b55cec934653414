"""A failed run says what the user can act on in one line (exit 2): a damaged input chunk, an
output that cannot be written, a full disk, workers out of memory; only our own bugs are the
internal-error text with a traceback. dask's logs of the failure go to the cluster's log, not
the terminal."""

import errno
import os
import subprocess
import sys

import numpy as np
import yaml
import zarr

from distconv.session import failures


def _store(tmp_path, x, chunks=(64, 200)):
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=x.shape, chunks=chunks, dtype=x.dtype)
    z[...] = x
    return tmp_path / "in.zarr"


def _damage(path):
    b = path.read_bytes()
    path.write_bytes(b[:len(b) // 2])
    return b


def test_a_damaged_chunk_is_named_and_the_run_finishes_once_it_is_mended(tmp_path):
    x = np.random.default_rng(0).standard_normal((256, 200)).astype(np.float32)
    inp = _store(tmp_path, x)
    good = _damage(inp / "c" / "2" / "0")
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump({
        "input": {"path": "in.zarr"}, "steps": [{"op": "gaussian_filter", "sigma": 1.0}],
        "outputs": {"path": "out.zarr"}}))
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"cluster": {
        "type": "cpu", "n_workers": 1, "threads_per_worker": 1, "processes": False,
        "dashboard_address": "127.0.0.1:0"}}))
    env = {**os.environ, "DASK_DISTCONV__CLUSTER_STATE": str(tmp_path / "state" / "cluster.json")}

    def run(*flags):
        return subprocess.run([sys.executable, "-m", "distconv.cli", "run", "wf.yaml", "--no-progress",
                               "--cluster", "cluster.yaml", *flags], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=300)

    res = run()
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert "in.zarr" in res.stderr and "'c/2/0'" in res.stderr and "--overwrite" in res.stderr, res.stderr
    assert "internal error" not in res.stderr
    log = (tmp_path / "state" / "run.log").read_text()
    assert "Compute Failed" in log and "incomplete frame" in log  # dask's own account: in the log
    (inp / "c" / "2" / "0").write_bytes(good)
    assert "--resume" in run("--resume").stderr  # a mended input is another input: refused, by name
    res = run("--overwrite")
    assert res.returncode == 0, res.stderr
    import scipy.ndimage as ndi

    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], ndi.gaussian_filter(x, 1.0),
                               rtol=1e-5, atol=1e-5)


def test_a_damaged_chunk_is_found_within_the_failed_blocks_rows(tmp_path):
    inp = _store(tmp_path, np.ones((256, 200), np.float32))
    _damage(inp / "c" / "3" / "0")
    e = OSError("incomplete frame")
    e.distconv_block = {"input": str(inp), "index": 1, "rows": (128, 256), "bytes": 102400}
    code, text = failures.explain(e, input_path=str(inp), output=str(tmp_path / "out.zarr"))
    assert code == 2 and "'c/3/0'" in text and "elements [192:256, 0:200]" in text, text


def test_a_full_disk_names_the_path_and_its_free_space(tmp_path):
    e = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out.zarr" / "c" / "0"))
    code, text = failures.explain(e, output=str(tmp_path / "out.zarr"))
    assert code == 2 and "no space left" in text and "out.zarr/c/0" in text and " free" in text, text
    assert "--resume" in text and "\n" not in text


def test_an_output_that_cannot_be_written_says_which_and_what_to_do(tmp_path):
    e = PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "out.zarr" / "c"))
    code, text = failures.explain(e, input_path=str(tmp_path / "in.zarr"), output=str(tmp_path / "out.zarr"))
    assert code == 2 and "writing the output" in text and "writable" in text and "--resume" in text, text
    e = PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "in.zarr" / "c" / "0"))
    code, text = failures.explain(e, input_path=str(tmp_path / "in.zarr"), output=str(tmp_path / "out.zarr"))
    assert code == 2 and "reading the input" in text, text


def test_workers_that_died_name_the_memory_limit_and_the_block_size():
    from distributed.scheduler import KilledWorker

    e = KilledWorker("distconv-gaussian-3", None, 3)
    e.distconv_block = {"input": "/data/in.zarr", "index": 3, "rows": (300, 400), "bytes": 2_500_000_000}
    code, text = failures.explain(e, cluster={"type": "cpu", "memory_limit": "200MB"}, log="/home/u/run.log")
    assert code == 2 and "'200MB'" in text and "2.5 GB" in text and "block 3" in text, text
    assert "/home/u/run.log" in text
    assert "memory_limit" in text and "\n" not in text


def test_our_own_bug_is_the_internal_error_with_its_traceback():
    try:
        raise KeyError("a bug deep in a worker")
    except KeyError as e:
        code, text = failures.explain(e, input_path="/data/in.zarr", output="/data/out.zarr")
    assert code == 1 and "internal error" in text and "Traceback" in text and "a bug deep" in text


def test_a_failed_compute_leaves_no_filter_on_a_users_own_clients_loggers():
    import logging

    import dask
    from distributed import Client, LocalCluster

    from distconv.engine.compute import compute

    def broken():
        raise ValueError("a failing block")

    before = list(logging.getLogger("asyncio").filters)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            Client(lc) as client:
        try:
            compute([dask.delayed(broken)(), dask.delayed(broken)()], client, None)
        except ValueError:
            pass
        else:
            raise AssertionError("the failure was not raised")
        assert logging.getLogger("asyncio").filters == before


def test_ctrl_c_after_the_run_finished_says_the_output_is_complete_not_resume(tmp_path):
    from distconv import batch

    _store(tmp_path, np.ones((64, 200), np.float32))
    wf = tmp_path / "wf.yaml"
    wf.write_text(yaml.safe_dump({"input": {"path": "in.zarr"}, "steps": [{"op": "gaussian_filter", "sigma": 1.0}],
                                  "outputs": {"path": "out.zarr"}}))
    assert failures.interrupted_text(str(wf)).startswith("interrupted before ")  # not begun: no --resume
    batch.run(batch.load(wf), progress=False)
    text = failures.interrupted_text(str(wf))
    assert "after the run finished" in text and "is complete" in text and "--resume" not in text, text


def test_ctrl_c_before_a_new_run_claims_an_old_complete_output_does_not_call_it_complete(tmp_path):
    """An output completed by an earlier command (here: another process's), interrupted before
    this command's run claimed it: not "complete" (it is the older run's output)."""
    _store(tmp_path, np.ones((64, 200), np.float32))
    wf = tmp_path / "wf.yaml"
    wf.write_text(yaml.safe_dump({"input": {"path": "in.zarr"}, "steps": [{"op": "gaussian_filter", "sigma": 1.0}],
                                  "outputs": {"path": "out.zarr"}}))
    done = subprocess.run([sys.executable, "-c", "import sys; from distconv import batch; "
                           f"batch.run(batch.load({str(wf)!r}), progress=False)"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = failures.interrupted_text(str(wf))
    assert "is complete" not in text and "--resume" in text, text


def test_a_damaged_chunk_outside_the_noted_rows_is_still_found(tmp_path):
    inp = _store(tmp_path, np.ones((256, 200), np.float32))
    _damage(inp / "c" / "0" / "0")
    e = OSError("incomplete frame")
    e.distconv_block = {"input": str(inp), "index": 3, "rows": (192, 256)}
    assert "'c/0/0'" in failures.explain(e)[1]


def test_a_failed_read_of_an_intact_input_is_not_called_damaged_and_keeps_the_blocks(tmp_path):
    """A read that failed for another reason (a connection reset on object storage) passes
    through the same codec pipeline: where every chunk decodes, the line says so and keeps the
    finished blocks (--resume), not --overwrite."""
    inp = _store(tmp_path, np.ones((256, 200), np.float32))
    fetch = compile("raise ConnectionResetError('connection reset by peer')",
                    "/site-packages/zarr/core/codec_pipeline.py", "exec")  # where zarr's reads run
    try:
        exec(fetch)
    except ConnectionResetError as raised:
        e = raised
    e.distconv_block = {"input": str(inp), "index": 1, "rows": (128, 256)}
    code, text = failures.explain(e, input_path=str(inp), output=str(tmp_path / "out.zarr"))
    assert code == 2 and "damaged" not in text and "--resume" in text and "--overwrite" not in text, text


def test_a_large_cluster_log_is_set_aside_as_the_next_command_starts(tmp_path, monkeypatch):
    from distconv.session import interrupt

    log = tmp_path / "run.log"
    log.write_text("small\n")
    with interrupt.logs_to(str(log)):
        pass
    assert log.read_text() == "small\n" and not (tmp_path / "run.log.1").exists()
    monkeypatch.setattr(interrupt, "LOG_KEEP_BYTES", 3)
    with interrupt.logs_to(str(log)):
        import logging

        logging.getLogger("distributed.worker").error("Compute Failed")
    assert (tmp_path / "run.log.1").read_text() == "small\n" and "Compute Failed" in log.read_text()


def test_a_run_overtaken_by_another_is_the_users_line_not_an_internal_error():
    from distconv.engine.marks import Superseded

    code, text = failures.explain(Superseded("'/d/in.zarr' was not marked complete: another run has claimed it since"))
    assert code == 2 and text.startswith("'/d/in.zarr' was not marked complete") and "internal" not in text


def test_the_python_faces_error_says_which_block_of_which_input(tmp_path):
    import dask.array as da

    import distconv as dc

    inp = _store(tmp_path, np.random.default_rng(1).standard_normal((256, 200)).astype(np.float32))
    _damage(inp / "c" / "3" / "0")
    lazy = dc.gaussian_filter(da.from_zarr(str(inp)), 1.0)
    with dc.cluster({"type": "cpu", "n_workers": 1, "threads_per_worker": 1, "processes": False,
                     "dashboard_address": None}, quiet=True):
        try:
            dc.to_zarr(lazy, str(tmp_path / "out.zarr"))
        except Exception as e:  # noqa: BLE001 - the decoder's own type
            err = e
        else:
            raise AssertionError("the damaged chunk was read")
    notes = " ".join(getattr(err, "__notes__", []))
    assert "distconv: in block" in notes and "in.zarr" in notes and "out.zarr" in notes, notes
    assert failures.explain(err)[0] == 2 and "'c/3/0'" in failures.explain(err)[1]


def _log_marker(text):
    import logging

    logging.getLogger("distributed.worker").error(text)


def test_a_commands_worker_processes_log_to_the_cluster_log_restarted_ones_too(tmp_path, capfd):
    import distconv as dc
    from distconv.session.interrupt import cli_policy

    import dask

    cfg = {"type": "cpu", "n_workers": 1, "threads_per_worker": 1, "dashboard_address": None}
    with dask.config.set({"distconv.cluster-state": str(tmp_path / "state" / "cluster.json")}), cli_policy(), \
            dc.cluster(cfg, quiet=True) as client:
        client.run(_log_marker, "first worker's line")
        client.restart()  # as a nanny starts a worker again after one died
        client.run(_log_marker, "restarted worker's line")
    log = (tmp_path / "state" / "run.log").read_text()
    assert "first worker's line" in log and "restarted worker's line" in log, log
    assert "worker's line" not in capfd.readouterr().err
