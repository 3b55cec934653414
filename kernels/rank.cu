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
// Medians of full boxes by networks shared between neighbouring outputs (Adams, "Fast median
// filters using separable sorting networks", 2021): sorted pieces of a window (a column, a pair
// of columns, the core a tile of outputs has in common) are built once and merged on, each merge
// computing only the ranks the medians after it can come from: the compiler drops every exchange
// whose result no median reads (all indices are compile-time), which prunes the networks.
// tests/gpu/test_median_gpu.py holds a numpy model of them, exchange for exchange.
// Exchanges are DcOrd's: NANP (floats) with NaN-propagating min/max (one instruction for float
// on sm_80 on), so a window holding NaN gives NaN (every output reads its whole window and
// nothing else: its median depends on each value); else plain ones (NaN dropped).
template <typename T> __device__ __forceinline__ T dc_lo(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T dc_hi(T a, T b) { return b < a ? a : b; }
template <> __device__ __forceinline__ float dc_lo<float>(float a, float b) { return fminf(a, b); }
template <> __device__ __forceinline__ float dc_hi<float>(float a, float b) { return fmaxf(a, b); }
template <> __device__ __forceinline__ double dc_lo<double>(double a, double b) { return fmin(a, b); }
template <> __device__ __forceinline__ double dc_hi<double>(double a, double b) { return fmax(a, b); }

template <typename T, bool NANP> struct DcOrd {
    static __device__ __forceinline__ T lo(T a, T b) {
        if constexpr (NANP) return DcMin::apply(a, b);
        else return dc_lo(a, b);
    }
    static __device__ __forceinline__ T hi(T a, T b) {
        if constexpr (NANP) return DcMax::apply(a, b);
        else return dc_hi(a, b);
    }
    static __device__ __forceinline__ void cx(T &a, T &b) {  // a <- the smaller, b <- the larger
        const T l = lo(a, b);
        b = hi(a, b);
        a = l;
    }
};

// Batcher's odd-even merge of sorted wires 0..na-1 and na..na+nb-1 (any lengths), built at
// compile time: comparator c puts the smaller value on wire lo[c] and the larger on hi[c]; the
// merged list is wires out[0..na+nb).
#define DC_NET_WIRES 24
#define DC_NET_COMPARATORS 64
struct DcNet {
    int n = 0;
    signed char lo[DC_NET_COMPARATORS] = {}, hi[DC_NET_COMPARATORS] = {}, out[DC_NET_WIRES] = {};
};
__host__ __device__ constexpr void dc_oem(DcNet &net, const signed char *a, int na, const signed char *b, int nb,
                                          signed char *out) {
    if (na == 0 || nb == 0) {
        for (int i = 0; i < na; ++i) out[i] = a[i];
        for (int i = 0; i < nb; ++i) out[i] = b[i];
        return;
    }
    if (na == 1 && nb == 1) {
        net.lo[net.n] = a[0], net.hi[net.n] = b[0], ++net.n;
        out[0] = a[0], out[1] = b[0];
        return;
    }
    // merge the even-indexed elements of both lists (v) and the odd-indexed ones (w), then
    // compare w[i] with v[i+1]
    signed char ae[DC_NET_WIRES] = {}, ao[DC_NET_WIRES] = {}, be[DC_NET_WIRES] = {}, bo[DC_NET_WIRES] = {};
    signed char v[DC_NET_WIRES] = {}, w[DC_NET_WIRES] = {};
    for (int i = 0; i < na; ++i) (i % 2 ? ao : ae)[i / 2] = a[i];
    for (int i = 0; i < nb; ++i) (i % 2 ? bo : be)[i / 2] = b[i];
    const int nv = (na + 1) / 2 + (nb + 1) / 2, nw = na / 2 + nb / 2;
    dc_oem(net, ae, (na + 1) / 2, be, (nb + 1) / 2, v);
    dc_oem(net, ao, na / 2, bo, nb / 2, w);
    out[0] = v[0];
    int k = 1, i = 0;
    for (; i < nw && i + 1 < nv; ++i) {
        net.lo[net.n] = w[i], net.hi[net.n] = v[i + 1], ++net.n;
        out[k++] = w[i], out[k++] = v[i + 1];
    }
    for (int j = i; j < nw; ++j) out[k++] = w[j];
    for (int j = i + 1; j < nv; ++j) out[k++] = v[j];
}
__host__ __device__ constexpr DcNet dc_merge_net(int na, int nb) {
    DcNet net;
    signed char a[DC_NET_WIRES] = {}, b[DC_NET_WIRES] = {};
    for (int i = 0; i < na; ++i) a[i] = (signed char)i;
    for (int i = 0; i < nb; ++i) b[i] = (signed char)(na + i);
    dc_oem(net, a, na, b, nb, net.out);
    return net;
}

// out = the sorted union of sorted a and sorted b (the ranks nobody reads are dropped).
template <class O, typename T, int NA, int NB>
__device__ __forceinline__ void dc_merge(const T (&a)[NA], const T (&b)[NB], T (&out)[NA + NB]) {
    static_assert(NA + NB <= DC_NET_WIRES, "a merge within DC_NET_WIRES");
    constexpr DcNet net = dc_merge_net(NA, NB);
    static_assert(net.n <= DC_NET_COMPARATORS, "a merge within DC_NET_COMPARATORS");
    T w[NA + NB];
#pragma unroll
    for (int i = 0; i < NA; ++i) w[i] = a[i];
#pragma unroll
    for (int i = 0; i < NB; ++i) w[NA + i] = b[i];
#pragma unroll
    for (int c = 0; c < net.n; ++c) O::cx(w[net.lo[c]], w[net.hi[c]]);
#pragma unroll
    for (int i = 0; i < NA + NB; ++i) out[i] = w[net.out[i]];
}

// dst = src[off .. off + N) (off a constant once the caller's loops are unrolled)
template <typename T, int N, int M>
__device__ __forceinline__ void dc_take(T (&dst)[N], const T (&src)[M], int off) {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = src[off + i];
}

// v sorted in place: its halves sorted, then merged (1 exchange for 2 values, 3 for 3, 5 for 4).
template <class O, typename T, int N>
__device__ __forceinline__ void dc_sort(T (&v)[N]) {
    if constexpr (N > 1) {
        T a[N / 2], b[N - N / 2];
        dc_take(a, v, 0);
        dc_take(b, v, N / 2);
        dc_sort<O>(a);
        dc_sort<O>(b);
        dc_merge<O>(a, b, v);
    }
}

// The K-th smallest (from 0) of sorted a and sorted b: the smallest over the splits i + j = K + 1
// of max(a[i-1], b[j-1]) (i values of a and j of b at most that large: K + 1 of them).
template <int K, class O, typename T, int NA, int NB>
__device__ __forceinline__ T dc_kth2(const T (&a)[NA], const T (&b)[NB]) {
    static_assert(K >= 0 && K < NA + NB, "a rank of the union");
    T r{};
    bool first = true;
#pragma unroll
    for (int i = 0; i <= NA; ++i) {
        const int j = K + 1 - i;
        if (j < 0 || j > NB) continue;
        const T t = i == 0 ? b[j - 1] : j == 0 ? a[i - 1] : O::hi(a[i - 1], b[j - 1]);
        r = first ? t : O::lo(r, t);
        first = false;
    }
    return r;
}

// The median kernels' shared-memory rows: staged from the 16-byte aligned column at or before the
// windows' start (16-byte asynchronous copies), LEAD columns before it: a thread's window of C
// values starts LEAD into the three vectors at its column 4 tx. LEAD = (offW - the low halo along
// x) mod 4, from the launcher (rank.py _median_lead): C + LEAD <= 12.
template <int LEAD, int C, typename T>
__device__ __forceinline__ void dc_median_row(T (&r)[C], const T *p) {
    static_assert(LEAD >= 0 && LEAD < 4 && C + LEAD <= 12, "a window inside three vectors");
    T w[12];
    dc_load_window<12>(w, p);
#pragma unroll
    for (int c = 0; c < C; ++c) r[c] = w[LEAD + c];
}

// Four outputs of a row at column x (the row pointer o already at x): one 16-byte store where it
// lies inside the row and is aligned, else element by element.
template <typename T>
__device__ __forceinline__ void dc_median_store4(T *o, const T (&m)[4], i64 x, i64 oW) {
    if (x + 4 <= oW && reinterpret_cast<unsigned long long>(o) % (4 * sizeof(T)) == 0) {
        dc_store4(o, m[0], m[1], m[2], m[3]);
    } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
            if (x + q < oW) o[q] = m[q];
    }
}

