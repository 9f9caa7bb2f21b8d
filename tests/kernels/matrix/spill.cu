// Fixture matrix: kernels that need more than 24 registers, compiled with -maxrregcount=24 so
// that ptxas spills (STL/LDL marked SpillRefill), next to a kernel with a real local array.
#include "matrix.cuh"

// 40 FP32 values live across a loop.
__global__ void spill_wide_f32(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[40];
#pragma unroll
    for (int k = 0; k < 40; ++k) v[k] = in[(i + 13 * k) % n];
    for (int it = 0; it < 16; ++it) {
#pragma unroll
        for (int k = 0; k < 40; ++k) v[k] = v[k] * v[(k + 1) % 40] + it;
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 40; ++k) s += v[k] * k;
    out[i] = s;
}

// 20 doubles (40 registers) live across a loop.
__global__ void spill_wide_f64(const double *in, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v[20];
#pragma unroll
    for (int k = 0; k < 20; ++k) v[k] = in[(i + 7 * k) % n];
    for (int it = 0; it < 10; ++it) {
#pragma unroll
        for (int k = 0; k < 20; ++k) v[k] = fma(v[k], v[(k + 5) % 20], (double)it);
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < 20; ++k) s += v[k];
    out[i] = s;
}

// Integer and 64-bit pointer values mixed: several base pointers stay live.
__global__ void spill_int_pointers(const int *a, const int *b, const int *c, const int *d, long long *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long acc[12];
#pragma unroll
    for (int k = 0; k < 12; ++k) acc[k] = (long long)a[(i + k) % n] * b[(i + 2 * k) % n];
    for (int it = 0; it < 8; ++it) {
#pragma unroll
        for (int k = 0; k < 12; ++k) acc[k] += (long long)c[(i + it + k) % n] ^ (acc[(k + 1) % 12] >> 3) ^ d[(it * k) % n];
    }
    long long s = 0;
#pragma unroll
    for (int k = 0; k < 12; ++k) s ^= acc[k] << (k & 7);
    out[i] = s;
}

// Spills inside a loop whose body also calls a __noinline__ function.
__device__ __noinline__ float spill_callee(float a, float b, float c) { return a * b - c; }

__global__ void spill_with_call(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[24];
#pragma unroll
    for (int k = 0; k < 24; ++k) v[k] = in[(i + k) % n];
    for (int it = 0; it < 4; ++it) {
#pragma unroll
        for (int k = 0; k < 24; ++k) v[k] = spill_callee(v[k], v[(k + 3) % 24], (float)it);
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 24; ++k) s += v[k];
    out[i] = s;
}

// A local array indexed at run time *and* register pressure: local memory that is not a spill.
__global__ void spill_and_local_array(const int *idx, const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float table[32];
    float v[16];
#pragma unroll
    for (int k = 0; k < 32; ++k) table[k] = in[(i * 32 + k) % n];
#pragma unroll
    for (int k = 0; k < 16; ++k) v[k] = table[(idx[i] + k) & 31];
    for (int it = 0; it < 8; ++it) {
#pragma unroll
        for (int k = 0; k < 16; ++k) v[k] = fmaf(v[k], table[(idx[(i + it) % n] + k) & 31], v[(k + 1) & 15]);
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 16; ++k) s += v[k];
    out[i] = s;
}
