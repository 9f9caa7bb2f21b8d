// Fixture matrix, relocatable device code: kernels calling device functions and reading a
// device variable defined in rdc_lib.cu (resolved by the device link).
#include "matrix.cuh"

__global__ void rdc_use_blend(const float *a, const float *b, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = rdc_lerp(a[i], b[i], (float)(rdc_table[i & 63] & 255) / 255.f);
}

__global__ void rdc_use_depth(const int *v, int *out, int depth) {
    if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = rdc_depth_sum(v, depth);
}

__global__ void rdc_use_hash(unsigned long long *data, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = rdc_mix64(data[i]) ^ (unsigned long long)rdc_table[i & 63];
}
