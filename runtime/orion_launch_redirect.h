// nvcc-orion: routes a CUDA translation unit's kernel launches through the launch-time
// selector (issue 21; see docs/selector.md, "How launches reach the selector").
//
// The driver force-includes this header (`-include`) in the host compilation of nvcc's
// `.cudafe1.cpp` only. That file is already preprocessed: the CUDA headers' declarations are
// plain text in it, so renaming the launch entry points here renames their declarations, the
// user's explicit calls, the runtime's C++ wrappers (`cudaLaunchKernel<T>`,
// `cudaLaunchKernelEx`) and the `<<<>>>` stubs (`__cudaLaunch` in crt/host_runtime.h calls
// `__cudaGetKernel` and `__cudaLaunchKernel` through `__cudaLaunchKernel_helper`) alike, to
// C functions that `runtime/orion_runtime.cpp` defines with the same signatures and merges
// into the same object. It holds macros only: anything declared here would clash with the
// preprocessed text that follows. Under `__CUDACC__` (nvcc's own preprocessing steps, when it
// is passed through `-Xcompiler`) it does nothing, so device code never sees the names.
#ifndef NVCC_ORION_LAUNCH_REDIRECT_H
#define NVCC_ORION_LAUNCH_REDIRECT_H
#if !defined(__CUDACC__)
#define cudaLaunchKernel orion_rt_v1_cudaLaunchKernel
#define cudaLaunchKernel_ptsz orion_rt_v1_cudaLaunchKernel_ptsz
#define cudaLaunchKernelExC orion_rt_v1_cudaLaunchKernelExC
#define cudaLaunchKernelExC_ptsz orion_rt_v1_cudaLaunchKernelExC_ptsz
#define __cudaGetKernel orion_rt_v1___cudaGetKernel
#define __cudaLaunchKernel orion_rt_v1___cudaLaunchKernel
#define __cudaLaunchKernel_ptsz orion_rt_v1___cudaLaunchKernel_ptsz
#endif
#endif  // NVCC_ORION_LAUNCH_REDIRECT_H
