// distconv common device helpers: boundary modes, halo tiles, scan/reduce operators.
// Inlined by distconv/backends/cuda/loader.py into every kernel source, so the compile cache key
// covers this header too.
#pragma once  // (a no-op once inlined by the loader)

typedef long long i64;

// Numbers the Python launchers need too are #defined once here or in a kernel's file and read
// from the source by distconv/backends/cuda/loader.py (loader.define): never written twice.
#define DC_BLOCK 256  // threads per block of the 1-D kernels (reduce, scan, histogram, k-means, direct correlate)

// ---- boundary modes (scipy.ndimage names; values fixed in distconv/core/modes.py) -------
#define DC_CONSTANT 0
#define DC_REFLECT 1   // d c b a | a b c d | d c b a
#define DC_NEAREST 2   // a a a a | a b c d | d d d d
#define DC_MIRROR 3    //   d c b | a b c d | c b a
#define DC_WRAP 4      // a b c d | a b c d | a b c d

// Map index i onto [0, n) by the boundary mode. Returns false for "use cval".
__device__ __forceinline__ bool dc_remap(i64 &i, i64 n, int mode) {
    if (i >= 0 && i < n) return true;
    switch (mode) {
    case DC_CONSTANT: return false;
    case DC_NEAREST: i = i < 0 ? 0 : n - 1; return true;
    case DC_WRAP: i %= n; if (i < 0) i += n; return true;
    case DC_REFLECT: {
        i64 p = 2 * n; i %= p; if (i < 0) i += p;
        if (i >= n) i = p - 1 - i;
        return true;
    }
    default: {  // DC_MIRROR
        if (n == 1) { i = 0; return true; }
        i64 p = 2 * n - 2; i %= p; if (i < 0) i += p;
        if (i >= n) i = p - i;
        return true;
    }
    }
}

// ---- halo tile: a chunk's centre plus the halo pieces around it -------------------------
// Up to 3 axes (z, y, x); along each axis three segments: low halo, centre, high halo.
// Piece (sz, sy, sx) has shape (len[sz], len[3+sy], len[6+sx]), unit stride along x and
// element strides sy[], sz[] along y and z: pieces may be views into neighbouring blocks, so
// no halo is ever copied on a worker that holds the neighbour.
// Missing pieces have length 0 along the axis that lacks them; the kernel never reads them.
// The extended coordinate range along axis a is [0, len[3a] + len[3a+1] + len[3a+2]).
// Layout matches numpy dtype [('ptr','<u8',(27,)), ('sy','<i8',(27,)), ('sz','<i8',(27,)), ('len','<i8',(9,))].
struct DcTile {
    unsigned long long ptr[27];
    i64 sy[27];
    i64 sz[27];
    i64 len[9];
};

__device__ __forceinline__ i64 dc_extent(const DcTile &t, int axis) {
    return t.len[3 * axis] + t.len[3 * axis + 1] + t.len[3 * axis + 2];
}

__device__ __forceinline__ int dc_segment(i64 &i, const i64 *len3) {
    if (i < len3[0]) return 0;
    i -= len3[0];
    if (i < len3[1]) return 1;
    i -= len3[1];
    return 2;
}

// Address of extended coordinate (z, y, x), the boundary mode applied at the tile's edges
// (which are global edges: interior edges always carry a full halo); nullptr where the mode
// gives cval.
template <typename T>
__device__ __forceinline__ const T *dc_tile_ptr(const DcTile &t, i64 z, i64 y, i64 x, int mode) {
    if (!dc_remap(z, dc_extent(t, 0), mode)) return nullptr;
    if (!dc_remap(y, dc_extent(t, 1), mode)) return nullptr;
    if (!dc_remap(x, dc_extent(t, 2), mode)) return nullptr;
    const int sz = dc_segment(z, t.len + 0);
    const int sy = dc_segment(y, t.len + 3);
    const int sx = dc_segment(x, t.len + 6);
    const int k = sz * 9 + sy * 3 + sx;
    return reinterpret_cast<const T *>(t.ptr[k]) + z * t.sz[k] + y * t.sy[k] + x;
}

