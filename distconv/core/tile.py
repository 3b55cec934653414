"""A chunk's centre plus the halo pieces its neighbours sent (no copies until asked)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .arrays import array_module


@dataclass(frozen=True)
class Tile:
    """Centre block with halos.

    ``halo[a] = (lo, hi)``: how many elements of the neighbours' data lie before/after the
    centre along axis ``a`` (0 at a global edge, where the boundary mode applies instead).
    ``pieces[d]`` holds the halo piece in direction ``d`` (entries -1, 0, 1 per axis); its
    extent along axis ``a`` is ``lo`` (d=-1), the centre's (d=0) or ``hi`` (d=+1).
    """

    centre: object
    halo: tuple = ()
    pieces: dict = field(default_factory=dict)
    whole: object = None    # the extended array, when the pieces are views of one buffer

    @classmethod
    def of(cls, block) -> "Tile":
        """A tile without halos, for a whole array (the mode applies at every edge)."""
        if isinstance(block, Tile):
            return block
        return cls(block, ((0, 0),) * block.ndim, {})

    @classmethod
    def extended(cls, ext, halo: tuple) -> "Tile":
        """A tile over one extended array holding ``halo`` around its centre: every piece is a
        view of ``ext`` (no copies); a halo of 0 marks a global edge."""
        halo = tuple((int(lo), int(hi)) for lo, hi in halo)
        interior = tuple(slice(lo, n - hi) for (lo, hi), n in zip(halo, ext.shape))
        tile = cls(ext[interior], halo, {}, ext)
        for d in tile.directions():
            if any(d):
                sl = tuple(slice(0, lo) if di < 0 else slice(n - hi, n) if di > 0 else c
                           for di, (lo, hi), n, c in zip(d, halo, ext.shape, interior))
                tile.pieces[d] = ext[sl]
        return tile

    def map(self, fn) -> "Tile":
        """The tile of ``fn`` applied to every piece (an elementwise function: shapes kept)."""
        if self.whole is not None:
            return Tile.extended(fn(self.whole), self.halo)
        return Tile(fn(self.centre), self.halo, {d: fn(p) for d, p in self.pieces.items()})

    @property
    def ndim(self) -> int:
        return self.centre.ndim

    @property
    def extended_shape(self) -> tuple:
        return tuple(lo + n + hi for (lo, hi), n in zip(self.halo, self.centre.shape))

    def segment_length(self, axis: int, d: int) -> int:
        lo, hi = self.halo[axis]
        return (lo, self.centre.shape[axis], hi)[d + 1]

    def piece(self, d: tuple):
        return self.centre if not any(d) else self.pieces[d]

    def directions(self):
        """Every direction whose piece is non-empty, centre included, in C order."""
        per_axis = [[d for d in (-1, 0, 1) if self.segment_length(a, d) > 0] for a in range(self.ndim)]
        return itertools.product(*per_axis)

    def interior(self) -> tuple:
        """Slices of the extended array that hold the centre."""
        return tuple(slice(lo, lo + n) for (lo, _), n in zip(self.halo, self.centre.shape))

    def assemble(self):
        """The extended array as one contiguous block (the numpy path; costs a copy)."""
        if self.whole is not None:
            return self.whole
        if not self.pieces:
            return self.centre
        xp = array_module(self.centre)

        def build(prefix: tuple):
            axis = len(prefix)
            if axis == self.ndim:
                return self.piece(prefix)
            parts = [build(prefix + (d,)) for d in (-1, 0, 1) if self.segment_length(axis, d) > 0]
            return parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=axis)

        return build(())
