// distconv k-means: fused nearest-centroid assignment (+ bag-of-visual-words histogram), and
// per-cluster partial sums for Lloyd updates.
//
// The case study's ladder ends here: instead of one thread per descriptor looping over
// centroids from constant memory, a block computes a 128-descriptor x 128-centroid tile of dot
// products like a register-tiled SGEMM (descriptors and centroids staged dimension-major in
// shared memory, 8x8 outputs per thread, 16-byte shared loads), turns them into
// |c|^2 - 2 x.c, and keeps a running argmin, so the n x K distance matrix is never written.
#include "common.cuh"

#define DC_KM_BM 128  // descriptors per block
#define DC_KM_BN 128  // centroids per tile
#define DC_KM_KC 32   // dimensions staged per step

// Stage rows [row0, row0+128) x dims [d0, d0+KC) of a row-major (rows, D) matrix into
// s[KC][128] (dimension-major), zero outside the matrix. Consecutive threads take consecutive
// rows: shared stores are conflict-free; the strided global reads of one dimension pull sectors
// that the next dimensions of the same rows then find in L1.
__device__ __forceinline__ void dc_km_stage(float *s, const float *__restrict__ m, i64 rows, int D,
                                            i64 row0, int d0) {
    if ((D & 3) == 0) {  // 16-byte loads: thread -> (row, 4 dims); shared stores stay conflict-free
        for (int e = threadIdx.x; e < DC_KM_BM * DC_KM_KC / 4; e += blockDim.x) {
            const int v = e / DC_KM_BM, r = e - v * DC_KM_BM;
            const i64 row = row0 + r;
            const int dim = d0 + 4 * v;
            float4 q = make_float4(0.f, 0.f, 0.f, 0.f);
            if (row < rows && dim < D) q = __ldg(reinterpret_cast<const float4 *>(m + row * D + dim));
            s[(4 * v) * DC_KM_BM + r] = q.x;
            s[(4 * v + 1) * DC_KM_BM + r] = q.y;
            s[(4 * v + 2) * DC_KM_BM + r] = q.z;
            s[(4 * v + 3) * DC_KM_BM + r] = q.w;
        }
        return;
    }
    for (int e = threadIdx.x; e < DC_KM_BM * DC_KM_KC; e += blockDim.x) {
        const int d = e / DC_KM_BM, r = e - d * DC_KM_BM;
        const i64 row = row0 + r;
        const int dim = d0 + d;
        s[d * DC_KM_BM + r] = (row < rows && dim < D) ? __ldg(m + row * D + dim) : 0.0f;
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_kmeans_assign: labels[i] = argmin_k |x_i - c_k|^2 (first index on exact ties);
// with groups, also counts[groups[i] * K + labels[i]] += 1 (the bag-of-visual-words histogram);
// with score, score[i] = |c|^2 - 2 x_i.c of the winner (for the inertia).
// Threads -> data: 256 threads as 16 x 16; thread (ty, tx) owns descriptors ty*4+{0..3} and
//   64+ty*4+{0..3} of the block's 128, and centroids tx*4+{0..3}, 64+tx*4+{0..3} of each tile
//   (the split keeps 16-byte shared loads conflict-free). The 16 threads of one ty sit in one
//   half-warp and fold their running minima with shuffles at the end.
// Shared memory: 2 x KC x 128 floats = 32 KiB (descriptor and centroid slices).
// Limits: float32; any n, K, D (D is walked in slices of 32, zero-padded; 16-byte loads when
//   D % 4 == 0, which needs X and C 16-byte aligned: cupy allocations are); cnorm = |c_k|^2.
__global__ void __launch_bounds__(DC_BLOCK, 2)
distconv_kmeans_assign(const float *__restrict__ X, i64 n, int D, const float *__restrict__ C, int K,
                       const float *__restrict__ cnorm, int *__restrict__ labels,
                       const long long *__restrict__ groups, unsigned long long *counts,
                       float *__restrict__ score) {
    __shared__ __align__(16) float xs[DC_KM_KC * DC_KM_BM];
    __shared__ __align__(16) float cs[DC_KM_KC * DC_KM_BN];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const i64 p0 = (i64)blockIdx.x * DC_KM_BM;
    float best[8];
    int bidx[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) { best[i] = dc_limits<float>::highest(); bidx[i] = 0; }

    for (int c0 = 0; c0 < K; c0 += DC_KM_BN) {
        float acc[8][8];
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
        for (int d0 = 0; d0 < D; d0 += DC_KM_KC) {
            dc_km_stage(xs, X, n, D, p0, d0);
            dc_km_stage(cs, C, K, D, c0, d0);
            __syncthreads();
#pragma unroll 8
            for (int d = 0; d < DC_KM_KC; ++d) {
                const float4 a0 = reinterpret_cast<const float4 *>(xs + d * DC_KM_BM)[ty];
                const float4 a1 = reinterpret_cast<const float4 *>(xs + d * DC_KM_BM + 64)[ty];
                const float4 b0 = reinterpret_cast<const float4 *>(cs + d * DC_KM_BN)[tx];
                const float4 b1 = reinterpret_cast<const float4 *>(cs + d * DC_KM_BN + 64)[tx];
                const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
                const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
                for (int i = 0; i < 8; ++i)
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
            __syncthreads();
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int c = c0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            if (c >= K) continue;
            const float cn = __ldg(cnorm + c);
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const float dist = fmaf(-2.0f, acc[i][j], cn);
                if (dist < best[i]) { best[i] = dist; bidx[i] = c; }
            }
        }
    }
    // fold the 16 column-threads of each descriptor row (lowest index wins exact ties)
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int off = 8; off > 0; off >>= 1) {
            const float ob = __shfl_xor_sync(0xffffffffu, best[i], off);
            const int oi = __shfl_xor_sync(0xffffffffu, bidx[i], off);
            if (ob < best[i] || (ob == best[i] && oi < bidx[i])) { best[i] = ob; bidx[i] = oi; }
        }
    }
    if (tx == 0) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const i64 p = p0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
            if (p >= n) continue;
            labels[p] = bidx[i];
            if (score) score[p] = best[i];  // |c|^2 - 2 x.c of the winner: inertia = sum + |x|^2
            if (groups) atomicAdd(counts + groups[p] * K + bidx[i], 1ull);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// distconv_kmeans_accumulate: sums[k, :] += x_i and counts[k] += 1 for every i with label k.
// Threads -> data: one warp per descriptor (grid-stride), lanes over its dimensions.
// SMEM: the block accumulates into shared float sums/counts (K*D + K words, the launcher checks
//   the fit) and flushes them with one float64 atomic per non-zero entry; otherwise every value
//   goes straight to global float64 atomics. Sums are float64; their rounding order varies.
template <bool SMEM>
__global__ void __launch_bounds__(DC_BLOCK)
distconv_kmeans_accumulate(const float *__restrict__ X, i64 n, int D, const int *__restrict__ labels,
                           int K, double *sums, unsigned long long *counts) {
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    float *ss = reinterpret_cast<float *>(dc_smem_raw);
    unsigned int *sc = reinterpret_cast<unsigned int *>(ss + (SMEM ? (i64)K * D : 0));
    if (SMEM) {
        for (int i = threadIdx.x; i < K * D; i += blockDim.x) ss[i] = 0.0f;
        for (int i = threadIdx.x; i < K; i += blockDim.x) sc[i] = 0u;
        __syncthreads();
    }
    const int lane = threadIdx.x & 31;
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    for (i64 p = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); p < n; p += warps) {
        const int k = labels[p];
        for (int d = lane; d < D; d += 32) {
            const float v = X[p * D + d];
            if (SMEM) atomicAdd(ss + k * D + d, v);
            else atomicAdd(sums + (i64)k * D + d, double(v));
        }
        if (lane == 0) {
            if (SMEM) atomicAdd(sc + k, 1u);
            else atomicAdd(counts + k, 1ull);
        }
    }
    if (!SMEM) return;
    __syncthreads();
    for (int i = threadIdx.x; i < K * D; i += blockDim.x)
        if (ss[i] != 0.0f) atomicAdd(sums + i, double(ss[i]));
    for (int i = threadIdx.x; i < K; i += blockDim.x)
        if (sc[i]) atomicAdd(counts + i, (unsigned long long)sc[i]);
}
