// Oracle coverage: asynchronous copies. cp.async (LDGSTS) of 4, 8 and 16 bytes with its
// commit/wait forms (LDGDEPBAR, DEPBAR) on sm_80+; on sm_90 the bulk copy engine: a
// global→shared bulk copy completed through an mbarrier, a shared→global bulk store with its
// bulk-group wait, and a 2-D tensor (TMA) load through a tensor map in global memory.
#include <cstdint>

__device__ __forceinline__ unsigned smem_u32(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__global__ void oracle_cp_async(const float4 *in, const float *in1, float *out, int n) {
    __shared__ __align__(16) float4 stage[2][128];
    __shared__ float small[2][128];
    __shared__ __align__(8) float2 pair[128];
    int t = threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
        const float4 *src = in + (k * gridDim.x + blockIdx.x) * 128 + t;
        const float *src1 = in1 + (k * gridDim.x + blockIdx.x) * 128 + t;
#if __CUDA_ARCH__ >= 800
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(&stage[k & 1][t])),
                     "l"(src));
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_u32(&small[k & 1][t])),
                     "l"(src1));
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(smem_u32(&pair[t])),
                     "l"(src1 + 256));
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 1;");
        asm volatile("cp.async.wait_all;");
#else
        stage[k & 1][t] = *src;
        small[k & 1][t] = *src1;
        pair[t] = make_float2(src1[256], src1[257]);
#endif
        __syncthreads();
        float4 v = stage[k & 1][(t + 1) % 128];
        acc += v.x * v.y + v.z * v.w + small[k & 1][(t + 3) % 128] + pair[t ^ 1].y;
        __syncthreads();
    }
    out[blockIdx.x * 128 + t] = acc;
}

// Bulk copies: sm_90 only (the kernel body is empty-but-live elsewhere).
__global__ void oracle_bulk_copy(const float *in, float *out, const void *tensor_map, int n) {
    int t = threadIdx.x;
    float acc = 0.0f;
#if __CUDA_ARCH__ >= 900
    __shared__ __align__(128) float buf[256];
    __shared__ __align__(128) float tile[16 * 16];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = smem_u32(&bar);
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(1));
        asm volatile("fence.mbarrier_init.release.cluster;");
    }
    __syncthreads();
    for (int k = 0; k < n; ++k) {
        unsigned parity = k & 1;
        if (t == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b),
                         "r"(2048)
                         : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                         "[%0], [%1], %2, [%3];" ::"r"(smem_u32(buf)),
                         "l"(in + (k * gridDim.x + blockIdx.x) * 256), "r"(1024), "r"(b)
                         : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::"
                         "bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(tile)),
                         "l"(tensor_map), "r"(k * 16), "r"(static_cast<int>(blockIdx.x) * 16),
                         "r"(b)
                         : "memory");
        }
        unsigned done = 0;
        while (!done) {
            asm volatile("{\n\t.reg .pred p;\n\t"
                         "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(done)
                         : "r"(b), "r"(parity)
                         : "memory");
        }
        acc += buf[t] * tile[t % 256] + buf[(t + 7) % 256];
        __syncthreads();
    }
    buf[t] = acc;
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();
    if (t == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                         out + blockIdx.x * 256),
                     "r"(smem_u32(buf)), "r"(1024)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
#else
    for (int k = 0; k < n; ++k)
        acc += in[(k * gridDim.x + blockIdx.x) * 256 + t];
    (void)tensor_map;
    out[blockIdx.x * 256 + t] = acc;
#endif
}
