// Oracle coverage: tensor-core data movement and matrix multiply (ldmatrix/stmatrix, mma.sync
// in f16, bf16, tf32, int8 and f64). Every fragment is loaded from and stored to global memory
// so ptxas keeps every instruction; arch-specific forms are guarded so the file builds for
// sm_75 through sm_90.
#include <cstdint>

__device__ __forceinline__ unsigned smem_u32(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ldmatrix x1/x2/x4 and their .trans forms; stmatrix (sm_90) writes fragments back.
__global__ void oracle_ldmatrix(const unsigned *in, unsigned *out) {
    __shared__ __align__(16) unsigned short tile[4 * 8 * 8];
    int t = threadIdx.x;
    reinterpret_cast<unsigned *>(tile)[t] = in[blockIdx.x * 32 + t];
    reinterpret_cast<unsigned *>(tile)[t + 32] = in[blockIdx.x * 32 + t + 1024];
    __syncthreads();
    unsigned a0, a1, a2, a3, b0, b1, c0, d0, d1, d2, d3, e0, e1, f0;
    unsigned row = smem_u32(tile + (t % 32) * 8);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
                 : "r"(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(b0), "=r"(b1)
                 : "r"(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(c0) : "r"(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
                 : "r"(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                 : "=r"(e0), "=r"(e1)
                 : "r"(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(f0) : "r"(row));
#if __CUDA_ARCH__ >= 900
    __shared__ __align__(16) unsigned short back[4 * 8 * 8];
    unsigned dst = smem_u32(back + (t % 32) * 8);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};" ::"r"(dst),
                 "r"(a0), "r"(b0), "r"(d0), "r"(e0));
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1,%2};" ::"r"(dst),
                 "r"(a1), "r"(d1));
    asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" ::"r"(dst), "r"(c0));
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};" ::"r"(dst),
                 "r"(a2), "r"(a3), "r"(d2), "r"(f0));
    __syncwarp();
    out[blockIdx.x * 64 + t + 32] = reinterpret_cast<unsigned *>(back)[t];
#endif
    out[blockIdx.x * 64 + t] = a0 ^ a1 ^ a2 ^ a3 ^ b0 ^ b1 ^ c0 ^ d0 ^ d1 ^ d2 ^ d3 ^ e0 ^ e1 ^ f0;
}

// f16 mma: m16n8k8 (sm_75+) and m16n8k16 (sm_80+), f32 accumulate; bf16 and tf32 on sm_80+.
__global__ void oracle_mma_float(const unsigned *in, float *out) {
    int t = threadIdx.x;
    const unsigned *p = in + blockIdx.x * 256 + t;
    unsigned a0 = p[0], a1 = p[32], a2 = p[64], a3 = p[96], b0 = p[128], b1 = p[160];
    float c0 = __uint_as_float(p[192]), c1 = c0 + 1.0f, c2 = c0 * 2.0f, c3 = c0 - 3.0f;
    float d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                 "{%7,%8,%9,%10};"
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                 : "r"(a0), "r"(a1), "r"(b0), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
    unsigned h0, h1;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3}, {%4}, "
                 "{%5,%6};"
                 : "=r"(h0), "=r"(h1)
                 : "r"(a2), "r"(a3), "r"(b1), "r"(a0), "r"(b0));
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a3), "r"(a2), "r"(a1), "r"(a0), "r"(b1), "r"(b0));
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a2), "r"(a1), "r"(a3), "r"(b0), "r"(b1));
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a1), "r"(a3), "r"(b1));
#endif
    float *o = out + blockIdx.x * 192 + t;
    o[0] = d0;
    o[32] = d1;
    o[64] = d2;
    o[96] = d3;
    o[128] = __uint_as_float(h0);
    o[160] = __uint_as_float(h1);
}

// int8 mma (IMMA): m8n8k16 (sm_75+), m16n8k32 (sm_80+), and u4 m8n8k32 (sm_75+).
__global__ void oracle_mma_int(const int *in, int *out) {
    int t = threadIdx.x;
    const int *p = in + blockIdx.x * 256 + t;
    int a0 = p[0], a1 = p[32], a2 = p[64], a3 = p[96], b0 = p[128], b1 = p[160];
    int c0 = p[192], c1 = p[224];
    int d0, d1, d2 = a2, d3 = a3;
    asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%0,%1}, {%2}, {%3}, {%4,%5};"
                 : "=r"(d0), "=r"(d1)
                 : "r"(a0), "r"(b0), "r"(c0), "r"(c1));
    asm volatile("mma.sync.aligned.m8n8k32.row.col.s32.u4.u4.s32 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+r"(d0), "+r"(d1)
                 : "r"(a1), "r"(b1));
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%10,%11,%10,%11};"
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(d0), "r"(d1));
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, "
                 "{%6}, {%0,%1,%2,%3};"
                 : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)
                 : "r"(a2), "r"(a3), "r"(b1));
#endif
    int *o = out + blockIdx.x * 128 + t;
    o[0] = d0;
    o[32] = d1;
    o[64] = d2;
    o[96] = d3;
}

// f64 mma (DMMA, sm_80+): A and B one double each, C and D two doubles (four registers).
__global__ void oracle_mma_f64(const double *in, double *out) {
    int t = threadIdx.x;
    const double *p = in + blockIdx.x * 160 + t;
    double a = p[0], b = p[32], c0 = p[64], c1 = p[96];
    double d0 = c0 + a, d1 = c1 * b;
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};"
                 : "=d"(d0), "=d"(d1)
                 : "d"(a), "d"(b), "d"(c0), "d"(c1));
    double a2 = p[128];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+d"(d0), "+d"(d1)
                 : "d"(a2), "d"(a));
#endif
    out[blockIdx.x * 64 + t] = d0;
    out[blockIdx.x * 64 + t + 32] = d1;
}
