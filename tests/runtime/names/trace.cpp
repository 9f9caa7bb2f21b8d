#include <cstdio>
#include "trace.h"

namespace trace {
cudaError_t cudaLaunchKernel(const void *kernel)
{
    std::printf("traced a launch of a kernel: %d\n", kernel != nullptr);
    return cudaSuccess;
}
}