// ---------------------------------------------------------------------------------------------
// The 3 x 3 median of a row of four outputs, ~19 min/max an output. r0, r1, r2: input rows
// y-1 .. y+1 at columns x-1 .. x+4; m[q]: the median at (y, x + q). Each column of 3 is sorted
// once (shared by up to 3 outputs); an output's median is med3(max of the 3 column minima, med3
// of the middles, min of the maxima), and two neighbouring outputs share two columns' max of
// minima, min of maxima and ordered middles.
template <class O, typename T>
__device__ __forceinline__ void dc_median3x3_row(const T (&r0)[6], const T (&r1)[6], const T (&r2)[6], T (&m)[4]) {
    // med3 of (a, b, c) where a <= b already: b's place clipped by c; and of any three
    const auto med_sorted = [](T a, T b, T c) { return O::hi(a, O::lo(b, c)); };
    const auto med3 = [](T a, T b, T c) { return O::hi(O::lo(a, b), O::lo(O::hi(a, b), c)); };
    T lo[6], mid[6], hi[6];
#pragma unroll
    for (int c = 0; c < 6; ++c) {  // each column of 3 sorted once
        T col[3] = {r0[c], r1[c], r2[c]};
        dc_sort<O>(col);
        lo[c] = col[0], mid[c] = col[1], hi[c] = col[2];
    }
#pragma unroll
    for (int j = 0; j < 4; j += 2) {  // outputs j and j+1 share columns j+1 and j+2
        const T l = O::hi(lo[j + 1], lo[j + 2]), h = O::lo(hi[j + 1], hi[j + 2]);
        T a = mid[j + 1], b = mid[j + 2];
        O::cx(a, b);
        m[j] = med3(O::hi(l, lo[j]), med_sorted(a, b, mid[j]), O::lo(h, hi[j]));
        m[j + 1] = med3(O::hi(l, lo[j + 3]), med_sorted(a, b, mid[j + 3]), O::lo(h, hi[j + 3]));
    }
}

