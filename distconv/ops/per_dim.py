"""Per-dim arguments of the ops by dim names (ops/named.py), read one way by every op.

A call names the dims it runs along: ``dim=`` or ``dims=``, the keys of its leading per-dim
dict (``sigma={"lat": 1, "lon": 2}``, ``size={"lon": 3}``) or a footprint DataArray's dims;
otherwise it runs along every dim. Each per-dim argument (size, sigma, order, mode, cval,
origin, spacing) is then one value for every named dim, a sequence in the order the call
names them, or ``{dim: value}`` (the dims it leaves out take the op's default). Values come
back in the array's order, for the positional op's ``axes=``: the dims a call does not name
are left alone. Every check runs before any work, and its ValueError names the argument, the
value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..core.modes import canonical_mode


# The per-dim arguments of the ops by dim names (a Dataset call skips the variables lacking a
# dim their dicts name).
ARGUMENTS = ("size", "sigma", "footprint", "order", "mode", "cval", "origin", "spacing")


def axis_of(obj, dim, name: str = "dim") -> int:
    """The axis of ``dim`` in ``obj``; ValueError naming ``name`` when it is not a dim."""
    if dim not in obj.dims:
        raise ValueError(f"{name} {dim!r} is not a dimension of this array; dims are {tuple(obj.dims)}")
    return obj.dims.index(dim)


def _is_sequence(value) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


@dataclass(frozen=True)
class Dims:
    """The dims a call runs along, in the order the call names them, within the array's dims.

    Attributes
    ----------
    every : tuple of str
        The array's dims, in its order.
    named : tuple of str
        The dims the call runs along, in the order it names them (sequences follow it).
    """

    every: tuple
    named: tuple

    @classmethod
    def given(cls, obj, dims, name: str = "dims entry") -> "Dims":
        """The dims of ``dims=`` (a list, or one name), each checked.

        Parameters
        ----------
        obj : xarray.DataArray
        dims : str or sequence of str
        name : str
            What an error calls an entry ("dims entry", "dim").

        Returns
        -------
        Dims

        Raises
        ------
        ValueError
            An entry that is not a dim of ``obj``, a dim named twice, or no dim at all.
        """
        named = (dims,) if isinstance(dims, str) else tuple(dims)
        for d in named:
            axis_of(obj, d, name)
        if len(set(named)) != len(named):
            raise ValueError(f"dims names a dim twice: {list(named)}")
        if not named:
            raise ValueError("dims names no dim: give at least one dim")
        return cls(tuple(obj.dims), named)

    @classmethod
    def of(cls, obj, value, name: str) -> "Dims":
        """The dims a call's leading per-dim argument names.

        Parameters
        ----------
        obj : xarray.DataArray
        value : scalar, sequence, dict or xarray.DataArray
            ``{dim: value}`` names its keys, a DataArray (a footprint) its dims; one value or
            a sequence (in the array's order) names every dim.
        name : str
            The argument's name, for errors.

        Returns
        -------
        Dims
        """
        if isinstance(value, dict):
            if not value:
                raise ValueError(f"{name}={{}} names no dim: give one value, one per dim, or "
                                 f"{{dim: value}} with at least one dim of {tuple(obj.dims)}")
            stray = [d for d in value if d not in obj.dims]
            if stray:
                raise ValueError(f"{name} has an entry for {stray[0]!r}, which is not a dimension of this "
                                 f"array; dims are {tuple(obj.dims)}")
            return cls(tuple(obj.dims), tuple(value))
        if isinstance(value, xr.DataArray):
            return cls.given(obj, value.dims, f"{name} dim")
        return cls.every_dim(obj)

    @classmethod
    def every_dim(cls, obj) -> "Dims":
        """Every dim of ``obj``, in its order."""
        return cls(tuple(obj.dims), tuple(obj.dims))

    @property
    def dims(self) -> tuple:
        """The named dims in the array's order."""
        return tuple(d for d in self.every if d in self.named)

    @property
    def axes(self) -> tuple:
        """The axes of the named dims, in the array's order (the positional op's ``axes=``)."""
        return tuple(self.every.index(d) for d in self.dims)

    def values(self, value, name: str, fill=None) -> tuple:
        """One value per named dim, in the array's order.

        Parameters
        ----------
        value : scalar, sequence or dict
            One value for every named dim, a sequence in the order the call names its dims,
            or ``{dim: value}``.
        name : str
            The argument's name, for errors.
        fill : optional
            The value of a named dim that a dict leaves out (the op's default).

        Returns
        -------
        tuple

        Raises
        ------
        ValueError
            A dict entry for a dim the call does not run along, or a sequence of another
            length than the named dims.
        """
        if isinstance(value, dict):
            stray = [d for d in value if d not in self.named]
            if stray:
                raise ValueError(f"{name} has an entry for {stray[0]!r}, which is not a dim this call "
                                 f"runs along; those are {list(self.named)}")
            return tuple(value.get(d, fill) for d in self.dims)
        if _is_sequence(value):
            if len(value) != len(self.named):
                raise ValueError(f"{name} needs one value per entry of dims {list(self.named)}, one value "
                                 f"for all, or {{dim: value}}; got {value!r}")
            by_dim = dict(zip(self.named, value))
            return tuple(by_dim[d] for d in self.dims)
        return (value,) * len(self.dims)

    def one(self, value, name: str, fill=None, why: str = "", check=None) -> object:
        """The one value an op takes for every named dim (``values`` all alike).

        Parameters
        ----------
        value, name, fill
            As :meth:`values`.
        why : str
            Why the op takes one value, for the error.
        check : callable, optional
            Each value checked and made canonical first (a mode's aliases resolved).

        Raises
        ------
        ValueError
            Values that differ between dims (a dim a dict leaves out has ``fill``).
        """
        vals = tuple(map(check or (lambda v: v), self.values(value, name, fill)))
        distinct = [v for i, v in enumerate(vals) if v not in vals[:i]]
        if len(distinct) > 1:
            left = [d for d in self.dims if isinstance(value, dict) and d not in value]
            note = f" (it leaves {', '.join(left)} at {fill!r})" if left else ""
            raise ValueError(f"{name} must be one value for every dim of {list(self.named)}{note}: {why}; "
                             f"got {value!r}")
        return distinct[0]

    def modes(self, mode, fill: str = "reflect") -> tuple:
        """One boundary mode per named dim, in the array's order, each checked."""
        return tuple(canonical_mode(m) for m in self.values(mode, "mode", fill))

    def one_mode(self, mode, why: str = "", fill: str = "reflect") -> str:
        """The one boundary mode an op takes for every named dim (:meth:`one`; "wrap" and
        "grid-wrap" are alike)."""
        return self.one(mode, "mode", fill, why, check=canonical_mode)

    def spread(self, values: tuple, fill) -> tuple:
        """``values`` (one per named dim, the array's order) as one per dim of the array,
        ``fill`` along the others."""
        by_dim = dict(zip(self.dims, values))
        return tuple(by_dim.get(d, fill) for d in self.every)
