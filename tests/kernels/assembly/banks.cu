// Module-level constant bank 4 holds the addresses of globals, strings and external functions
// (`vprintf`, `__assertfail`) in the order ptxas meets them. A register-hungry kernel with an
// `assert` and an `atomicAdd` on a global, beside a kernel that calls `printf`: compiled alone
// (`ptxas --entry`), the hungry kernel's bank 4 leaves `vprintf` out, and with
// `-DHUNGRY_FIRST` its entries land at other offsets than in the whole module (issue 30).
#include <cassert>
#include <cstdio>

__device__ unsigned counter;
__device__ unsigned visits_total;

#define WIDTH 48

#ifndef HUNGRY_FIRST
__global__ void chatty(int x)
{
    assert(x > 0);
    atomicAdd(&visits_total, 1u);
    printf("x=%d\n", x);
}
#endif

__global__ void hungry(const int *__restrict__ next, const float *__restrict__ feat,
                       float *__restrict__ out, int nodes, int steps)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float f[WIDTH];
#pragma unroll
    for (int i = 0; i < WIDTH; ++i)
        f[i] = feat[(size_t)i * nodes + t % nodes];
    int v = t % nodes;
    unsigned seen = 0;
    for (int s = 0; s < steps; ++s) {
        v = next[v];
        seen = seen * 33u + (unsigned)v;
    }
    assert(v >= 0);
    float score = (float)(seen & 0xffff);
#pragma unroll
    for (int i = 0; i < WIDTH; ++i)
        score = fmaf(score, f[i], f[(i + 3) % WIDTH]);
    atomicAdd(&counter, 1u);
    out[t] = score;
}

#ifdef HUNGRY_FIRST
__global__ void chatty(int x)
{
    assert(x > 0);
    atomicAdd(&visits_total, 1u);
    printf("x=%d\n", x);
}
#endif
