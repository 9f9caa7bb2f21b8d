// nvcc-orion launch-time selector: the C interface of the CUDA glue (issue 21).
//
// `runtime/orion_runtime.cpp` implements it; the driver compiles that file once per host
// compiler and merges the object into each user object it builds under NVCC_ORION=adapt|train
// (`-r` relocatable link), so no library is added to the user's link. Launches reach it through
// the renames in `runtime/orion_launch_redirect.h`; see docs/selector.md.
#ifndef NVCC_ORION_RUNTIME_H
#define NVCC_ORION_RUNTIME_H

#include <cuda_runtime_api.h>

#include <cstddef>

extern "C" {

// The interposition entry: launches `func` (a kernel's host handle, as `cudaLaunchKernel`
// takes it) or one of its variants with the same arguments. Exactly the original
// `cudaLaunchKernel` when the selector is off, has no variants for `func`, or doubts anything.
cudaError_t orion_launch(const void* func, dim3 grid, dim3 block, void** args, size_t shmem,
                         cudaStream_t stream);

// The renamed entry points (orion_launch_redirect.h); same signatures as the originals.
cudaError_t orion_rt_v1_cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                                         size_t shmem, cudaStream_t stream);
cudaError_t orion_rt_v1_cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block,
                                              void** args, size_t shmem, cudaStream_t stream);
cudaError_t orion_rt_v1_cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                            void** args);
cudaError_t orion_rt_v1_cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config,
                                                 const void* func, void** args);
cudaError_t orion_rt_v1___cudaGetKernel(cudaKernel_t* kernel, const void* func);
cudaError_t orion_rt_v1___cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block,
                                           void** args, size_t shmem, cudaStream_t stream);
cudaError_t orion_rt_v1___cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                void** args, size_t shmem, cudaStream_t stream);
}

#endif  // NVCC_ORION_RUNTIME_H
