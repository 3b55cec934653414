// distconv rank kernels: out = the RANK-th smallest value over a footprint (minimum, maximum,
// median, any rank, percentile), scipy.ndimage.rank_filter semantics, over a halo tile.
// out[z, y, x] = select_RANK { in[z + kz + offD, y + ky + offH, x + kx + offW] : footprint[kz, ky, kx] }
// in extended tile coordinates (DcTile, common.cuh); the boundary mode applies at the tile's
// edges, which are global edges. Separable minimum/maximum filters are this with a 1-D box per
// axis and R = 1 (the launcher, distconv/backends/cuda/rank.py, decides).
#include "common.cuh"

#define DC_RANK_BX 32       // threads per block: DC_RANK_BX x DC_RANK_BY
#define DC_RANK_BY 8
#define DC_RANK_PY 4        // output rows per thread (DC_RANK_BY * DC_RANK_PY rows per block; the
                            // launcher gives single-value passes more: rank.py PASS_ROWS)
#define DC_RANK_KEEP 64     // most values one thread keeps (R below) ...
#define DC_RANK_KEEP_BYTES 384  // ... and most bytes of them (registers, no spills)
#define DC_RANK_WORDS 16    // footprint bits: at most 64 * DC_RANK_WORDS taps
#define DC_RANK_SMEM 98304  // bytes of staged planes per block the launcher may ask for

// The footprint as bits in C order of (kz, ky, kx); passed by value (a kernel parameter).
struct DcFootprint {
    unsigned long long bits[DC_RANK_WORDS];
};

// Insert v into buf[0..R) kept sorted (ascending when !TOP, descending when TOP): one
// compare-exchange per slot, all in registers (the loop is unrolled, indices are constants).
template <typename T, int R, bool TOP>
__device__ __forceinline__ void dc_rank_insert(T (&buf)[R], T v) {
    if constexpr (R == 1) {  // the minimum (maximum): NaN propagates, as numpy's
        buf[0] = TOP ? DcMax::apply(buf[0], v) : DcMin::apply(buf[0], v);
        return;
    }
#pragma unroll
    for (int j = 0; j < R; ++j) {
        const T b = buf[j];
        const bool swap = TOP ? (v > b) : (v < b);
        buf[j] = swap ? v : b;
        v = swap ? b : v;
    }
}

// a <- min(a, b), b <- max(a, b): values, never NaN (the median path maps NaN first).
template <typename T> __device__ __forceinline__ void dc_minmax(T &a, T &b) {
    const T lo = b < a ? b : a;
    b = b < a ? a : b;
    a = lo;
}
template <> __device__ __forceinline__ void dc_minmax<float>(float &a, float &b) {
    const float lo = fminf(a, b);
    b = fmaxf(a, b);
    a = lo;
}

// NaN ranks as the largest value in the kept-R insert (it never enters the buffer, which starts
// at +inf): the median path maps it to +inf so both give the same pick.
template <typename T> __device__ __forceinline__ T dc_nan_high(T v) {
    return dc_isnan(v) ? dc_limits<T>::highest() : v;
}

