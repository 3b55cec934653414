// distconv binning: the bin of one value, shared by the histogram kernels and the kernels that
// count their own results (kernels/convolve.cu). Inlined by the loader like common.cuh.
#pragma once  // (a no-op once inlined by the loader)

#define DC_BIN_NONE -1  // (a kernel's BINNING template argument: write values, count nothing)
#define DC_BIN_UNIFORM 0
#define DC_BIN_EDGES 1
#define DC_BIN_INTEGER 2

// Bin of v (already in the edge type E), or -1 when v falls outside (NaN included).
// Uniform bins: the bin from (v - lo) * scale is exact when its fractional part lies more than
// `slack` (from the launcher: the edges' distance from the ideal grid plus this arithmetic's
// rounding, in bins) from both ends; only values that close to an edge look the edges up.
template <int BINNING, typename E>
__device__ __forceinline__ int dc_bin(E v, const E *e, int nbins, E lo, E scale, E slack, E first, E last) {
    if (BINNING == DC_BIN_INTEGER) {
        return (v >= E(0) && v < E(nbins)) ? int(v) : -1;
    }
    if (!(v >= first && v <= last)) return -1;
    int b;
    if (BINNING == DC_BIN_UNIFORM) {
        const E f = (v - lo) * scale;
        b = int(f);
        b = b < 0 ? 0 : (b > nbins - 1 ? nbins - 1 : b);
        const E r = f - E(b);
        if (r > slack && r < E(1) - slack) return b;
        while (b > 0 && v < e[b]) --b;
        while (b < nbins - 1 && v >= e[b + 1]) ++b;
    } else {  // largest b with e[b] <= v, clamped to the last (closed) bin
        int l = 0, h = nbins;  // invariant: e[l] <= v, and v < e[h] unless h == nbins
        while (h - l > 1) {
            const int m = (l + h) >> 1;
            if (e[m] <= v) l = m; else h = m;
        }
        b = l;
    }
    return b;
}
