// A block-wide sum of squares in shared memory: the second translation unit of the example,
// so build.rs compiles two sources (at once, when cargo's jobserver has a token to spare).
#include <cuda_runtime.h>

__global__ void sum_squares(const float *__restrict__ x, float *__restrict__ out, int n)
{
    __shared__ float part[256];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v = t < n ? x[t] : 0.f;
    part[threadIdx.x] = v * v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, part[0]);
}

// Called from Rust. Returns 0 on success, 1 when there is no usable device, 2 on another
// CUDA error; `result` receives the sum of (i % 7)^2 over i < n.
extern "C" int norm_run(int n, float *result)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
        return 1;
    float *h = new float[n];
    for (int i = 0; i < n; ++i)
        h[i] = (float)(i % 7);
    float *x = nullptr, *out = nullptr;
    int rc = 0;
    if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&out, sizeof(float)) != cudaSuccess)
        rc = 2;
    if (rc == 0) {
        cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
        cudaMemset(out, 0, sizeof(float));
        sum_squares<<<(n + 255) / 256, 256>>>(x, out, n);
        if (cudaDeviceSynchronize() != cudaSuccess ||
            cudaMemcpy(result, out, sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
            rc = 2;
    }
    cudaFree(x);
    cudaFree(out);
    delete[] h;
    return rc;
}
