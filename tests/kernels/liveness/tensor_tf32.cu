// Liveness test kernels (tests/liveness_oracle.rs): tensor-core MMA, TF32 first.
// The PTX mma.sync forms exist from sm_80; older targets compile an empty body.
// liveness-oracle: -maxrregcount=40
#include <cstdint>
#include <mma.h>

__device__ __forceinline__ uint32_t as_tf32(float f) {
    uint32_t r;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
#else
    r = __float_as_uint(f);
#endif
    return r;
}

// One m16n8k8 TF32 product per warp, accumulators live across a k loop.
__global__ void lv_mma_tf32_loop(const float *a, const float *b, float *c, int ksteps) {
#if __CUDA_ARCH__ >= 800
    int lane = threadIdx.x & 31;
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    for (int k = 0; k < ksteps; ++k) {
        const float *pa = a + k * 128 + lane * 4;
        const float *pb = b + k * 64 + lane * 2;
        uint32_t a0 = as_tf32(pa[0]), a1 = as_tf32(pa[1]), a2 = as_tf32(pa[2]), a3 = as_tf32(pa[3]);
        uint32_t b0 = as_tf32(pb[0]), b1 = as_tf32(pb[1]);
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    float *pc = c + (blockIdx.x * 32 + lane) * 4;
    pc[0] = d0;
    pc[1] = d1;
    pc[2] = d2;
    pc[3] = d3;
#endif
}

// Two independent TF32 tiles whose accumulators are only partly used afterwards, and an
// accumulator reused as the next input (C == D aliasing), guarded by a runtime flag.
__global__ void lv_mma_tf32_partial(const float *a, const float *b, float *c, int flag) {
#if __CUDA_ARCH__ >= 800
    int lane = threadIdx.x & 31;
    uint32_t a0 = as_tf32(a[lane]), a1 = as_tf32(a[lane + 32]);
    uint32_t a2 = as_tf32(a[lane + 64]), a3 = as_tf32(a[lane + 96]);
    uint32_t b0 = as_tf32(b[lane]), b1 = as_tf32(b[lane + 32]);
    uint32_t b2 = as_tf32(b[lane + 64]), b3 = as_tf32(b[lane + 96]);
    float x0 = c[lane], x1 = 0.f, x2 = 0.f, x3 = c[lane + 32];
    float y0 = 0.f, y1 = 0.f, y2 = 0.f, y3 = 0.f;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(x0), "+f"(x1), "+f"(x2), "+f"(x3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(y0), "+f"(y1), "+f"(y2), "+f"(y3)
                 : "r"(a3), "r"(a2), "r"(a1), "r"(a0), "r"(b2), "r"(b3));
    if (flag) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(y0), "+f"(y1), "+f"(y2), "+f"(y3)
                     : "r"(__float_as_uint(x0)), "r"(__float_as_uint(x1)),
                       "r"(__float_as_uint(x2)), "r"(__float_as_uint(x3)), "r"(b0), "r"(b3));
    }
    c[lane] = x0 + y2;
    c[lane + 32] = y0 * x3;
#endif
}

// The WMMA API with precision::tf32 (m16n16k8), loads from shared memory.
__global__ void lv_wmma_tf32(const float *a, const float *b, float *c, int n) {
#if __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    __shared__ float sa[16 * 8], sb[8 * 16];
    for (int i = threadIdx.x; i < 128; i += blockDim.x) {
        sa[i] = a[i + blockIdx.x * 128];
        sb[i] = b[i];
    }
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int r = 0; r < n; ++r) {
        wmma::load_matrix_sync(fa, sa, 8);
        wmma::load_matrix_sync(fb, sb, 8);
        for (int t = 0; t < fa.num_elements; t++) fa.x[t] = wmma::__float_to_tf32(fa.x[t] * r);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + blockIdx.x * 256, acc, 16, wmma::mem_row_major);
#endif
}

// Half and bf16 HMMA and an integer IMMA, for the other tensor forms.
__global__ void lv_mma_f16_bf16_s8(const uint32_t *a, const uint32_t *b, float *c, int *ci) {
#if __CUDA_ARCH__ >= 800
    int lane = threadIdx.x & 31;
    uint32_t a0 = a[lane], a1 = a[lane + 32], a2 = a[lane + 64], a3 = a[lane + 96];
    uint32_t b0 = b[lane], b1 = b[lane + 32];
    float h0 = 0, h1 = 0, h2 = 0, h3 = 0, g0 = 1, g1 = 1, g2 = 1, g3 = 1;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(h0), "+f"(h1), "+f"(h2), "+f"(h3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(g0), "+f"(g1), "+f"(g2), "+f"(g3)
                 : "r"(a3), "r"(a1), "r"(a2), "r"(a0), "r"(b1), "r"(b0));
    int i0 = 0, i1 = 0, i2 = 0, i3 = 0;
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(i0), "+r"(i1), "+r"(i2), "+r"(i3)
                 : "r"(a0), "r"(a2), "r"(a1), "r"(a3), "r"(b0), "r"(b1));
    c[lane] = h0 + g1 + h2 * g3;
    c[lane + 32] = h1 - g0 + h3 * g2;
    ci[lane] = i0 ^ i1 ^ i2 ^ i3;
#endif
}

// FP64 DMMA (sm_80+), accumulating over a loop.
__global__ void lv_dmma(const double *a, const double *b, double *c, int ks) {
#if __CUDA_ARCH__ >= 800
    int lane = threadIdx.x & 31;
    double d0 = 0, d1 = 0;
    for (int k = 0; k < ks; k++) {
        double x = a[k * 32 + lane], y = b[k * 32 + lane];
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                     : "+d"(d0), "+d"(d1)
                     : "d"(x), "d"(y));
    }
    c[lane * 2] = d0;
    c[lane * 2 + 1] = d1;
#endif
}
