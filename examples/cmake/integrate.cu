#include "particles.h"
#include <cuda_runtime.h>

// One semi-implicit Euler step; the end particles are pinned.
__global__ void chain_step(const float *__restrict__ x, float *__restrict__ x_next,
                           float *__restrict__ v, int n, float dt, SpringParams p)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    if (i == 0 || i == n - 1) {
        x_next[i] = x[i];
        return;
    }
    const float f = spring_force(x[i - 1], x[i], x[i + 1], v[i], p);
    const float vi = v[i] + dt * f;
    v[i] = vi;
    x_next[i] = x[i] + dt * vi;
}

int simulate_chain(float *x, float *v, std::size_t n, int steps, float dt, SpringParams p)
{
    float *dx = nullptr, *dx2 = nullptr, *dv = nullptr;
    const std::size_t bytes = n * sizeof(float);
    cudaError_t e = cudaMalloc(&dx, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&dx2, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&dv, bytes);
    if (e == cudaSuccess) e = cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(dv, v, bytes, cudaMemcpyHostToDevice);
    const int threads = 128, blocks = (int)((n + threads - 1) / threads);
    for (int s = 0; e == cudaSuccess && s < steps; ++s) {
        chain_step<<<blocks, threads>>>(dx, dx2, dv, (int)n, dt, p);
        e = cudaGetLastError();
        float *t = dx; dx = dx2; dx2 = t;
    }
    if (e == cudaSuccess) e = cudaMemcpy(x, dx, bytes, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaMemcpy(v, dv, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dx2);
    cudaFree(dv);
    return (int)e;
}

int cuda_device_count()
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

const char *cuda_error_string(int err) { return cudaGetErrorString((cudaError_t)err); }