template <typename T>
__device__ __forceinline__ T dc_tile_load(const DcTile &t, i64 z, i64 y, i64 x, int mode, T cval) {
    const T *p = dc_tile_ptr<T>(t, z, y, x, mode);
    return p ? *p : cval;
}

// Asynchronous global -> shared copies (sm_80+): the copy goes straight to shared memory, so a
// thread can have its whole share of a tile in flight without holding it in registers.
// (a #if, not a number: the loader reads only numeric DC_ defines, which must be single-valued)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define DC_CP_ASYNC_ON_ARCH true
#else
#define DC_CP_ASYNC_ON_ARCH false
#endif
template <typename A, typename B> struct DcSame { static constexpr bool value = false; };
template <typename A> struct DcSame<A, A> { static constexpr bool value = true; };

template <int BYTES>
__device__ __forceinline__ void dc_cp_async(void *smem, const void *gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned int dst = (unsigned int)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(gmem), "n"(BYTES));
#endif
}
__device__ __forceinline__ void dc_cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// The SH x SW window at p (row pitch csy elements) copied into s (row pitch SW) by NT threads,
// B bytes per asynchronous copy (B / sizeof(T) divides SW and csy; p B-aligned). Thread tid
// takes copies tid, tid + NT, ...: its row and column advance by constants from one copy to the
// next, so a copy costs a few adds, not a division and a 64-bit multiply (20 instructions per
// 4-byte copy before; NOTES.md, "Kernels, round 3").
// Copies per loop step: 2 costs 10.5 instructions a copy, 1 costs 15 (4: 8.75, but it spilled
// the tiled kernels).
#define DC_STAGE_UNROLL 2
template <int B, int SH, int SW, int NT, int UNROLL, typename T>
__device__ __forceinline__ void dc_stage_copies(T *s, const T *p, int csy, int tid) {
    constexpr int E = B / sizeof(T), ROW = SW / E, N = SH * ROW;  // copies per row, in all
    constexpr int DR = NT / ROW, DC = NT % ROW;                    // one step of NT copies
    static_assert(SW % E == 0, "whole copies per row");
    int c = tid % ROW, off = (tid / ROW) * csy + c * E;  // element offset of this copy from p
    const int step = DR * csy + DC * E, wrap = csy - SW;
#pragma unroll(UNROLL)
    for (int e = tid; e < N; e += NT) {
        dc_cp_async<B>(s + e * E, p + off);  // shared rows are contiguous: copy e lands at e * E
        off += step;
        c += DC;
        if (c >= ROW) {
            c -= ROW;
            off += wrap;
        }
    }
}

