"""Beyond one node, as a multi-node user runs it: a `dask scheduler` and two `dask worker`
processes (here on 127.0.0.1), cluster.yaml with `type: address`, `distconv run` end to end,
the output checked against scipy."""

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.ndimage as ndi
import zarr

from .helpers import hand_started


@pytest.fixture
def scheduler(tmp_path):
    with hand_started(tmp_path, 2) as address:
        yield address


@pytest.mark.slow
def test_workflow_on_a_running_scheduler_with_two_workers(tmp_path, scheduler):
    (tmp_path / "cluster.yaml").write_text(f"cluster:\n  type: address\n  address: {scheduler}\n")
    for name, steps, chunks in (("direct", "[{op: gaussian_filter, sigma: 1.5}]", "auto"),
                                ("scan", "[{op: cumsum, axis: 0}]", "auto"),
                                ("general", "[{op: gaussian_filter, sigma: 1.5, mode: wrap}]", "[16, 40]")):
        wf = tmp_path / f"{name}.yaml"
        wf.write_text(f"input: {{path: in.zarr, synthetic: {{shape: [80, 40], chunks: [16, 40]}}}}\n"
                      f"chunks: {chunks}\nsteps: {steps}\noutputs: {{path: {name}.zarr}}\n")
        res = subprocess.run([sys.executable, "-m", "distconv.cli", "run", str(wf), "--no-progress",
                              "--cluster", str(tmp_path / "cluster.yaml"), "--json", str(tmp_path / f"{name}.json")],
                             capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert res.returncode == 0, res.stderr
        assert json.loads((tmp_path / f"{name}.json").read_text())["path"] == {"scan": "direct"}.get(name, name)
        x = zarr.open_array(str(tmp_path / "in.zarr"), mode="r")[...]
        ref = {"direct": lambda: ndi.gaussian_filter(x, 1.5), "scan": lambda: np.cumsum(x, axis=0),
               "general": lambda: ndi.gaussian_filter(x, 1.5, mode="wrap")}[name]()
        np.testing.assert_allclose(zarr.open_array(str(tmp_path / f"{name}.zarr"), mode="r")[...], ref,
                                   rtol=1e-5, atol=1e-4)
    # the workers distconv did not start were asked to warm up (engine/prewarm.Warmup), each once
    from distributed import Client

    from distconv.engine import prewarm

    with Client(scheduler, timeout="30s") as c:
        plugins = c.run(lambda dask_worker: sorted(dask_worker.plugins))
        assert len(plugins) == 2 and all(prewarm.PLUGIN in names for names in plugins.values()), plugins


def test_the_python_face_asks_a_running_scheduler_s_workers_to_warm_up(scheduler):
    import distconv as dc
    from distconv.engine import prewarm

    with dc.cluster({"type": "address", "address": scheduler}, quiet=True) as client:
        plugins = client.run(lambda dask_worker: sorted(dask_worker.plugins))
    assert len(plugins) == 2 and all(prewarm.PLUGIN in names for names in plugins.values()), plugins
