"""Ctrl-C's one line says what is true of the output."""

import yaml


def test_ctrl_c_before_the_output_was_begun_says_nothing_of_it_was_written(tmp_path):
    """Interrupted while a synthetic input was written (the output not claimed yet): no
    "finished blocks are kept" where there are none."""
    from distconv.session import failures

    (tmp_path / "wf.yaml").write_text(yaml.safe_dump({
        "input": {"path": "in.zarr", "synthetic": {"shape": [64, 32], "chunks": [16, 32]}},
        "steps": [{"op": "uniform_filter", "size": 3}], "outputs": {"path": "out.zarr"}}))
    text = failures.interrupted_text(str(tmp_path / "wf.yaml"))
    assert text == (f"interrupted before {str(tmp_path / 'out.zarr')!r} was begun: nothing of it was written; "
                    "run the same command again"), text
