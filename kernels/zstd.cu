// distconv zstd frames: the device side of backends/cuda/zstd.py (nvCOMP does the coding).
#include "common.cuh"

// ---------------------------------------------------------------------------------------------
// distconv_pack_frames: dst[dst_off[f] ..] = src[src_off[f] ..], nbytes[f] bytes per frame f,
//   then zeros up to the next DC_FRAME_ALIGN bytes (files carry no stale bytes).
// Threads -> data: block b moves frames b, b + gridDim.x, ...; its threads take consecutive
//   16-byte words of the frame (coalesced both ways); thread 0 writes the last partial word
//   (its bytes past nbytes[f] zeroed).
// Shared memory: none.
// Limits: every src_off and dst_off a multiple of DC_FRAME_ALIGN (the launcher's layout);
//   a source frame may be read up to its next DC_FRAME_ALIGN boundary (its capacity there).
#define DC_FRAME_ALIGN 16    // frame starts in device buffers and in distconv's shard files
#define DC_PACK_THREADS 256  // threads per block
static_assert(sizeof(uint4) == DC_FRAME_ALIGN, "one word per alignment step");
__global__ void __launch_bounds__(DC_PACK_THREADS)
distconv_pack_frames(const unsigned char *__restrict__ src, const i64 *__restrict__ src_off,
                     unsigned char *__restrict__ dst, const i64 *__restrict__ dst_off,
                     const i64 *__restrict__ nbytes, i64 nframes) {
    for (i64 f = blockIdx.x; f < nframes; f += gridDim.x) {
        const uint4 *s = reinterpret_cast<const uint4 *>(src + src_off[f]);
        uint4 *d = reinterpret_cast<uint4 *>(dst + dst_off[f]);
        const i64 n = nbytes[f], words = n / DC_FRAME_ALIGN;
        for (i64 w = threadIdx.x; w < words; w += blockDim.x) d[w] = s[w];
        const int tail = (int)(n - words * DC_FRAME_ALIGN);
        if (threadIdx.x == 0 && tail) {
            uint4 v = s[words];
            unsigned char *b = reinterpret_cast<unsigned char *>(&v);
            for (int k = tail; k < DC_FRAME_ALIGN; ++k) b[k] = 0;
            d[words] = v;
        }
    }
}