// dc_stage over a window that leaves the centre piece: element by element, each element's address
// found by the mode (cheaply where the tile has no halo pieces along y and x), asynchronous
// copies where the GPU has them. A call, not inlined: only blocks on edges pay for it (inlined
// it made the sliding kernel spill; the tiled kernels, at 64 registers, spill around the call,
// so they keep the inlined element loop: DcStage EDGE_CALL false).
template <typename T, int SH, int SW, int NT, bool WAIT>
__device__ __noinline__ void dc_stage_edge(T *s, const DcTile &src, i64 iz, i64 iy0, i64 ix0, int mode,
                                           T cval, int tid) {
    constexpr bool ASYNC = DC_CP_ASYNC_ON_ARCH && (sizeof(T) == 4 || sizeof(T) == 8);
    if (ASYNC && src.len[3] == 0 && src.len[5] == 0 && src.len[6] == 0 && src.len[8] == 0) {
        // over a global edge of a tile that is its centre alone along y and x (a whole array's
        // border): the copies asynchronous, a thread's columns remapped once each and walked
        // down G rows apart (element by element, each element's row and column found and
        // remapped, it had cost an x-edge block of a 1024-wide volume ~250 instructions per
        // thread and plane, a quarter of the blocks; the element path below ~370)
        i64 gz = iz, csy = 0;
        const T *plane = nullptr;
        if (dc_remap(gz, dc_extent(src, 0), mode)) {
            const int k = dc_segment(gz, src.len) * 9 + 4;  // piece (z segment, centre, centre)
            plane = reinterpret_cast<const T *>(src.ptr[k]) + gz * src.sz[k];
            csy = src.sy[k];
        }
        const i64 H = src.len[4], W = src.len[7];
        constexpr int G = NT >= SW ? NT / SW : 1;  // threads per column
        for (int e = tid; e < G * SW; e += NT) {
            const int g = e / SW, c = e - g * SW;
            i64 gx = ix0 + c;
            if (!plane || !dc_remap(gx, W, mode)) {
                for (int r = g; r < SH; r += G) s[r * SW + c] = cval;
                continue;
            }
            const T *q = plane + gx;
#pragma unroll 4
            for (int r = g; r < SH; r += G) {
                i64 gy = iy0 + r;
                if (dc_remap(gy, H, mode))
                    dc_cp_async<sizeof(T)>(s + r * SW + c, q + gy * csy);
                else
                    s[r * SW + c] = cval;
            }
        }
        if (WAIT) dc_cp_async_wait_all();
    } else {
        for (int e = tid; e < SH * SW; e += NT) {
            const int r = e / SW, c = e - r * SW;
            const T *q = dc_tile_ptr<T>(src, iz, iy0 + r, ix0 + c, mode);
            if (ASYNC && q)
                dc_cp_async<sizeof(T)>(s + e, q);
            else
                s[e] = q ? *q : cval;
        }
        if (WAIT) dc_cp_async_wait_all();
    }
}

// Stage the SH x SW window at extended coordinates (iz, iy0, ix0) of a halo tile into shared
// memory s (row pitch SW), the boundary mode applied where it leaves the tile. When the window
// lies inside the centre piece, loads go straight to it: as asynchronous copies where the GPU
// has them (every element of the thread's share in flight at once, 16, 8 or sizeof(T) bytes
// each: the widest the window's start and row pitch allow), else in batches of 32 bytes issued
// before their shared stores. Otherwise element by element (EDGE_CALL: dc_stage_edge). The
// thread waits for its own copies and the caller's barrier publishes them; with WAIT false it
// leaves them in flight, and the caller waits (dc_cp_async_wait_all) before its barrier.
template <typename T, int SH, int SW, int NT, int UNROLL = DC_STAGE_UNROLL, bool WAIT = true,
          bool EDGE_CALL = false>
