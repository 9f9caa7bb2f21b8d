// Kernels that spill at low register budgets, for the spill -> shared transform and its
// checker (tests/spill2smem.rs). Each keeps more values live than the budget allows; they
// differ in what surrounds the spills: shared memory, block shape, launch bounds, calls,
// 64-bit values, loops, predication.
#include <cstdint>

#define N_LIVE 34

// Many FP32 values live across a loop: the classic spill.
__global__ void s_chain_f32(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[N_LIVE];
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = in[(i + k * 17) % n] * (k + 1);
    for (int r = 0; r < n % 7 + 3; r++) {
#pragma unroll
        for (int k = 0; k < N_LIVE; k++) v[k] = v[k] * v[(k + 3) % N_LIVE] + v[(k + 11) % N_LIVE];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) s += v[k] * (k & 3);
    out[i] = s;
}

// FP64: the spills are 64-bit (STL.64 / LDL.64).
__global__ void s_wide_f64(const double *in, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v[20];
#pragma unroll
    for (int k = 0; k < 20; k++) v[k] = in[(i + k * 5) % n] + k;
    for (int r = 0; r < n % 5 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 20; k++) v[k] = fma(v[k], v[(k + 7) % 20], v[(k + 13) % 20]);
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < 20; k++) s += v[k] * (k + 1);
    out[i] = s;
}

// 64-bit integers in a loop (hashing): 64-bit spills of integer pairs.
__global__ void s_hash_u64(const uint64_t *in, uint64_t *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t h[20];
#pragma unroll
    for (int k = 0; k < 20; k++) h[k] = in[(i + k) % n] ^ (0x9e3779b97f4a7c15ull * (k + 1));
    for (int r = 0; r < (n & 3) + 2; r++) {
#pragma unroll
        for (int k = 0; k < 20; k++) {
            uint64_t z = h[k] + h[(k + 9) % 20];
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            h[k] = z ^ (z >> 31);
        }
    }
    uint64_t s = 0;
#pragma unroll
    for (int k = 0; k < 20; k++) s ^= h[k] << (k & 7);
    out[i] = s;
}

// Static shared memory next to the spills (the spill area goes after it).
__global__ void s_static_smem(const float *in, float *out, int n)
{
    __shared__ float tile[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    tile[t & 255] = in[i % n];
    __syncthreads();
    float v[N_LIVE];
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = tile[(t + k * 7) & 255] + k;
    for (int r = 0; r < n % 3 + 2; r++) {
#pragma unroll
        for (int k = 0; k < N_LIVE; k++) v[k] = v[k] * v[(k + 5) % N_LIVE] - v[(k + 21) % N_LIVE];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) s += v[k];
    __syncthreads();
    tile[t & 255] = s;
    __syncthreads();
    out[i] = tile[(t + 1) & 255];
}

#ifndef NO_DYNAMIC_SMEM // ptxas refuses enable_smem_spilling in a module with dynamic shared memory
// Dynamic shared memory: the spill area must start after the launch's dynamic size.
__global__ void s_dynamic_smem(const float *in, float *out, int n)
{
    extern __shared__ float dyn[];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    dyn[t] = in[i % n];
    __syncthreads();
    float v[N_LIVE];
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = dyn[(t + k) % blockDim.x] * (k + 2);
    for (int r = 0; r < n % 4 + 2; r++) {
#pragma unroll
        for (int k = 0; k < N_LIVE; k++) v[k] = v[k] * v[(k + 9) % N_LIVE] + v[(k + 30) % N_LIVE];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) s += v[k] * k;
    __syncthreads();
    dyn[t] = s;
    __syncthreads();
    out[i] = dyn[(t + 3) % blockDim.x];
}

// Static and dynamic shared memory at once.
__global__ void s_both_smem(const float *in, float *out, int n)
{
    __shared__ float fixed[64];
    extern __shared__ float dyn[];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    fixed[t & 63] = in[i % n];
    dyn[t] = in[(i + 1) % n];
    __syncthreads();
    float v[30];
#pragma unroll
    for (int k = 0; k < 30; k++) v[k] = fixed[(t + k) & 63] - dyn[(t + k) % blockDim.x];
    for (int r = 0; r < n % 5 + 1; r++) {
#pragma unroll
        for (int k = 0; k < 30; k++) v[k] = v[k] * v[(k + 13) % 30] + v[(k + 27) % 30];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 30; k++) s += v[k];
    out[i] = s + fixed[(t + 5) & 63];
}

#endif

// A 3-D block: the linear thread index needs all three dimensions.
__global__ void s_block_3d(const float *in, float *out, int n)
{
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int i = blockIdx.x * blockDim.x * blockDim.y * blockDim.z + t;
    float v[N_LIVE];
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = in[(i * 3 + k) % n] + threadIdx.y * k - threadIdx.z;
    for (int r = 0; r < n % 6 + 2; r++) {
#pragma unroll
        for (int k = 0; k < N_LIVE; k++) v[k] = v[k] * v[(k + 17) % N_LIVE] + v[(k + 1) % N_LIVE];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) s += v[k] * (k % 5);
    out[i] = s;
}

// Launch bounds (128 threads, 8 blocks: at most 64 registers, which ptxas honours over
// -maxrregcount): the slots are laid out for 128 threads, 1-D. More values live to spill at 64.
#define N_BIG 72
__global__ void __launch_bounds__(128, 8) s_bounds_128(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[N_BIG];
#pragma unroll
    for (int k = 0; k < N_BIG; k++) v[k] = in[(i + k * 3) % n] * 0.5f + k;
    for (int r = 0; r < n % 4 + 3; r++) {
#pragma unroll
        for (int k = 0; k < N_BIG; k++) v[k] = v[k] * v[(k + 19) % N_BIG] + v[(k + 2) % N_BIG];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N_BIG; k++) s -= v[k] * (k & 7);
    out[i] = s;
}

// Spills under a predicate: values computed only on some paths.
__global__ void s_predicated(const int *in, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v[N_LIVE];
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = in[(i + k * 13) % n];
    for (int r = 0; r < n % 5 + 2; r++) {
#pragma unroll
        for (int k = 0; k < N_LIVE; k++) {
            if (v[(k + 1) % N_LIVE] & 1) v[k] = v[k] * 3 + v[(k + 7) % N_LIVE];
            else v[k] ^= v[(k + 23) % N_LIVE];
        }
    }
    int s = 0;
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) s += v[k] << (k & 3);
    out[i] = s;
}

