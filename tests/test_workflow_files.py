"""What a workflow file and a cluster file mean, by rules a user can guess: paths relative to
the workflow file's own folder, ``~`` as a shell expands it, numbers that are numbers, errors
that name the file and list the allowed keys once."""

import os
from pathlib import Path

import numpy as np
import pytest
import yaml

import distconv as dc
from distconv import batch
from distconv.session.config import ClusterConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, doc) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def _doc(inp="in.zarr", out="out.zarr", **step):
    return {"input": {"path": inp, "synthetic": {"shape": [16, 16], "chunks": [8, 16]}},
            "steps": [{"op": "gaussian_filter", "sigma": 1.0, **step}], "outputs": {"path": out}}


def test_paths_resolve_against_the_workflow_files_own_folder_even_in_workflows(tmp_path):
    """A file in a folder named workflows/ reads its paths from that folder, as any other: a
    same-named array in the folder above is not used."""
    (tmp_path / "in.zarr").mkdir()  # would be taken (and refused: not distconv's) by the old rule
    wf = batch.load(_write(tmp_path / "workflows" / "wf.yaml", _doc()))
    assert wf.input["path"] == str(tmp_path / "workflows" / "in.zarr")
    assert wf.outputs["path"] == str(tmp_path / "workflows" / "out.zarr")


def test_the_ready_workflows_write_into_the_projects_demo_data(tmp_path):
    """Every file in workflows/, run from any folder, reads and writes in demo-data/ beside
    workflows/ (where the README and `make clean` say)."""
    for src in sorted((ROOT / "workflows").glob("*.yaml")):
        doc = yaml.safe_load(src.read_text())
        if "synthetic" in doc["input"]:
            n = len(doc["input"]["synthetic"]["shape"])
            doc["input"]["synthetic"].update(shape=[2, 16, 24][-n:], chunks=[1, 16, 24][-n:])
        wf = batch.load(_write(tmp_path / "workflows" / src.name, doc))
        files = wf.outputs.get("histogram") or {}
        paths = [wf.outputs["path"], wf.report, wf.input.get("path"), files.get("json"), files.get("png")]
        for p in filter(None, paths):
            assert Path(p).parent == tmp_path / "demo-data", (src.name, p)


