// Host program for the spill -> shared link test: launches some kernels of spills.cu.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void s_chain_f32(const float *in, float *out, int n);
__global__ void s_dynamic_smem(const float *in, float *out, int n);

int main()
{
    const int n = 1024;
    float *in, *out;
    if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess) return 1;
    cudaMalloc(&out, n * sizeof(float));
    cudaMemset(in, 0, n * sizeof(float));
    s_chain_f32<<<n / 128, 128>>>(in, out, n);
    s_dynamic_smem<<<n / 128, 128, 128 * sizeof(float)>>>(in, out, n);
    float h = 0;
    cudaMemcpy(&h, out, sizeof(float), cudaMemcpyDeviceToHost);
    printf("%f\n", h);
    return 0;
}
