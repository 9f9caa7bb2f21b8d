// A register-hungry kernel that also reads a surface: the tuner offers register demotion
// below its count, and the oracle check refuses the rewrite (our operand tables do not
// describe SULD, so nvdisasm -plr disagrees with them).
#include <cuda_runtime.h>

__global__ void refused_surface_mix(cudaSurfaceObject_t surf, const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc[24];
#pragma unroll
    for (int k = 0; k < 24; ++k) acc[k] = in[(i + k * 97) % n] * (k + 1);
    float s = 0.f;
    for (int r = 0; r < 8; ++r) {
#pragma unroll
        for (int k = 0; k < 24; ++k) acc[k] = acc[k] * acc[(k + 5) % 24] + acc[(k + 11) % 24];
        float v;
        surf2Dread(&v, surf, (i % 64) * 4, r);
        s += v;
    }
#pragma unroll
    for (int k = 0; k < 24; ++k) s += acc[k];
    out[i] = s;
}
