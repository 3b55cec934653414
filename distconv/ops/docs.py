"""The numpydoc text the public ops share, written once.

A docstring names a shared piece by a line that holds only ``{key}`` (a key of ``SHARED``);
ops that differ in a few words share one docstring template (``twin``);
``fill`` (a decorator) replaces each such line with the piece, indented as the line was, and
leaves everything else alone (braces elsewhere, ``{dim: value}``, dict literals, are text).
Lines under the placeholder indented deeper continue the piece's last entry::

    @docs.fill
    def uniform_filter(x, size=3, mode="reflect", ...):
        '''Uniform (box-mean) filter.

        Parameters
        ----------
        {x}
        size : int or sequence of int
            ...
        {modes}
        '''
"""

from __future__ import annotations

import string
import textwrap


def _entry(head: str, *lines: str) -> str:
    """A numpydoc entry: ``head``, then ``lines`` indented under it."""
    return "\n".join([head, *("    " + line if line else "" for line in "\n".join(lines).split("\n"))])


MODE_NAMES = """\
How the input extends beyond its edges, with scipy.ndimage's names (the input
``a b c d``): 'reflect' ``d c b a | a b c d | d c b a``, 'constant'
``k k k k | a b c d | k k k k`` (k is ``cval``; the zero "ghost cells" of the
classic GPU kernels), 'nearest' ``a a a a | a b c d | d d d d``, 'mirror'
``d c b | a b c d | c b a``, 'wrap' ``a b c d | a b c d | a b c d``. The aliases
'grid-constant', 'grid-mirror' and 'grid-wrap' name 'constant', 'reflect' and 'wrap'."""

KINDS = """\
Of the input's kind: numpy in, numpy out; cupy in, cupy out (run on its GPU); dask
in, a lazy dask array out (nothing computed until asked; the same numbers for every
chunking); xarray in, xarray out with its dims, coords, attrs and name."""

RESULT = "out : ndarray, cupy.ndarray, dask.array.Array or xarray.DataArray"

