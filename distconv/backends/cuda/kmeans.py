"""Launchers for kernels/kmeans.cu."""

from __future__ import annotations

import numpy as np

from . import compute_capability, guard_memory, loader, sm_count

SMEM_ACCUMULATE = 96 * 1024

BLOCK = loader.define("DC_BLOCK")  # threads per block, from kernels/common.cuh


def _prepare(X, C):
    import cupy

    Xd = cupy.ascontiguousarray(X, dtype=np.float32)
    Cd = cupy.ascontiguousarray(cupy.asarray(C), dtype=np.float32)
    cnorm = (Cd * Cd).sum(axis=1)
    return Xd, Cd, cnorm


def _tensor_cores() -> bool:
    """Does this GPU run distconv_kmeans_assign_tc (TF32 mma.sync: sm_80 on)?"""
    return compute_capability() >= 80


def _assign(Xd, Cd, cnorm, groups=None, counts=None, score=None, tensor_cores=None):
    """Labels of Xd's rows (and the bag-of-words counts, the winners' scores): on tensor cores
    by 3xTF32 where the GPU has them (``tensor_cores`` None), else the float32 kernel."""
    import cupy

    n, D = Xd.shape
    labels = cupy.empty(n, dtype=np.int32)
    if tensor_cores is None:
        tensor_cores = _tensor_cores()
    if n:
        blocks = -(-n // loader.define("DC_KM_BM"))
        name = "distconv_kmeans_assign_tc" if tensor_cores else "distconv_kmeans_assign"
        loader.function("kmeans", name)(
            (blocks,), (BLOCK,), (Xd, np.int64(n), np.int32(D), Cd, np.int32(Cd.shape[0]), cnorm, labels,
                                groups if groups is not None else np.uint64(0),
                                counts if counts is not None else np.uint64(0),
                                score if score is not None else np.uint64(0)))
    return labels


@guard_memory
def assign(X, C):
    Xd, Cd, cnorm = _prepare(X, C)
    return _assign(Xd, Cd, cnorm)


@guard_memory
def bovw(X, C, groups, n_groups: int):
    import cupy

    Xd, Cd, cnorm = _prepare(X, C)
    K = Cd.shape[0]
    counts = cupy.zeros(n_groups * K, dtype=np.uint64)
    g = cupy.zeros(Xd.shape[0], dtype=np.int64) if groups is None else cupy.ascontiguousarray(cupy.asarray(groups), dtype=np.int64)
    _assign(Xd, Cd, cnorm, g, counts)
    return counts.view(np.int64).reshape(n_groups, K)


@guard_memory
def partial_sums(X, C):
    import cupy

    Xd, Cd, cnorm = _prepare(X, C)
    n, D = Xd.shape
    K = Cd.shape[0]
    score = cupy.empty(n, dtype=np.float32)
    labels = _assign(Xd, Cd, cnorm, score=score)
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


INSTANTIATIONS = ["distconv_kmeans_assign", "distconv_kmeans_assign_tc",
                  loader.template("distconv_kmeans_accumulate", True),
                  loader.template("distconv_kmeans_accumulate", False)]
