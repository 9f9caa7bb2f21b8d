// Fixture matrix: host program for the linked executables. Launches its own kernels and
// kernels defined in math.cu and memory.cu (and, built with -rdc, in rdc_use.cu).
#include <cstdio>
#include <cuda_runtime.h>
#include "matrix.cuh"

#ifdef __CUDACC_RDC__
__global__ void rdc_use_blend(const float *a, const float *b, float *out, int n);
__global__ void rdc_lib_fill_table(int seed);
#endif

__global__ void main_init(float *p, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v * (i % 17);
}

__global__ void main_check(const float *p, int n, int *bad) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && !(p[i] == p[i])) atomicAdd(bad, 1);
}

int main() {
    const int n = 1 << 12;
    float *a = nullptr, *b = nullptr;
    int *bad = nullptr;
    if (cudaMalloc(&a, n * sizeof(float)) != cudaSuccess) {
        std::printf("no device\n");
        return 0;
    }
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&bad, sizeof(int));
    cudaMemset(bad, 0, sizeof(int));
    main_init<<<n / 256, 256>>>(a, n, 0.5f);
#ifdef __CUDACC_RDC__
    rdc_lib_fill_table<<<1, 64>>>(7);
    rdc_use_blend<<<n / 256, 256>>>(a, a, b, n);
#else
    fma_chain_f32<<<n / 256, 256>>>(a, b, n);
    warp_reduce_shfl<<<n / 256, 256>>>(b, a, n);
    dynamic_smem_scan<<<n / 256, 256, 256 * sizeof(int)>>>(reinterpret_cast<int *>(a), reinterpret_cast<int *>(b), n);
#endif
    main_check<<<n / 256, 256>>>(b, n, bad);
    int h_bad = -1;
    cudaMemcpy(&h_bad, bad, sizeof(int), cudaMemcpyDeviceToHost);
    std::printf("%s, bad=%d\n", cudaGetErrorString(cudaGetLastError()), h_bad);
    cudaFree(a);
    cudaFree(b);
    cudaFree(bad);
    return 0;
}
