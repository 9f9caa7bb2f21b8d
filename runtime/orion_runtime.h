// nvcc-orion launch-time selector: the C interface of the CUDA glue (issue 21).
//
// `runtime/orion_runtime.cpp` implements it; the driver compiles that file once per host
// compiler and merges the object into each user object it builds under NVCC_ORION=adapt|train
// (`-r` relocatable link), so no library is added to the user's link. The user object's
// references to the runtime functions below are renamed to these (`orion_rt_v1_<name>`,
// src/driver/glue.rs); see docs/selector.md. Every symbol the glue defines carries that prefix
// (issue 45): the names a program may use are the program's.
#ifndef NVCC_ORION_RUNTIME_H
#define NVCC_ORION_RUNTIME_H

#include <cuda_runtime_api.h>

#include <cstddef>

extern "C" {

// The launches: each launches the kernel (a host handle, or the <<<>>> stub's cudaKernel_t)
// or one of its variants with the same arguments; exactly the original call when the
// selector is off, has no variants for it, or doubts anything. Same signatures as cudart's.
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

// The attributes the program sets on a kernel: the original's, carried to its variants.
cudaError_t orion_rt_v1_cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr,
                                             int value);
cudaError_t orion_rt_v1_cudaFuncSetCacheConfig(const void* func, cudaFuncCache config);

// The questions about a kernel's resources and occupancy: answered for the original, and from
// then on the kernel runs only variants with at least the original's blocks per SM.
cudaError_t orion_rt_v1_cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func);
cudaError_t orion_rt_v1_cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks,
                                                                      const void* func,
                                                                      int threads, size_t shmem);
cudaError_t orion_rt_v1_cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, const void* func, int threads, size_t shmem, unsigned flags);
cudaError_t orion_rt_v1_cudaOccupancyAvailableDynamicSMemPerBlock(size_t* bytes,
                                                                  const void* func, int blocks,
                                                                  int threads);
cudaError_t orion_rt_v1_cudaOccupancyMaxPotentialClusterSize(int* size, const void* func,
                                                             const cudaLaunchConfig_t* config);
cudaError_t orion_rt_v1_cudaOccupancyMaxActiveClusters(int* clusters, const void* func,
                                                       const cudaLaunchConfig_t* config);

// A device reset: the glue drops what it holds of the destroyed context.
cudaError_t orion_rt_v1_cudaDeviceReset(void);
}

#endif  // NVCC_ORION_RUNTIME_H
