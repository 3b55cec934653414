// distconv convolution kernels: N-D correlate (up to 3-D masks) over a halo tile.
// correlate: out[z, y, x] = sum_{kz, ky, kx} w[kz, ky, kx] * in[z + kz + offD, y + ky + offH, x + kx + offW]
// in extended tile coordinates (DcTile, common.cuh); the boundary mode is applied at the tile's
// edges, which are global edges. convolve/correlate1d/separable passes are all this with other
// masks and offsets (the launcher in distconv/backends/cuda/convolve.py decides).
#include "common.cuh"
#include "binning.cuh"

// Masks live in constant memory, DC_MASK_SLOTS per dtype, so chunks running concurrently with
// different masks do not overwrite each other; distconv/backends/cuda/masks.py hands out the slots.
#define DC_MASK_SLOTS 4
#define DC_MASK_F32 1024
#define DC_MASK_F64 1024
__constant__ float dc_mask_f32[DC_MASK_SLOTS][DC_MASK_F32];   // 16 KiB
__constant__ double dc_mask_f64[DC_MASK_SLOTS][DC_MASK_F64];  // 32 KiB

template <typename T> __device__ __forceinline__ T dc_mask(int slot, int i);
template <> __device__ __forceinline__ float dc_mask<float>(int slot, int i) { return dc_mask_f32[slot][i]; }
template <> __device__ __forceinline__ double dc_mask<double>(int slot, int i) { return dc_mask_f64[slot][i]; }

template <typename T, bool CMASK>
__device__ __forceinline__ T dc_weight(int slot, const T *__restrict__ wg, int i) {
    if (CMASK) return dc_mask<T>(slot, i);
    return __ldg(wg + i);
}

// Taps passed by value (the kernel's parameter space): with the index known at compile time each
// FFMA reads its tap as a constant-bank operand; through a constant-memory slot chosen at run
// time every tap was a load first (NOTES.md, "Gaussian -> laplace -> histogram").
template <typename T, int N> struct DcTaps { T w[N]; };

// acc[py][px] += the taps of mask row r - py over win, the register window of staged row r
// (r known at compile time once unrolled), its first LEAD values before the outputs' first
// column: taps in column order from weight(kh * KW + kw).
template <int PY, int PX, int KH, int KW, int WN, int LEAD = 0, typename T, typename Weight>
__device__ __forceinline__ void dc_row_taps(T (&acc)[PY][PX], const T (&win)[WN], int r,
                                            const Weight &weight) {
#pragma unroll
    for (int py = 0; py < PY; ++py) {
        const int kh = r - py;
        if (kh < 0 || kh >= KH) continue;
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
            const T w = weight(kh * KW + kw);
#pragma unroll
            for (int px = 0; px < PX; ++px) acc[py][px] = fma(w, win[LEAD + px + kw], acc[py][px]);
        }
    }
}

// acc[py][px] += the KH x KW correlate at output (py, px) of a block whose first staged row is
// s (row pitch `pitch`, the block's first column at s): for each of the PY+KH-1 rows a register
// window of WN values (16-byte reads), taps in row-major order from weight(i). Every kernel
// that correlates staged rows uses this one order, so a fused kernel's result equals the
// tiled kernel's bit for bit.
template <int PY, int PX, int KH, int KW, int WN, typename T, typename Weight>
__device__ __forceinline__ void dc_correlate_rows(T (&acc)[PY][PX], const T *s, int pitch,
                                                  const Weight &weight) {
#pragma unroll
    for (int r = 0; r < PY + KH - 1; ++r) {
        T win[WN];
        dc_load_window<WN>(win, s + r * pitch);
        dc_row_taps<PY, PX, KH, KW, WN>(acc, win, r, weight);
    }
}

