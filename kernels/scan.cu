// distconv prefix scans: single-pass decoupled look-back scans along the contiguous axis
// (rows) and along a strided axis (columns), for add / mul / min / max.
// Input element type Tin is converted to the scan type T on load. An optional carry (one value
// per row / column) seeds the scan: that is how chunk carries from the dask layer enter, so the
// distributed scan reads each chunk twice (totals, then this) and writes it once.
// The look-back kernels use Kogge-Stone warp shuffles inside a blocked, thread-sequential tile
// scan (block-level Kogge-Stone and Brent-Kung kernels were test-only and are gone: NOTES.md).
#include "common.cuh"

#define DC_FLAG_NONE 0
#define DC_FLAG_AGG 1
#define DC_FLAG_PREFIX 2

template <typename T>
__device__ __forceinline__ void dc_publish(int *flags, T *slot, i64 tile, T v, int flag) {
    reinterpret_cast<volatile T *>(slot)[0] = v;
    __threadfence();
    atomicExch(flags + tile, flag);
}

__device__ __forceinline__ int dc_read_flag(const int *flags, i64 tile) {
    return reinterpret_cast<const volatile int *>(flags)[tile];
}

template <typename T> __device__ __forceinline__ T dc_read_value(const T *p) {
    return reinterpret_cast<const volatile T *>(p)[0];
}

__device__ __forceinline__ int dc_pad(int i) { return i + (i >> 5); }

// ---------------------------------------------------------------------------------------------
// distconv_scan_rows: scan each row of a C-contiguous (rows, n) array.
// Threads -> data: 256 threads scan one tile of 256*ITEMS consecutive elements of a row; tiles
//   are claimed in order through an atomic counter (so every predecessor has started: no
//   deadlock) and numbered row-major. Loads (asynchronous copies where no conversion is needed)
//   and stores are striped (coalesced) through shared memory; each thread scans ITEMS
//   consecutive values (padded indexing: conflict-free), reading them twice (total, outputs).
// Look-back: the whole block reads the status of the 256 preceding tiles of the same row at
//   once, waits for all of them, and folds aggregates up to the nearest inclusive prefix.
// Shared memory: 256*ITEMS*(33/32) T + 18 T. Status: flags[tiles] (zeroed), agg/inc[tiles].
// Limits: any n and rows (64-bit); carry is one T per row or null.
template <typename Tin, typename T, class Op, int ITEMS, bool EXCL>
__global__ void __launch_bounds__(DC_BLOCK)
distconv_scan_rows(const Tin *__restrict__ in, T *__restrict__ out, i64 rows, i64 n,
                   const T *__restrict__ carry, int *flags, T *agg, T *inc, unsigned long long *counter) {
    constexpr int TILE = DC_BLOCK * ITEMS;
    __shared__ T s[TILE + TILE / 32];
    __shared__ T warp_inc[8];
    __shared__ T s_fold[DC_BLOCK / 32];
    __shared__ T s_prefix, s_agg;
    __shared__ int s_stop;
    __shared__ unsigned long long s_tile;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (tid == 0) s_tile = atomicAdd(counter, 1ull);
    __syncthreads();
    const i64 tile = (i64)s_tile;
    const i64 tpr = (n + TILE - 1) / TILE;
    const i64 row = tile / tpr, ct = tile - row * tpr;
    const i64 base = row * n + ct * TILE;
    const int len = (int)min((i64)TILE, n - ct * TILE);
    const T ident = Op::template identity<T>();

    if (DcSame<Tin, T>::value && DC_CP_ASYNC_ON_ARCH) {
        // no conversion: whole tiles go global -> shared asynchronously, so a thread's ITEMS
        // loads are in flight without a register each (more blocks fit on an SM)
        if (len == TILE) {
#pragma unroll
            for (int k = 0; k < ITEMS; ++k)
                dc_cp_async<sizeof(T)>(s + dc_pad(k * DC_BLOCK + tid), in + base + k * DC_BLOCK + tid);
            dc_cp_async_wait_all();
        } else {  // a row's last, partial tile
#pragma unroll 1
            for (int idx = tid; idx < TILE; idx += DC_BLOCK) s[dc_pad(idx)] = idx < len ? T(in[base + idx]) : ident;
        }
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int idx = k * DC_BLOCK + tid;
            s[dc_pad(idx)] = idx < len ? T(in[base + idx]) : ident;
        }
    }
    __syncthreads();
    // each thread's ITEMS values are read twice, now for their total and after the look-back
    // for the outputs: nothing lives in registers across the look-back
    T total = s[dc_pad(tid * ITEMS)];