// A callee that itself keeps many values live.
__device__ __noinline__ float mix_deep(const float *p, int n, float a)
{
    float v[26];
#pragma unroll
    for (int k = 0; k < 26; k++) v[k] = p[(k * 5 + (int)a) % n] + a * k;
    for (int r = 0; r < n % 3 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 26; k++) v[k] = v[k] * v[(k + 11) % 26] + v[(k + 3) % 26];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 26; k++) s += v[k];
    return s;
}

__device__ __noinline__ float mix_leaf(float a, float b) { return a * b + 1.0f; }

// Values live across calls: the kernel's spills surround the calls.
__global__ void s_around_calls(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[N_LIVE];
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = in[(i + k * 11) % n] - k;
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < 4; k++) acc += mix_leaf(v[k], v[k + 20]);
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = v[k] * acc + v[(k + 7) % N_LIVE];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) s += v[k];
    out[i] = s;
}

// The callee spills: its frame gets its own shared slots.
__global__ void s_callee_spills(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[i % n];
    float b = mix_deep(in, n, a);
    out[i] = b + mix_deep(in, n, b);
}

// Three levels of spilling calls: kernel -> level1 -> level2 -> mix_deep.
__device__ __noinline__ float level2(const float *p, int n, float a)
{
    float v[20];
#pragma unroll
    for (int k = 0; k < 20; k++) v[k] = p[(k * 3 + (int)a) % n] * a;
    float d = mix_deep(p, n, v[0] + v[19]);
    float s = d;
#pragma unroll
    for (int k = 0; k < 20; k++) s += v[k] * v[(k + 5) % 20];
    return s;
}

__device__ __noinline__ float level1(const float *p, int n, float a)
{
    float v[20];
#pragma unroll
    for (int k = 0; k < 20; k++) v[k] = p[(k * 7 + (int)a) % n] - a;
    float d = level2(p, n, v[1] * v[2]);
    float s = d;
#pragma unroll
    for (int k = 0; k < 20; k++) s += v[k] * v[(k + 9) % 20];
    return s;
}

