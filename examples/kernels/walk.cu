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
