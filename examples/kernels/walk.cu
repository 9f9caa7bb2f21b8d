// Random walks over a graph stored as a successor table: each thread follows its walk for
// `steps` hops (every hop a dependent global load, so the kernel waits on memory latency)
// while it keeps a 48-value feature vector it loaded at the start and folds in at the end.
// ptxas keeps the whole vector in registers across the walk; with that many registers few
// warps fit on an SM to hide the hops' latency. nvcc-orion finds a lower budget (the vector
// partly in local memory, touched only before and after the loop) with more resident warps.
#include <cuda_runtime.h>

#define FEATURES 48

__global__ void walk_features(const int *__restrict__ successor, const float *__restrict__ feat,
                              float *__restrict__ out, int nodes, int steps)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float f[FEATURES];
#pragma unroll
    for (int i = 0; i < FEATURES; ++i)
        f[i] = feat[(size_t)i * nodes + t % nodes];

    int v = t % nodes;
    unsigned visits = 0;
    for (int s = 0; s < steps; ++s) {
        v = successor[v];
        visits = visits * 33u + (unsigned)v;
    }

    float score = (float)(visits & 0xffff);
#pragma unroll
    for (int i = 0; i < FEATURES; ++i)
        score = fmaf(score, f[i], f[(i + 3) % FEATURES]);
    out[t] = score;
}

// The host side for examples/adapt/walk_demo.cpp: walks `threads` threads' walks on the GPU
// (out: one score per thread). Returns the first CUDA error (0: success), so a program without
// a GPU can say what the runtime said.
extern "C" int walk_features_run(const int *successor, const float *feat, float *out, int nodes,
                                 int steps, int threads)
{
    int *d_succ = nullptr;
    float *d_feat = nullptr, *d_out = nullptr;
    size_t feat_bytes = sizeof(float) * FEATURES * (size_t)nodes;
    cudaError_t e = cudaMalloc(&d_succ, sizeof(int) * nodes);
    if (e == cudaSuccess) e = cudaMalloc(&d_feat, feat_bytes);
    if (e == cudaSuccess) e = cudaMalloc(&d_out, sizeof(float) * threads);
    if (e == cudaSuccess) e = cudaMemcpy(d_succ, successor, sizeof(int) * nodes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(d_feat, feat, feat_bytes, cudaMemcpyHostToDevice);
    for (int rep = 0; e == cudaSuccess && rep < 50; ++rep) {
        // Repeated launches of one configuration: what a selector measures and then locks.
        walk_features<<<threads / 128, 128>>>(d_succ, d_feat, d_out, nodes, steps);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(out, d_out, sizeof(float) * threads, cudaMemcpyDeviceToHost);
    cudaFree(d_succ);
    cudaFree(d_feat);
    cudaFree(d_out);
    return (int)e;
}
