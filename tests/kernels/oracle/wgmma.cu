// Oracle coverage: warpgroup matrix multiply (wgmma.mma_async) with shared-memory descriptors
// for A and B, and with A from registers. ptxas accepts wgmma only for the architecture-specific
// target sm_90a, so the body is guarded by __CUDA_ARCH_FEAT_SM90_ALL: the file builds for every
// arch, and only the sm_90a build contains HGMMA (the oracle list compiles it for sm_90a too).
#include <cstdint>
#include <cuda_fp16.h>

__device__ __forceinline__ uint64_t smem_desc(const void *p) {
    // Matrix descriptor: start address >> 4 in bits 0-13, leading offset 128 B, stride 256 B.
    uint64_t addr = static_cast<uint64_t>(__cvta_generic_to_shared(p));
    return ((addr & 0x3ffff) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);
}

__global__ void oracle_wgmma(const uint4 *in, float *out, int scale) {
    __shared__ __align__(128) unsigned short a[64 * 16];
    __shared__ __align__(128) unsigned short b[16 * 8];
    int t = threadIdx.x;
    reinterpret_cast<uint4 *>(a)[t] = in[blockIdx.x * 128 + t];
    if (t < 16)
        reinterpret_cast<uint4 *>(b)[t] = in[blockIdx.x * 128 + 128 + t];
    __syncthreads();
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    uint64_t da = smem_desc(a), db = smem_desc(b);
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("wgmma.fence.sync.aligned;");
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %6, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, p, 1, "
                 "1, 0, 0;\n\t}"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "l"(da), "l"(db), "r"(scale));
    unsigned r0 = reinterpret_cast<unsigned *>(a)[t], r1 = reinterpret_cast<unsigned *>(a)[t + 128],
             r2 = reinterpret_cast<unsigned *>(a)[t + 256], r3 = reinterpret_cast<unsigned *>(a)[t + 384];
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %9, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, %8, p, 1, 1, 0;\n\t}"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "l"(db), "r"(scale));
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#else
    d0 = __half2float(__ushort_as_half(a[t]));
    d1 = __half2float(__ushort_as_half(b[t % 128]));
#endif
    float *o = out + blockIdx.x * 512 + t;
    o[0] = d0;
    o[128] = d1;
    o[256] = d2;
    o[384] = d3;
}
