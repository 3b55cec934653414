// distconv reductions (add / mul / min / max): whole array, along the contiguous axis (rows),
// and along a strided axis (columns). Warp shuffles inside blocks; one pass over the data.
#include "common.cuh"

template <typename T, class Op>
__device__ __forceinline__ T dc_block_reduce(T v, T *warp_part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = dc_warp_reduce<Op>(v);
    if (lane == 0) warp_part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? warp_part[lane] : Op::template identity<T>();
        v = dc_warp_reduce<Op>(v);
    }
    __syncthreads();
    return v;  // valid in warp 0
}

// VEC elements of Tin loaded as one instruction (16 bytes, or one element when VEC is 1: the
// alignment is the pack's own size, so packs tile the array with no gaps).
template <typename Tin, int VEC> struct alignas(sizeof(Tin) * VEC) dc_pack { Tin v[VEC]; };

// ---------------------------------------------------------------------------------------------
// distconv_reduce_all: reduce n elements to one value, in one launch.
// Threads -> data: one wave of blocks (the launcher sizes the grid from the occupancy, so no
//   block waits for a second wave); grid-stride over 16-byte packs (VEC elements each),
//   DC_REDUCE_UNROLL packs in flight per thread, read without bounds checks while a whole step
//   fits and with them in the last step; the tail (n % VEC) is read element-wise by block 0.
// Each block writes a partial; the last block to finish (atomic ticket) folds the partials and
//   resets the ticket, so one launch does the whole reduction (deterministic order of partials).
// Shared memory: 32 T. Limits: in must be 16-byte aligned when VEC > 1; partials hold gridDim.x
//   T; a ticket serves one launch at a time (the launcher keeps one per device and stream).
#define DC_REDUCE_UNROLL 8
template <typename Tin, typename T, class Op, int VEC>
__global__ void __launch_bounds__(DC_BLOCK)
distconv_reduce_all(const Tin *__restrict__ in, i64 n, T *partials, T *out, unsigned int *ticket) {
    constexpr int U = DC_REDUCE_UNROLL;
    __shared__ T warp_part[32];
    __shared__ bool last;
    const T ident = Op::template identity<T>();
    T acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = ident;
    const i64 packs = n / VEC;
    const dc_pack<Tin, VEC> *p = reinterpret_cast<const dc_pack<Tin, VEC> *>(in);
    const i64 step = (i64)blockDim.x * U, stride = (i64)gridDim.x * step;
    i64 i = (i64)blockIdx.x * step + threadIdx.x;
    for (; i + (U - 1) * blockDim.x < packs; i += stride) {  // whole steps: no checks
        dc_pack<Tin, VEC> q[U];
#pragma unroll
        for (int u = 0; u < U; ++u) q[u] = p[i + u * blockDim.x];
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[u] = Op::apply(acc[u], T(q[u].v[e]));
    }
#pragma unroll
    for (int u = 0; u < U; ++u)  // this thread's last, partial step
        if (i + u * blockDim.x < packs) {
            const dc_pack<Tin, VEC> q = p[i + u * blockDim.x];
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[u] = Op::apply(acc[u], T(q.v[e]));
        }
    if (blockIdx.x == 0)
        for (i64 k = packs * VEC + threadIdx.x; k < n; k += blockDim.x) acc[0] = Op::apply(acc[0], T(in[k]));
#pragma unroll
    for (int u = 1; u < U; ++u) acc[0] = Op::apply(acc[0], acc[u]);
    T v = dc_block_reduce<T, Op>(acc[0], warp_part);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = v;
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    T w = ident;
    for (int k = threadIdx.x; k < gridDim.x; k += blockDim.x)
        w = Op::apply(w, reinterpret_cast<volatile T *>(partials)[k]);
    w = dc_block_reduce<T, Op>(w, warp_part);
    if (threadIdx.x == 0) { out[0] = w; *ticket = 0u; }
}

// ---------------------------------------------------------------------------------------------
// distconv_reduce_rows: out[r] = reduce of row r of a C-contiguous (rows, n) array.
// Threads -> data: one block per row (grid-stride over rows), threads stride along the row.
// Shared memory: 32 T. Limits: none (64-bit sizes).
template <typename Tin, typename T, class Op>
__global__ void __launch_bounds__(DC_BLOCK)
distconv_reduce_rows(const Tin *__restrict__ in, i64 rows, i64 n, T *__restrict__ out) {
    __shared__ T warp_part[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        T acc = Op::template identity<T>();
        const Tin *row = in + r * n;
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) acc = Op::apply(acc, T(row[i]));
        acc = dc_block_reduce<T, Op>(acc, warp_part);
        if (threadIdx.x == 0) out[r] = acc;
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_reduce_cols: reduce the middle axis of a C-contiguous (outer, n, inner) array into
// (segments, outer, inner) partials; segments = gridDim.y (1 gives the final result).
// Threads -> data: thread per column (coalesced across the warp), blockIdx.y picks a segment
//   of rows, blockIdx.x the (outer, column strip). Registers only.
template <typename Tin, typename T, class Op>
__global__ void __launch_bounds__(DC_BLOCK)
distconv_reduce_cols(const Tin *__restrict__ in, i64 outer, i64 n, i64 inner, T *__restrict__ out) {
    const i64 strips = (inner + DC_BLOCK - 1) / DC_BLOCK;
    const i64 seg_len = (n + gridDim.y - 1) / gridDim.y;
    const i64 r0 = blockIdx.y * seg_len, r1 = min(n, r0 + seg_len);
    for (i64 b = blockIdx.x; b < outer * strips; b += gridDim.x) {
        const i64 o = b / strips, col = (b % strips) * DC_BLOCK + threadIdx.x;
        if (col >= inner) continue;
        const Tin *p = in + o * n * inner + col;
        T a0 = Op::template identity<T>(), a1 = a0;  // two chains: two loads in flight
        i64 r = r0;
        for (; r + 2 <= r1; r += 2) {
            const T v0 = T(p[r * inner]), v1 = T(p[(r + 1) * inner]);
            a0 = Op::apply(a0, v0);
            a1 = Op::apply(a1, v1);
        }
        if (r < r1) a0 = Op::apply(a0, T(p[r * inner]));
        out[((i64)blockIdx.y * outer + o) * inner + col] = Op::apply(a0, a1);
    }
}
