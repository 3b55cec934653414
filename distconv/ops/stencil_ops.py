"""The stencil machinery every filter shares: a filter is a Stencil (a per-block function with a
halo depth); numpy/cupy in -> the backend on the whole array, dask in -> one halo task per chunk
(graph.halo, consecutive stencils fused), a planned array (core.planned) -> the same fused step,
planned; xarray in -> the same on its data; scipy's ``output=``, complex inputs and
``nan_policy``. Arguments are checked before anything runs."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

import numpy as np

from .. import backends
from ..core import checks
from ..core.arrays import on_data
from ..core.modes import one_mode
from ..core.planned import NotPlannable, Planned
from ..core.stencil import Stencil, chained, passes_depth
from ..graph.declared import declared, fusing

# Consecutive stencils on a dask array fuse when the graph is built: the second one runs on
# the first one's input with the summed halo, one task per chunk, no intermediate array in the
# graph (graph.declared.fusing: dask config ``distconv.fuse``, read when an op is called).


def _filter(x, func, depth: tuple, mode, name: str, allow_rechunk: bool, dtype=None):
    """``func`` (tile -> centre) over ``x``: the backend on a whole numpy/cupy array, one halo
    task per chunk on dask. ``dtype``: of the result (None: x's)."""
    st = Stencil(func, tuple(depth), mode, name, None if dtype is None else np.dtype(dtype))

    def run(data):
        if checks.array_kind(data) in ("dask", "planned"):
            return apply_stencil(data, st, allow_rechunk)
        return func(data)

    return on_data(x, run)


def fused_source(data):
    """(the array a dask stencil result was computed from, the stencil), as its graph layer
    declares them (graph.declared), or None."""
    return declared(data, Stencil) if fusing() else None


def apply_stencil(data, st: Stencil, allow_rechunk: bool = True, per_chunk=None, out_func=None,
                  dtype=None, bins=None):
    """``st`` over a dask array as one halo task per chunk, fused with the stencil that made
    ``data`` when there is one; over a planned array (core.planned), the same fused step,
    planned. ``per_chunk``/``out_func``: reduce each chunk's result with ``out_func`` to a small
    array of that shape instead (a fused histogram; ``bins`` = (edges, uniform) when
    ``out_func`` counts into them, so a step that can count its own result does)."""
    prev = fused_source(data)
    source = data
    if prev is not None and prev[1].periodic == st.periodic:
        source, st = prev[0], _fused(prev[1], st)
    if checks.array_kind(data) == "planned":
        if out_func is not None or not allow_rechunk:  # (dask's chunks decide whether it may run)
            raise NotPlannable("a stencil reduced per chunk, or held to its input's chunks")
        return Planned(data.shape, dtype or st.result_dtype(source.dtype), source, st)
    from ..graph.halo import map_halo

    if out_func is None:
        func = st.func
    elif bins is not None and isinstance(st.func, _Pair):
        func = replace(st.func, bins=bins)
    else:
        func = _Then(st.func, out_func)
    return map_halo(source, func, st.depth, st.periodic, st.name, dtype or st.result_dtype(source.dtype),
                    allow_rechunk, per_chunk=per_chunk, made_of=None if per_chunk else (source, st))


def _joined(a: str, b: str) -> str:
    return a + "-" + b.removeprefix("distconv-")


def _fused(a: Stencil, b: Stencil) -> Stencil:
    """``a`` then ``b`` as one stencil (fused_chain)."""
    return fused_chain([a, b], _joined(a.name, b.name))


def fused_chain(stencils: list[Stencil], name: str | None = None) -> Stencil:
    """core.stencil.chained of ``stencils``, where separable passes followed by an N-D correlate
    (gaussian -> laplace) become one backend call, which the CUDA backend runs as one kernel."""
    steps: list[Stencil] = []
    for st in stencils:
        pair = _Pair.of(steps[-1].func, st.func) if steps else None
        if pair is None:
            steps.append(st)
        else:
            prev = steps.pop()
            steps.append(replace(chained([prev, st], _joined(prev.name, st.name)), func=pair))
    return chained(steps, name) if len(steps) > 1 else replace(steps[0], name=name or steps[0].name)


@dataclass(frozen=True)
class _Pair:
    """backends.correlate_pair with the keywords of a correlate_passes step and a correlate
    step (same result as the two chained); ``bins``: count the result instead (picklable)."""

    first: dict
    second: dict
    bins: tuple | None = None

    @classmethod
    def of(cls, f, g) -> "_Pair | None":
        """The pair of two declared steps (backends.Call), a correlate_passes then a correlate
        of one dtype; else None."""
        def params(step, name):
            return step.params if isinstance(step, backends.Call) and step.name == name else None

        first, second = params(f, "correlate_passes"), params(g, "correlate")
        if first is None or second is None or not _same_dtype(first.get("dtype"), second.get("dtype")):
            return None
        return cls(first, second)

    @property
    def accepts_out(self) -> bool:
        return self.bins is None

    def __call__(self, tile, out=None):
        f, g = self.first, self.second
        return backends.correlate_pair(tile, f["passes"], f["mode"], f["cval"], g["weights"], g["mode"],
                                       g["cval"], g["origin"], f.get("dtype"), self.bins, out=out)


def _same_dtype(a, b) -> bool:
    """Do two steps' ``dtype`` keywords (None: the step's input dtype) ask for the same result?
    Not ``a == b``: numpy reads None as float64, so ``None == np.dtype("f8")`` holds, and a
    step that keeps its input's dtype would pair with one that widens to float64."""
    if a is None or b is None:
        return a is None and b is None
    return np.dtype(a) == np.dtype(b)


class _Then:
    """g(f(tile)): a stencil's block handed to a per-chunk reduction (picklable)."""

    def __init__(self, f, g):
        self.f, self.g = f, g

    def __call__(self, tile):
        return self.g(self.f(tile))


# ---- scipy's output= and complex inputs, shared by every filter ------------------------------

def _is_array(a) -> bool:
    return not isinstance(a, (type, np.dtype, str)) and hasattr(a, "shape") and hasattr(a, "dtype")


def output_dtype(output, x):
    """The result dtype ``output=`` asks for (None: the input's), checked before any work:
    a dtype, or (numpy/cupy input) an array of the input's shape and kind to fill."""
    if output is None:
        return None
    if _is_array(output):
        kind = checks.array_kind(x)
        if kind not in ("numpy", "cupy") or checks.array_kind(output) != kind:
            raise TypeError(f"output= takes an array only for a numpy or cupy input of the same "
                            f"kind (got a {checks.array_kind(output)} output for a {kind} input); "
                            f"pass a dtype instead")
        if tuple(output.shape) != tuple(x.shape):
            raise checks.OutputShapeError(f"output has shape {tuple(output.shape)}, the input "
                                          f"{tuple(x.shape)}")
        return np.dtype(output.dtype)
    try:
        dt = np.dtype(output)
    except TypeError:
        raise TypeError(f"output must be None, a dtype or an array, got {output!r}") from None
    checks.as_array(np.empty(0, dt), "output", checks.SUPPORTED_KINDS + "c")
    return dt


def deliver(result, output):
    """scipy's output= array: filled in place and returned; otherwise the result."""
    if output is None or not _is_array(output):
        return result
    output[...] = result
    return output


NAN_POLICIES = ("propagate", "omit")


def nan_policy_of(nan_policy) -> str:
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be 'propagate' (NaN spreads as scipy's arithmetic spreads "
                         f"it) or 'omit' (NaN ignored), got {nan_policy!r}")
    return nan_policy


def normalized(x, filt, mode, cval):
    """nan_policy='omit' of a smoothing filter ``filt(data, cval)``: each window's weighted
    mean of its non-NaN values, by normalized convolution, filt(x with NaN as 0) / filt(1
    where x is a number); NaN where a window holds none (gaps narrower than the window are
    filled: mask the result again to keep them). Beyond a constant edge, cval counts as a
    value unless it is NaN. Lazy on dask, on the device for cupy, dims kept for xarray."""
    x = checks.as_array(x)
    if np.dtype(x.dtype).kind != "f":
        return filt(x, cval)
    edge = 0.0 if (np.isnan(cval) or "constant" not in np.atleast_1d(mode)) else 1.0

    def run(d):
        valid = ~np.isnan(d)
        num = filt(np.where(valid, d, d.dtype.type(0)), 0.0 if np.isnan(cval) else cval)
        den = filt(valid.astype(d.dtype), edge)
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan).astype(num.dtype)

    return on_data(x, run)