__device__ __forceinline__ void dc_stage(T *s, const DcTile &src, i64 iz, i64 iy0, i64 ix0,
                                         int mode, T cval, int tid) {
    const i64 cz0 = src.len[0], cy0 = src.len[3], cx0 = src.len[6];
    const bool inside = iz >= cz0 && iz < cz0 + src.len[1] && iy0 >= cy0 &&
                        iy0 + SH <= cy0 + src.len[4] && ix0 >= cx0 && ix0 + SW <= cx0 + src.len[7];
    constexpr bool ASYNC = DC_CP_ASYNC_ON_ARCH && (sizeof(T) == 4 || sizeof(T) == 8);
    if (inside && ASYNC) {
        const i64 csy = src.sy[13];
        const T *p = reinterpret_cast<const T *>(src.ptr[13]) + (iz - cz0) * src.sz[13] +
                     (iy0 - cy0) * csy + (ix0 - cx0);
        // the alignment of the window's start and of its row pitch, together
        const unsigned long long a = reinterpret_cast<unsigned long long>(p) | (csy * sizeof(T));
        // offsets within the window in 32 bits where they fit, the last step past it included
        // (fewer registers and adds)
        const bool narrow = (SH + NT + 2) * csy < (i64)1 << 31;
        const int csy32 = (int)csy;
        bool staged = false;
        if constexpr (SW % (16 / sizeof(T)) == 0) {
            if (narrow && (a & 15) == 0) {
                dc_stage_copies<16, SH, SW, NT, UNROLL>(s, p, csy32, tid);
                staged = true;
            }
        }
        if constexpr (sizeof(T) == 4 && SW % 2 == 0) {
            if (narrow && !staged && (a & 7) == 0) {  // e.g. a 5-wide mask's window: two floats off
                dc_stage_copies<8, SH, SW, NT, UNROLL>(s, p, csy32, tid);
                staged = true;
            }
        }
        if (narrow && !staged) dc_stage_copies<sizeof(T), SH, SW, NT, UNROLL>(s, p, csy32, tid);
        if (!narrow) {
            for (int e = tid; e < SH * SW; e += NT) {
                const int r = e / SW, c = e - r * SW;
                dc_cp_async<sizeof(T)>(s + e, p + (i64)r * csy + c);
            }
        }
        if (WAIT) dc_cp_async_wait_all();
    } else if (inside) {
        constexpr int ITER = (SH * SW + NT - 1) / NT, BATCH = 32 / sizeof(T);
        const i64 csy = src.sy[13];
        const T *p = reinterpret_cast<const T *>(src.ptr[13]) + (iz - cz0) * src.sz[13] +
                     (iy0 - cy0) * csy + (ix0 - cx0);
#pragma unroll 1
        for (int i0 = 0; i0 < ITER; i0 += BATCH) {
            T buf[BATCH];
#pragma unroll
            for (int j = 0; j < BATCH; ++j) {
                const int e = tid + (i0 + j) * NT;
                const int r = e / SW, c = e - r * SW;
                buf[j] = e < SH * SW ? __ldg(p + (i64)r * csy + c) : T(0);
            }
#pragma unroll
            for (int j = 0; j < BATCH; ++j) {
                const int e = tid + (i0 + j) * NT;
                if (e < SH * SW) s[e] = buf[j];
            }
        }
    } else if (EDGE_CALL) {
        dc_stage_edge<T, SH, SW, NT, WAIT>(s, src, iz, iy0, ix0, mode, cval, tid);
    } else {
        for (int e = tid; e < SH * SW; e += NT) {
            const int r = e / SW, c = e - r * SW;
            s[e] = dc_tile_load<T>(src, iz, iy0 + r, ix0 + c, mode, cval);
        }
    }
}

// ---- associative operators with their identities (scan, reduce) ---------------------------
template <typename T> struct dc_limits;
template <> struct dc_limits<float> {
    __device__ static float lowest() { return -__int_as_float(0x7f800000); }
    __device__ static float highest() { return __int_as_float(0x7f800000); }
};
template <> struct dc_limits<double> {
    __device__ static double lowest() { return -__longlong_as_double(0x7ff0000000000000LL); }
    __device__ static double highest() { return __longlong_as_double(0x7ff0000000000000LL); }
};
template <> struct dc_limits<int> {
    __device__ static int lowest() { return (int)0x80000000; }
    __device__ static int highest() { return 0x7fffffff; }
};
template <> struct dc_limits<long long> {
    __device__ static long long lowest() { return (long long)0x8000000000000000ULL; }
    __device__ static long long highest() { return 0x7fffffffffffffffLL; }
};
template <> struct dc_limits<unsigned int> {
    __device__ static unsigned int lowest() { return 0u; }
    __device__ static unsigned int highest() { return 0xffffffffu; }
};
template <> struct dc_limits<unsigned long long> {
    __device__ static unsigned long long lowest() { return 0ull; }
    __device__ static unsigned long long highest() { return 0xffffffffffffffffull; }
};

// NaN propagates through min/max as numpy's accumulate does (a NaN operand wins).
template <typename T> __device__ __forceinline__ bool dc_isnan(T v) { return v != v; }

