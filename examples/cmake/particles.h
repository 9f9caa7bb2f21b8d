#pragma once
#include <cstddef>

struct SpringParams {
    float stiffness;
    float damping;
    float rest_length;
};

#ifdef __CUDACC__
// Defined in forces.cu, called from integrate.cu (relocatable device code).
__device__ float spring_force(float x_left, float x, float x_right, float v,
                             const SpringParams &p);
#endif

// Host entry points (integrate.cu), so main.cpp needs no CUDA headers.
// simulate_chain returns 0 on success, otherwise a cudaError_t value.
int simulate_chain(float *x, float *v, std::size_t n, int steps, float dt, SpringParams p);
int cuda_device_count(); // 0 when there is no usable device or driver
// neighbors.cu: a score per node after `hops` links of `next` (feat: 48 values per node).
int neighbor_scores(const int *next, const float *feat, float *out, std::size_t n, int hops);
const char *cuda_error_string(int err);