// Median of the N = KD*KH*KW values of a full box (N odd) by forgetful selection: keep
// M = N/2 + 2 values; each step moves the smallest of the kept ones to the front and the
// largest to the back, forgets both (neither can be the median of what is left) and takes the
// next input into the back's slot; the last three hold it in the middle. ~(N/2)^2 compare-
// exchanges of min/max instead of N*(N/2+1) for the kept-R insert (NOTES.md); all indices are
// compile-time, so the values stay in registers. base: the output's first window element in
// the staged planes (plane pitch SH*SW, row pitch SW).
#define DC_RANK_FORGET_MAX 27  // largest N taken this way (larger: code size)
template <typename T, int KD, int KH, int KW, int SH, int SW>
__device__ __forceinline__ T dc_forgetful_median(const T *base) {
    constexpr int N = KD * KH * KW, M = N / 2 + 2;
    static_assert(N % 2 == 1 && N >= 3, "an odd footprint");
    // tap t = (kz * KH + kh) * KW + kw of the window, NaN ranked high
    const auto tap = [&](int t) { return dc_nan_high(base[((t / (KH * KW)) * SH + (t / KW) % KH) * SW + t % KW]); };
    T b[M];
#pragma unroll
    for (int t = 0; t < M; ++t) b[t] = tap(t);
#pragma unroll
    for (int lo = 0; lo <= N - M; ++lo) {  // the kept values are b[lo .. M-1]
#pragma unroll
        for (int j = lo + 1; j < M; ++j) dc_minmax(b[lo], b[j]);
#pragma unroll
        for (int j = lo + 1; j < M - 1; ++j) dc_minmax(b[j], b[M - 1]);
        if (lo < N - M) b[M - 1] = tap(M + lo);
    }
    return b[N - M + 1];
}

