// Kernels for tests/sass_decode.rs: 64-bit and vector memory, shared memory, atomics, printf, shuffles.
#include <cstdio>
#include <cstdint>

__constant__ float c_table[64];
__device__ int g_counter;
__device__ double g_dsum;

__global__ void x_float4(float4 *o, const float4 *a) {
    float4 v = a[threadIdx.x];
    v.x += 1.0f; v.w *= v.y;
    o[threadIdx.x] = v;
}
__global__ void x_double2(double2 *o, const double2 *a) {
    double2 v = a[threadIdx.x];
    o[threadIdx.x] = make_double2(v.x * v.y, v.x + v.y);
}
__global__ void x_int4(int4 *o, const int4 *a) {
    int4 v = a[threadIdx.x];
    o[threadIdx.x + 1] = make_int4(v.w, v.z, v.y, v.x ^ v.w);
}
__global__ void x_float2(float2 *o, const float2 *a) {
    float2 v = a[threadIdx.x];
    o[threadIdx.x] = make_float2(v.y, v.x);
}
__global__ void x_u64(unsigned long long *o, const unsigned long long *a) { o[threadIdx.x] = a[threadIdx.x] * 3 + a[threadIdx.x + 1]; }
__global__ void x_bytes(char *o, const unsigned char *a, const short *s) {
    int i = threadIdx.x;
    o[i] = a[i] + s[i] + (signed char)a[i + 1];
}
__global__ void x_ldg(float *o, const float *__restrict__ a, const double *__restrict__ d) {
    o[threadIdx.x] = __ldg(a + threadIdx.x) + (float)__ldg(d + threadIdx.x);
}
__global__ void x_const(float *o, int k) { o[threadIdx.x] = c_table[threadIdx.x & 63] + c_table[k]; }
__global__ void x_shared(float *o, const float *a) {
    __shared__ float tile[256];
    tile[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    o[threadIdx.x] = tile[255 - threadIdx.x] + tile[(threadIdx.x + 1) & 255];
}
__global__ void x_shared_vec(float4 *o, const float4 *a) {
    __shared__ float4 t4[128];
    __shared__ double t2[128];
    t4[threadIdx.x] = a[threadIdx.x];
    t2[threadIdx.x] = a[threadIdx.x].x;
    __syncthreads();
    float4 v = t4[127 - threadIdx.x];
    v.x += (float)t2[threadIdx.x ^ 1];
    o[threadIdx.x] = v;
}
__global__ void x_dyn_shared(float *o, const float *a, int n) {
    extern __shared__ float dyn[];
    dyn[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    float s = 0;
    for (int i = 0; i < n; i++) s += dyn[i];
    o[threadIdx.x] = s;
}
__global__ void x_both_shared(double *o, const double *a) {
    extern __shared__ double dyn2[];
    __shared__ double st[64];
    st[threadIdx.x & 63] = a[threadIdx.x];
    dyn2[threadIdx.x] = a[threadIdx.x] * 2;
    __syncthreads();
    o[threadIdx.x] = st[(threadIdx.x + 1) & 63] + dyn2[threadIdx.x ^ 3];
}
__global__ void x_reduce(float *o, const float *a) {
    __shared__ float s[256];
    s[threadIdx.x] = a[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) o[blockIdx.x] = s[0];
}
__global__ void x_atomics(int *o, unsigned *u, float *f, unsigned long long *l) {
    atomicAdd(o, 1);
    int old = atomicAdd(o + 1, threadIdx.x);
    atomicMax(o + 2, old);
    atomicMin(o + 3, (int)threadIdx.x);
    atomicExch(o + 4, old);
    atomicCAS(o + 5, 0, old);
    atomicAnd(o + 6, 0xff);
    atomicOr(o + 7, 1 << (threadIdx.x & 31));
    atomicXor(o + 8, old);
    atomicInc(u, 100u);
    atomicDec(u + 1, 100u);
    atomicAdd(f, 1.5f);
    unsigned long long r = atomicAdd(l, 3ull);
    atomicCAS(l + 1, r, r + 1);
    atomicAdd(&g_counter, 1);
}
__global__ void x_atomic_double(double *d, double v) {
    double r = atomicAdd(d, v);
    atomicAdd(&g_dsum, r);
}
__global__ void x_shared_atomics(int *o) {
    __shared__ int h[32];
    __shared__ unsigned long long hl[4];
    if (threadIdx.x < 32) h[threadIdx.x] = 0;
    if (threadIdx.x < 4) hl[threadIdx.x] = 0;
    __syncthreads();
    atomicAdd(&h[threadIdx.x & 31], 1);
    atomicMax(&h[(threadIdx.x * 7) & 31], threadIdx.x);
    atomicCAS(&h[0], 0, 1);
    atomicAdd(&hl[threadIdx.x & 3], 5ull);
    __syncthreads();
    o[threadIdx.x] = h[threadIdx.x & 31] + (int)hl[threadIdx.x & 3];
}
__global__ void x_cas_loop(double *p, double v) {
    unsigned long long *a = (unsigned long long *)p;
    unsigned long long old = *a, assumed;
    do {
        assumed = old;
        old = atomicCAS(a, assumed, __double_as_longlong(fmax(v, __longlong_as_double(assumed))));
    } while (assumed != old);
}
__global__ void x_printf(const int *a) {
    printf("thread %d block %d value %d %f\n", threadIdx.x, blockIdx.x, a[threadIdx.x], (double)a[0] * 0.5);
}
__global__ void x_printf_cond(const float *a) {
    if (a[threadIdx.x] < 0) printf("negative at %d: %f\n", threadIdx.x, a[threadIdx.x]);
}
__global__ void x_shuffle(float *o, const float *a) {
    float v = a[threadIdx.x];
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffff, v, d);
    v += __shfl_xor_sync(0xffffffff, v, 1);
    v += __shfl_up_sync(0xffffffff, v, 2);
    v += __shfl_sync(0xffffffff, v, 0);
    o[threadIdx.x] = v;
}
__global__ void x_shuffle_double(double *o, const double *a) {
    double v = a[threadIdx.x];
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffff, v, d);
    o[threadIdx.x] = v;
}
__global__ void x_vote(int *o, const int *a) {
    int p = a[threadIdx.x] > 0;
    unsigned b = __ballot_sync(0xffffffff, p);
    int all = __all_sync(0xffffffff, p);
    int any = __any_sync(0xffffffff, p);
    o[threadIdx.x] = __popc(b) + all * 2 + any * 4 + __activemask();
}
__global__ void x_local_dynamic(float *o, const int *idx, int n) {
    float buf[64];
    for (int i = 0; i < 64; i++) buf[i] = i * 0.5f;
    float s = 0;
    for (int i = 0; i < n; i++) s += buf[idx[i] & 63];
    o[threadIdx.x] = s;
}
__global__ void x_sregs(unsigned *o) {
    unsigned lane, warp, sm;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(warp));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    long long t = clock64();
    o[threadIdx.x + blockIdx.y * 32] = lane + warp + sm + (unsigned)t + gridDim.x + blockDim.y + threadIdx.z;
}
__global__ void x_strided_copy(double *o, const double *a, long long n, long long stride) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) o[i] = a[i] * 2.0;
}
__global__ void x_memfence(int *o, volatile int *flag) {
    o[threadIdx.x] = threadIdx.x;
    __threadfence();
    if (threadIdx.x == 0) *flag = 1;
    __threadfence_block();
}
__global__ void x_matmul_tile(float *c, const float *a, const float *b, int n) {
    __shared__ float as[16][16], bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0;
    for (int k = 0; k < n; k += 16) {
        as[ty][tx] = a[row * n + k + tx];
        bs[ty][tx] = b[(k + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int j = 0; j < 16; j++) acc += as[ty][j] * bs[j][tx];
        __syncthreads();
    }
    c[row * n + col] = acc;
}
