// Host program for the link cases: launches the kernel defined in shmem.cu.
#include <cstdio>
#include <cuda_runtime.h>

void launch_shmem_reduce(const float *in, float *out, int n);

int main() {
    float *in = nullptr, *out = nullptr;
    if (cudaMalloc(&in, 1024 * sizeof(float)) != cudaSuccess) {
        std::printf("no device\n");
        return 0;
    }
    cudaMalloc(&out, 4 * sizeof(float));
    launch_shmem_reduce(in, out, 1024);
    cudaDeviceSynchronize();
    cudaFree(in);
    cudaFree(out);
    return 0;
}
