// distconv histograms: privatized shared-memory counters merged once per block, a global-atomic
// path when the bins do not fit, uniform bins by arithmetic (then checked against the edges,
// so the result is exactly "edges[b] <= v < edges[b+1]", last bin closed), explicit edges by
// binary search, and integer bins (bincount). Integer counts are exact and deterministic;
// weighted sums use float64 atomics, whose order (and so last-bit rounding) varies between runs.
#include "common.cuh"

#include "binning.cuh"

// ---------------------------------------------------------------------------------------------
// distconv_histogram: counts (or weight sums) of n values of x into nbins bins.
// Threads -> data: grid-stride, UNROLL (8; 4 on the atomic-bound global path) independent
//   coalesced loads in flight per thread.
// SMEM: each warp adds into one of `copies` private sub-histograms in shared memory
//   (uint32 counts or float64 sums; `copies` chosen by the launcher to spread contention), and
//   the edges are staged there too; at the end the block folds its copies into the global
//   uint64 counts (or float64 sums) with one atomic per non-empty bin.
// !SMEM: the bins do not fit; edges are read through the read-only cache and every value does
//   one global atomic (L2 atomics; fine for many bins with little contention).
// Shared memory (SMEM): (nbins+1)*sizeof(E) + copies*nbins*(4 or 8) bytes, dynamic.
// Limits: nbins < 2^31; per block fewer than 2^32 values per bin (the launcher caps the work).
template <typename T, typename E, int BINNING, bool WEIGHTED, typename W, bool SMEM>
__global__ void __launch_bounds__(DC_BLOCK)
distconv_histogram(const T *__restrict__ x, i64 n, const E *__restrict__ edges, int nbins, E lo,
                   E scale, E slack, const W *__restrict__ w, unsigned long long *counts,
                   double *sums, int copies) {
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    E *se = reinterpret_cast<E *>(dc_smem_raw);
    const int tid = threadIdx.x;
    const int edge_slots = BINNING == DC_BIN_INTEGER ? 0 : nbins + 1;
    // counters start after the edges, 8-byte aligned
    const size_t off = ((size_t)edge_slots * sizeof(E) + 7) & ~(size_t)7;
    unsigned int *sc = reinterpret_cast<unsigned int *>(dc_smem_raw + off);
    double *sw = reinterpret_cast<double *>(dc_smem_raw + off);
    const E *e = edges;
    if (SMEM) {
        for (int i = tid; i < edge_slots; i += blockDim.x) se[i] = edges[i];
        for (int i = tid; i < copies * nbins; i += blockDim.x) {
            if (WEIGHTED) sw[i] = 0.0; else sc[i] = 0u;
        }
        __syncthreads();
        e = se;
    }
    const E first = BINNING == DC_BIN_INTEGER ? E(0) : e[0], last = BINNING == DC_BIN_INTEGER ? E(0) : e[nbins];
    const int copy = (tid >> 5) % copies;
    constexpr int UNROLL = (SMEM && sizeof(T) <= 4) ? 8 : 4;  // independent loads in flight
    const i64 stride = (i64)gridDim.x * blockDim.x * UNROLL;
    for (i64 base = (i64)blockIdx.x * blockDim.x * UNROLL + tid; base < n; base += stride) {
        T v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const i64 i = base + (i64)u * blockDim.x;
            if (i < n) v[u] = x[i];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const i64 i = base + (i64)u * blockDim.x;
            if (i >= n) continue;
            const int b = dc_bin<BINNING, E>(E(v[u]), e, nbins, lo, scale, slack, first, last);
            if (b < 0) continue;
            if (SMEM) {
                if (WEIGHTED) atomicAdd(sw + copy * nbins + b, double(w[i]));
                else atomicAdd(sc + copy * nbins + b, 1u);
            } else {
                if (WEIGHTED) atomicAdd(sums + b, double(w[i]));
                else atomicAdd(counts + b, 1ull);
            }
        }
    }
    if (!SMEM) return;
    __syncthreads();
    for (int b = tid; b < nbins; b += blockDim.x) {
        if (WEIGHTED) {
            double s = 0.0;
            for (int c = 0; c < copies; ++c) s += sw[c * nbins + b];
            if (s != 0.0) atomicAdd(sums + b, s);
        } else {
            unsigned long long s = 0;
            for (int c = 0; c < copies; ++c) s += sc[c * nbins + b];
            if (s) atomicAdd(counts + b, s);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_histogram2d: joint counts of (x, y) pairs into nx*ny bins (row-major, x first),
// explicit edges per axis (binary search in global memory, read-only cache), global atomics.
// Threads -> data: grid-stride over pairs. Shared memory: none.
template <typename T, typename U, typename E, bool WEIGHTED, typename W>
__global__ void __launch_bounds__(DC_BLOCK)
distconv_histogram2d(const T *__restrict__ x, const U *__restrict__ y, i64 n, const E *__restrict__ ex,
                     int nx, const E *__restrict__ ey, int ny, const W *__restrict__ w,
                     unsigned long long *counts, double *sums) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
        const int bx = dc_bin<DC_BIN_EDGES, E>(E(x[i]), ex, nx, E(0), E(0), E(0), ex[0], ex[nx]);
        if (bx < 0) continue;
        const int by = dc_bin<DC_BIN_EDGES, E>(E(y[i]), ey, ny, E(0), E(0), E(0), ey[0], ey[ny]);
        if (by < 0) continue;
        if (WEIGHTED) atomicAdd(sums + (i64)bx * ny + by, double(w[i]));
        else atomicAdd(counts + (i64)bx * ny + by, 1ull);
    }
}