// The 5 x 5 median of two rows of four outputs (two 2 x 2 tiles), ~62 min/max an output against
// ~336 for forgetful selection (NOTES.md). r: input rows y-2 .. y+3 by columns x-2 .. x+5;
// m[dy][q]: the median at (y + dy, x + q). Tile k (outputs x+2k, x+2k+1) has a 4 x 4 core,
// columns 2k+1 .. 2k+4 of rows 1 .. 4, in every window: from the core columns sorted (shared by
// both tiles) and merged in pairs (the middle pair shared), only its ranks 3 .. 12 can reach a
// median of the 9 values more; then each row of the tile adds its 4 values of row 0 (or 5), sorted
// from pairs (ranks 7 .. 12 of those 20 kept), and each output its column of rows 1 .. 4 (sorted
// above) and its corner: the median is the 6th of 11 (7 of the 20 are smaller than it).
template <class O, typename T>
__device__ __forceinline__ void dc_median5x5_step(const T (&r)[6][8], T (&m)[2][4]) {
    T core[8][4];
#pragma unroll
    for (int c = 0; c < 8; ++c) {
        core[c][0] = r[1][c], core[c][1] = r[2][c], core[c][2] = r[3][c], core[c][3] = r[4][c];
        dc_sort<O>(core[c]);
    }
    T pr[3][8], rp[2][3][2];  // core columns merged in pairs; rows 0 and 5 sorted in pairs
#pragma unroll
    for (int p = 0; p < 3; ++p) {
        dc_merge<O>(core[2 * p + 1], core[2 * p + 2], pr[p]);
#pragma unroll
        for (int dy = 0; dy < 2; ++dy) {
            rp[dy][p][0] = r[dy ? 5 : 0][2 * p + 1], rp[dy][p][1] = r[dy ? 5 : 0][2 * p + 2];
            dc_sort<O>(rp[dy][p]);
        }
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
        T c16[16], c10[10];
        dc_merge<O>(pr[k], pr[k + 1], c16);
        dc_take(c10, c16, 3);
#pragma unroll
        for (int dy = 0; dy < 2; ++dy) {
            const T(&row)[8] = r[dy ? 5 : 0];
            T rs[4], c14[14], c6[6];
            dc_merge<O>(rp[dy][k], rp[dy][k + 1], rs);  // its columns 2k+1 .. 2k+4, sorted
            dc_merge<O>(c10, rs, c14);
            dc_take(c6, c14, 4);
#pragma unroll
            for (int dx = 0; dx < 2; ++dx) {
                const int c = dx ? 2 * k + 5 : 2 * k;
                T m10[10];
                dc_merge<O>(c6, core[c], m10);
                m[dy][2 * k + dx] = O::hi(m10[4], O::lo(m10[5], row[c]));
            }
        }
    }
}

