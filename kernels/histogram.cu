// distconv histograms: privatized shared-memory counters merged once per block, a global-atomic
// path when the bins do not fit, uniform bins by arithmetic (then checked against the edges,
// so the result is exactly "edges[b] <= v < edges[b+1]", last bin closed), explicit edges by
// binary search, and integer bins (bincount). Integer counts are exact and deterministic;
// weighted sums use float64 atomics, whose order (and so last-bit rounding) varies between runs.
#include "common.cuh"

#include "binning.cuh"

// Every value of x[0, n) counted: its bin b from dc_bin over the edges e, then count(b), which
// returns 0 or flags for settle(b, flags) (a counter that wrapped; the plain kernel returns 0).
// Grid-stride over the whole grid, read as packs of 4 values (2 for 8-byte types; the few values
// before the first pack boundary and after the last whole pack one per thread), UNROLL packs in
// flight per thread with no per-value bounds check. Uniform bins count each value at once,
// branch-free: in its bin when it lies clear of the edges (dc_bin_clear), else in the spare slot
// nbins; the counts' flags are settled after the batch, so its counts are in flight together.
// Only the few values near an edge then look the edges up, one at a time.
template <int BINNING, int UNROLL, typename T, typename E, class Count, class Settle>
__device__ __forceinline__ void dc_bin_values(const T *__restrict__ x, i64 n, const E *e, int nbins, E lo, E scale,
                                              E slack, E first, E last, Count count, Settle settle) {
    constexpr int VEC = sizeof(T) <= 4 ? 4 : 2;  // values per pack: 16 bytes for float
    struct alignas(VEC * sizeof(T)) Pack { T v[VEC]; };
    constexpr unsigned PACK = sizeof(Pack);
    const auto count_one = [&](int b) {
        const unsigned f = count(b);
        if (f) settle(b, f);
    };
    const auto add = [&](T value) {
        const int b = dc_bin<BINNING, E>(E(value), e, nbins, lo, scale, slack, first, last);
        if (b >= 0) count_one(b);
    };
    const i64 gtid = (i64)blockIdx.x * blockDim.x + threadIdx.x, threads = (i64)gridDim.x * blockDim.x;
    const i64 head = min(n, (i64)(((PACK - reinterpret_cast<unsigned long long>(x) % PACK) % PACK) / sizeof(T)));
    const i64 packs = (n - head) / VEC, tail = head + packs * VEC;
    if (gtid < head) add(x[gtid]);
    if (gtid < n - tail) add(x[tail + gtid]);
    const Pack *px = reinterpret_cast<const Pack *>(x + head);
    i64 p = (i64)blockIdx.x * blockDim.x * UNROLL + threadIdx.x;
    for (; p + (UNROLL - 1) * (i64)blockDim.x < packs; p += threads * UNROLL) {  // whole batches
        Pack v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = px[p + u * blockDim.x];
        if (BINNING != DC_BIN_UNIFORM) {
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                for (int k = 0; k < VEC; ++k) add(v[u].v[k]);
            continue;
        }
        unsigned near_edge = 0, flags = 0;  // a bit a value; two bits a value
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                int b;
                const bool clear = dc_bin_clear(E(v[u].v[k]), nbins, lo, scale, slack, b);
                flags |= count(clear ? b : nbins) << 2 * (u * VEC + k);
                near_edge |= (unsigned)!clear << (u * VEC + k);
            }
        if (flags) {
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    const unsigned f = flags >> 2 * (u * VEC + k) & 3u;
                    int b;
                    if (f) settle(dc_bin_clear(E(v[u].v[k]), nbins, lo, scale, slack, b) ? b : nbins, f);
                }
        }
        // the values near an edge, one at a time: a warp loops as often as its busiest lane
        // (mostly once), not once for every value a lane might hold
        for (unsigned m = near_edge; m; m &= m - 1) {
            const int i = __ffs(m) - 1;
            E ev = E(v[0].v[0]);
#pragma unroll
            for (int j = 1; j < UNROLL * VEC; ++j)
                if (i == j) ev = E(v[j / VEC].v[j % VEC]);
            const int g = dc_bin_guess(ev, nbins, lo, scale, first, last);
            if (g >= 0) count_one(dc_bin_walk(ev, e, nbins, g, e[g], e[g + 1]));  // both edges loaded at once
        }
    }
    for (int u = 0; u < UNROLL; ++u, p += blockDim.x) {  // the last, partial batch
        if (p >= packs) break;
        const Pack v = px[p];
#pragma unroll
        for (int k = 0; k < VEC; ++k) add(v.v[k]);
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_histogram: counts (or weight sums) of n values of x into nbins bins.
// Threads -> data, counts in shared memory: x read as packs of 4 values (2 for 8-byte types;
//   the few values before the first pack boundary and after the last whole pack go one per
//   thread), grid-stride, 2 packs in flight per thread, with no per-value bounds check. Uniform
//   bins count every value at once, branch-free: in its bin when it lies clear of the edges
//   (dc_bin_clear), else in a spare slot, and only those few then look the edges up.
//   Weighted sums and global counters (atomic-bound): one value per thread per step.
// SMEM: each warp adds into one of `copies` private sub-histograms in shared memory
//   (uint32 counts or float64 sums; `copies` chosen by the launcher to spread contention), and
//   the edges are staged there too; at the end the block folds its copies into the global
//   uint64 counts (or float64 sums) with one atomic per non-empty bin.
// !SMEM: the bins do not fit; edges are read through the read-only cache and every value does
//   one global atomic (L2 atomics; fine for many bins with little contention).
// Shared memory (SMEM): (nbins+1)*sizeof(E) + copies*(nbins+1)*(4 or 8) bytes, dynamic.
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
    const int slots = nbins + 1;  // counters per copy: the bins and a spare
    // counters start after the edges, 8-byte aligned
    const size_t off = ((size_t)edge_slots * sizeof(E) + 7) & ~(size_t)7;
    unsigned int *sc = reinterpret_cast<unsigned int *>(dc_smem_raw + off);
    double *sw = reinterpret_cast<double *>(dc_smem_raw + off);
    const E *e = edges;
    if (SMEM) {
        for (int i = tid; i < edge_slots; i += blockDim.x) se[i] = edges[i];
        for (int i = tid; i < copies * slots; i += blockDim.x) {
            if (WEIGHTED) sw[i] = 0.0; else sc[i] = 0u;
        }
        __syncthreads();
        e = se;
    }
    const E first = BINNING == DC_BIN_INTEGER ? E(0) : e[0], last = BINNING == DC_BIN_INTEGER ? E(0) : e[nbins];
    unsigned int *my_counts = sc + ((tid >> 5) % copies) * slots;
    double *my_sums = sw + ((tid >> 5) % copies) * slots;
    auto add_to = [=](int b, i64 i) {
        if (SMEM) {
            if (WEIGHTED) atomicAdd(my_sums + b, double(w[i]));
            else atomicAdd(my_counts + b, 1u);
        } else {
            if (WEIGHTED) atomicAdd(sums + b, double(w[i]));
            else atomicAdd(counts + b, 1ull);
        }
    };
    auto add = [=](T value, i64 i) {
        const int b = dc_bin<BINNING, E>(E(value), e, nbins, lo, scale, slack, first, last);
        if (b >= 0) add_to(b, i);
    };
    const i64 gtid = (i64)blockIdx.x * blockDim.x + tid, threads = (i64)gridDim.x * blockDim.x;
    if (!SMEM || WEIGHTED) {  // bound by global or float64 atomics: one value per step
        for (i64 i = gtid; i < n; i += threads) add(x[i], i);
    } else {  // counts in shared memory: packs of values, the common case without a branch
        dc_bin_values<BINNING, 2>(x, n, e, nbins, lo, scale, slack, first, last,  // (UNROLL 1 and 4 measured slower)
                                  [&](int slot) { atomicAdd(my_counts + slot, 1u); return 0u; }, [](int, unsigned) {});
    }
    if (!SMEM) return;
    __syncthreads();
    for (int b = tid; b < nbins; b += blockDim.x) {
        if (WEIGHTED) {
            double s = 0.0;
            for (int c = 0; c < copies; ++c) s += sw[c * slots + b];
            if (s != 0.0) atomicAdd(sums + b, s);
        } else {
            unsigned long long s = 0;
            for (int c = 0; c < copies; ++c) s += sc[c * slots + b];
            if (s) atomicAdd(counts + b, s);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_histogram_packed: unweighted counts of n values into bins too many for a block's
// 32-bit counters but not for 16-bit ones (hist65536: 128 KiB), two bins per 32-bit word of
// shared memory, instead of one global atomic per value (distconv_histogram, !SMEM).
// Threads -> data: DC_HIST_PACKED_BLOCK threads, one block per SM (its counters take most of
//   shared memory), grid-stride over packs of 4 values (2 for 8-byte types) as in
//   distconv_histogram; uniform bins count values clear of the edges branch-free (the rest in a
//   spare slot, then looked up against the edges, which stay in global memory).
// Wraps are exact: an add returns the word's old value, so the thread whose add wrapped a bin's
//   16 bits puts the 65536 into the global count (after its batch of adds, which stay in flight
//   together), and when the low bin's carry went into the high half, takes it back from the
//   high bin's global count (an unsigned -1: the final sums are exact modulo 2^64, and every
//   true count is below that); a carry out of the word's top is 65536 counts of the high bin. The global counts need slots up to the last word's high half
//   (the launcher allocates 2 * words and reads the first nbins).
// Shared memory (dynamic): words = (nbins + 2) / 2 uint32 (bins and the spare).
// Limits: words * 4 <= the device's per-block opt-in (the launcher checks); nbins < 2^31.
#define DC_HIST_PACKED_BLOCK 1024
template <typename T, typename E, int BINNING>
__global__ void __launch_bounds__(DC_HIST_PACKED_BLOCK, 1)
distconv_histogram_packed(const T *__restrict__ x, i64 n, const E *__restrict__ edges, int nbins, E lo,
                          E scale, E slack, unsigned long long *counts) {
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    unsigned int *sc = reinterpret_cast<unsigned int *>(dc_smem_raw);
    const int tid = threadIdx.x, words = (nbins + 2) >> 1;
    for (int i = tid; i < words; i += blockDim.x) sc[i] = 0u;
    __syncthreads();
    const E first = BINNING == DC_BIN_INTEGER ? E(0) : edges[0];
    const E last = BINNING == DC_BIN_INTEGER ? E(0) : edges[nbins];
    // one more in slot b: the old word says whether the add wrapped the low half into the high
    // one (flag 1) or the word past its top (flag 2), for settle to put right globally
    const auto count = [=](int b) {
        const unsigned add = (b & 1) ? 0x10000u : 1u;
        const unsigned old = atomicAdd(sc + (b >> 1), add);
        return (unsigned)(!(b & 1) && (old & 0xFFFFu) == 0xFFFFu) | (unsigned)(old > 0xFFFFFFFFu - add) << 1;
    };
    const auto settle = [=](int b, unsigned f) {
        if (f & 1u) {  // the low bin's carry went into the high half: 65536 more low, one fewer high
            atomicAdd(counts + b, 0x10000ull);
            atomicAdd(counts + b + 1, ~0ull);
        }
        if (f & 2u) atomicAdd(counts + (b | 1), 0x10000ull);  // 65536 counts of the high bin
    };
    constexpr int UNROLL = sizeof(E) > sizeof(T) ? 1 : 2;  // (2 spilled the widened types at 64 registers)
    dc_bin_values<BINNING, UNROLL>(x, n, edges, nbins, lo, scale, slack, first, last, count, settle);
    __syncthreads();
    for (int i = tid; i < words; i += blockDim.x) {
        const unsigned w = sc[i];
        if (w & 0xFFFFu) atomicAdd(counts + 2 * i, (unsigned long long)(w & 0xFFFFu));
        if (w >> 16) atomicAdd(counts + 2 * i + 1, (unsigned long long)(w >> 16));
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
