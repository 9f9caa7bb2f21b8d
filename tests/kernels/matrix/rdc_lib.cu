// Fixture matrix, relocatable device code (-rdc / -dc): device functions and a device table
// used from rdc_use.cu, plus kernels of its own.
#include "matrix.cuh"

__device__ int rdc_table[64];

__device__ float rdc_lerp(float a, float b, float t) { return a + (b - a) * t; }

// Recursive across the module boundary: called from rdc_use.cu, calls itself.
__device__ int rdc_depth_sum(const int *v, int depth) {
    if (depth <= 0) return v[0];
    return v[depth] + rdc_depth_sum(v, depth - 1);
}

__device__ unsigned long long rdc_mix64(unsigned long long x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

__global__ void rdc_lib_fill_table(int seed) {
    int i = threadIdx.x;
    if (i < 64) rdc_table[i] = (int)(rdc_mix64(seed + i) & 0xffff);
}

__global__ void rdc_lib_lerp(const float *a, const float *b, float *out, float t, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = rdc_lerp(a[i], b[i], t);
}