SHARED = {
    # ---- the input and what comes back ----------------------------------------------------
    "x": _entry("x : array_like",
                "A numpy, cupy, dask or xarray array (a list is read with ``numpy.asarray``)."),
    "returns": _entry(RESULT, KINDS),
    "returns_filter": _entry(RESULT, "The filtered array, of ``x``'s shape and dtype (or ``output``'s).",
                             KINDS, "Given an ``output`` array, that array, filled."),
    # ---- the boundary ---------------------------------------------------------------------
    "mode": _entry("mode : {'reflect', 'constant', 'nearest', 'mirror', 'wrap'}, optional", MODE_NAMES),
    "mode_names": MODE_NAMES,
    "modes": _entry("mode : str or sequence of str, optional",
                    "One mode, or one per filtered axis (in the order of ``axes``).", MODE_NAMES),
    "cval": _entry("cval : scalar, optional",
                   "The value beyond the edges where ``mode`` is 'constant'. Default 0.0."),
    "origin": _entry("origin : int or sequence of int, optional",
                     "Where the window sits over each element: 0 (default) centres it, a positive",
                     "value shifts it to the left, a negative one to the right (scipy's rule); one",
                     "value, or one per axis."),
    # ---- axes -----------------------------------------------------------------------------
    "axes": _entry("axes : int or sequence of int, optional",
                   "The axes to filter along (default: every axis); the per-axis arguments follow",
                   "the order given here, and the other axes are left alone."),
    "axis": _entry("axis : int, optional", "The axis to filter along. Default -1 (the last)."),
    # ---- scipy's extras -------------------------------------------------------------------
    "output": _entry("output : dtype or ndarray, optional",
                     "The result's dtype (default: the input's), or, for a numpy or cupy input, an",
                     "array of ``x``'s shape and kind to fill and return (scipy's ``output=``)."),
    "truncate": _entry("truncate : float, optional",
                       "Cut the Gaussian at this many standard deviations: its radius is",
                       "``int(truncate * sigma + 0.5)``. Default 4.0."),
    "radius": _entry("radius : int or sequence of int, optional",
                     "The Gaussian's radius in elements, instead of the one ``truncate`` gives; one",
                     "value, or one per axis."),
    "nan_policy_smooth": _entry(
        "nan_policy : {'propagate', 'omit'}, optional",
        "'propagate' (default): NaN spreads as scipy's arithmetic spreads it. 'omit': each",
        "window's weighted mean of its non-NaN values (normalized convolution), NaN only",
        "where a window holds none (gaps narrower than the window are filled); it needs",
        "``order=0`` and no ``output``."),
    "nan_policy_rank": _entry(
        "nan_policy : {'propagate', 'omit'}, optional",
        "'propagate' (default): a window holding a NaN gives NaN, as ``np.min`` and",
        "``np.median``. 'omit' (float data): ``np.nanmin``, ``np.nanmedian`` and",
        "``np.nanpercentile`` of each window (a mean of the two middle values, an",
        "interpolated percentile); NaN only where a window holds nothing else."),
    "size": _entry("size : int or sequence of int, optional",
                   "The box: its length along every filtered axis, or one length per axis (of",
                   "``axes``). Give ``size`` or ``footprint``."),
    "footprint": _entry("footprint : array_like of bool, optional",
                        "The window's shape, True where an element takes part (one axis per filtered",
                        "axis); instead of ``size``, which it overrides. A footprint of all True is",
                        "the box of its shape."),
    "allow_rechunk": _entry("allow_rechunk : bool, optional",
                            "dask input only: chunks thinner than the filter's reach are merged with a",
                            "warning (default True); False raises ValueError instead."),
    # ---- errors (the text under a ValueError / TypeError entry of Raises) -----------------
    "raises_value": """\
An unknown ``mode``, an ``origin`` outside the window, a 0-d ``x``, an axis out of
range or repeated, a per-axis argument of the wrong length, or, with
``allow_rechunk=False``, dask chunks thinner than the filter's reach.""",
    "raises_type": """\
``x`` of a dtype distconv does not process (float16, object, strings; complex where
the filter takes none), a non-numeric argument, or an ``output`` array for a dask or
xarray input.""",
    # ---- notes ----------------------------------------------------------------------------
    "nan_rule": """\
NaN: scipy leaves the order of NaN unspecified, and its result then depends on where
its scan starts (so on the chunking). distconv's rule, the same on every backend and
chunking, is numpy's: with ``nan_policy='propagate'`` a window holding a NaN gives NaN,
and windows without NaN give scipy's numbers; with 'omit' every window of float data gives
numpy's nan-function of its non-NaN values (np.nanmin, np.nanmedian, np.nanpercentile).""",
    "halo": """\
A dask input runs as one task per chunk that reads its neighbours' edges (the halo) in
place; consecutive distconv filters on one dask array fuse into one task per chunk, and
``dc.to_zarr`` runs them on the engine, one task per block from read to write.""",
    # ---- the accessors (ops/named.py and the named_* modules it gathers) -------------------
    # ---- reductions -----------------------------------------------------------------------
    "reduce_axis": _entry("axis : int or sequence of int, optional",
                          "The axes to reduce; None (default) reduces every axis."),
    "keepdims": _entry("keepdims : bool, optional",
                       "Keep the reduced axes, with length 1 (numpy, cupy and dask inputs). Default False."),
    "returns_reduced": _entry("out : scalar or array",
                              "numpy in: a numpy scalar (every axis reduced) or array; cupy in: a cupy array; dask",
                              "in: a lazy dask array (0-d when every axis is reduced); xarray in: a DataArray without",
                              "the reduced dims, its attrs kept."),
    "raises_reduce_type": _entry("TypeError",
                                 "``x`` of a dtype distconv does not process (complex, float16, object, strings), a",
                                 "``dtype`` that cannot hold the result, or a non-integer ``axis``."),
    "returns_named": _entry(
        "out : xarray.DataArray or xarray.Dataset",
        "The result with the array's dims, coords, attrs and name: lazy on dask-backed",
        "data, on the GPU for cupy-backed data. On ``ds.distconv`` (a Dataset), each data",
        "variable having every dim the call names is transformed and the others pass",
        "through unchanged."),
    "dim_mode": _entry("mode : str, sequence of str or dict {dim: str}, optional",
                       "One mode for every dim, one per dim (in the order the call names them), or",
                       "``{dim: mode}`` (the dims it leaves out take the default).", MODE_NAMES),
    "dim_one_mode": _entry("mode : str, or dict {dim: str} giving every dim the same, optional",
                           "One mode, as the scipy filter takes one; differing modes are refused.",
                           MODE_NAMES),
    "dim_cval": _entry("cval : float, or dict {dim: float} giving every dim the same, optional",
                       "The value beyond the edges where ``mode`` is 'constant' (one value, as",
                       "scipy takes one). Default 0.0."),
    "dim_origin": _entry("origin : int, sequence of int or dict {dim: int}, optional",
                         "Where the window sits over each element: 0 (default) centres it, a",
                         "positive value shifts it toward the start of the dim (scipy's rule); one",
                         "value, one per dim or ``{dim: origin}``."),
    "dim_size": _entry("size : int, sequence of int or dict {dim: int}, optional",
                       "The box: one length for every dim, one per dim, or ``{dim: length}``",
                       "(filtering those dims alone). Give ``size`` or ``footprint``."),
    "dim_footprint": _entry("footprint : array_like of bool or xarray.DataArray, optional",
                            "The window's shape instead of ``size``: an array spans every dim of the",
                            "data, in its order; a DataArray of bools spans its own dims (filtering",
                            "those alone)."),
    "raises_named": """\
A dim that is not one of the array's, a dim named twice, a per-dim value of the wrong
length, an unknown ``mode``, or any error of the positional function (whose checks
all run before any work).""",
}
# the Returns and Raises sections most accessor methods share, as one piece
SHARED["outcome_named"] = "\n".join(["Returns", "-------", SHARED["returns_named"], "", "Raises", "------",
                                      _entry("ValueError", SHARED["raises_named"])])


def twin(template: str, **words):
    """A decorator giving ``func`` the docstring ``template`` with its ``$word`` tokens set
    from ``words`` (string.Template), then the shared pieces filled: ops that differ in a few
    words (minimum and maximum, sum and prod) read one text, written once. Give ``$examples``
    (each op's own doctests, indented as the docstring's lines) as a word too."""
    def decorate(func):
        func.__doc__ = filled(string.Template(template).substitute(words))
        return func
    return decorate


def fill(func):
    """Put the shared pieces into ``func``'s docstring (each line that holds only ``{key}``
    of ``SHARED``) and return ``func`` itself."""
    func.__doc__ = filled(func.__doc__)
    return func


def filled(doc: str | None) -> str | None:
    """``doc`` with its placeholder lines replaced (None under ``python -OO`` stays None)."""
    if doc is None:
        return None
    out = []
    for line in doc.split("\n"):
        key = line.strip()
        if key.startswith("{") and key.endswith("}") and key[1:-1] in SHARED:
            indent = line[:len(line) - len(line.lstrip())]
            out.append(textwrap.indent(SHARED[key[1:-1]], indent))
        else:
            out.append(line)
    return "\n".join(out)
