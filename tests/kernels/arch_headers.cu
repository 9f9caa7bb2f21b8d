// A header included only under __CUDA_ARCH__ and one only on the host side.
#ifdef __CUDA_ARCH__
#include "device_only.cuh"
#else
#include "host_side.h"
#endif

__global__ void arch_headers(float *p) {
#ifdef __CUDA_ARCH__
    p[threadIdx.x] = device_only_scale(p[threadIdx.x]);
#endif
}

#ifndef __CUDA_ARCH__
float host_entry(float v) { return host_side_scale(v); }
#endif
