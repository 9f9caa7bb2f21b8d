// Declarations shared by the fixture-matrix kernels (tests/common/fixtures.rs) and main.cu.
#pragma once
#include <cstdint>

// math.cu
__global__ void fma_chain_f32(const float *in, float *out, int n);
__global__ void nbody_accel(const float4 *pos, float3 *acc, int n);

// memory.cu
__global__ void warp_reduce_shfl(const float *in, float *out, int n);
__global__ void printf_report(const int *values, int n);
__global__ void dynamic_smem_scan(const int *in, int *out, int n);

// rdc_lib.cu (relocatable device code only)
#ifdef __CUDACC_RDC__
extern __device__ int rdc_table[64];
__device__ float rdc_lerp(float a, float b, float t);
__device__ int rdc_depth_sum(const int *v, int depth);
__device__ unsigned long long rdc_mix64(unsigned long long x);
#endif
