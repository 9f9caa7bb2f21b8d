// `chain_dot`, the spilling kernel of the three `smem_rewrite_*.cu` modules: it keeps a W-wide
// row live across a chain of gathered loads, so at 32 registers it spills. A module may define
// CHAIN_DOT_TAIL(acc) (what is stored, e.g. with a `__device__` value added) before including.
#ifndef CHAIN_DOT_TAIL
#define CHAIN_DOT_TAIL(acc) (acc)
#endif

template <int W>
__global__ void chain_dot(const float *__restrict__ x, const int *__restrict__ next,
                          float *__restrict__ out, int n, int hops) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float r[W];
#pragma unroll
    for (int i = 0; i < W; ++i) r[i] = x[(size_t)(t % n) * W + i];
    float acc = 0.0f;
    int k = next[t % n];
    for (int h = 0; h < hops; ++h) {
        float d = 0.0f;
#pragma unroll
        for (int i = 0; i < W; ++i) d = fmaf(r[i], x[(size_t)k * W + i], d);
        acc += d;
        k = next[k];
    }
    out[t] = CHAIN_DOT_TAIL(acc);
}
