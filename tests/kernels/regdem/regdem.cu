// Kernels with high register pressure and no spills, for register demotion
// (tests/regdem.rs). Each is compiled at its natural register count and demoted to lower
// occupancy cliffs. They differ in what surrounds the registers: loops, 64-bit values,
// predication, shared memory, block shape, calls.
#include <cstdint>

#define N 24

// FP32 values live across a loop.
__global__ void __launch_bounds__(128) r_chain_f32(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[N];
#pragma unroll
    for (int k = 0; k < N; k++) v[k] = in[(i + k * 13) % n] * (k + 1);
    for (int r = 0; r < n % 9 + 3; r++) {
#pragma unroll
        for (int k = 0; k < N; k++) v[k] = v[k] * v[(k + 5) % N] + v[(k + 7) % N];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++) s += v[k] * (k & 3);
    out[i] = s;
}

// FP64 pairs: demoted as aligned 64-bit tuples.
__global__ void __launch_bounds__(128) r_wide_f64(const double *in, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v[14];
#pragma unroll
    for (int k = 0; k < 14; k++) v[k] = in[(i + k * 5) % n] + k;
    for (int r = 0; r < n % 5 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 14; k++) v[k] = fma(v[k], v[(k + 3) % 14], v[(k + 9) % 14]);
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < 14; k++) s += v[k] * (k + 1);
    out[i] = s;
}

// 64-bit integer hashing.
__global__ void __launch_bounds__(128) r_hash_u64(const uint64_t *in, uint64_t *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t h[14];
#pragma unroll
    for (int k = 0; k < 14; k++) h[k] = in[(i + k) % n] ^ (0x9e3779b97f4a7c15ull * (k + 1));
    for (int r = 0; r < (n & 3) + 2; r++) {
#pragma unroll
        for (int k = 0; k < 14; k++) {
            uint64_t z = h[k] + h[(k + 5) % 14];
            h[k] = z ^ (z >> 29);
        }
    }
    uint64_t s = 0;
#pragma unroll
    for (int k = 0; k < 14; k++) s ^= h[k] << (k & 7);
    out[i] = s;
}

// Predicated updates inside the loop.
__global__ void __launch_bounds__(128) r_predicated(const int *in, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v[N];
#pragma unroll
    for (int k = 0; k < N; k++) v[k] = in[(i * 3 + k) % n];
    for (int r = 0; r < n % 11 + 2; r++) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            int a = v[(k + 1) % N];
            if (a > v[k]) v[k] = a - r; else v[k] ^= (a << 1);
        }
    }
    int s = 0;
#pragma unroll
    for (int k = 0; k < N; k++) s += v[k] * (k + 1);
    out[i] = s;
}

// Static shared memory beside the demoted registers.
__global__ void __launch_bounds__(128) r_static_smem(const float *in, float *out, int n)
{
    __shared__ float tile[128 * 4];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    float v[N];
#pragma unroll
    for (int k = 0; k < N; k++) v[k] = in[(i + k * 7) % n];
    for (int k = 0; k < 4; k++) tile[t + 128 * k] = v[k] + v[k + 4];
    __syncthreads();
    for (int r = 0; r < n % 6 + 2; r++) {
#pragma unroll
        for (int k = 0; k < N; k++) v[k] = v[k] * tile[(t + k) % 512] + v[(k + 3) % N];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++) s += v[k];
    out[i] = s;
}

#ifndef PRAGMA_BUILD // ptxas refuses enable_smem_spilling for modules with dynamic smem
// Dynamic shared memory: the spill area goes after it.
__global__ void __launch_bounds__(128) r_dynamic_smem(const float *in, float *out, int n)
{
    extern __shared__ float dyn[];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    float v[N];
#pragma unroll
    for (int k = 0; k < N; k++) v[k] = in[(i + k * 3) % n];
    dyn[t] = v[0] * v[1];
    __syncthreads();
    for (int r = 0; r < n % 5 + 2; r++) {
#pragma unroll
        for (int k = 0; k < N; k++) v[k] = v[k] * dyn[(t + k) & 127] + v[(k + 9) % N];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++) s += v[k] * k;
    out[i] = s;
}

#endif