// The 3 x 3 x 3 median of two rows of four outputs of a plane (two 2 x 2 tiles), ~100 min/max an
// output against ~390 for forgetful selection. v: planes z-1 .. z+1 by rows y-1 .. y+2 by columns
// x-1 .. x+4; m[dy][q]: the median at (z, y + dy, x + q). Every column along z is sorted (a
// triple, shared by up to 9 outputs); rows 1 and 2 of each column merged (6, shared by both
// rows); tile k's core, those of columns 2k+1 and 2k+2 (12, every value a possible median); each
// row of the tile adds its two triples of row 0 (or 3) (ranks 4 .. 13 of those 18 kept), each
// output its private column's 6 and its corner triple: the median is the 4th of ranks 6 .. 9 of
// the 16 and the corner's 3.
template <class O, typename T>
__device__ __forceinline__ void dc_median3x3x3_step(const T (&v)[3][4][6], T (&m)[2][4]) {
    T tri[4][6][3];
#pragma unroll
    for (int y = 0; y < 4; ++y)
#pragma unroll
        for (int x = 0; x < 6; ++x) {
            tri[y][x][0] = v[0][y][x], tri[y][x][1] = v[1][y][x], tri[y][x][2] = v[2][y][x];
            dc_sort<O>(tri[y][x]);
        }
    T vp[6][6];
#pragma unroll
    for (int x = 0; x < 6; ++x) dc_merge<O>(tri[1][x], tri[2][x], vp[x]);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
        const int x0 = 2 * k;
        T c12[12];
        dc_merge<O>(vp[x0 + 1], vp[x0 + 2], c12);
#pragma unroll
        for (int dy = 0; dy < 2; ++dy) {
            const int yr = dy ? 3 : 0;
            T hp[6], c18[18], c10[10];
            dc_merge<O>(tri[yr][x0 + 1], tri[yr][x0 + 2], hp);
            dc_merge<O>(c12, hp, c18);
            dc_take(c10, c18, 4);
#pragma unroll
            for (int dx = 0; dx < 2; ++dx) {
                const int xc = dx ? x0 + 3 : x0;
                T m16[16], m4[4];
                dc_merge<O>(c10, vp[xc], m16);
                dc_take(m4, m16, 6);
                m[dy][x0 + dx] = dc_kth2<3, O>(m4, tri[yr][xc]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_median3x3 / distconv_median5x5: the median of each K x K window of a plane (K = 3:
//   dc_median3x3_row, the 5th smallest of 9; K = 5: dc_median5x5_step, the 13th of 25).
//   NANP: floats, a window holding NaN gives NaN (DcOrd); LEAD: dc_median_row.
// Threads -> data: TX x TY threads (DC_MED3_* for K = 3, DC_MED5_* for K = 5) own a TH x TW
//   output tile of one plane z (blockIdx.x: column tiles, blockIdx.y: row tiles, grid-stride;
//   blockIdx.z: planes, grid-stride); thread (tx, ty) computes PX = 4 consecutive columns x
//   rows ty*PY .. ty*PY+PY-1: K = 3 sliding down its 3 input rows in registers (one new row an
//   output row), K = 5 two rows a step (its 6 rows read anew); rows read from shared memory as
//   16-byte vectors.
// Shared memory (dynamic): the input tile with its halo, SH = TH+K-1 rows x SW = TW+8 columns
//   (dc_median_row), T each; rank.py _median_tile is this formula.
// Registers: 4-byte types built for 2 blocks per SM (<= 128); 8-byte 5 x 5 for one.
// Limits: a full K x K box (rank.py decides); sizes 64-bit.
#define DC_MED3_TX 16
#define DC_MED3_TY 16
#define DC_MED3_PX 4   // output columns per thread
#define DC_MED3_PY 8   // output rows per thread (8-byte types: half)
#define DC_MED5_TX 16
#define DC_MED5_TY 16
#define DC_MED5_PX 4   // output columns per thread (two 2 x 2 tiles)
#define DC_MED5_PY 8   // output rows per thread, two a step (8-byte types: half)
template <typename T, int K> struct DcMedShape {
    static constexpr int TX = K == 3 ? DC_MED3_TX : DC_MED5_TX, TY = K == 3 ? DC_MED3_TY : DC_MED5_TY;
    static constexpr int PX = K == 3 ? DC_MED3_PX : DC_MED5_PX, PY0 = K == 3 ? DC_MED3_PY : DC_MED5_PY;
    static constexpr int PY = sizeof(T) <= 4 ? PY0 : PY0 / 2;
    static constexpr int TW = TX * PX, TH = TY * PY, SH = TH + K - 1, SW = TW + 8;
};

template <typename T, int K, bool NANP, int LEAD>
__device__ __forceinline__ void dc_median2d(const DcTile &src, T *__restrict__ out, i64 oD, i64 oH, i64 oW,
                                            i64 offD, i64 offH, i64 offW, int mode, T cval) {
    using S = DcMedShape<T, K>;
    using O = DcOrd<T, NANP>;
    constexpr int PX = S::PX, PY = S::PY, TW = S::TW, TH = S::TH, SH = S::SH, SW = S::SW, NT = S::TX * S::TY;
    static_assert(PX == 4 && SW % 4 == 0 && (K == 3 || PY % 2 == 0), "rows of four outputs, two a step for 5 x 5");
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    T *s = reinterpret_cast<T *>(dc_smem_raw);
    const int tid = threadIdx.x, tx = tid % S::TX, ty = tid / S::TX;
    const i64 nty = (oH + TH - 1) / TH;
    const i64 x = (i64)blockIdx.x * TW + tx * PX;

    for (i64 z = blockIdx.z; z < oD; z += gridDim.z) {
        for (i64 tyb = blockIdx.y; tyb < nty; tyb += gridDim.y) {
            const i64 y0 = tyb * TH;
            dc_stage<T, SH, SW, NT>(s, src, z + offD, y0 + offH, (i64)blockIdx.x * TW + offW - LEAD, mode, cval, tid);
            __syncthreads();
            const T *base = s + ty * PY * SW + tx * PX;
            T *orow = out + (z * oH + y0 + ty * PY) * oW + x;  // this thread's first output row
            if constexpr (K == 3) {
                T r0[6], r1[6], r2[6], m[4];
                dc_median_row<LEAD>(r0, base);
                dc_median_row<LEAD>(r1, base + SW);
#pragma unroll
                for (int py = 0; py < PY; ++py) {
                    dc_median_row<LEAD>(r2, base + (py + 2) * SW);
                    dc_median3x3_row<O>(r0, r1, r2, m);
                    if (y0 + ty * PY + py < oH) dc_median_store4(orow + py * oW, m, x, oW);
#pragma unroll
                    for (int c = 0; c < 6; ++c) r0[c] = r1[c], r1[c] = r2[c];
                }
            } else {
#pragma unroll 1
                for (int py = 0; py < PY; py += 2) {
                    T r[6][8], m[2][4];
#pragma unroll
                    for (int i = 0; i < 6; ++i) dc_median_row<LEAD>(r[i], base + (py + i) * SW);
                    dc_median5x5_step<O>(r, m);
#pragma unroll
                    for (int dy = 0; dy < 2; ++dy)
                        if (y0 + ty * PY + py + dy < oH) dc_median_store4(orow + (py + dy) * oW, m[dy], x, oW);
                }
            }
            __syncthreads();
        }
    }
}

template <typename T, bool NANP, int LEAD>
__global__ void __launch_bounds__(DC_MED3_TX *DC_MED3_TY, 2)
distconv_median3x3(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW, i64 offD,
                   i64 offH, i64 offW, int mode, T cval) {
    dc_median2d<T, 3, NANP, LEAD>(src, out, oD, oH, oW, offD, offH, offW, mode, cval);
}

template <typename T, bool NANP, int LEAD>
__global__ void __launch_bounds__(DC_MED5_TX *DC_MED5_TY, sizeof(T) <= 4 ? 2 : 1)
distconv_median5x5(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW, i64 offD,
                   i64 offH, i64 offW, int mode, T cval) {
    dc_median2d<T, 5, NANP, LEAD>(src, out, oD, oH, oW, offD, offH, offW, mode, cval);
}

// ---------------------------------------------------------------------------------------------
// distconv_median3x3x3: the median of each 3 x 3 x 3 window (the 14th smallest of 27), by
//   dc_median3x3x3_step's networks, sliding along z with each input plane staged once.
//   NANP: floats, a window holding NaN gives NaN (DcOrd); LEAD: dc_median_row.
// Threads -> data: DC_MED27_TX x DC_MED27_TY threads own a TH x TW output tile of a run of nz
//   planes (blockIdx.x: column tiles, blockIdx.y: row tiles, grid-stride; blockIdx.z: runs of
//   planes, grid-stride); thread (tx, ty) computes PX = 4 consecutive columns x PY = 2 rows
//   (ty*2, ty*2+1) of each plane of the run, its 3 x 4 x 6 window read from shared memory as
//   16-byte vectors.
// Shared memory (dynamic): a ring of DC_MED27_PLANES staged input planes, each SH = TH+2 rows x
//   SW = TW+8 columns (dc_median_row), T each: the three an output plane reads and the next one's
//   copies in flight (one barrier a plane); rank.py _median_tile is this formula.
// Registers: 4-byte types built for 2 blocks per SM (<= 128), 8-byte ones for one.
// Limits: a full 3 x 3 x 3 box (rank.py decides); sizes 64-bit.
#define DC_MED27_TX 16
#define DC_MED27_TY 16
#define DC_MED27_PX 4      // output columns per thread (two 2 x 2 tiles)
#define DC_MED27_PY 2      // output rows per thread
#define DC_MED27_PLANES 4  // staged planes in the ring
template <typename T, bool NANP, int LEAD>
__global__ void __launch_bounds__(DC_MED27_TX *DC_MED27_TY, sizeof(T) <= 4 ? 2 : 1)
distconv_median3x3x3(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW, i64 offD,
                     i64 offH, i64 offW, int mode, T cval, int nz) {
    using O = DcOrd<T, NANP>;
    constexpr int PX = DC_MED27_PX, PY = DC_MED27_PY, TW = DC_MED27_TX * PX, TH = DC_MED27_TY * PY;
    constexpr int SH = TH + 2, SW = TW + 8, PLANE = SH * SW, NB = DC_MED27_PLANES;
    constexpr int NT = DC_MED27_TX * DC_MED27_TY;
    static_assert(PX == 4 && PY == 2 && NB == 4 && SW % 4 == 0, "two 2 x 2 tiles, a ring of 4 planes");
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    T *s = reinterpret_cast<T *>(dc_smem_raw);
    const int tid = threadIdx.x, tx = tid % DC_MED27_TX, ty = tid / DC_MED27_TX;
    const i64 nty = (oH + TH - 1) / TH, nruns = (oD + nz - 1) / nz;
    const i64 x = (i64)blockIdx.x * TW + tx * PX, ix0 = (i64)blockIdx.x * TW + offW - LEAD;
    const int mine = ty * PY * SW + tx * PX;  // this thread's first staged element in a plane

    for (i64 run = blockIdx.z; run < nruns; run += gridDim.z) {
        for (i64 tyb = blockIdx.y; tyb < nty; tyb += gridDim.y) {
            const i64 y0 = tyb * TH, z0 = run * nz, iy0 = y0 + offH;
            const int planes = (int)((z0 + nz < oD ? z0 + nz : oD) - z0);  // output planes of the run
#pragma unroll 1
            for (int p = 0; p < 3; ++p)
                dc_stage<T, SH, SW, NT, DC_STAGE_UNROLL, false, true>(s + p * PLANE, src, z0 + p + offD, iy0, ix0,
                                                                      mode, cval, tid);
#pragma unroll 1
            for (int q = 0; q < planes; ++q) {
                // output plane z0 + q reads input planes q .. q+2 of the run (ring slots q % 4 ..):
                // plane q+2's copies were issued a plane ago (or above); slot (q+3) % 4 was read
                // last by plane q-1, which every thread has finished at the barrier
                dc_cp_async_wait_all();
                __syncthreads();
                if (q + 1 < planes)
                    dc_stage<T, SH, SW, NT, DC_STAGE_UNROLL, false, true>(s + ((q + 3) % NB) * PLANE, src,
                                                                          z0 + q + 3 + offD, iy0, ix0, mode, cval, tid);
                T v[3][4][6], m[2][4];
#pragma unroll
                for (int k = 0; k < 3; ++k)
#pragma unroll
                    for (int r = 0; r < 4; ++r)
                        dc_median_row<LEAD>(v[k][r], s + ((q + k) % NB) * PLANE + mine + r * SW);
                dc_median3x3x3_step<O>(v, m);
                const i64 z = z0 + q;
#pragma unroll
                for (int dy = 0; dy < PY; ++dy) {
                    const i64 y = y0 + ty * PY + dy;
                    if (y < oH) dc_median_store4(out + (z * oH + y) * oW + x, m[dy], x, oW);
                }
            }
            __syncthreads();  // the next tile's first planes go into slots read just now
        }
    }
}
