"""A stencil: a per-block function that reads a halo of fixed depth, and how consecutive
stencils compose into one (the summed halo, one pass over memory per block).

``Probe`` is a zero-size stand-in array: a filter called on one returns its Stencil instead of
running, so the ops can be planned (fused chains, storage-to-storage jobs) with every argument
checked exactly as a real call checks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .tile import Tile


class Probe(np.ndarray):
    """A zero-size array of a given ndim and dtype; filters return their Stencil for it."""

    @classmethod
    def like(cls, ndim: int, dtype) -> "Probe":
        return np.empty((1,) * ndim, dtype=dtype).view(cls)


@dataclass(frozen=True)
class Stencil:
    func: Callable          # tile -> centre-shaped block (the backend dispatch)
    depth: tuple            # ((lo, hi), ...) halo read per axis
    mode: str               # boundary mode at the global edges ("mixed": steps differ, no wrap)
    name: str               # task-name prefix (distconv-gaussian, ...)

    @property
    def ndim(self) -> int:
        return len(self.depth)


def identity_stencil(ndim: int, mode: str, name: str) -> Stencil:
    return Stencil(_copy_centre, ((0, 0),) * ndim, mode, name)


def _copy_centre(tile):
    return Tile.of(tile).centre.copy()


def chain(stencils: list[Stencil], name: str | None = None) -> Stencil:
    """One stencil doing ``stencils`` in order: it reads the summed halo once; each step writes
    the centre grown by the halo the later steps still need. Each step applies its own mode at
    the global edges, as when run one after another; wrap cannot mix with other modes (its
    halo comes from the far edge, theirs from the boundary rule)."""
    if len(stencils) == 1:
        return stencils[0]
    modes = {s.mode for s in stencils}
    if "wrap" in modes and len(modes) > 1:
        raise ValueError(f"a fused chain cannot mix wrap with other modes, got {sorted(modes)}")
    ndim = stencils[0].ndim
    depth = tuple((sum(s.depth[a][0] for s in stencils), sum(s.depth[a][1] for s in stencils))
                  for a in range(ndim))
    return Stencil(_Chain(tuple(stencils)), depth, modes.pop() if len(modes) == 1 else "mixed",
                   name or "-".join(s.name for s in stencils))


@dataclass(frozen=True)
class _Chain:
    steps: tuple

    def __call__(self, tile):
        tile = Tile.of(tile)
        ext = tile.assemble()
        have = [list(h) for h in tile.halo]          # halo still around the current array
        for i, st in enumerate(self.steps):
            use = tuple((min(st.depth[a][0], have[a][0]), min(st.depth[a][1], have[a][1]))
                        for a in range(tile.ndim))
            ext = st.func(Tile.extended(ext, use))
            for a in range(tile.ndim):
                have[a][0] -= use[a][0]
                have[a][1] -= use[a][1]
        return ext
