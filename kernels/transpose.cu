// distconv transpose: batched 2-D transpose (B, R, C) -> (B, C, R) through shared memory.
#include "common.cuh"

// ---------------------------------------------------------------------------------------------
// distconv_transpose: out[b, c, r] = in[b, r, c].
// Threads -> data: a DC_TR_LANES x DC_TR_ROWS block (one warp per row of threads) moves one
//   TILE x TILE tile; each thread copies (TILE/DC_TR_LANES) x (TILE/DC_TR_ROWS) elements (16 at
//   TILE 64: all its loads issued before its first shared store), reading rows of the tile
//   (coalesced along C) and writing rows of the transposed tile (coalesced along R).
//   blockIdx.x: column tiles, blockIdx.y: row tiles (grid-stride), blockIdx.z: batch
//   (grid-stride).
// Shared memory: TILE x (TILE + 1) T (16.6 KiB for 4-byte types); the +1 column of padding
//   puts the 32 elements a warp reads down a tile column in 32 different banks.
// Limits: any sizes (64-bit offsets); T of 1, 2, 4 or 8 bytes (8: 33 KiB of static shared).
#define DC_TR_TILE 64   // a block moves a DC_TR_TILE x DC_TR_TILE tile (a multiple of 32)
#define DC_TR_LANES 32  // threads per block: DC_TR_LANES (a warp) x DC_TR_ROWS
#define DC_TR_ROWS 8
template <typename T>
__global__ void __launch_bounds__(DC_TR_LANES * DC_TR_ROWS)
distconv_transpose(const T *__restrict__ in, T *__restrict__ out, i64 B, i64 R, i64 C) {
    constexpr int TILE = DC_TR_TILE;
    __shared__ T tile[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const i64 ctiles = (C + TILE - 1) / TILE, rtiles = (R + TILE - 1) / TILE;
    for (i64 b = blockIdx.z; b < B; b += gridDim.z) {
        const T *src = in + b * R * C;
        T *dst = out + b * R * C;
        for (i64 rt = blockIdx.y; rt < rtiles; rt += gridDim.y) {
            for (i64 ct = blockIdx.x; ct < ctiles; ct += gridDim.x) {
                const i64 r0 = rt * TILE, c0 = ct * TILE;
                const bool whole = r0 + TILE <= R && c0 + TILE <= C;
                T v[TILE / DC_TR_ROWS][TILE / DC_TR_LANES];
#pragma unroll
                for (int k = 0; k < TILE / DC_TR_ROWS; ++k)
#pragma unroll
                    for (int j = 0; j < TILE / DC_TR_LANES; ++j) {
                        const i64 r = r0 + ty + k * DC_TR_ROWS, c = c0 + tx + DC_TR_LANES * j;
                        if (whole || (r < R && c < C)) v[k][j] = src[r * C + c];
                    }
#pragma unroll
                for (int k = 0; k < TILE / DC_TR_ROWS; ++k)
#pragma unroll
                    for (int j = 0; j < TILE / DC_TR_LANES; ++j) tile[ty + k * DC_TR_ROWS][tx + DC_TR_LANES * j] = v[k][j];
                __syncthreads();
#pragma unroll
                for (int k = 0; k < TILE / DC_TR_ROWS; ++k)
#pragma unroll
                    for (int j = 0; j < TILE / DC_TR_LANES; ++j) {
                        const i64 c = c0 + ty + k * DC_TR_ROWS, r = r0 + tx + DC_TR_LANES * j;
                        if (whole || (r < R && c < C)) dst[c * R + r] = tile[tx + DC_TR_LANES * j][ty + k * DC_TR_ROWS];
                    }
                __syncthreads();
            }
        }
    }
}
