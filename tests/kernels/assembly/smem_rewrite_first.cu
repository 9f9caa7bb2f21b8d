// A module with no shared memory at all: before sm_90 ptxas writes no NOBITS section and no
// writable segment for it. `chain_dot` keeps a 48-wide row live across a chain of gathered
// loads, so at 32 registers it spills; spill2smem moves the spills into the module's first
// `.nv.shared.<kernel>`, for which ptxas adds a program header (a writable `LOAD`) when its own
// shared-memory spilling does the same. tests/assembly/rewrite_segments.rs compares the
// rewrite's layout with that ptxas build's.
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
    out[t] = acc;
}

__global__ void scale(float *__restrict__ y, const float *__restrict__ x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

template __global__ void chain_dot<48>(const float *, const int *, float *, int, int);