#pragma unroll
    for (int j = 1; j < ITEMS; ++j) total = Op::apply(total, s[dc_pad(tid * ITEMS + j)]);

    const T wi = dc_warp_inclusive<Op>(total);
    T lane_excl = __shfl_up_sync(0xffffffffu, wi, 1);
    if (lane == 0) lane_excl = ident;
    if (lane == 31) warp_inc[warp] = wi;
    __syncthreads();
    if (warp == 0) {
        T w = lane < 8 ? warp_inc[lane] : ident;
        w = dc_warp_inclusive<Op>(w);
        const T block_agg = __shfl_sync(0xffffffffu, w, 7);
        T w_excl = __shfl_up_sync(0xffffffffu, w, 1);
        if (lane == 0) w_excl = ident;
        if (lane < 8) warp_inc[lane] = w_excl;  // becomes each warp's exclusive prefix
        if (lane == 0) {
            s_agg = block_agg;
            if (ct == 0) {
                s_prefix = carry ? carry[row] : ident;
                dc_publish(flags, inc + tile, tile, Op::apply(s_prefix, block_agg), DC_FLAG_PREFIX);
            } else {
                dc_publish(flags, agg + tile, tile, block_agg, DC_FLAG_AGG);
            }
        }
    }
    if (ct > 0) {
        // Look-back by the whole block: thread t watches tile (p - t), so one step covers
        // DC_BLOCK predecessors (a warp's 32 left the prefix front crawling 32 tiles per L2
        // round trip while the other warps waited at the barrier).
        const i64 row_start = row * tpr;
        T running = ident;  // in thread 0
        for (i64 p = tile - 1;; p -= DC_BLOCK) {
            const i64 q = p - tid;
            const bool valid = q >= row_start;
            int f = valid ? dc_read_flag(flags, q) : DC_FLAG_NONE;
            while (__syncthreads_or(valid && f == DC_FLAG_NONE))
                if (valid && f == DC_FLAG_NONE) f = dc_read_flag(flags, q);
            __threadfence();
            if (tid == 0) s_stop = DC_BLOCK;
            __syncthreads();
            if (valid && f == DC_FLAG_PREFIX) atomicMin(&s_stop, tid);
            __syncthreads();
            const int stop = s_stop;  // the nearest predecessor holding an inclusive prefix
            T x = ident;
            if (valid && tid <= stop) x = f == DC_FLAG_PREFIX ? dc_read_value(inc + q) : dc_read_value(agg + q);
            x = dc_warp_reduce<Op>(x);
            if (lane == 0) s_fold[warp] = x;
            __syncthreads();
            if (tid == 0)
                for (int w = 0; w < DC_BLOCK / 32; ++w) running = Op::apply(s_fold[w], running);
            if (stop < DC_BLOCK) break;
            __syncthreads();  // s_stop and s_fold are reused by the next step
        }
        if (tid == 0) {
            s_prefix = running;
            dc_publish(flags, inc + tile, tile, Op::apply(running, s_agg), DC_FLAG_PREFIX);
        }
    }
    __syncthreads();
    const T pre = Op::apply(s_prefix, Op::apply(warp_inc[warp], lane_excl));
    T acc;  // this thread's running scan of its items, in the order `total` folded them
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const T x = s[dc_pad(tid * ITEMS + j)];
        T o;
        if (EXCL) o = j == 0 ? pre : Op::apply(pre, acc);
        acc = j == 0 ? x : Op::apply(acc, x);
        if (!EXCL) o = Op::apply(pre, acc);
        s[dc_pad(tid * ITEMS + j)] = o;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int idx = k * DC_BLOCK + tid;
        if (idx < len) out[base + idx] = s[dc_pad(idx)];
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_scan_cols: scan along the middle axis of a C-contiguous (outer, n, inner) array.
// Threads -> data: thread t of a block owns column strip*256 + t and ROWS consecutive rows of
//   one segment; a warp reads 32 adjacent columns of a row (coalesced, no transpose copy).
//   Tiles are claimed in order (atomic counter), numbered (outer, segment, strip) with the strip
//   fastest, so the previous segment of a strip always started earlier.
// Look-back: per column, over previous segments of the same strip (tile - strips); the flag is
//   per tile, the values per column (agg/inc hold 256 T per tile).
// Registers: ROWS values of T per thread. Shared memory: none.
// Limits: any sizes (64-bit); carry is (outer, inner) T or null.
template <typename Tin, typename T, class Op, int ROWS, bool EXCL>
__global__ void __launch_bounds__(DC_BLOCK)
distconv_scan_cols(const Tin *__restrict__ in, T *__restrict__ out, i64 outer, i64 n, i64 inner,
                   const T *__restrict__ carry, int *flags, T *agg, T *inc, unsigned long long *counter) {
    __shared__ unsigned long long s_tile;
    const int tid = threadIdx.x;
    if (tid == 0) s_tile = atomicAdd(counter, 1ull);
    __syncthreads();
    const i64 tile = (i64)s_tile;
    const i64 strips = (inner + DC_BLOCK - 1) / DC_BLOCK, segs = (n + ROWS - 1) / ROWS;
    const i64 strip = tile % strips, seg = (tile / strips) % segs, o = tile / (strips * segs);
    const i64 col = strip * DC_BLOCK + tid, r0 = seg * ROWS;
    const bool valid = col < inner;
    const T ident = Op::template identity<T>();
    const i64 base = (o * n + r0) * inner + col;

    T v[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) v[r] = (valid && r0 + r < n) ? T(in[base + (i64)r * inner]) : ident;
#pragma unroll
    for (int r = 1; r < ROWS; ++r) v[r] = Op::apply(v[r - 1], v[r]);
    const T tile_agg = v[ROWS - 1];

    T excl;
    if (seg == 0) {
        excl = (carry && valid) ? carry[o * inner + col] : ident;
        inc[tile * DC_BLOCK + tid] = Op::apply(excl, tile_agg);
    } else {
        agg[tile * DC_BLOCK + tid] = tile_agg;
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) atomicExch(flags + tile, seg == 0 ? DC_FLAG_PREFIX : DC_FLAG_AGG);
    if (seg > 0) {
        T running = ident;
        for (i64 p = tile - strips;; p -= strips) {
            int f;
            do { f = dc_read_flag(flags, p); } while (f == DC_FLAG_NONE);
            __threadfence();
            const T x = f == DC_FLAG_PREFIX ? dc_read_value(inc + p * DC_BLOCK + tid) : dc_read_value(agg + p * DC_BLOCK + tid);
            running = Op::apply(x, running);
            if (f == DC_FLAG_PREFIX) break;
        }
        excl = running;
        inc[tile * DC_BLOCK + tid] = Op::apply(excl, tile_agg);
        __threadfence();
        __syncthreads();
        if (tid == 0) atomicExch(flags + tile, DC_FLAG_PREFIX);
    }
    if (!valid) return;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        if (r0 + r >= n) break;
        out[base + (i64)r * inner] = EXCL ? (r == 0 ? excl : Op::apply(excl, v[r - 1])) : Op::apply(excl, v[r]);
    }
}
