// distconv transpose: batched 2-D transpose (B, R, C) -> (B, C, R) through shared memory.
#include "common.cuh"

// ---------------------------------------------------------------------------------------------
// distconv_transpose: out[b, c, r] = in[b, r, c].
// Threads -> data: a 32 x 8 block moves one 32 x 32 tile (TILE); each thread copies 4 elements,
//   reading a row of the tile (coalesced along C) and writing a row of the transposed tile
//   (coalesced along R). blockIdx.x: column tiles, blockIdx.y: row tiles (grid-stride),
//   blockIdx.z: batch (grid-stride).
// Shared memory: TILE x (TILE + 1) T; the +1 column of padding puts the 32 elements of a tile
//   column in 32 different banks, so the transposed reads are conflict-free.
// Limits: any sizes (64-bit offsets); T of 1, 2, 4 or 8 bytes.
#define DC_TR_TILE 32  // a block moves a DC_TR_TILE x DC_TR_TILE tile
#define DC_TR_ROWS 8   // threads per block: DC_TR_TILE x DC_TR_ROWS
template <typename T>
__global__ void __launch_bounds__(DC_TR_TILE *DC_TR_ROWS)
distconv_transpose(const T *__restrict__ in, T *__restrict__ out, i64 B, i64 R, i64 C) {
    constexpr int TILE = DC_TR_TILE;
    __shared__ T tile[TILE][TILE + 1];
    const i64 ctiles = (C + TILE - 1) / TILE, rtiles = (R + TILE - 1) / TILE;
    for (i64 b = blockIdx.z; b < B; b += gridDim.z) {
        const T *src = in + b * R * C;
        T *dst = out + b * R * C;
        for (i64 rt = blockIdx.y; rt < rtiles; rt += gridDim.y) {
            for (i64 ct = blockIdx.x; ct < ctiles; ct += gridDim.x) {
                const i64 r0 = rt * TILE, c0 = ct * TILE;
#pragma unroll
                for (int k = 0; k < TILE; k += DC_TR_ROWS) {
                    const i64 r = r0 + threadIdx.y + k, c = c0 + threadIdx.x;
                    if (r < R && c < C) tile[threadIdx.y + k][threadIdx.x] = src[r * C + c];
                }
                __syncthreads();
#pragma unroll
                for (int k = 0; k < TILE; k += DC_TR_ROWS) {
                    const i64 c = c0 + threadIdx.y + k, r = r0 + threadIdx.x;
                    if (r < R && c < C) dst[c * R + r] = tile[threadIdx.x][threadIdx.y + k];
                }
                __syncthreads();
            }
        }
    }
}
