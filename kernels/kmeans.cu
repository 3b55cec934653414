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
// distconv_kmeans_assign_tc: distconv_kmeans_assign's results with the dot products on tensor
// cores (sm_80 on), float32 accuracy kept by 3xTF32: each operand split into a TF32 head and
// the TF32 of its remainder, x.c = xl.ch + xh.cl + xh.ch (the dropped xl.cl is ~2^-22 of it),
// so distances agree with the float32 kernel's to a few ulps (ties: lowest index, as there).
// The block stages its descriptors once, split, in fragment order; the centroids are split
// between its warps, and each warp sweeps all the block's descriptors with its centroids' B
// fragments in registers (read once per 8 dimensions from L1/L2, the next ones in flight), so
// a B fragment feeds 3 x MT MMAs and nothing in the loop waits at a barrier. (Earlier designs,
// NOTES.md: 128 x 128 tiles between barriers 0.18 MMA per clock per SM; warps owning rows and
// streaming every centroid from L1 1.3x slower than this.)
// Threads -> data: DC_KM_TC_WARPS warps; a block owns 16*MT descriptors (MT MMA row tiles);
//   warp w takes centroid groups w, w + DC_KM_TC_WARPS, ... of NW*8 centroids. In an MMA tile,
//   lane (g = lane / 4, t = lane % 4) holds rows g, g+8 and columns 2t, 2t+1 (PTX's m16n8k8
//   layout); it visits its columns in increasing order (strict < keeps the lowest index of a
//   tie), then folds its minima over the quad's 4 lanes (shuffles) and the warps (shared).
// Shared memory: dynamic, 16*MT rows x 8*steps dims x (head, tail) words, zero-padded
//   (dc_km_stage_a's order: a warp's two 16-byte reads per row tile and step are conflict-
//   free); static, the fold's DC_KM_TC_WARPS x 16*MT minima and indices.
// Limits: float32; any n, K; D as far as the staged rows fit (the launcher checks, else the
//   float32 kernel); Cf from distconv_kmeans_split; 16-byte staging loads when D % 4 == 0 (X
//   16-byte aligned, as cupy allocates).
#define DC_KM_TC_WARPS 4  // warps per block of distconv_kmeans_assign_tc
#define DC_KM_TC_KPAD 64  // centroids of distconv_kmeans_split's output round up to this

__device__ __forceinline__ unsigned dc_tf32(float v) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}
// (head, tail) of v as TF32 operands: v ~ head + tail to ~2^-22 relative
__device__ __forceinline__ void dc_tf32_split(float v, unsigned &head, unsigned &tail) {
    head = dc_tf32(v);
    tail = dc_tf32(v - __uint_as_float(head));
}
__device__ __forceinline__ void dc_mma_tf32(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// distconv_kmeans_split: C (K, D) as MMA B fragments, head and tail: out[(q*steps + s)*32 + lane]
// = {head, head, tail, tail} of C[q*8 + g, s*8 + t] and C[q*8 + g, s*8 + t + 4] for lane (g, t);
// zero beyond K and D. Threads -> data: one thread per output uint4 (groups x steps x 32).
__global__ void __launch_bounds__(DC_BLOCK)
distconv_kmeans_split(const float *__restrict__ C, int K, int D, int groups, int steps, uint4 *__restrict__ out) {
    const i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (i64)groups * steps * 32) return;
    const int lane = (int)(e & 31), s = (int)((e >> 5) % steps), q = (int)((e >> 5) / steps);
    const int c = q * 8 + (lane >> 2), d = s * 8 + (lane & 3);
    const float v0 = (c < K && d < D) ? C[(i64)c * D + d] : 0.f;
    const float v1 = (c < K && d + 4 < D) ? C[(i64)c * D + d + 4] : 0.f;
    uint4 r;
    dc_tf32_split(v0, r.x, r.z);
    dc_tf32_split(v1, r.y, r.w);
    out[e] = r;
}

// Descriptor value v of the block's row r, dimension d, split into the A-fragment order: per
// (16-row tile, step of 8 dims) 32 lanes x 4 heads, then 32 lanes x 4 tails (a uint4 a lane),
// lane (g, t) holding rows g, g+8 x dims t, t+4 as a0..a3 (PTX's m16n8k8 layout).
__device__ __forceinline__ void dc_km_stage_a(unsigned *xa, int steps, int r, int d, float v) {
    const int g = r & 7, hi = (r >> 3) & 1, t = d & 3, hi4 = (d >> 2) & 1;
    const int i = (((r >> 4) * steps + (d >> 3)) * 64 + g * 4 + t) * 4 + hi + 2 * hi4;
    dc_tf32_split(v, xa[i], xa[i + 32 * 4]);
}

