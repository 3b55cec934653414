// distconv binning: the bin of one value, shared by the histogram kernels and the kernels that
// count their own results (kernels/convolve.cu). Inlined by the loader like common.cuh.
#pragma once  // (a no-op once inlined by the loader)

#define DC_BIN_NONE -1  // (a kernel's BINNING template argument: write values, count nothing)
#define DC_BIN_UNIFORM 0
#define DC_BIN_EDGES 1
#define DC_BIN_INTEGER 2

// Truncation toward zero that saturates (NaN -> 0), unlike a C++ cast of an out-of-range value.
__device__ __forceinline__ int dc_trunc(float f) { return __float2int_rz(f); }
__device__ __forceinline__ int dc_trunc(double f) { return __double2int_rz(f); }

// The common case of uniform bins: true, with the bin in b, when (v - lo) * scale lies further
// than `slack` (from the launcher: the edges' distance from the ideal grid plus this
// arithmetic's rounding, in bins) from both ends of its bin, which also puts v inside the range;
// false for values that close to an edge, outside the range, or NaN (dc_bin checks those).
template <typename E>
__device__ __forceinline__ bool dc_bin_clear(E v, int nbins, E lo, E scale, E slack, int &b) {
    const E f = (v - lo) * scale;
    b = dc_trunc(f);
    const E r = f - E(b);
    return (unsigned)b < (unsigned)nbins && r > slack && r < E(1) - slack;
}

// Uniform bins, a value near an edge: the formula's bin clamped into range, or -1 outside the
// edges (NaN included). dc_bin_walk then settles it against e[b] and e[b + 1], which a caller
// can load for several values at once (their latencies overlap).
template <typename E>
__device__ __forceinline__ int dc_bin_guess(E v, int nbins, E lo, E scale, E first, E last) {
    if (!(v >= first && v <= last)) return -1;
    const int b = dc_trunc((v - lo) * scale);
    return b < 0 ? 0 : (b > nbins - 1 ? nbins - 1 : b);
}

// The bin of an in-range v from a guess b in [0, nbins) and eb = e[b], eb1 = e[b + 1]: the largest
// b with e[b] <= v (the last bin closed). Both comparisons are made before any step, so both
// edges are loaded at once; the walk goes on through e only where the guess was off by more
// than one bin (v < eb and v >= eb1 never hold together: the edges increase).
template <typename E>
__device__ __forceinline__ int dc_bin_walk(E v, const E *e, int nbins, int b, E eb, E eb1) {
    const int d = (int)(b < nbins - 1 && v >= eb1) - (int)(b > 0 && v < eb);
    b += d;
    if (d < 0) {
        for (; b > 0 && v < e[b]; --b) {}
    } else if (d > 0) {
        for (; b < nbins - 1 && v >= e[b + 1]; ++b) {}
    }
    return b;
}

// Bin of v (already in the edge type E), or -1 when v falls outside (NaN included).
// Uniform bins: dc_bin_clear first, the edges only for values near them.
template <int BINNING, typename E>
__device__ __forceinline__ int dc_bin(E v, const E *e, int nbins, E lo, E scale, E slack, E first, E last) {
    if (BINNING == DC_BIN_INTEGER) {
        return (v >= E(0) && v < E(nbins)) ? int(v) : -1;
    }
    int b;
    if (BINNING == DC_BIN_UNIFORM) {
        if (dc_bin_clear(v, nbins, lo, scale, slack, b)) return b;
        b = dc_bin_guess(v, nbins, lo, scale, first, last);
        return b < 0 ? -1 : dc_bin_walk(v, e, nbins, b, e[b], e[b + 1]);
    }
    if (!(v >= first && v <= last)) return -1;
    int l = 0, h = nbins;  // largest l with e[l] <= v (invariant), v < e[h] unless h == nbins
    while (h - l > 1) {
        const int m = (l + h) >> 1;
        if (e[m] <= v) l = m; else h = m;
    }
    return l;
}
