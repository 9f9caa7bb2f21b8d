// Random walks over a successor table, each thread folding a feature vector it loaded before
// the walk into a score after it: latency-bound on the walk's dependent loads, with many
// registers held across it, the kind of kernel nvcc-orion gives a lower register budget.
#include <cuda_runtime.h>
#include "walk_params.cuh"

__global__ void walk_score(const int *__restrict__ next, const float *__restrict__ feat,
                           float *__restrict__ out, int nodes, int steps)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nodes)
        return;
    float f[WALK_FEATURES];
#pragma unroll
    for (int i = 0; i < WALK_FEATURES; ++i)
        f[i] = feat[(size_t)i * nodes + t];
    int v = t;
    for (int s = 0; s < steps; ++s)
        v = next[v];
    float score = (float)v;
#pragma unroll
    for (int i = 0; i < WALK_FEATURES; ++i)
        score = fmaf(score, 0.5f, f[i] * f[(i + 1) % WALK_FEATURES]);
    out[t] = score;
}

// Called from Rust. Returns 0 on success, 1 when there is no usable device, 2 on another
// CUDA error; `score_sum` receives the sum of all scores.
extern "C" int walk_run(int nodes, int steps, float *score_sum)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
        return 1;
    int *next = nullptr;
    float *feat = nullptr, *out = nullptr;
    int *h_next = new int[nodes];
    float *h_feat = new float[(size_t)WALK_FEATURES * nodes];
    float *h_out = new float[nodes];
    for (int i = 0; i < nodes; ++i)
        h_next[i] = (int)(((long long)i * 7919 + 13) % nodes);
    for (size_t i = 0; i < (size_t)WALK_FEATURES * nodes; ++i)
        h_feat[i] = (float)(i % 17) * 0.125f;
    int rc = 0;
    if (cudaMalloc(&next, nodes * sizeof(int)) != cudaSuccess ||
        cudaMalloc(&feat, (size_t)WALK_FEATURES * nodes * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&out, nodes * sizeof(float)) != cudaSuccess)
        rc = 2;
    if (rc == 0) {
        cudaMemcpy(next, h_next, nodes * sizeof(int), cudaMemcpyHostToDevice);
        cudaMemcpy(feat, h_feat, (size_t)WALK_FEATURES * nodes * sizeof(float), cudaMemcpyHostToDevice);
        walk_score<<<(nodes + 255) / 256, 256>>>(next, feat, out, nodes, steps);
        if (cudaDeviceSynchronize() != cudaSuccess)
            rc = 2;
        else
            cudaMemcpy(h_out, out, nodes * sizeof(float), cudaMemcpyDeviceToHost);
    }
    double sum = 0;
    for (int i = 0; rc == 0 && i < nodes; ++i)
        sum += h_out[i];
    *score_sum = (float)sum;
    cudaFree(next);
    cudaFree(feat);
    cudaFree(out);
    delete[] h_next;
    delete[] h_feat;
    delete[] h_out;
    return rc;
}
