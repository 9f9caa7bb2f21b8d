// Kernels for tests/sass_decode.rs: tensor cores (HMMA/IMMA via wmma), sm_80+ warp intrinsics.
#include <cuda_pipeline.h>
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

__global__ void t_wmma_half(float *c, const half *a, const half *b) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
__global__ void t_wmma_int8(int *c, const signed char *a, const signed char *b) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::fill_fragment(fc, 0);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
__global__ void t_half_math(half2 *o, const half2 *a, const half2 *b) {
    int i = threadIdx.x;
    half2 x = __hfma2(a[i], b[i], a[i + 1]);
    x = __hmul2(x, __hadd2(x, b[i + 1]));
    o[i] = x;
    float f = __half2float(__low2half(x));
    o[i + 64] = __floats2half2_rn(f * 2.0f, f + 1.0f);
}
__global__ void t_warp_sm80(int *o, const int *a) {
    int v = a[threadIdx.x];
#if __CUDA_ARCH__ >= 800
    unsigned m = __match_any_sync(0xffffffff, v);
    int s = __reduce_add_sync(0xffffffff, v);
    int mx = __reduce_max_sync(0xffffffff, v);
    o[threadIdx.x] = s + mx + __popc(m);
#else
    o[threadIdx.x] = v + __shfl_xor_sync(0xffffffff, v, 1);
#endif
}
__global__ void t_async_copy(float *o, const float *a) {
    __shared__ float s[256];
#if __CUDA_ARCH__ >= 800
    __pipeline_memcpy_async(&s[threadIdx.x], &a[threadIdx.x], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(0);
#else
    s[threadIdx.x] = a[threadIdx.x];
#endif
    __syncthreads();
    o[threadIdx.x] = s[255 - threadIdx.x];
}