// ---------------------------------------------------------------------------------------------
// distconv_rank: the R-th smallest (TOP: R-th largest) value over a KD x KH x KW footprint box.
// Threads -> data: a block of BX x BY threads owns an output tile of TH = BY*PY rows by TW = BX
//   columns of one plane z; thread (tx, ty) computes the PY outputs of column tx at rows
//   ty*PY.. (blockIdx.x: column tiles, blockIdx.y: row tiles with a grid-stride loop,
//   blockIdx.z: planes with a grid-stride loop).
// Shared memory (dynamic): the KD input planes of the tile with their halo, each SH = TH+KH-1
//   rows by SW = TW+KW-1 columns, T each; consecutive threads read consecutive columns.
// Registers: R values per thread (the R smallest seen so far, sorted), R <= DC_RANK_KEEP and
//   R * sizeof(T) <= DC_RANK_KEEP_BYTES;
//   taps are unrolled for small R only (see the loop). FULL (every tap of the box on): no
//   footprint test per tap, and the median of up to DC_RANK_FORGET_MAX taps by forgetful
//   selection (dc_forgetful_median: the same pick). Float builds keeping R <= 8 are made
//   for 3 blocks per SM (<= 85 registers): left alone, ptxas gave the 3x3 median 92 after a
//   change in the staging loop and the block lost a third of its occupancy (NOTES.md).
// Footprint: a bit per tap, copied to static shared memory (taps off the footprint are
//   skipped; the test is uniform per warp).
// Limits: KD*KH*KW <= 64*DC_RANK_WORDS and KD*SH*SW*sizeof(T) <= DC_RANK_SMEM (launcher
//   checks both; larger footprints take cupyx's rank filter); sizes 64-bit.
template <typename T, int KD, int KH, int KW, int R, bool TOP, int BX, int BY, int PY, bool FULL>
__global__ void __launch_bounds__(BX *BY, sizeof(T) <= 4 && R <= 8 ? 3 : 1)
distconv_rank(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW, i64 offD, i64 offH,
              i64 offW, int mode, T cval, const DcFootprint fp) {
    static_assert(R >= 1 && R <= DC_RANK_KEEP && R * sizeof(T) <= DC_RANK_KEEP_BYTES, "R too large");
    static_assert(KD * KH * KW <= 64 * DC_RANK_WORDS, "footprint too large");
    constexpr int TH = BY * PY, TW = BX, SH = TH + KH - 1, SW = TW + KW - 1;
    constexpr bool FORGET = FULL && !TOP && KD * KH * KW == 2 * R - 1 && KD * KH * KW <= DC_RANK_FORGET_MAX;
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    T *s = reinterpret_cast<T *>(dc_smem_raw);
    __shared__ unsigned long long s_fp[DC_RANK_WORDS];  // a parameter indexed at run time would
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;  // be copied to local memory
#pragma unroll
    for (int w = 0; w < DC_RANK_WORDS; ++w)  // constant indices keep fp in the parameter bank
        if (tid == w) s_fp[w] = fp.bits[w];
    const i64 nty = (oH + TH - 1) / TH;
    const i64 x0 = (i64)blockIdx.x * TW;
    const T far = TOP ? dc_limits<T>::lowest() : dc_limits<T>::highest();

    for (i64 z = blockIdx.z; z < oD; z += gridDim.z) {
        for (i64 tyb = blockIdx.y; tyb < nty; tyb += gridDim.y) {
            const i64 y0 = tyb * TH;
#pragma unroll 1
            for (int kz = 0; kz < KD; ++kz)
                dc_stage<T, SH, SW, BX * BY>(s + kz * SH * SW, src, z + kz + offD, y0 + offH,
                                             x0 + offW, mode, cval, tid);
            __syncthreads();
#pragma unroll 1
            for (int py = 0; py < PY; ++py) {
                const i64 y = y0 + ty * PY + py, x = x0 + tx;
                if (y >= oH || x >= oW) continue;
                if constexpr (FORGET) {
                    out[(z * oH + y) * oW + x] =
                        dc_forgetful_median<T, KD, KH, KW, SH, SW>(s + (ty * PY + py) * SW + tx);
                    continue;
                }
                T buf[R];
#pragma unroll
                for (int j = 0; j < R; ++j) buf[j] = far;
                const T *base = s + (ty * PY + py) * SW + tx;
                // taps unrolled only while the body is short: a long insert chain repeated for
                // every tap would grow past the unroller's limits and push buf to local memory
#pragma unroll 1
                for (int kz = 0; kz < KD; ++kz)
#pragma unroll(R <= 2 ? KH : 1)
                    for (int kh = 0; kh < KH; ++kh)
#pragma unroll(R <= 8 ? KW : 1)
                        for (int kw = 0; kw < KW; ++kw) {
                            const int t = (kz * KH + kh) * KW + kw;
                            if (FULL || ((s_fp[t >> 6] >> (t & 63)) & 1ull))
                                dc_rank_insert<T, R, TOP>(buf, base[(kz * SH + kh) * SW + kw]);
                        }
                out[(z * oH + y) * oW + x] = buf[R - 1];
            }
            __syncthreads();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_extremum2d: the minimum (MAX: maximum) over a K0 x K1 box of a plane, as the two
//   separable passes (y then x) fused in shared memory: the input read once, the result
//   written once (the passes through distconv_rank read and wrote it twice). Exact in any T,
//   so the order of the passes does not matter (constant mode included: cval enters the box's
//   minimum either way). NaN propagates (a box holding one gives NaN, as numpy's min), so
//   nan_policy propagate needs no pass of its own (ops/rank.py NanRule).
// Threads -> data: DC_EXT_THREADS threads own a TH x TW output tile of one plane z (blockIdx.x: column
//   tiles, blockIdx.y: row tiles, grid-stride; blockIdx.z: planes). Horizontal pass: a thread
//   takes DC_EXT_PX consecutive columns of one staged row: the window's common core, then
//   suffix and prefix minima (K1 + 2 PX - 4 comparisons for PX outputs instead of PX (K1-1)).
//   Vertical pass: a thread takes one column and DC_EXT_PY consecutive rows the same way; a
//   warp covers 32 adjacent columns (coalesced stores).
// Shared memory (dynamic): the input tile with its halo, SH = TH+K0-1 rows x SW columns (TW
//   plus the horizontal window's reach, rounded so rows stay 16-byte aligned), then the
//   horizontal results, SH x TW; T each (the launcher's formula, rank.py _extremum_smem, is
//   this one). Windows are read as 16-byte vectors (float, double).
// Limits: K0, K1 <= DC_EXT_MAX_TAPS (registers of the sliding windows); sizes 64-bit.
#define DC_EXT_THREADS 256  // threads per block (one dimension)
#define DC_EXT_TH 64
#define DC_EXT_TW 64
#define DC_EXT_PX 4
#define DC_EXT_PY 8
#define DC_EXT_MAX_TAPS 33

// out[q] = extreme of w[q .. q+K-1], q < P, for a window w of at least P+K-1 values (registers).
template <typename T, int P, int K, bool MAX, int W>
__device__ __forceinline__ void dc_sliding_extreme(T (&out)[P], const T (&w)[W]) {
    static_assert(W >= P + K - 1, "a window of P + K - 1 values");
    const auto pick = [](T a, T b) { return MAX ? DcMax::apply(a, b) : DcMin::apply(a, b); };  // NaN wins
    if constexpr (K < P) {
#pragma unroll
        for (int q = 0; q < P; ++q) {
            T m = w[q];
#pragma unroll
            for (int k = 1; k < K; ++k) m = pick(m, w[q + k]);
            out[q] = m;
        }
    } else {
        T suf[P];  // suf[q] = extreme of w[q .. K-1]: the core w[P-1 .. K-1] shared by every window
        suf[P - 1] = w[P - 1];
#pragma unroll
        for (int k = P; k < K; ++k) suf[P - 1] = pick(suf[P - 1], w[k]);
#pragma unroll
        for (int q = P - 2; q >= 0; --q) suf[q] = pick(w[q], suf[q + 1]);
        out[0] = suf[0];
        T pre = w[K];  // extreme of w[K .. K+q-1]
#pragma unroll
        for (int q = 1; q < P; ++q) {
            if (q > 1) pre = pick(pre, w[K + q - 1]);
            out[q] = pick(suf[q], pre);
        }
    }
}

// Built for 4 blocks per SM (2 for 8-byte types): left at 1, ptxas spilled around the staging
// call on sm_80.
template <typename T, int K0, int K1, bool MAX>
__global__ void __launch_bounds__(DC_EXT_THREADS, sizeof(T) <= 4 ? 4 : 2)
distconv_extremum2d(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW, i64 offH,
                    i64 offW, int mode, T cval) {
    constexpr int NT = DC_EXT_THREADS, TH = DC_EXT_TH, TW = DC_EXT_TW, PX = DC_EXT_PX, PY = DC_EXT_PY;
    constexpr int VN = dc_vec16<T>::n, WN = (PX + K1 - 1 + VN - 1) / VN * VN;  // window, whole vectors
    constexpr int SH = TH + K0 - 1, SW = TW - PX + WN;
    static_assert(PX == 4 && TW % PX == 0 && TH % PY == 0, "tile shape");
    static_assert(K0 <= DC_EXT_MAX_TAPS && K1 <= DC_EXT_MAX_TAPS, "boxes within DC_EXT_MAX_TAPS");
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    T *s_in = reinterpret_cast<T *>(dc_smem_raw);
    T *s_h = s_in + SH * SW;
    const int tid = threadIdx.x;
    const i64 nty = (oH + TH - 1) / TH;
    const i64 x0 = (i64)blockIdx.x * TW;

    for (i64 z = blockIdx.z; z < oD; z += gridDim.z) {
        for (i64 tyb = blockIdx.y; tyb < nty; tyb += gridDim.y) {
            const i64 y0 = tyb * TH;
            dc_stage<T, SH, SW, NT>(s_in, src, z, y0 + offH, x0 + offW, mode, cval, tid);
            __syncthreads();
            for (int e = tid; e < SH * (TW / PX); e += NT) {
                const int r = e / (TW / PX), c = (e - r * (TW / PX)) * PX;
                T w[WN], m[PX];
                dc_load_window<WN>(w, s_in + r * SW + c);
                dc_sliding_extreme<T, PX, K1, MAX>(m, w);
                dc_store4(s_h + r * TW + c, m[0], m[1], m[2], m[3]);
            }
            __syncthreads();
            for (int e = tid; e < (TH / PY) * TW; e += NT) {
                const int seg = e / TW, c = e - seg * TW;
                T w[PY + K0 - 1], m[PY];
#pragma unroll
                for (int k = 0; k < PY + K0 - 1; ++k) w[k] = s_h[(seg * PY + k) * TW + c];
                dc_sliding_extreme<T, PY, K0, MAX>(m, w);
                dc_store_column<PY>(out, m, z, y0 + seg * PY, x0 + c, oH, oW);
            }
            __syncthreads();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_median3x3: the median of each 3 x 3 window of a plane (the 5th smallest of 9), the
//   same pick as distconv_rank's (NaN ranked high), by sorted columns shared between
//   neighbouring outputs: each column of 3 is sorted once for the PX outputs of a thread's row;
//   an output's median is med3(max of the 3 column minima, med3 of the middles, min of the
//   maxima), and two neighbouring outputs share two columns' max, min and ordered middles.
//   ~19 min/max per output against ~40 for forgetful selection (NOTES.md). PROPAGATE (floats):
//   NaN wherever the window holds one instead (nan_policy propagate without a screen of the
//   data first: a NaN-propagating max of each column, then of the window's three).
// Threads -> data: DC_MED3_TX x DC_MED3_TY threads own a TH x TW output tile of one
//   plane z (blockIdx.x: column tiles, blockIdx.y: row tiles, grid-stride; blockIdx.z: planes);
//   thread (tx, ty) computes PX consecutive columns x rows ty*PY .. ty*PY+PY-1, sliding down
//   its 3 input rows in registers (one new row per output row, read as 16-byte vectors).
// Shared memory (dynamic): the input tile with its halo, SH = TH+2 rows x SW = TW+4 columns (a
//   thread's 8-value window: whole vectors), T each; rank.py _median3x3_smem is this formula.
// Limits: a full 3 x 3 box (rank.py decides); sizes 64-bit.
#define DC_MED3_TX 16
#define DC_MED3_TY 16
#define DC_MED3_PX 4   // output columns per thread
#define DC_MED3_PY 8   // output rows per thread (8-byte types: half)
template <typename T> struct DcMed3Shape {
    static constexpr int PX = DC_MED3_PX, PY = sizeof(T) <= 4 ? DC_MED3_PY : DC_MED3_PY / 2;
    static constexpr int TW = DC_MED3_TX * PX, TH = DC_MED3_TY * PY, SH = TH + 2, SW = TW + 4;
};

template <typename T> __device__ __forceinline__ T dc_lo(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T dc_hi(T a, T b) { return b < a ? a : b; }
template <> __device__ __forceinline__ float dc_lo<float>(float a, float b) { return fminf(a, b); }
template <> __device__ __forceinline__ float dc_hi<float>(float a, float b) { return fmaxf(a, b); }
template <> __device__ __forceinline__ double dc_lo<double>(double a, double b) { return fmin(a, b); }
template <> __device__ __forceinline__ double dc_hi<double>(double a, double b) { return fmax(a, b); }

// med3 of (a, b, c) where a <= b already: b's place clipped by c
template <typename T> __device__ __forceinline__ T dc_med_sorted(T a, T b, T c) { return dc_hi(a, dc_lo(b, c)); }
template <typename T> __device__ __forceinline__ T dc_med3(T a, T b, T c) {
    return dc_hi(dc_lo(a, b), dc_lo(dc_hi(a, b), c));
}

template <typename T, bool PROPAGATE>
__global__ void __launch_bounds__(DC_MED3_TX *DC_MED3_TY, 2)
distconv_median3x3(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW, i64 offD,
                   i64 offH, i64 offW, int mode, T cval) {
    using S = DcMed3Shape<T>;
    constexpr int PX = S::PX, PY = S::PY, TW = S::TW, TH = S::TH, SH = S::SH, SW = S::SW, NT = DC_MED3_TX * DC_MED3_TY;
    constexpr int WN = 8, C = PX + 2;  // a window of 8 loaded, 6 columns used
    static_assert(PX == 4 && SW % 4 == 0, "four outputs per thread row, whole 16-byte windows");
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    T *s = reinterpret_cast<T *>(dc_smem_raw);
    const int tid = threadIdx.x, tx = tid % DC_MED3_TX, ty = tid / DC_MED3_TX;
    const i64 nty = (oH + TH - 1) / TH;
    const i64 x = (i64)blockIdx.x * TW + tx * PX;
    // a row of the thread's window, NaN ranked high (distconv_rank's order) unless PROPAGATE
    // (then a window with NaN gives NaN whatever its sort made of it)
    const auto row = [](T (&r)[WN], const T *p) {
        dc_load_window<WN>(r, p);
        if (!PROPAGATE) {
#pragma unroll
            for (int c = 0; c < C; ++c) r[c] = dc_nan_high(r[c]);
        }
    };

    for (i64 z = blockIdx.z; z < oD; z += gridDim.z) {
        for (i64 tyb = blockIdx.y; tyb < nty; tyb += gridDim.y) {
            const i64 y0 = tyb * TH;
            dc_stage<T, SH, SW, NT>(s, src, z + offD, y0 + offH, (i64)blockIdx.x * TW + offW, mode, cval, tid);
            __syncthreads();
            const T *base = s + ty * PY * SW + tx * PX;
            T r0[WN], r1[WN], r2[WN];
            row(r0, base);
            row(r1, base + SW);
#pragma unroll
            for (int py = 0; py < PY; ++py) {
                row(r2, base + (py + 2) * SW);
                T lo[C], mid[C], hi[C], nan[C];
#pragma unroll
                for (int c = 0; c < C; ++c) {  // each column of 3 sorted once
                    T a = r0[c], b = r1[c], d = r2[c];
                    if (PROPAGATE) nan[c] = DcMax::apply(DcMax::apply(a, b), d);  // NaN iff one is
                    dc_minmax(a, b);
                    dc_minmax(b, d);
                    dc_minmax(a, b);
                    lo[c] = a, mid[c] = b, hi[c] = d;
                }
                T m[PX];
#pragma unroll
                for (int j = 0; j < PX; j += 2) {  // outputs j and j+1 share columns j+1 and j+2
                    const T l = dc_hi(lo[j + 1], lo[j + 2]), h = dc_lo(hi[j + 1], hi[j + 2]);
                    T a = mid[j + 1], b = mid[j + 2];
                    dc_minmax(a, b);
                    m[j] = dc_med3(dc_hi(l, lo[j]), dc_med_sorted(a, b, mid[j]), dc_lo(h, hi[j]));
                    m[j + 1] = dc_med3(dc_hi(l, lo[j + 3]), dc_med_sorted(a, b, mid[j + 3]), dc_lo(h, hi[j + 3]));
                    if (PROPAGATE) {
                        const T f = DcMax::apply(nan[j + 1], nan[j + 2]);
                        const T f0 = DcMax::apply(f, nan[j]), f1 = DcMax::apply(f, nan[j + 3]);
                        m[j] = dc_isnan(f0) ? f0 : m[j];
                        m[j + 1] = dc_isnan(f1) ? f1 : m[j + 1];
                    }
                }
                const i64 y = y0 + ty * PY + py;
                if (y < oH) {
                    T *o = out + (z * oH + y) * oW + x;
                    if (x + PX <= oW && reinterpret_cast<unsigned long long>(o) % (PX * sizeof(T)) == 0) {
                        dc_store4(o, m[0], m[1], m[2], m[3]);
                    } else {
#pragma unroll
                        for (int q = 0; q < PX; ++q)
                            if (x + q < oW) o[q] = m[q];
                    }
                }
#pragma unroll
                for (int c = 0; c < WN; ++c) r0[c] = r1[c], r1[c] = r2[c];
            }
            __syncthreads();
        }
    }
}