template <int MT, int NW>
__global__ void __launch_bounds__(DC_KM_TC_WARPS * 32)
distconv_kmeans_assign_tc(const float *__restrict__ X, i64 n, int D, const uint4 *__restrict__ Cf, int K, int steps,
                          const float *__restrict__ cnorm, int *__restrict__ labels,
                          const long long *__restrict__ groups, unsigned long long *counts,
                          float *__restrict__ score) {
    static_assert(DC_KM_TC_KPAD % (NW * 8) == 0, "centroid groups must divide the padding");
    constexpr int ROWS = MT * 16;
    extern __shared__ __align__(16) unsigned char dc_smem_raw[];
    unsigned *xa = reinterpret_cast<unsigned *>(dc_smem_raw);
    __shared__ float fold_best[DC_KM_TC_WARPS][ROWS];
    __shared__ int fold_idx[DC_KM_TC_WARPS][ROWS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const i64 p0 = (i64)blockIdx.x * ROWS;
    if ((D & 3) == 0) {  // thread -> (row, 4 dims): 16-byte loads
        const int vpr = steps * 2;
        for (int e = threadIdx.x; e < ROWS * vpr; e += blockDim.x) {
            const int r = e / vpr, dim = (e - r * vpr) * 4;
            float4 q = make_float4(0.f, 0.f, 0.f, 0.f);
            if (p0 + r < n && dim < D) q = __ldg(reinterpret_cast<const float4 *>(X + (p0 + r) * D + dim));
            dc_km_stage_a(xa, steps, r, dim, q.x);
            dc_km_stage_a(xa, steps, r, dim + 1, q.y);
            dc_km_stage_a(xa, steps, r, dim + 2, q.z);
            dc_km_stage_a(xa, steps, r, dim + 3, q.w);
        }
    } else {
        for (int e = threadIdx.x; e < ROWS * steps * 8; e += blockDim.x) {
            const int r = e / (steps * 8), dim = e - r * steps * 8;
            dc_km_stage_a(xa, steps, r, dim, (p0 + r < n && dim < D) ? __ldg(X + (p0 + r) * D + dim) : 0.f);
        }
    }
    __syncthreads();
    const uint4 *xw = reinterpret_cast<const uint4 *>(xa) + lane;
    float best[2 * MT];  // rows m*16 + r*8 + g at [2m + r]
    int bidx[2 * MT];
#pragma unroll
    for (int i = 0; i < 2 * MT; ++i) { best[i] = dc_limits<float>::highest(); bidx[i] = 0; }
    const int ngroups = (K + NW * 8 - 1) / (NW * 8);
    for (int grp = warp; grp < ngroups; grp += DC_KM_TC_WARPS) {
        float acc[MT][NW][4];
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int j = 0; j < NW; ++j)
#pragma unroll
                for (int q = 0; q < 4; ++q) acc[m][j][q] = 0.f;
        const uint4 *cb = Cf + (i64)grp * NW * steps * 32 + lane;
        uint4 b[NW];
#pragma unroll
        for (int j = 0; j < NW; ++j) b[j] = __ldg(cb + j * steps * 32);
        for (int s = 0; s < steps; ++s) {
            uint4 bn[NW];
            if (s + 1 < steps) {
#pragma unroll
                for (int j = 0; j < NW; ++j) bn[j] = __ldg(cb + (j * steps + s + 1) * 32);
            }
#pragma unroll
            for (int m = 0; m < MT; ++m) {  // (ptxas interleaves the row tiles' chains itself)
                const uint4 h = xw[(m * steps + s) * 64], l = xw[(m * steps + s) * 64 + 32];
                const unsigned ah[4] = {h.x, h.y, h.z, h.w}, al[4] = {l.x, l.y, l.z, l.w};
                // small products first
#pragma unroll
                for (int j = 0; j < NW; ++j) dc_mma_tf32(acc[m][j], al, b[j].x, b[j].y);
#pragma unroll
                for (int j = 0; j < NW; ++j) dc_mma_tf32(acc[m][j], ah, b[j].z, b[j].w);
#pragma unroll
                for (int j = 0; j < NW; ++j) dc_mma_tf32(acc[m][j], ah, b[j].x, b[j].y);
            }
            if (s + 1 < steps) {
#pragma unroll
                for (int j = 0; j < NW; ++j) b[j] = bn[j];
            }
        }
#pragma unroll
        for (int j = 0; j < NW; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int c = grp * NW * 8 + j * 8 + 2 * t + h;
                if (c >= K) continue;
                const float cn = __ldg(cnorm + c);
#pragma unroll
                for (int m = 0; m < MT; ++m)
#pragma unroll
                    for (int r = 0; r < 2; ++r) {
                        const float dist = fmaf(-2.0f, acc[m][j][2 * r + h], cn);
                        if (dist < best[2 * m + r]) { best[2 * m + r] = dist; bidx[2 * m + r] = c; }
                    }
            }
    }
#pragma unroll
    for (int b = 0; b < 2 * MT; ++b) {
#pragma unroll
        for (int off = 1; off < 4; off <<= 1) {
            const float ob = __shfl_xor_sync(0xffffffffu, best[b], off);
            const int oi = __shfl_xor_sync(0xffffffffu, bidx[b], off);
            if (ob < best[b] || (ob == best[b] && oi < bidx[b])) { best[b] = ob; bidx[b] = oi; }
        }
        if (t == 0) {
            const int row = (b >> 1) * 16 + (b & 1) * 8 + g;
            fold_best[warp][row] = best[b];
            fold_idx[warp][row] = bidx[b];
        }
    }
    __syncthreads();
    for (int row = threadIdx.x; row < ROWS; row += blockDim.x) {
        float bb = fold_best[0][row];
        int bi = fold_idx[0][row];
#pragma unroll
        for (int w = 1; w < DC_KM_TC_WARPS; ++w) {
            const float ob = fold_best[w][row];
            const int oi = fold_idx[w][row];
            if (ob < bb || (ob == bb && oi < bi)) { bb = ob; bi = oi; }
        }
        const i64 p = p0 + row;
        if (p < n) {
            labels[p] = bi;
            if (score) score[p] = bb;  // |c|^2 - 2 x.c of the winner: inertia = sum + |x|^2
            if (groups) atomicAdd(counts + groups[p] * K + bi, 1ull);
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