def linear(x, weights, cval, output, run, conjugate: bool = False):
    """A linear filter with scipy's output= and complex support: ``run(x, weights, cval,
    dtype)`` on real data; a complex input or mask runs as real ones on the parts (as scipy
    does; a correlation conjugates the mask, as numpy.correlate)."""
    x = checks.as_array(x, kinds=checks.SUPPORTED_KINDS + "c")
    dt = output_dtype(output, x)
    cx = np.dtype(x.dtype).kind == "c"
    cw = weights is not None and np.iscomplexobj(weights)
    if not (cx or cw or (dt is not None and dt.kind == "c")):
        return deliver(run(x, weights, cval, dt), output)
    if not isinstance(cval, numbers.Number) or (np.iscomplexobj(cval) and not cx):
        raise ValueError(f"cval must be a number (complex only for a complex input), got {cval!r}")
    cdt = dt or np.promote_types(x.dtype, np.complex64)
    part = np.empty(0, cdt).real.dtype
    c = complex(cval)
    if cw:
        w = np.conj(weights) if conjugate else weights
        wr, wi = np.real(w), np.imag(w)
    else:
        wr, wi = weights, None

    def parts(d):
        xr, xi = (d.real, d.imag) if cx else (d, None)
        re = run(xr, wr, c.real, part)
        im = [run(xr, wi, c.real, part)] if wi is not None else []
        if xi is not None:
            if wi is not None:
                re = re - run(xi, wi, c.imag, part)
            im.append(run(xi, wr, c.imag, part))
        return (re + 1j * sum(im) if im else re).astype(cdt)

    return deliver(on_data(x, parts), output)


