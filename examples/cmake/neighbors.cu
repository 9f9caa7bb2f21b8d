// A register-hungry kernel beside the chain: each thread follows `hops` links of a neighbour
// table (dependent loads) while it holds 48 features loaded at the start. ptxas keeps them
// all in registers, so few warps hide the loads; nvcc-orion retunes it to a lower budget
// with more warps, while chain_step (which calls another file's function) keeps ptxas's.
// `nvcc-orion explain --project` on the build folder shows both
// (docs/usage.md §A whole build: `explain --project`).
#include <cuda_runtime.h>

#include "particles.h"

#define NEIGHBOR_FEATURES 48

__global__ void neighbor_score(const int *__restrict__ next, const float *__restrict__ feat,
                               float *__restrict__ out, int n, int hops)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float f[NEIGHBOR_FEATURES];
#pragma unroll
    for (int i = 0; i < NEIGHBOR_FEATURES; ++i)
        f[i] = feat[(size_t)i * n + t];
    int v = t;
    unsigned seen = 0;
    for (int h = 0; h < hops; ++h) {
        v = next[v];
        seen = seen * 33u + (unsigned)v;
    }
    float score = (float)(seen & 0xffff);
#pragma unroll
    for (int i = 0; i < NEIGHBOR_FEATURES; ++i)
        score = fmaf(score, f[i], f[(i + 5) % NEIGHBOR_FEATURES]);
    out[t] = score;
}

int neighbor_scores(const int *next, const float *feat, float *out, std::size_t n, int hops)
{
    int *d_next = nullptr;
    float *d_feat = nullptr, *d_out = nullptr;
    cudaError_t e = cudaMalloc(&d_next, sizeof(int) * n);
    if (e == cudaSuccess) e = cudaMalloc(&d_feat, sizeof(float) * NEIGHBOR_FEATURES * n);
    if (e == cudaSuccess) e = cudaMalloc(&d_out, sizeof(float) * n);
    if (e == cudaSuccess) e = cudaMemcpy(d_next, next, sizeof(int) * n, cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaMemcpy(d_feat, feat, sizeof(float) * NEIGHBOR_FEATURES * n, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
        neighbor_score<<<(unsigned)((n + 127) / 128), 128>>>(d_next, d_feat, d_out, (int)n, hops);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(out, d_out, sizeof(float) * n, cudaMemcpyDeviceToHost);
    cudaFree(d_next);
    cudaFree(d_feat);
    cudaFree(d_out);
    return (int)e;
}
