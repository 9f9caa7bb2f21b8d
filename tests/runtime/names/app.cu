// Launches through every path (<<<>>>, cudaLaunchKernel, cudaLaunchKernelEx) next to user
// code named like the runtime's launch function: in a namespace (defined in another file),
// and a class's static member.
#include <cstdio>
#include "trace.h"

__global__ void scale(float *p, float s) { p[threadIdx.x] *= s; }

struct Launcher {
    static int cudaLaunchKernel(int x) { return x + 1; }
};

int main()
{
    float *p = nullptr;
    scale<<<1, 32>>>(p, 2.0f);
    std::printf("stub: %s\n", cudaGetErrorName(cudaGetLastError()));
    float s = 3.0f;
    void *args[] = {&p, &s};
    cudaError_t e = cudaLaunchKernel((const void *)scale, dim3(1), dim3(32), args, 0, 0);
    std::printf("api: %s\n", cudaGetErrorName(e));
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3(1);
    c.blockDim = dim3(32);
    std::printf("ex: %s\n", cudaGetErrorName(cudaLaunchKernelEx(&c, scale, p, s)));
    std::printf("trace: %d\n", (int)trace::cudaLaunchKernel((const void *)scale));
    std::printf("class: %d\n", Launcher::cudaLaunchKernel(41));
    return 0;
}
