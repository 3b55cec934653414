"""What a run's summary says of its data: the type it read and the one it wrote."""

import numpy as np
import yaml
import zarr

from distconv import batch
from distconv.batch.report import run_lines


def _run(tmp_path, steps):
    x = (np.arange(64 * 32) % 251).reshape(64, 32).astype(np.uint8)
    zarr.create_array(str(tmp_path / "in.zarr"), shape=x.shape, chunks=(16, 32), dtype=x.dtype)[...] = x
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump({"input": {"path": "in.zarr"}, "steps": steps,
                                                      "outputs": {"path": "out.zarr"}}))
    return batch.run(batch.load(tmp_path / "wf.yaml"), progress=False)


def test_a_step_that_changes_the_dtype_is_shown_as_read_then_written(tmp_path):
    s = _run(tmp_path, [{"op": "cumsum", "axis": 0}])
    s.pop("timeline", None)  # the report's section only, no plot
    assert s["dtype"] == "uint64" and s["input_dtype"] == "uint8"  # "dtype": the output's, as ever
    assert "cumsum on (64, 32) uint8 -> uint64: " in batch.format_summary(s)
    assert run_lines(s, tmp_path, "t.png")[0] == "- cumsum on (64, 32) uint8 -> uint64"


def test_a_dtype_the_steps_keep_is_named_once(tmp_path):
    s = _run(tmp_path, [{"op": "uniform_filter", "size": 3}])
    assert "uniform_filter on (64, 32) uint8: " in batch.format_summary(s)

