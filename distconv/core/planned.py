"""A planned array: what an op's result will be (shape, dtype) and the step that makes it, worked
out without building a graph. A workflow's steps run on it to check their arguments and to find
the fused stencil chain the engine runs; an op that cannot make one stencil or scan step of it
(arithmetic, a cast, numpy's own functions) raises NotPlannable, and the caller plans that
workflow over the lazy dask array instead (``Planned.lazy``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .arrays import array_kind


class NotPlannable(Exception):
    """An op asked a planned array for its values (arithmetic, numpy, a method it lacks): its
    result is not one step the plan can name. Not a user error: the lazy path decides."""


@dataclass(frozen=True, eq=False)
class Planned:
    """An array as planned: ``shape``, ``dtype`` and what made it, (``source``, ``step``):
    the Planned it reads and the Stencil or ScanStep run on it (fused with the step ``source``
    declares, as the dask path fuses), or the input's stored description and None at the root.
    ``made_from`` and ``make`` rebuild it lazily: ``make(made_from.lazy())`` (the root:
    ``make()``)."""

    shape: tuple
    dtype: np.dtype
    source: object = None
    step: object = None
    made_from: Planned | None = None
    make: Callable | None = field(default=None, repr=False)
    _lazy: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @classmethod
    def root(cls, shape, dtype, stored, make: Callable) -> Planned:
        """The input: ``stored`` (its description, None while a synthetic one is not written)
        and ``make()``, its lazy dask array."""
        return cls(shape, dtype, stored, None, None, make)

    @property
    def is_root(self) -> bool:
        return self.made_from is None and self.step is None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def declared(self, kind) -> tuple | None:
        """(source, step) when this array's step is of type ``kind`` (graph.declared's answer)."""
        return (self.source, self.step) if isinstance(self.step, kind) else None

    def then(self, shape, dtype, make: Callable) -> Planned:
        """A result of ``make`` on this array that declares no step (a cut, a cast)."""
        return Planned(shape, dtype, None, None, self, make)

    def made_by(self, made_from: Planned, make: Callable) -> Planned:
        """This result, rebuilt lazily as ``make(made_from.lazy())``."""
        return Planned(self.shape, self.dtype, self.source, self.step, made_from, make)

    def lazy(self):
        """The lazy dask array this plan stands for (built once)."""
        if not self._lazy:
            if self.make is None:
                raise NotPlannable("a planned array made outside a workflow's steps has no lazy form")
            self._lazy.append(self.make() if self.made_from is None else self.make(self.made_from.lazy()))
        return self._lazy[0]

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > self.ndim or not all(isinstance(k, slice) and k.step in (None, 1) for k in key):
            raise NotPlannable(f"index {key!r}")
        shape = tuple(len(range(*k.indices(n))) for k, n in zip(key, self.shape)) + self.shape[len(key):]
        return self.then(shape, self.dtype, lambda d: d[key])

    def astype(self, dtype) -> Planned:
        return self.then(self.shape, dtype, lambda d: d.astype(dtype))

    @property
    def real(self) -> Planned:
        return self.then(self.shape, np.empty(0, self.dtype).real.dtype, lambda d: d.real)

    def __len__(self) -> int:
        return self.shape[0]

    def _values(self, *args, **kwargs):
        raise NotPlannable("an op asked for the values of a planned array")

    __array__ = __array_ufunc__ = __array_function__ = __iter__ = __bool__ = _values
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _values
    __floordiv__ = __rfloordiv__ = __mod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _values
    __neg__ = __pos__ = __abs__ = __invert__ = __and__ = __rand__ = __or__ = __ror__ = __xor__ = _values
    __lt__ = __le__ = __gt__ = __ge__ = _values


def lazy_of(x):
    """``x``'s lazy dask array when it is planned, else ``x``."""
    return x.lazy() if array_kind(x) == "planned" else x
