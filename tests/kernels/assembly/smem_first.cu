// A module with no shared memory at all (issue 47): before sm_90 ptxas writes no NOBITS
// section and no writable segment for it. A half-precision row scorer keeps a 64-wide row
// of widened values live across a chain of gathered loads; tuned to ptxas's shared-memory
// spilling candidate (32 registers and `enable_smem_spilling`), it is the module's first
// `.nv.shared.<kernel>`, for which a whole-module ptxas run also adds a program header.
// tests/tuning/tune_entry.rs splices it and compares the bytes with that run's;
// tests/assembly/assembly_check.rs checks the spliced cubin and wrong edits of the header.
#include <cuda_fp16.h>

__device__ __forceinline__ float wide(__half v) { return __half2float(v); }
__device__ __forceinline__ float wide(float v) { return v; }

template <typename T, int W>
__global__ void __launch_bounds__(256)
    row_score(const T *__restrict__ row, const T *__restrict__ keys, const int *__restrict__ next,
              float *__restrict__ out, int n, int hops) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float r[W];
#pragma unroll
    for (int i = 0; i < W; ++i) r[i] = wide(row[(size_t)(t % n) * W + i]);
    float top = -1e30f, acc = 0.0f;
    int k = next[t % n];
    for (int h = 0; h < hops; ++h) {
        float d = 0.0f;
#pragma unroll
        for (int i = 0; i < W; ++i) d = fmaf(r[i], wide(keys[(size_t)k * W + i]), d);
        top = fmaxf(top, d);
        acc += __expf(d - top);
        k = next[k];
    }
    out[t] = acc + top;
}

__global__ void rescale(float *__restrict__ y, const float *__restrict__ x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

template __global__ void row_score<__half, 64>(const __half *, const __half *, const int *,
                                               float *, int, int);
template __global__ void row_score<float, 24>(const float *, const float *, const int *,
                                              float *, int, int);
