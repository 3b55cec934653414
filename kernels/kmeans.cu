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
// the TF32 of its remainder, x.c = xh.ch + xh.cl + xl.ch (the dropped xl.cl is ~2^-22 of it),
// so distances agree with the float32 kernel's to a few ulps (ties: lowest index, as there).
// Threads -> data: 8 warps as 2 (rows) x 4 (centroids); a block owns 128 descriptors, walks the
//   centroids in tiles of 128 and D in slices of DC_KM_KC; warp (wm, wn) computes a 64 x 32
//   piece of each tile as 4 x 4 mma.m16n8k8 tiles (3 MMAs each per 8 dimensions). In an MMA
//   tile, lane (g = lane / 4, t = lane % 4) holds rows g, g+8 and columns 2t, 2t+1 (PTX's
//   m16n8k8 layout); its running minima cover its 8 rows, folded at the end over the quad's 4
//   lanes (shuffles) and the 4 warps of a row (shared memory).
// Shared memory: descriptor and centroid slices, 128 x (DC_KM_KC + 4) floats each (row pitch
//   padded so the fragment reads of a warp hit 32 banks) = 36 KiB static; then reused for the
//   fold (4 x 128 minima and indices). The next slice is read into registers while the MMAs
//   of the current one run. (Operands split as they were stored, 8-byte pairs: 5.13 against
//   4.17 ms for k256, NOTES.md.)
// Limits: float32; any n, K, D (slices zero-padded); 16-byte loads need D % 4 == 0 and X, C
//   16-byte aligned (else element loads).
#define DC_KM_LD (DC_KM_KC + 4)
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
__device__ __forceinline__ void dc_mma_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// A thread's share of a 128 x KC slice of a row-major (rows, D) matrix: 4 vectors of 4 floats
// (16-byte loads when D % 4 == 0: vec), zero outside the matrix.
__device__ __forceinline__ void dc_km_fetch(float4 (&r)[4], const float *__restrict__ m, i64 rows, int D,
                                            i64 row0, int d0, bool vec) {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const int e = threadIdx.x + u * DC_BLOCK, row = e / (DC_KM_KC / 4), c = (e % (DC_KM_KC / 4)) * 4;
        const i64 gr = row0 + row;
        const int gd = d0 + c;
        float4 q = make_float4(0.f, 0.f, 0.f, 0.f);
        if (gr < rows) {
            if (vec) {
                if (gd < D) q = __ldg(reinterpret_cast<const float4 *>(m + gr * D + gd));
            } else {
                const float *p = m + gr * D;
                q.x = gd < D ? __ldg(p + gd) : 0.f;
                q.y = gd + 1 < D ? __ldg(p + gd + 1) : 0.f;
                q.z = gd + 2 < D ? __ldg(p + gd + 2) : 0.f;
                q.w = gd + 3 < D ? __ldg(p + gd + 3) : 0.f;
            }
        }
        r[u] = q;
    }
}
__device__ __forceinline__ void dc_km_put(float *s, const float4 (&r)[4]) {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const int e = threadIdx.x + u * DC_BLOCK, row = e / (DC_KM_KC / 4), c = (e % (DC_KM_KC / 4)) * 4;
        *reinterpret_cast<float4 *>(s + row * DC_KM_LD + c) = r[u];
    }
}