struct DcAdd {
    template <typename T> __device__ static T identity() { return T(0); }
    template <typename T> __device__ static T apply(T a, T b) { return a + b; }
};
struct DcMul {
    template <typename T> __device__ static T identity() { return T(1); }
    template <typename T> __device__ static T apply(T a, T b) { return a * b; }
};
struct DcMin {
    template <typename T> __device__ static T identity() { return dc_limits<T>::highest(); }
    template <typename T> __device__ static T apply(T a, T b) {
        return (dc_isnan(a) || a < b) ? a : (dc_isnan(b) ? b : (b < a ? b : a));
    }
};
struct DcMax {
    template <typename T> __device__ static T identity() { return dc_limits<T>::lowest(); }
    template <typename T> __device__ static T apply(T a, T b) {
        return (dc_isnan(a) || a > b) ? a : (dc_isnan(b) ? b : (b > a ? b : a));
    }
};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// float min/max as one instruction that propagates NaN (PTX min/max.NaN, sm_80 on): the generic
// form above is ~5 per element, and reduce_max ran 6 % behind reduce_sum on it (NOTES.md).
// Which of two NaNs comes out differs (a canonical NaN here), as numpy's does between paths.
template <> __device__ __forceinline__ float DcMin::apply<float>(float a, float b) {
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
template <> __device__ __forceinline__ float DcMax::apply<float>(float a, float b) {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
#endif

// Inclusive warp scan / reduction with shuffles (all 32 lanes take part).
template <class Op, typename T> __device__ __forceinline__ T dc_warp_inclusive(T v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        T o = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v = Op::apply(o, v);
    }
    return v;
}
template <class Op, typename T> __device__ __forceinline__ T dc_warp_reduce(T v) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

// ---- shared-memory windows: 16-byte vectors where the type has them --------------------------
// dc_vec16<T>::n: elements per 16-byte vector (1: the type's windows go element by element)
template <typename T> struct dc_vec16 { static const int n = 1; };
template <> struct dc_vec16<float> { static const int n = 4; };
template <> struct dc_vec16<double> { static const int n = 2; };

// Shared-memory reads into a register window of WN values (a multiple of dc_vec16<T>::n, s
// 16-byte aligned): 16-byte vectors, each element then copied out (no address taken, so the
// window stays in registers).
template <int WN, typename T>
__device__ __forceinline__ void dc_load_window(T (&w)[WN], const T *s) {
#pragma unroll
    for (int v = 0; v < WN; ++v) w[v] = s[v];
}
template <int WN>
__device__ __forceinline__ void dc_load_window(float (&w)[WN], const float *s) {
#pragma unroll
    for (int v = 0; v < WN / 4; ++v) {
        const float4 q = reinterpret_cast<const float4 *>(s)[v];
        w[4 * v] = q.x; w[4 * v + 1] = q.y; w[4 * v + 2] = q.z; w[4 * v + 3] = q.w;
    }
}
template <int WN>
__device__ __forceinline__ void dc_load_window(double (&w)[WN], const double *s) {
#pragma unroll
    for (int v = 0; v < WN / 2; ++v) {
        const double2 q = reinterpret_cast<const double2 *>(s)[v];
        w[2 * v] = q.x; w[2 * v + 1] = q.y;
    }
}
// Four consecutive outputs as 16-byte stores (element by element for other types).
template <typename T> __device__ __forceinline__ void dc_store4(T *o, T a, T b, T c, T d) {
    o[0] = a; o[1] = b; o[2] = c; o[3] = d;
}
__device__ __forceinline__ void dc_store4(float *o, float a, float b, float c, float d) {
    *reinterpret_cast<float4 *>(o) = make_float4(a, b, c, d);
}
__device__ __forceinline__ void dc_store4(double *o, double a, double b, double c, double d) {
    reinterpret_cast<double2 *>(o)[0] = make_double2(a, b);
    reinterpret_cast<double2 *>(o)[1] = make_double2(c, d);
}

// A thread's PY outputs of column x, rows y.. of plane z (rows past oH and columns past oW
// skipped): across a warp's 32 adjacent columns every store is coalesced.
// (The rows left are compared once, in 32 bits: a 64-bit test a row cost ~3 instructions an output.)
template <int PY, typename T>
__device__ __forceinline__ void dc_store_column(T *out, const T (&v)[PY], i64 z, i64 y, i64 x, i64 oH, i64 oW) {
    if (x >= oW || y >= oH) return;
    T *o = out + (z * oH + y) * oW + x;
    const int rows = oH - y < PY ? (int)(oH - y) : PY;
#pragma unroll
    for (int q = 0; q < PY; ++q, o += oW)
        if (q < rows) *o = v[q];
}