// A thread's run of four outputs at column x of an output row o (row length oW): as vectors
// when rows are 16-byte multiples from a 16-byte aligned start (`aligned`: the caller's out;
// a long 1-D correlate's rows start wherever its aligned input windows put them) and the run
// lies inside the row, else element by element.
template <typename T>
__device__ __forceinline__ void dc_store_run(T *o, const T (&v)[4], i64 x, i64 oW, bool aligned = true) {
    if (aligned && (oW % dc_vec16<T>::n) == 0 && x + 4 <= oW) {
        dc_store4(o, v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
        for (int px = 0; px < 4; ++px)
            if (x + px < oW) o[px] = v[px];
    }
}

// A thread's PY x 4 outputs at rows y.., columns x.. of output plane z (plane size oH x oW): the
// first row's address, the rows and columns left and the store width found once per tile, not
// per row (per row they had cost ~45 instructions: ~11 an output of a 9 x 9 mask); 16-byte
// stores where out (`aligned`) and the rows are aligned and the run lies inside its row.
template <int PY, typename T>
__device__ __forceinline__ void dc_store_rows(T *out, const T (&v)[PY][4], i64 z, i64 y, i64 x, i64 oH, i64 oW,
                                              bool aligned) {
    if (x >= oW || y >= oH) return;
    T *o = out + (z * oH + y) * oW + x;
    const int rows = oH - y < PY ? (int)(oH - y) : PY;
    const int cols = oW - x < 4 ? (int)(oW - x) : 4;
    const bool vec = aligned && (oW % dc_vec16<T>::n) == 0 && cols == 4;
#pragma unroll
    for (int q = 0; q < PY; ++q, o += oW) {
        if (q >= rows) break;
        if (vec) {
            dc_store4(o, v[q][0], v[q][1], v[q][2], v[q][3]);
        } else {
#pragma unroll
            for (int px = 0; px < 4; ++px)
                if (px < cols) o[px] = v[q][px];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_correlate_tiled: register-tiled correlate for masks up to 32 x 32 per plane.
// Threads -> data: a block of BX x BY threads owns an output tile of TH = BY*PY rows by
//   TW = BX*PX columns of one output plane z; thread (tx, ty) computes the PY x PX outputs at
//   rows ty*PY.., columns tx*PX.. (blockIdx.x: column tiles, blockIdx.y: row tiles with a
//   grid-stride loop, blockIdx.z: planes with a grid-stride loop).
// Shared memory (dynamic): one input plane of the tile with its halo, SH = TH+KH-1 rows by
//   SWP = (BX-1)*PX + WN columns (WN = PX+KW-1 rounded up to a 16-byte vector), T each. Each
//   mask plane kz restages the tile (3-D masks reread planes from L2, not DRAM, in practice).
//   Rows are read as 16-byte vectors: a warp reads 512 contiguous bytes, conflict-free.
// Registers: PY*PX accumulators and a WN-wide window reused across PX outputs and PY rows.
// Mask: constant memory (CMASK, slot) or global memory (wg) when it does not fit.
// Limits: KH, KW <= DC_TILED_MAX (compile time; the launcher reads it); KD any; sizes 64-bit.
#define DC_TILED_MAX 32
// Blocks per SM the float build is made for, which caps its registers at 65536 / (256 x n): more
// blocks, more tiles' copies in flight per SM (NOTES.md, "Kernels to the roofline": 2 -> 4 took
// conv2d_3x3 from 54 to 70 % of copy). The steps are the largest that compile without spills
// over a sweep of 420 mask shapes up to 32 x 32 on sm_90 (rows of one, or up to 64 taps at most
// 8 wide: 4; up to 24 wide: 3; wider: 2); sm_80's allocator spills at 3 already, so builds
// before Hopper keep 2; double keeps one.
#define DC_TILED_BLOCKS_SMALL 4
#define DC_TILED_BLOCKS_MID 3
#define DC_TILED_BLOCKS_WIDE 2
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define DC_TILED_PRE_HOPPER 1  // (a #if, never both values in one compile: the loader reads one;
                               // the sliding kernel's steps read it too)
#endif
template <typename T, int KH, int KW>
constexpr int dc_tiled_min_blocks() {
#ifdef DC_TILED_PRE_HOPPER
    return sizeof(T) != 4 ? 1 : DC_TILED_BLOCKS_WIDE;  // sm_80 spills at the larger steps (sweep)
#else
    return sizeof(T) != 4                           ? 1
           : KH == 1 || (KW <= 8 && KH * KW <= 64) ? DC_TILED_BLOCKS_SMALL
           : KW <= 24                              ? DC_TILED_BLOCKS_MID
                                                   : DC_TILED_BLOCKS_WIDE;
#endif
}
template <typename T, int KH, int KW, int BX, int BY, int PX, int PY, bool CMASK>
__global__ void __launch_bounds__(BX *BY, dc_tiled_min_blocks<T, KH, KW>())
distconv_correlate_tiled(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW,
                         i64 offD, i64 offH, i64 offW, int KD, int mode, T cval, int slot,
                         const T *__restrict__ wg) {
    static_assert(PX == 4, "outputs per thread along x: four (one 16-byte store)");
    static_assert(KH <= DC_TILED_MAX && KW <= DC_TILED_MAX, "mask rows and columns within DC_TILED_MAX");
    constexpr int VN = dc_vec16<T>::n;
    constexpr int TH = BY * PY, TW = BX * PX;
    constexpr int WN = ((PX + KW - 1 + VN - 1) / VN) * VN;
    constexpr int SH = TH + KH - 1;
    constexpr int SWP = (BX - 1) * PX + WN;
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    T *s = reinterpret_cast<T *>(dc_smem_raw);

    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
    const i64 nty = (oH + TH - 1) / TH;
    const i64 x0 = (i64)blockIdx.x * TW;

    for (i64 z = blockIdx.z; z < oD; z += gridDim.z) {
        for (i64 tyb = blockIdx.y; tyb < nty; tyb += gridDim.y) {
            const i64 y0 = tyb * TH;
            T acc[PY][PX];
#pragma unroll
            for (int a = 0; a < PY; ++a)
#pragma unroll
                for (int b = 0; b < PX; ++b) acc[a][b] = T(0);

            for (int kz = 0; kz < KD; ++kz) {
                const i64 iz = z + kz + offD, iy0 = y0 + offH, ix0 = x0 + offW;
                // (the widest masks leave no registers for a second copy in flight per step)
                dc_stage<T, SH, SWP, BX * BY, (KW > 24 ? 1 : DC_STAGE_UNROLL)>(s, src, iz, iy0, ix0, mode, cval, tid);
                __syncthreads();
                const int wbase = kz * KH * KW;
                const T *wk = CMASK ? wg : wg + wbase;  // (a global mask: one base per plane)
                dc_correlate_rows<PY, PX, KH, KW, WN>(acc, s + ty * PY * SWP + tx * PX, SWP, [&](int i) {
                    return dc_weight<T, CMASK>(slot, wk, CMASK ? wbase + i : i);
                });
                __syncthreads();
            }
            dc_store_rows<PY>(out, acc, z, y0 + ty * PY, x0 + tx * PX, oH, oW,
                              reinterpret_cast<unsigned long long>(out) % 16 == 0);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_correlate_slide3d: a 3-D mask (KD > 1) sliding along z, each input plane staged once
//   (the tiled kernel restages KD planes per output plane).
// Threads -> data: a block of BX x BY threads owns an output tile of TH = BY*PY rows by
//   TW = BX*PX columns and a run of nz output planes (blockIdx.x: column tiles, blockIdx.y: row
//   tiles, blockIdx.z: runs of planes; y and z grid-stride). Thread (tx, ty) keeps KD sets of
//   PY x PX accumulators: set q is output plane p - (KD-1) + q while input plane p is staged,
//   which it meets with mask plane KD-1-q. After plane p set 0 is complete: it is stored and the
//   sets shift down one.
// Shared memory (dynamic): two staged planes, each SH = TH+KH-1 rows by SWP = (BX-1)*PX + WN
//   columns (WN = LEAD+PX+KW-1 rounded up to a 16-byte vector): the next plane's copies are in
//   flight while this one computes (one barrier per plane). A plane is staged from LEAD columns
//   before the tile's window (LEAD < one 16-byte vector: the launcher's `lead`, where the centre
//   piece's rows and planes are 16-byte multiples), so its rows start 16-byte aligned and
//   stage by 16-byte copies (4-byte copies cost a 3^3 mask ~11 instructions an output); a
//   thread's register window then starts LEAD values early. Any LEAD is correct; only the
//   launcher's is fast.
// Taps: by value (DcTaps), KD*KH*KW*sizeof(T) <= DC_SLIDE_TAP_BYTES (the parameter space).
// Sum order per output: kz, then kh, then kw, as the tiled kernel: the same result bit for bit.
// Limits: KH, KW, KD compile time, KD <= DC_SLIDE_MAX_DEPTH and KH, KW <= DC_SLIDE_MAX_WIDTH (the
// launcher reads both); sizes 64-bit.
#define DC_SLIDE_MAX_DEPTH 8
#define DC_SLIDE_MAX_WIDTH 16
#define DC_SLIDE_TAP_BYTES 2048
// Blocks per SM the float build is made for: 3 (85 registers) while a thread's accumulator sets
// times rows stay within DC_SLIDE_SETS, else 2; one-row builds do not unroll the stage's copy
// loop (its registers go to the accumulators; two-row builds spill that way, and keep it).
// 5x5x5 at 3 blocks: 2.65 vs 3.02 ms per GiB on H200 (NOTES.md, "A 3-D mask sliding along z");
// the steps are the largest without spills over a sweep of masks up to 8 x 16 x 16 (sm_80
// spills two rows at 3).
#define DC_SLIDE_BLOCKS 3
#define DC_SLIDE_SETS 6
#define DC_SLIDE_UNROLL 1
template <typename T, int KD, int PY>
constexpr int dc_slide_min_blocks() {
#ifdef DC_TILED_PRE_HOPPER
    constexpr bool fits = PY == 1 && KD <= DC_SLIDE_SETS;
#else
    constexpr bool fits = KD * PY <= DC_SLIDE_SETS;
#endif
    return sizeof(T) != 4 ? 1 : fits ? DC_SLIDE_BLOCKS : 2;
}
template <typename T, int KD, int KH, int KW, int BX, int BY, int PX, int PY, int LEAD>
__global__ void __launch_bounds__(BX *BY, dc_slide_min_blocks<T, KD, PY>())
distconv_correlate_slide3d(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW,
                           i64 offD, i64 offH, i64 offW, int mode, T cval, int nz,
                           const DcTaps<T, KD * KH * KW> taps) {
    static_assert(PX == 4, "outputs per thread along x: four (one 16-byte store)");
    static_assert(KD * KH * KW * sizeof(T) <= DC_SLIDE_TAP_BYTES, "taps over the parameter space");
    static_assert(KD <= DC_SLIDE_MAX_DEPTH && KH <= DC_SLIDE_MAX_WIDTH && KW <= DC_SLIDE_MAX_WIDTH,
                  "mask within the sliding kernel's limits");
    constexpr int VN = dc_vec16<T>::n;
    static_assert(LEAD >= 0 && LEAD < VN, "a lead within one 16-byte vector");
    constexpr int TH = BY * PY, TW = BX * PX;
    constexpr int WN = ((LEAD + PX + KW - 1 + VN - 1) / VN) * VN;
    constexpr int SH = TH + KH - 1, SWP = (BX - 1) * PX + WN, PLANE = SH * SWP;
    constexpr int NT = BX * BY, UNROLL = PY == 1 ? DC_SLIDE_UNROLL : DC_STAGE_UNROLL;
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    T *s = reinterpret_cast<T *>(dc_smem_raw);

    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
    const int mine = ty * PY * SWP + tx * PX;  // this thread's first staged element in a plane
    const i64 nty = (oH + TH - 1) / TH, nruns = (oD + nz - 1) / nz;
    const i64 x0 = (i64)blockIdx.x * TW;

    for (i64 run = blockIdx.z; run < nruns; run += gridDim.z) {
        for (i64 tyb = blockIdx.y; tyb < nty; tyb += gridDim.y) {
            const i64 y0 = tyb * TH, z0 = run * nz, iy0 = y0 + offH, ix0 = x0 + offW - LEAD;
            const int planes = (int)((z0 + nz < oD ? z0 + nz : oD) - z0) + KD - 1;
            T acc[KD][PY][PX];
#pragma unroll
            for (int q = 0; q < KD; ++q)
#pragma unroll
                for (int a = 0; a < PY; ++a)
#pragma unroll
                    for (int b = 0; b < PX; ++b) acc[q][a][b] = T(0);

            dc_stage<T, SH, SWP, NT, UNROLL, false, true>(s, src, z0 + offD, iy0, ix0, mode, cval, tid);
            for (int p = 0; p < planes; ++p) {
                dc_cp_async_wait_all();
                __syncthreads();  // plane p staged; every thread is done with plane p-1's buffer
                if (p + 1 < planes)
                    dc_stage<T, SH, SWP, NT, UNROLL, false, true>(s + ((p + 1) & 1) * PLANE, src, z0 + p + 1 + offD,
                                                                  iy0, ix0, mode, cval, tid);
                const T *sp = s + (p & 1) * PLANE + mine;
#pragma unroll
                for (int r = 0; r < PY + KH - 1; ++r) {
                    T win[WN];
                    dc_load_window<WN>(win, sp + r * SWP);
#pragma unroll
                    for (int q = 0; q < KD; ++q)
                        dc_row_taps<PY, PX, KH, KW, WN, LEAD>(acc[q], win, r, [&](int i) {
                            return taps.w[(KD - 1 - q) * KH * KW + i];
                        });
                }
                const i64 z = z0 + p - (KD - 1);
                if (z >= z0) dc_store_rows<PY>(out, acc[0], z, y0 + ty * PY, x0 + tx * PX, oH, oW, true);
#pragma unroll
                for (int q = 0; q < KD; ++q)
#pragma unroll
                    for (int a = 0; a < PY; ++a)
#pragma unroll
                        for (int b = 0; b < PX; ++b) acc[q][a][b] = q + 1 < KD ? acc[q + 1][a][b] : T(0);
            }
            __syncthreads();  // the next tile's first plane goes into a buffer read just now
        }
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_correlate_direct: any mask size (the fallback for masks over 32 per axis).
// Threads -> data: one thread per output element (grid-stride over the flattened output).
// Shared memory: none; every tap goes through dc_tile_load (L1/L2 absorb the reuse).
// Limits: none beyond 64-bit sizes; slow for big masks by design.
template <typename T, bool CMASK>
__global__ void distconv_correlate_direct(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH,
                                          i64 oW, i64 offD, i64 offH, i64 offW, int KD, int KH,
                                          int KW, int mode, T cval, int slot,
                                          const T *__restrict__ wg) {
    const i64 total = oD * oH * oW;
    for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (i64)gridDim.x * blockDim.x) {
        const i64 x = e % oW, y = (e / oW) % oH, z = e / (oW * oH);
        T acc = T(0);
        for (int kz = 0; kz < KD; ++kz)
            for (int kh = 0; kh < KH; ++kh)
                for (int kw = 0; kw < KW; ++kw)
                    acc = fma(dc_weight<T, CMASK>(slot, wg, (kz * KH + kh) * KW + kw),
                              dc_tile_load<T>(src, z + kz + offD, y + kh + offH, x + kw + offW, mode, cval),
                              acc);
        out[e] = acc;
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_separable2d: J = (w0 along y) o (w1 along x), then (K2H x K2W > 1) a small correlate
//   w2 over J, then the result written (BINNING == DC_BIN_NONE) or counted into bins; one pass
//   over memory however many steps (gaussian -> laplace -> histogram reads its input once and
//   writes 256 counts).
// Threads -> data: 256 threads own a TH = 64 row x TW = 64 column output tile of one plane z
//   (blockIdx.x: column tiles, blockIdx.y: row tiles, grid-stride; blockIdx.z: planes).
//   J is computed on the tile grown by the second step's reach: JH = TH+K2H-1 rows by
//   JW = TW+K2W-1 columns (JH x JW = TH x TW without a second step).
//   Horizontal pass: a thread takes DC_SEP_PX consecutive columns of one staged row at a time
//   (a register window of PX+K1-1 values read as 16-byte vectors, results stored as vectors).
//   Vertical pass: a thread takes one column and DC_SEP_PY consecutive rows at a time, a
//   register window sliding down; a warp covers 32 adjacent columns (coalesced stores).
//   Second step: a thread takes 4 rows x PX columns of the output (16 x 16 threads), a register
//   window of PX+K2W-1 values per J row, through dc_correlate_rows as the tiled correlate (so
//   the fused result equals, bit for bit, the two kernels run one after the other).
// Where J's window leaves J's extent (jH x jW: the first step's result as the unfused chain
//   would hold it, halo included), its values come from the second step's mode: cval2, or the
//   copy of the in-extent element that mode maps to, which lies inside the window whenever an
//   output reads it (the launcher requires jH, jW >= K2H, K2W).
// Shared memory (dynamic): the input tile with its halo, SH = JH+K0-1 rows x SWP columns
//   (JWP = JW rounded up to PX, plus the horizontal window's reach: rows stay 16-byte aligned),
//   then the horizontal results HH x JWP (HH = JH rounded up to PY, plus K0-1); J reuses the
//   input's space; counting adds, 16-byte aligned after those, the edges ((nbins+1) E, rounded
//   up to 8 bytes) and `copies` x (nbins+1) uint32 counters. Lane l of every warp counts into
//   copy l % copies: a filtered field crowds a few bins, and lanes of one warp adding to one
//   address serialize; the odd stride puts one bin's copies in different banks. The
//   launcher's formula (convolve.py, _separable_smem and _count_bytes) is this one.
//   Per output ~12-20 bytes of shared-memory reads for the pair (was ~90 with one column per
//   thread): the pass was bound by shared-memory bandwidth, not DRAM (NOTES.md).
// Masks: w0, w1, then w2 row-major (K0+K1+K2H*K2W values), passed by value (DcTaps): with the
//   index known at compile time each FFMA reads its tap as a constant-bank operand; through a
//   constant-memory slot chosen at run time every tap was a load first (NOTES.md).
// Rounding: J stays in T, as scipy's chained 1-D filters keep it.
// Limits: K0, K1 <= DC_SEP_MAX_TAPS (the launcher reads it); for mode constant the launcher uses it only when both
//   masks sum to one (then the order of the two passes does not change the edges); the second
//   step's origin is 0 and its mode not wrap; counting: fewer than 2^32 values per bin per block.
#define DC_SEP_BX 32  // threads per block: DC_SEP_BX x DC_SEP_BY
#define DC_SEP_BY 8
#define DC_SEP_TH 64  // output tile: DC_SEP_TH rows x DC_SEP_TW columns per block
#define DC_SEP_TW 64
#define DC_SEP_PX 4   // horizontal outputs per thread step (one 16-byte float store)
#define DC_SEP_PY 8   // vertical outputs per thread step
// Blocks per SM the float build is made for (registers capped at 65536 / (256 x 4) = 64): what
// its shared memory allows anyway; left to itself ptxas picked 64 and spilled on some shapes,
// or more than 64 and lost a block per SM (NOTES.md, "Gaussian -> laplace -> histogram").
#define DC_SEP_BLOCKS 4
#define DC_SEP_MAX_TAPS 33
template <typename T, int K0, int K1, int K2H, int K2W, int BINNING, typename E>
__global__ void __launch_bounds__(DC_SEP_BX *DC_SEP_BY, sizeof(T) == 4 ? DC_SEP_BLOCKS : 2)
distconv_separable2d(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW, i64 offH,
                     i64 offW, int mode, T cval, const DcTaps<T, K0 + K1 + K2H * K2W> taps, i64 jH,
                     i64 jW, i64 off2H, i64 off2W,
                     int mode2, T cval2, const E *__restrict__ edges, int nbins, E lo, E scale,
                     E slack, unsigned long long *counts, int copies) {
    constexpr int NT = DC_SEP_BX * DC_SEP_BY, TH = DC_SEP_TH, TW = DC_SEP_TW;
    constexpr int PX = DC_SEP_PX, PY = DC_SEP_PY, VN = dc_vec16<T>::n;
    constexpr bool STEP2 = K2H * K2W > 1, COUNT = BINNING != DC_BIN_NONE;
    constexpr int JH = TH + K2H - 1, JW = TW + K2W - 1, JWP = (JW + PX - 1) / PX * PX;
    constexpr int WN = (PX + K1 - 1 + VN - 1) / VN * VN;  // horizontal window, whole vectors
    constexpr int SWP = JWP - PX + WN, SH = JH + K0 - 1;
    constexpr int NSEG = (JH + PY - 1) / PY, HH = NSEG * PY + K0 - 1;
    constexpr int P2 = TH * TW / (NT * PX);                // second step: output rows per thread
    constexpr int WN2 = (PX + K2W - 1 + VN - 1) / VN * VN;
    static_assert(PX == 4 && TW % PX == 0 && TH % PY == 0 && TH % P2 == 0, "tile shape");
    static_assert(STEP2 || !COUNT, "counting follows a second step");
    static_assert(K0 <= DC_SEP_MAX_TAPS && K1 <= DC_SEP_MAX_TAPS, "passes within DC_SEP_MAX_TAPS");
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    T *s_in = reinterpret_cast<T *>(dc_smem_raw);
    T *s_h = s_in + SH * SWP;
    T *s_j = s_in;  // J, once the staged input is consumed
    const size_t edge_off = ((size_t)(SH * SWP + HH * JWP) * sizeof(T) + 15) & ~(size_t)15;
    E *s_e = reinterpret_cast<E *>(dc_smem_raw + edge_off);
    unsigned int *s_c = reinterpret_cast<unsigned int *>(
        dc_smem_raw + edge_off + (((size_t)(nbins + 1) * sizeof(E) + 7) & ~(size_t)7));
    const int tid = threadIdx.y * DC_SEP_BX + threadIdx.x;
    if constexpr (COUNT) {
        for (int i = tid; i <= nbins; i += NT) s_e[i] = edges[i];
        for (int i = tid; i < copies * (nbins + 1); i += NT) s_c[i] = 0u;
        __syncthreads();
    }
    unsigned int *my_c = s_c + ((tid & 31) % copies) * (nbins + 1);
    const i64 nty = (oH + TH - 1) / TH;
    const i64 x0 = (i64)blockIdx.x * TW;

    for (i64 z = blockIdx.z; z < oD; z += gridDim.z) {
        for (i64 tyb = blockIdx.y; tyb < nty; tyb += gridDim.y) {
            const i64 y0 = tyb * TH;
            const i64 jy0 = y0 + off2H, jx0 = x0 + off2W;  // the J window's origin in J
            dc_stage<T, SH, SWP, NT>(s_in, src, z, jy0 + offH, jx0 + offW, mode, cval, tid);
            __syncthreads();
            // horizontal pass over every staged row, PX columns per step
            for (int e = tid; e < SH * (JWP / PX); e += NT) {
                const int r = e / (JWP / PX), c = (e - r * (JWP / PX)) * PX;
                T win[WN];
                dc_load_window<WN>(win, s_in + r * SWP + c);
                T acc[PX];
#pragma unroll
                for (int q = 0; q < PX; ++q) acc[q] = T(0);
#pragma unroll
                for (int k = 0; k < K1; ++k) {
                    const T w = taps.w[K0 + k];
#pragma unroll
                    for (int q = 0; q < PX; ++q) acc[q] = fma(w, win[q + k], acc[q]);
                }
                dc_store4(s_h + r * JWP + c, acc[0], acc[1], acc[2], acc[3]);
            }
            __syncthreads();
            // vertical pass: PY consecutive rows of one column per step, a sliding window
            for (int e = tid; e < NSEG * JWP; e += NT) {
                const int seg = e / JWP, c = e - seg * JWP;
                T acc[PY];
#pragma unroll
                for (int q = 0; q < PY; ++q) acc[q] = T(0);
#pragma unroll
                for (int r = 0; r < PY + K0 - 1; ++r) {
                    const T v = s_h[(seg * PY + r) * JWP + c];
#pragma unroll
                    for (int q = 0; q < PY; ++q) {
                        const int k = r - q;
                        if (k >= 0 && k < K0) acc[q] = fma(taps.w[k], v, acc[q]);
                    }
                }
                if constexpr (STEP2) {
#pragma unroll
                    for (int q = 0; q < PY; ++q)
                        if (seg * PY + q < JH) s_j[(seg * PY + q) * JWP + c] = acc[q];
                } else {
                    dc_store_column<PY>(out, acc, z, y0 + seg * PY, x0 + c, oH, oW);
                }
            }
            __syncthreads();
            if constexpr (!STEP2) continue;
            // J outside its extent: the second step's boundary rule
            if (jy0 < 0 || jy0 + JH > jH || jx0 < 0 || jx0 + JW > jW) {
                for (int e = tid; e < JH * JW; e += NT) {
                    const int r = e / JW, c = e - r * JW;
                    i64 gy = jy0 + r, gx = jx0 + c;
                    if (gy >= 0 && gy < jH && gx >= 0 && gx < jW) continue;
                    T v = cval2;
                    if (dc_remap(gy, jH, mode2) && dc_remap(gx, jW, mode2)) {
                        const i64 rr = gy - jy0, cc = gx - jx0;
                        if (rr < 0 || rr >= JH || cc < 0 || cc >= JW) continue;  // read by no output
                        v = s_j[rr * JWP + cc];
                    }
                    s_j[r * JWP + c] = v;
                }
                __syncthreads();
            }
            // second step: P2 rows x PX columns per thread
            const int cg = tid % (TW / PX), rg = tid / (TW / PX);
            T acc[P2][PX];
#pragma unroll
            for (int a = 0; a < P2; ++a)
#pragma unroll
                for (int b = 0; b < PX; ++b) acc[a][b] = T(0);
            dc_correlate_rows<P2, PX, K2H, K2W, WN2>(acc, s_j + rg * P2 * JWP + cg * PX, JWP,
                                                     [&](int i) { return taps.w[K0 + K1 + i]; });
#pragma unroll
            for (int py = 0; py < P2; ++py) {
                const i64 y = y0 + rg * P2 + py, x = x0 + cg * PX;
                if (y >= oH) continue;
                if constexpr (COUNT) {
#pragma unroll
                    for (int px = 0; px < PX; ++px) {
                        if (x + px >= oW) continue;
                        const int b = dc_bin<BINNING, E>(
                            E(acc[py][px]), s_e, nbins, lo, scale, slack, s_e[0], s_e[nbins]);
                        if (b >= 0) atomicAdd(my_c + b, 1u);
                    }
                } else {
                    dc_store_run(out + (z * oH + y) * oW + x, acc[py], x, oW);
                }
            }
            __syncthreads();
        }
    }
    if constexpr (!COUNT) return;
    __syncthreads();
    for (int b = tid; b < nbins; b += NT) {
        unsigned long long s = 0;
        for (int c = 0; c < copies; ++c) s += s_c[c * (nbins + 1) + b];
        if (s) atomicAdd(counts + b, s);
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_terms2d: out = A + B (COMBINE DC_TERMS_SUM) or sqrt(A*A + B*B) (DC_TERMS_MAGNITUDE),
//   A = (a0 along y) o (a1 along x), B = (b0 along y) o (b1 along x): scipy's gaussian_laplace
//   and gaussian_gradient_magnitude of a 2-D plane (second or first Gaussian derivative along
//   one axis, the Gaussian along the other) as one pass over memory instead of four to six.
// Threads -> data: as distconv_separable2d without its second step: 256 threads own a TH x TW
//   output tile of one plane z (blockIdx.x: column tiles, blockIdx.y: row tiles, grid-stride;
//   blockIdx.z: planes). Horizontal pass: a thread takes DC_SEP_PX consecutive columns of one
//   staged row and computes both terms' x passes from one register window (SYM: both x masks
//   symmetric, K1 odd, each mirrored pair of the window summed once for both terms: 26 instead
//   of 34 FMA and adds an output for 17 taps). Vertical pass: a
//   thread takes one column and DC_SEP_PY consecutive rows, both terms' y passes, combines
//   them and stores (a warp covers 32 adjacent columns: coalesced).
// Shared memory (dynamic): the input tile with its halo, SH = TH+K0-1 rows x SWP columns (as
//   distconv_separable2d), then the two horizontal results, 2 x HH x TW (HH = TH + K0 - 1);
//   the launcher's formula (convolve.py, _terms_smem) is this one.
// Taps: a0, a1, b0, b1 (2 x (K0 + K1) values) by value, as distconv_separable2d's.
// Rounding: each term in T, x pass then y pass, as distconv_separable2d (SYM: the x pass adds
//   each mirrored pair first, then the centre and the pairs from the middle out); then combined in T.
// Limits: K0, K1 <= DC_SEP_MAX_TAPS; origins 0; one mode for both terms (constant only with
//   cval 0: then the order of a term's passes does not change its edges).
// Occupancy: three blocks per SM for float (72 registers, 3 x ~66 KiB of shared memory at 17
//   and 33 taps; two blocks at 96 registers read ~5 % slower on one H200: NOTES.md, "terms at
//   three blocks per SM").
#define DC_TERMS_SUM 0
#define DC_TERMS_MAGNITUDE 1
template <typename T, int K0, int K1, int COMBINE, bool SYM>
__global__ void __launch_bounds__(DC_SEP_BX *DC_SEP_BY, sizeof(T) == 4 ? 3 : 1)
distconv_terms2d(const __grid_constant__ DcTile src, T *__restrict__ out, i64 oD, i64 oH, i64 oW, i64 offH,
                 i64 offW, int mode, T cval, const DcTaps<T, 2 * (K0 + K1)> taps) {
    constexpr int NT = DC_SEP_BX * DC_SEP_BY, TH = DC_SEP_TH, TW = DC_SEP_TW;
    constexpr int PX = DC_SEP_PX, PY = DC_SEP_PY, VN = dc_vec16<T>::n;
    constexpr int WN = (PX + K1 - 1 + VN - 1) / VN * VN;  // horizontal window, whole vectors
    constexpr int SWP = TW - PX + WN, SH = TH + K0 - 1, HH = TH + K0 - 1;
    constexpr int NSEG = TH / PY;
    static_assert(PX == 4 && TW % PX == 0 && TH % PY == 0, "tile shape");
    static_assert(K0 <= DC_SEP_MAX_TAPS && K1 <= DC_SEP_MAX_TAPS, "passes within DC_SEP_MAX_TAPS");
    static_assert(!SYM || K1 % 2 == 1, "mirrored pairs around a centre tap");
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    T *s_in = reinterpret_cast<T *>(dc_smem_raw);
    T *s_a = s_in + SH * SWP;
    T *s_b = s_a + HH * TW;
    const int tid = threadIdx.y * DC_SEP_BX + threadIdx.x;
    const i64 nty = (oH + TH - 1) / TH;
    const i64 x0 = (i64)blockIdx.x * TW;

    for (i64 z = blockIdx.z; z < oD; z += gridDim.z) {
        for (i64 tyb = blockIdx.y; tyb < nty; tyb += gridDim.y) {
            const i64 y0 = tyb * TH;
            dc_stage<T, SH, SWP, NT>(s_in, src, z, y0 + offH, x0 + offW, mode, cval, tid);
            __syncthreads();
            for (int e = tid; e < SH * (TW / PX); e += NT) {
                const int r = e / (TW / PX), c = (e - r * (TW / PX)) * PX;
                T win[WN];
                dc_load_window<WN>(win, s_in + r * SWP + c);
                T a[PX], b[PX];
                if constexpr (SYM) {
                    constexpr int M = K1 / 2;  // the centre tap
#pragma unroll
                    for (int q = 0; q < PX; ++q) {
                        a[q] = taps.w[K0 + M] * win[q + M];
                        b[q] = taps.w[2 * K0 + K1 + M] * win[q + M];
                    }
#pragma unroll
                    for (int k = M - 1; k >= 0; --k) {
                        const T wa = taps.w[K0 + k], wb = taps.w[2 * K0 + K1 + k];
#pragma unroll
                        for (int q = 0; q < PX; ++q) {
                            const T pair = win[q + k] + win[q + K1 - 1 - k];
                            a[q] = fma(wa, pair, a[q]);
                            b[q] = fma(wb, pair, b[q]);
                        }
                    }
                } else {
#pragma unroll
                    for (int q = 0; q < PX; ++q) a[q] = b[q] = T(0);
#pragma unroll
                    for (int k = 0; k < K1; ++k) {
                        const T wa = taps.w[K0 + k], wb = taps.w[2 * K0 + K1 + k];
#pragma unroll
                        for (int q = 0; q < PX; ++q) {
                            a[q] = fma(wa, win[q + k], a[q]);
                            b[q] = fma(wb, win[q + k], b[q]);
                        }
                    }
                }
                dc_store4(s_a + r * TW + c, a[0], a[1], a[2], a[3]);
                dc_store4(s_b + r * TW + c, b[0], b[1], b[2], b[3]);
            }
            __syncthreads();
            for (int e = tid; e < NSEG * TW; e += NT) {
                const int seg = e / TW, c = e - seg * TW;
                T a[PY], b[PY];
#pragma unroll
                for (int q = 0; q < PY; ++q) a[q] = b[q] = T(0);
#pragma unroll
                for (int r = 0; r < PY + K0 - 1; ++r) {
                    const T va = s_a[(seg * PY + r) * TW + c], vb = s_b[(seg * PY + r) * TW + c];
#pragma unroll
                    for (int q = 0; q < PY; ++q) {
                        const int k = r - q;
                        if (k >= 0 && k < K0) {
                            a[q] = fma(taps.w[k], va, a[q]);
                            b[q] = fma(taps.w[K0 + K1 + k], vb, b[q]);
                        }
                    }
                }
#pragma unroll
                for (int q = 0; q < PY; ++q) {
                    if constexpr (COMBINE == DC_TERMS_SUM) {
                        a[q] = a[q] + b[q];
                    } else {  // each square rounded to T before the sum, as scipy's in-place steps
                        a[q] = sqrt(__fmul_rn(a[q], a[q]) + __fmul_rn(b[q], b[q]));
                    }
                }
                dc_store_column<PY>(out, a, z, y0 + seg * PY, x0 + c, oH, oW);
            }
            __syncthreads();
        }
    }
}