__global__ void __launch_bounds__(DC_BLOCK, 1)
distconv_kmeans_assign_tc(const float *__restrict__ X, i64 n, int D, const float *__restrict__ C, int K,
                          const float *__restrict__ cnorm, int *__restrict__ labels,
                          const long long *__restrict__ groups, unsigned long long *counts,
                          float *__restrict__ score) {
    static_assert(DC_BLOCK == 256 && DC_KM_BM == 128 && DC_KM_BN == 128 && DC_KM_KC % 8 == 0, "tile shape");
    __shared__ __align__(16) float xs[DC_KM_BM * DC_KM_LD];
    __shared__ __align__(16) float cs[DC_KM_BN * DC_KM_LD];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int wm = warp >> 2, wn = warp & 3;  // rows wm*64.., centroids wn*32.. of a tile
    const i64 p0 = (i64)blockIdx.x * DC_KM_BM;
    const bool vec = (D & 3) == 0;
    const int slices = (D + DC_KM_KC - 1) / DC_KM_KC, tiles = (K + DC_KM_BN - 1) / DC_KM_BN;
    float best[8];
    int bidx[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) { best[i] = dc_limits<float>::highest(); bidx[i] = 0; }
    float4 rx[4], rc[4];
    dc_km_fetch(rx, X, n, D, p0, 0, vec);
    dc_km_fetch(rc, C, K, D, 0, 0, vec);
    float acc[4][4][4];
    for (int step = 0; step < tiles * slices; ++step) {
        const int tile = step / slices, slice = step - tile * slices;
        if (slice == 0) {
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j)
#pragma unroll
                    for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.f;
        }
        __syncthreads();  // the previous slice's reads are done
        dc_km_put(xs, rx);
        dc_km_put(cs, rc);
        __syncthreads();
        if (step + 1 < tiles * slices) {  // the next slice on its way while this one computes
            const int nt = (step + 1) / slices, ns = step + 1 - nt * slices;
            dc_km_fetch(rx, X, n, D, p0, ns * DC_KM_KC, vec);
            dc_km_fetch(rc, C, K, D, (i64)nt * DC_KM_BN, ns * DC_KM_KC, vec);
        }
#pragma unroll
        for (int k = 0; k < DC_KM_KC; k += 8) {
            unsigned bh[4][2], bl[4][2];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float *cb = cs + (wn * 32 + j * 8 + g) * DC_KM_LD + k + t;
                dc_tf32_split(cb[0], bh[j][0], bl[j][0]);
                dc_tf32_split(cb[4], bh[j][1], bl[j][1]);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float *xb = xs + (wm * 64 + i * 16 + g) * DC_KM_LD + k + t;
                unsigned ah[4], al[4];
                dc_tf32_split(xb[0], ah[0], al[0]);
                dc_tf32_split(xb[8 * DC_KM_LD], ah[1], al[1]);
                dc_tf32_split(xb[4], ah[2], al[2]);
                dc_tf32_split(xb[8 * DC_KM_LD + 4], ah[3], al[3]);
                // small products first; each pass over j: 4 independent accumulators in flight
#pragma unroll
                for (int j = 0; j < 4; ++j) dc_mma_tf32(acc[i][j], al, bh[j]);
#pragma unroll
                for (int j = 0; j < 4; ++j) dc_mma_tf32(acc[i][j], ah, bl[j]);
#pragma unroll
                for (int j = 0; j < 4; ++j) dc_mma_tf32(acc[i][j], ah, bh[j]);
            }
        }
        if (slice == slices - 1) {  // distances of this tile into the running minima
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int c = tile * DC_KM_BN + wn * 32 + j * 8 + 2 * t + h;
                    if (c >= K) continue;
                    const float cn = __ldg(cnorm + c);
#pragma unroll
                    for (int i = 0; i < 4; ++i)
#pragma unroll
                        for (int r = 0; r < 2; ++r) {
                            const float dist = fmaf(-2.0f, acc[i][j][2 * r + h], cn);
                            const int b = 2 * i + r;  // rows wm*64 + i*16 + r*8 + g
                            if (dist < best[b] || (dist == best[b] && c < bidx[b])) { best[b] = dist; bidx[b] = c; }
                        }
                }
        }
    }
    // fold: the quad's 4 lanes (columns), then the 4 warps of a row block (lowest index on ties)
#pragma unroll
    for (int b = 0; b < 8; ++b)
#pragma unroll
        for (int off = 1; off < 4; off <<= 1) {
            const float ob = __shfl_xor_sync(0xffffffffu, best[b], off);
            const int oi = __shfl_xor_sync(0xffffffffu, bidx[b], off);
            if (ob < best[b] || (ob == best[b] && oi < bidx[b])) { best[b] = ob; bidx[b] = oi; }
        }
    __syncthreads();
    float *fb = xs;                                   // [4][128] minima
    int *fi = reinterpret_cast<int *>(cs);            // [4][128] indices
    if (t == 0) {
#pragma unroll
        for (int b = 0; b < 8; ++b) {
            const int row = wm * 64 + (b >> 1) * 16 + (b & 1) * 8 + g;
            fb[wn * DC_KM_BM + row] = best[b];
            fi[wn * DC_KM_BM + row] = bidx[b];
        }
    }
    __syncthreads();
    if (threadIdx.x < DC_KM_BM) {
        const int row = threadIdx.x;
        float bb = fb[row];
        int bi = fi[row];
#pragma unroll
        for (int w = 1; w < 4; ++w) {
            const float ob = fb[w * DC_KM_BM + row];
            const int oi = fi[w * DC_KM_BM + row];
            if (ob < bb || (ob == bb && oi < bi)) { bb = ob; bi = oi; }
        }
        const i64 p = p0 + row;
        if (p < n) {
            labels[p] = bi;
            if (score) score[p] = bb;
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