def test_tilde_expands_as_a_shell_does(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    wf = batch.load(_write(tmp_path / "wf.yaml", _doc(inp="~/data/in.zarr", out="~/out.zarr")))
    assert wf.input["path"] == str(tmp_path / "home" / "data" / "in.zarr")
    assert wf.outputs["path"] == str(tmp_path / "home" / "out.zarr")
    assert not (tmp_path / "~").exists()
    user = __import__("pwd").getpwuid(os.getuid()).pw_name
    wf = batch.load(_write(tmp_path / "wf.yaml", _doc(out=f"~{user}/out.zarr")))
    assert wf.outputs["path"] == str(Path(os.path.expanduser(f"~{user}")) / "out.zarr")


def test_tilde_of_an_unknown_user_is_refused(tmp_path):
    with pytest.raises(batch.WorkflowError, match=r"outputs.path '~no_such_user_x/out.zarr' starts with '~' "
                                                  r"but '~no_such_user_x' names no user"):
        batch.load(_write(tmp_path / "wf.yaml", _doc(out="~no_such_user_x/out.zarr")))
    assert not (tmp_path / "~no_such_user_x").exists()


def test_an_empty_workflow_file_is_said_to_be_empty(tmp_path):
    for text in ("", "# nothing yet\n"):
        with pytest.raises(batch.WorkflowError, match=r"workflow '.*wf.yaml' is empty; it needs input, steps "
                                                      r"and outputs"):
            batch.load(_write(tmp_path / "wf.yaml", text))


@pytest.mark.parametrize("step, match", [
    ({"sigma": "2"}, r"step 1 \(gaussian_filter\): sigma must be a number, or one per axis, got '2'"),
    ({"sigma": [1.0, "2"]}, r"step 1 \(gaussian_filter\): sigma must be a number, or one per axis, "
                            r"got \[1.0, '2'\]"),
])
def test_numbers_given_as_text_are_refused_with_key_and_value(tmp_path, step, match):
    with pytest.raises(batch.WorkflowError, match=match):
        batch.load(_write(tmp_path / "wf.yaml", _doc(**step)))


def test_text_sigma_is_a_type_error_as_in_scipy():
    with pytest.raises(TypeError, match="sigma must be a number"):
        dc.gaussian_filter(np.ones((4, 4)), "2")
    with pytest.raises(TypeError, match="spacing must be a number"):
        dc.laplace(np.ones((4, 4)), spacing="1.0")


def test_unknown_keys_list_the_allowed_ones_once(tmp_path):
    doc = _doc()
    doc["outputs"] |= {"clusters": 3, "codex": "zstd"}
    with pytest.raises(batch.WorkflowError) as e:
        batch.load(_write(tmp_path / "wf.yaml", doc))
    msg = str(e.value)
    assert "outputs: unknown key 'clusters'" in msg and "outputs: unknown key 'codex' (did you mean 'codec'?)" in msg
    assert msg.count("allowed: chunks, codec, histogram, path") == 1


def test_a_default_cluster_yaml_is_named_in_its_errors(tmp_path, monkeypatch):
    """A ./cluster.yaml read by default (here a kubectl config): the error names it, each
    unknown key once, and the allowed keys once."""
    _write(tmp_path / "cluster.yaml", {"apiVersion": "v1", "clusters": [], "contexts": [], "kind": "Config"})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ClusterConfigError) as e:
        load_config()
    msg = str(e.value)
    assert msg.startswith("cluster config './cluster.yaml' (read by default: it is in the current folder): ")
    for key in ("apiVersion", "clusters", "contexts", "kind"):
        assert msg.count(f"unknown cluster key {key!r}") == 1
    assert msg.count("allowed keys:") == 1 and msg.count("n_workers") == 1


def test_a_named_cluster_file_is_named_in_its_errors(tmp_path):
    bad = _write(tmp_path / "c.yaml", "cluster:\n  tpye: cpu\n  n_workers: 0\n")
    with pytest.raises(ClusterConfigError, match=rf"^cluster config '{bad}': unknown cluster key 'tpye' "
                                                 r"\(did you mean 'type'\?\); allowed keys: .*; cluster key "
                                                 r"'n_workers' must be a positive integer, got 0$"):
        load_config(str(bad))
    broken = _write(tmp_path / "b.yaml", "cluster: [\n")
    with pytest.raises(ClusterConfigError, match=rf"^cluster config '{broken}' is not valid YAML"):
        load_config(str(broken))
    assert load_config(str(_write(tmp_path / "empty.yaml", "")))["type"] == "auto"


def test_one_did_you_mean_helper():
    """Every close-name hint comes from core.checks.did_you_mean: difflib is called nowhere else."""
    users = [p.relative_to(ROOT).as_posix() for p in (ROOT / "distconv").rglob("*.py")
             if "difflib" in p.read_text()]
    assert users == ["distconv/core/checks.py"]


@pytest.mark.parametrize("synth, said", [({"chunks": [8, 8]}, "input.synthetic: missing key 'shape'"),
                                         (None, "input.synthetic must be a mapping, got None")])
def test_a_synthetic_input_with_no_shape_is_said_once(tmp_path, synth, said):
    doc = _doc()
    doc["input"]["synthetic"] = synth
    with pytest.raises(batch.WorkflowError) as e:
        batch.load(_write(tmp_path / "wf.yaml", doc))
    assert str(e.value) == said


def test_steps_of_a_stored_input_are_still_checked(tmp_path):
    import zarr

    zarr.create_array(str(tmp_path / "in.zarr"), shape=(8, 8), chunks=(8, 8), dtype="float32")
    doc = _doc(sigma=-1.0)
    del doc["input"]["synthetic"]
    with pytest.raises(batch.WorkflowError, match=r"step 1 \(gaussian_filter\): sigma must be >= 0"):
        batch.load(_write(tmp_path / "wf.yaml", doc))
