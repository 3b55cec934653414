"""The reference: every public function (the registry's names, dc.to_zarr, dc.cluster,
dc.KMeans and its methods) and every accessor method has a numpydoc docstring (Parameters,
Returns, Examples) without benchmark figures, and its examples run as doctests on numpy
inputs (CPU only, a few seconds)."""

import doctest
import re

import numpy as np
import pytest
import xarray as xr

import distconv as dc
from distconv.ops import docs
from distconv.ops.registry import OPS
from distconv.xarray import DataArrayAccessor, DatasetAccessor


def _public() -> dict:
    out = {f"dc.{name}": getattr(dc, name) for name in dc.__all__}
    out["dc.KMeans.fit"] = dc.KMeans.fit
    out["dc.KMeans.predict"] = dc.KMeans.predict
    return out


def _accessor_methods() -> dict:
    xr.DataArray([0.0], dims=("x",)).distconv  # noqa: B018  (attaches the registry's methods)
    names = [name for name, op in OPS.items() if op.named is not None] + ["to_zarr"]
    out = {f"DataArray.distconv.{n}": getattr(DataArrayAccessor, n) for n in names}
    out.update({f"Dataset.distconv.{n}": getattr(DatasetAccessor, n) for n in names})
    return out


PUBLIC = _public()
ACCESSOR = _accessor_methods()
DOCUMENTED = {**PUBLIC, **ACCESSOR}

# A benchmark figure: a time or a rate with its number, a card, the benchmark log.
FIGURES = re.compile(r"\b\d+(\.\d+)?\s?(ms|us|µs|ns|GB/s|GiB/s|MB/s|TB/s)\b|\b[AH]100\b|\bH200\b"
                     r"|NOTES|PERF\.md|% of copy|speed-?up")


def _sections(doc: str) -> set:
    return set(re.findall(r"^\s*([A-Z][A-Za-z ]+)\n\s*-{3,}\s*$", doc, flags=re.MULTILINE))


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_numpydoc_sections_and_no_figures(name):
    doc = DOCUMENTED[name].__doc__
    assert doc, f"{name} has no docstring"
    # a context manager yields its client; a class documents its attributes
    given = {"dc.cluster": "Yields", "dc.KMeans": "Attributes"}.get(name, "Returns")
    missing = {"Parameters", given, "Examples"} - _sections(doc)
    assert not missing, f"{name}'s docstring lacks {sorted(missing)}"
    assert not FIGURES.search(doc), f"{name}'s docstring holds a benchmark figure: " \
                                    f"{FIGURES.search(doc).group(0)!r} (README and NOTES hold them)"
    assert not re.search(r"^\s*\{\w+\}\s*$", doc, flags=re.MULTILINE), f"{name}: a placeholder left unfilled"


def _globs() -> dict:
    return {"np": np, "dc": dc, "xr": xr}


# The DataArray and Dataset accessors share each method's docstring: run its examples once.
RUN = {**PUBLIC, **{n: f for n, f in ACCESSOR.items() if n.startswith("DataArray.")}}


@pytest.mark.parametrize("name", sorted(RUN))
def test_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write a store write it here
    tests = doctest.DocTestFinder(recurse=False).find(RUN[name], name, globs=_globs())
    assert tests and any(t.examples for t in tests), f"{name} has no examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = []
    with np.printoptions(legacy=False):
        for t in tests:
            runner.run(t, out=out.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(out)


def test_fill_puts_each_piece_at_its_placeholder_and_leaves_other_braces():
    doc = """Summary.

    Parameters
    ----------
    {x}
        More about x.
    sigma : float or dict {dim: float}

    Examples
    --------
    >>> {"a": 1}
    {'a': 1}
    """
    out = docs.filled(doc)
    assert "    x : array_like\n        A numpy, cupy, dask or xarray array" in out
    assert "``numpy.asarray``).\n        More about x." in out
    assert "sigma : float or dict {dim: float}" in out and ">>> {\"a\": 1}" in out
    assert docs.filled(None) is None
