"""Launchers for kernels/kmeans.cu."""

from __future__ import annotations

import functools

import numpy as np

from . import compute_capability, device_attribute, guard_memory, loader, sm_count

SMEM_ACCUMULATE = 96 * 1024

BLOCK = loader.define("DC_BLOCK")  # threads per block, from kernels/common.cuh
TC_WARPS = loader.define("DC_KM_TC_WARPS")
KPAD = loader.define("DC_KM_TC_KPAD")
# distconv_kmeans_assign_tc<MT, NW>: 16*MT descriptors a block, NW*8 centroids a warp's group.
# MT 8 while a block's split rows take <= 64 KiB (3 blocks per SM still fit), else 4.
TC_SHAPES = ((8, 2), (4, 2))
TC_BLOCK_BYTES = 64 * 1024


class _Centroids:
    """Centroids on one device as the kernels read them: float32, squared norms, and (on
    tensor cores) their split B fragments."""

    def __init__(self, host):
        import cupy

        self.C = cupy.asarray(host)
        self.norm = (self.C * self.C).sum(axis=1)
        self._split = None

    def split(self):
        if self._split is None:
            self._split = _split(self.C)
        return self._split


@functools.lru_cache(maxsize=8)
def _centroids(device: int, data: bytes, shape: tuple) -> _Centroids:
    # once per device and content: one vocabulary against many images uploads and splits once
    return _Centroids(np.frombuffer(data, dtype=np.float32).reshape(shape))


def _prepare(X, C):
    import cupy

    Xd = cupy.ascontiguousarray(X, dtype=np.float32)
    host = np.ascontiguousarray(C.get() if hasattr(C, "get") else C, dtype=np.float32)
    return Xd, _centroids(cupy.cuda.runtime.getDevice(), host.tobytes(), host.shape)


def _tensor_cores() -> bool:
    """Does this GPU run distconv_kmeans_assign_tc (TF32 mma.sync: sm_80 on)?"""
    return compute_capability() >= 80


def _tc_smem(D: int, mt: int) -> int:
    """Dynamic shared memory of distconv_kmeans_assign_tc: a block's rows, split in two."""
    return 16 * mt * 8 * -(-D // 8) * 8


def _tc_shape(D: int):
    """The tensor-core kernel's shape for D dimensions, or None when its rows do not fit."""
    for shape in TC_SHAPES:
        if _tc_smem(D, shape[0]) <= TC_BLOCK_BYTES:
            return shape
    shape = TC_SHAPES[-1]
    fold = TC_WARPS * 16 * shape[0] * 8  # the kernel's static minima and indices
    return shape if _tc_smem(D, shape[0]) + fold <= device_attribute("MaxSharedMemoryPerBlockOptin") else None


def _split(Cd):
    """Cd's TF32 heads and tails in the MMA's B-fragment order (distconv_kmeans_split)."""
    import cupy

    K, D = Cd.shape
    steps, groups = -(-D // 8), -(-K // KPAD) * KPAD // 8
    out = cupy.empty((groups * steps * 32, 4), dtype=np.uint32)
    loader.function("kmeans", "distconv_kmeans_split")(
        (-(-out.shape[0] // BLOCK),), (BLOCK,), (Cd, np.int32(K), np.int32(D), np.int32(groups), np.int32(steps), out))
    return out, steps


def _assign(Xd, cents: _Centroids, groups=None, counts=None, score=None, tensor_cores=None):
    """Labels of Xd's rows (and the bag-of-words counts, the winners' scores): on tensor cores
    by 3xTF32 where the GPU has them (``tensor_cores`` None) and a block's rows fit its shared
    memory, else the float32 kernel."""
    import cupy

    n, D = Xd.shape
    K = cents.C.shape[0]
    labels = cupy.empty(n, dtype=np.int32)
    if not n:
        return labels
    shape = _tc_shape(D) if (_tensor_cores() if tensor_cores is None else tensor_cores) else None
    tail = (cents.norm, labels, groups if groups is not None else np.uint64(0),
            counts if counts is not None else np.uint64(0), score if score is not None else np.uint64(0))
    if shape:
        Cf, steps = cents.split()
        smem = _tc_smem(D, shape[0])
        fn = loader.function("kmeans", loader.template("distconv_kmeans_assign_tc", *shape), smem)
        fn((-(-n // (16 * shape[0])),), (TC_WARPS * 32,),
           (Xd, np.int64(n), np.int32(D), Cf, np.int32(K), np.int32(steps), *tail), shared_mem=smem)
    else:
        loader.function("kmeans", "distconv_kmeans_assign")(
            (-(-n // loader.define("DC_KM_BM")),), (BLOCK,), (Xd, np.int64(n), np.int32(D), cents.C, np.int32(K), *tail))
    return labels


@guard_memory
def assign(X, C):
    return _assign(*_prepare(X, C))


@guard_memory
def bovw(X, C, groups, n_groups: int):
    import cupy

    Xd, cents = _prepare(X, C)
    K = cents.C.shape[0]
    counts = cupy.zeros(n_groups * K, dtype=np.uint64)
    g = cupy.zeros(Xd.shape[0], dtype=np.int64) if groups is None else cupy.ascontiguousarray(cupy.asarray(groups), dtype=np.int64)
    _assign(Xd, cents, g, counts)
    return counts.view(np.int64).reshape(n_groups, K)


@guard_memory
def partial_sums(X, C):
    import cupy

    Xd, cents = _prepare(X, C)
    n, D = Xd.shape
    K = cents.C.shape[0]
    score = cupy.empty(n, dtype=np.float32)
    labels = _assign(Xd, cents, score=score)
    sums = cupy.zeros((K, D), dtype=np.float64)
    counts = cupy.zeros(K, dtype=np.uint64)
    smem = K * D * 4 + K * 4
    use_smem = smem <= SMEM_ACCUMULATE
    if n:
        fn = loader.function("kmeans", loader.template("distconv_kmeans_accumulate", use_smem),
                             smem if use_smem else 0)
        fn((int(min(-(-n // 8), sm_count() * 4)),), (BLOCK,), (Xd, np.int64(n), np.int32(D), labels, np.int32(K), sums, counts),
           shared_mem=smem if use_smem else 0)
    xnorm = cupy.einsum("ij,ij->i", Xd, Xd)
    inertia = cupy.maximum(score.astype(np.float64) + xnorm, 0).sum()
    return sums, counts.view(np.int64), inertia


INSTANTIATIONS = ["distconv_kmeans_assign", "distconv_kmeans_split",
                  *(loader.template("distconv_kmeans_assign_tc", *sh) for sh in TC_SHAPES),
                  loader.template("distconv_kmeans_accumulate", True),
                  loader.template("distconv_kmeans_accumulate", False)]