__global__ void s_three_levels(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[24];
#pragma unroll
    for (int k = 0; k < 24; k++) v[k] = in[(i + k) % n] * k;
    float d = level1(in, n, v[3] + v[4]);
    float s = d;
#pragma unroll
    for (int k = 0; k < 24; k++) s += v[k] * v[(k + 13) % 24];
    out[i] = s;
}

// Spill-heavy phases whose values die before each call: only a few values live across the
// calls, so the compressible stack puts each callee's frame right above them instead of
// above the caller's whole frame.
__device__ __noinline__ float phase_leaf(const float *p, int n, float a)
{
    float v[24];
#pragma unroll
    for (int k = 0; k < 24; k++) v[k] = p[(k * 13 + (int)a) % n] + a;
    for (int r = 0; r < n % 4 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 24; k++) v[k] = v[k] * v[(k + 7) % 24] - v[(k + 2) % 24];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 24; k++) s += v[k];
    return s;
}

__device__ __noinline__ float phase_mid(const float *p, int n, float a)
{
    float v[24];
#pragma unroll
    for (int k = 0; k < 24; k++) v[k] = p[(k * 11 + (int)a) % n] * a;
    for (int r = 0; r < n % 5 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 24; k++) v[k] = v[k] * v[(k + 5) % 24] + v[(k + 9) % 24];
    }
    float x = v[0] + v[7], y = v[3] * v[11], z = v[5] - v[19];
    float d = phase_leaf(p, n, x);
    return d * y + z;
}

__device__ __noinline__ float phase_top(const float *p, int n, float a)
{
    float v[24];
#pragma unroll
    for (int k = 0; k < 24; k++) v[k] = p[(k * 7 + (int)a) % n] - a;
    for (int r = 0; r < n % 3 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 24; k++) v[k] = v[k] * v[(k + 3) % 24] + v[(k + 13) % 24];
    }
    float x = v[1] * v[2], y = v[4] + v[9];
    float d = phase_mid(p, n, x);
    return d + y;
}

// Three levels of spilling calls (kernel -> phase_top -> phase_mid -> phase_leaf), each
// level's spills dead at its call.
__global__ void s_three_phases(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[30];
#pragma unroll
    for (int k = 0; k < 30; k++) v[k] = in[(i + k * 3) % n] * (k + 1);
    for (int r = 0; r < n % 6 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 30; k++) v[k] = v[k] * v[(k + 7) % 30] + v[(k + 17) % 30];
    }
    float x = v[0] + v[29], y = v[10] * v[20], z = v[5] - v[15];
    float d = phase_top(in, n, x);
    out[i] = d * y + z;
}

// One caller, three different spilling callees, different values live across each call.
__global__ void s_stack_calls(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[30];
#pragma unroll
    for (int k = 0; k < 30; k++) v[k] = in[(i * 5 + k) % n] + k;
    for (int r = 0; r < n % 5 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 30; k++) v[k] = v[k] * v[(k + 11) % 30] - v[(k + 4) % 30];
    }
    float a = v[0] * v[1], b = v[2] + v[3], c = v[4] * v[5], e = v[6] - v[7];
    float r1 = phase_leaf(in, n, a);
    float r2 = phase_mid(in, n, b + r1);
    float r3 = phase_top(in, n, c * r2);
    out[i] = r1 * e + r2 * b + r3 * c + e;
}

// Two levels of FP64 callees with a branch ptxas if-converts into complementary guards: the
// inner callee may store a word of the shared frame under one guard and reload it on every
// path, so on the other path it reads a word nothing wrote (a path that never runs). Proving
// it takes the kernel's new frame and the frame words callees write for their callers.
__device__ __noinline__ double g_inner(double a, double b, int k)
{
    return (k & 1) ? fma(a, b, 0.75) : a - b * 0.125;
}
__device__ __noinline__ double g_outer(double a, double b, int k)
{
    return g_inner(a, b, k) * 0.25 + g_inner(b, a, k + 3);
}
__global__ void s_guarded_callee(const double *in, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v[12];
#pragma unroll
    for (int k = 0; k < 12; k++) v[k] = in[(i + 7 * k) % n];
    for (int r = 0; r < n % 3 + 1; r++) {
#pragma unroll
        for (int k = 0; k < 12; k++) v[k] = g_outer(v[k], v[(k + 7) % 12], k + r);
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < 12; k++) s += v[k] * (k + 2);
    out[i] = s;
}