// A 3-D block: the prologue computes the linear thread index.
__global__ void r_block_3d(const float *in, float *out, int n)
{
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int i = blockIdx.x * blockDim.x * blockDim.y * blockDim.z + t;
    float v[N];
#pragma unroll
    for (int k = 0; k < N; k++) v[k] = in[(i + k * 11) % n];
    for (int r = 0; r < n % 4 + 2; r++) {
#pragma unroll
        for (int k = 0; k < N; k++) v[k] = v[k] * v[(k + 2) % N] - v[(k + 13) % N];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++) s += v[k];
    out[i] = s;
}

// Nested loops (loop weights of 100).
__global__ void __launch_bounds__(128) r_nested(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[N];
#pragma unroll
    for (int k = 0; k < N; k++) v[k] = in[(i + k) % n];
    for (int a = 0; a < n % 3 + 2; a++) {
        for (int b = 0; b < n % 5 + 2; b++) {
#pragma unroll
            for (int k = 0; k < N; k++) v[k] = v[k] * v[(k + 1) % N] + (float)b;
        }
#pragma unroll
        for (int k = 0; k < N; k += 2) v[k] -= v[k + 1] * a;
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++) s += v[k];
    out[i] = s;
}

// Mixed 32/64-bit: integer indices and double accumulators.
__global__ void __launch_bounds__(128) r_mixed(const double *in, const int *idx, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a[8];
    int j[12];
#pragma unroll
    for (int k = 0; k < 12; k++) j[k] = idx[(i + k) % n] & 1023;
#pragma unroll
    for (int k = 0; k < 8; k++) a[k] = in[j[k] % n];
    for (int r = 0; r < n % 7 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 8; k++) {
            a[k] = a[k] * 1.5 + a[(k + 3) & 7];
            j[k] = (j[k] * 7 + j[k + 4]) & 1023;
        }
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < 8; k++) s += a[k] + j[k] + j[k + 4];
    out[i] = s;
}

// Integer and float state with a data-dependent branch in the loop.
__global__ void __launch_bounds__(128) r_branchy(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[N];
#pragma unroll
    for (int k = 0; k < N; k++) v[k] = in[(i * 5 + k) % n];
    for (int r = 0; r < n % 8 + 2; r++) {
        if (v[r % N] > 0.5f) {
#pragma unroll
            for (int k = 0; k < N; k++) v[k] = v[k] * 0.75f + v[(k + 1) % N];
        } else {
#pragma unroll
            for (int k = 0; k < N; k++) v[k] = v[k] + v[(k + 5) % N] * 0.25f;
        }
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++) s += v[k];
    out[i] = s;
}

#ifndef PRAGMA_BUILD // nor for modules with ABI calls
// A call that stays a call: the callee's registers are renumbered with the kernel's.
__device__ __noinline__ float r_helper(float a, float b) { return a * b + 1.f; }
__global__ void __launch_bounds__(128) r_with_call(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[N];
#pragma unroll
    for (int k = 0; k < N; k++) v[k] = in[(i + k) % n];
    for (int r = 0; r < n % 3 + 1; r++) {
#pragma unroll
        for (int k = 0; k < N; k++) v[k] = r_helper(v[k], v[(k + 1) % N]);
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++) s += v[k];
    out[i] = s;
}

// Two levels of calls on 64-bit values, with a branch in the inner callee.
__device__ __noinline__ double r_inner(double a, double b, int k)
{
    return (k & 1) ? fma(a, b, 0.5) : a - b * 0.25;
}
__device__ __noinline__ double r_outer(double a, double b, int k)
{
    return r_inner(a, b, k) * 0.5 + r_inner(b, a, k + 1);
}
__global__ void __launch_bounds__(128) r_call_tree(const double *in, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v[12];
#pragma unroll
    for (int k = 0; k < 12; k++) v[k] = in[(i + 3 * k) % n];
    for (int r = 0; r < n % 4 + 1; r++) {
#pragma unroll
        for (int k = 0; k < 12; k++) v[k] = r_outer(v[k], v[(k + 5) % 12], k + r);
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < 12; k++) s += v[k] * (k + 1);
    out[i] = s;
}
#endif
