// Kernels for tests/sass_decode.rs: device calls, recursion, switches (BRX jump tables), loops.
#include <cstdint>

__device__ __noinline__ float dev_square(float x) { return x * x + 1.0f; }
__device__ __noinline__ double dev_dpoly(double x, double y) { return x * y + x / y; }
__device__ __noinline__ int dev_fib(int n) { return n < 2 ? n : dev_fib(n - 1) + dev_fib(n - 2); }
__device__ __noinline__ int dev_chain3(int x) { return x * 7 + 3; }
__device__ __noinline__ int dev_chain2(int x) { return dev_chain3(x) ^ (x >> 2); }
__device__ __noinline__ int dev_chain1(int x) { return dev_chain2(x) + dev_chain3(x + 1); }
__device__ __noinline__ void dev_store(float *p, int i, float v) { p[i] = v; }
__device__ __noinline__ uint64_t dev_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
__device__ __noinline__ float4 dev_vec(float4 a, float4 b) {
    return make_float4(a.x * b.x, a.y + b.y, a.z - b.z, a.w * a.w);
}

__global__ void k_call_square(float *o, const float *a) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    o[i] = dev_square(a[i]) + dev_square(a[i + 1]);
}
__global__ void k_call_dpoly(double *o, const double *a) {
    int i = threadIdx.x;
    o[i] = dev_dpoly(a[i], a[i + 32]);
}
__global__ void k_fib(int *o, const int *n) { o[threadIdx.x] = dev_fib(n[threadIdx.x]); }
__global__ void k_chain(int *o) { o[threadIdx.x] = dev_chain1(threadIdx.x) + dev_chain2(blockIdx.x); }
__global__ void k_call_store(float *o, float v) {
    for (int i = 0; i < 4; i++) dev_store(o, threadIdx.x * 4 + i, v * i);
}
__global__ void k_call_mix(uint64_t *o, uint64_t seed) {
    uint64_t s = seed + threadIdx.x;
    uint64_t a = dev_mix(s);
    uint64_t b = dev_mix(a + s);
    o[threadIdx.x] = a ^ b ^ s;
}
__global__ void k_call_vec(float4 *o, const float4 *a) {
    int i = threadIdx.x;
    o[i] = dev_vec(a[i], a[i + 64]);
}
__global__ void k_live_across(float *o, const float *a, int n) {
    float x = a[0], y = a[1], z = a[2], w = a[3];
    float s = dev_square(x + threadIdx.x);
    o[threadIdx.x] = s * y + z * w + x;
}

__device__ int (*volatile g_fptr)(int);
__device__ __noinline__ int ind_a(int x) { return x + 1; }
__device__ __noinline__ int ind_b(int x) { return x * 3; }
__global__ void k_indirect(int *o, int sel) {
    int (*f)(int) = sel ? ind_a : ind_b;
    o[threadIdx.x] = f(threadIdx.x);
}

__global__ void k_switch8(int *o, const int *a) {
    int v = a[threadIdx.x];
    int r;
    switch (v) {
    case 0: r = a[1] * 3; break;
    case 1: r = a[2] + 17; break;
    case 2: r = a[3] ^ 0x55; break;
    case 3: r = a[4] - 9; break;
    case 4: r = a[5] << 3; break;
    case 5: r = a[6] >> 1; break;
    case 6: r = a[7] | 0x100; break;
    case 7: r = a[8] & 0xff; break;
    case 8: r = a[9] * a[10]; break;
    case 9: r = a[11] / 7; break;
    default: r = -1;
    }
    o[threadIdx.x] = r;
}
__global__ void k_switch16(float *o, const float *a, int sel) {
    float x = a[threadIdx.x];
    switch ((sel + threadIdx.x) & 15) {
    case 0: x = x * 2.0f; break;
    case 1: x = x + 1.5f; break;
    case 2: x = sqrtf(x); break;
    case 3: x = x * x; break;
    case 4: x = -x; break;
    case 5: x = x - 3.0f; break;
    case 6: x = x / 3.0f; break;
    case 7: x = x + a[7]; break;
    case 8: x = fabsf(x); break;
    case 9: x = x * a[9]; break;
    case 10: x = x + 10.0f; break;
    case 11: x = floorf(x); break;
    case 12: x = ceilf(x); break;
    case 13: x = x * 0.25f; break;
    case 14: x = x - a[14]; break;
    default: x = 0.0f;
    }
    o[threadIdx.x] = x;
}
__global__ void k_switch_loop(int *o, const int *ops, int n) {
    int acc = 0;
    for (int i = 0; i < n; i++) {
        switch (ops[i]) {
        case 0: acc += 1; break;
        case 1: acc *= 3; break;
        case 2: acc ^= i; break;
        case 3: acc -= ops[i + 1]; break;
        case 4: acc <<= 1; break;
        case 5: acc >>= 1; break;
        case 6: acc |= 5; break;
        case 7: acc &= 0xffff; break;
        case 8: acc += i * i; break;
        default: acc = ~acc;
        }
    }
    o[threadIdx.x] = acc;
}
__global__ void k_loop_sum(float *o, const float *a, int n) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += a[i];
    o[threadIdx.x] = s;
}
__global__ void k_loop_nested(int *o, const int *a, int n, int m) {
    int s = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) s += a[i * m + j] * (i ^ j);
    o[threadIdx.x] = s;
}
__global__ void k_loop_while(unsigned *o, unsigned x) {
    unsigned steps = 0;
    x += threadIdx.x;
    while (x != 1 && steps < 1000) {
        x = (x & 1) ? 3 * x + 1 : x / 2;
        steps++;
    }
    o[threadIdx.x] = steps;
}
__global__ void k_loop_break(int *o, const int *a, int n, int key) {
    int found = -1;
    for (int i = 0; i < n; i++) {
        if (a[i] == key) { found = i; break; }
        if (a[i] < 0) continue;
        o[i] = a[i] * 2;
    }
    o[n] = found;
}
__global__ void k_unrolled(float *o, const float *a) {
    float acc[8];
#pragma unroll
    for (int k = 0; k < 8; k++) acc[k] = a[threadIdx.x + k * 32];
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int k = 0; k < 8; k++) acc[k] = acc[k] * acc[(k + 1) & 7] + 1.0f;
    float s = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) s += acc[k];
    o[threadIdx.x] = s;
}
__global__ void k_local_array(int *o, const int *idx) {
    int arr[32];
    for (int i = 0; i < 32; i++) arr[i] = i * idx[i];
    o[threadIdx.x] = arr[idx[threadIdx.x] & 31];
}
__global__ void k_early_exit(float *o, const float *a, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= n) return;
    o[i] = a[i] * 2.0f;
}