def expand_mask(x, mask, origin, axes, name: str):
    """scipy's ``axes=``: a mask over ``axes`` (its dims in the array's order) grown to every
    axis with size 1 elsewhere; origins (given per entry of ``axes``) spread likewise."""
    ax = checks.axes_in_order(axes, x.ndim)
    if mask.ndim != len(ax):
        want = f"the input's {x.ndim}" if axes is None else f"{len(ax)} (one per entry of axes)"
        raise ValueError(f"{name} must have {want} dimensions, got shape {mask.shape}")
    if len(ax) == x.ndim:  # as scipy: origins then follow the array's axes, not ``axes``
        return mask, checks.origins(origin, mask.shape)
    org = checks.origins(origin, tuple(mask.shape[sorted(ax).index(a)] for a in ax))
    full = mask.reshape(checks.spread(mask.shape, sorted(ax), x.ndim, 1))
    return full, checks.spread(org, ax, x.ndim, 0)


def passes_filter(x, passes, modes, cval, name, allow_rechunk, dtype=None):
    """1-D masks ``passes`` = [(axis, weights, origin), ...] run in order, each intermediate in
    the result's dtype (scipy's chained 1-D filters); ``modes``: one, or one per axis."""
    modes = one_mode(modes)
    func = backends.correlate_passes.bind(passes=passes, mode=modes, cval=cval, dtype=dtype)
    return _filter(x, func, passes_depth(passes, x.ndim), modes, name, allow_rechunk, dtype)
