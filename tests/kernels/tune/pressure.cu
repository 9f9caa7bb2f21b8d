// Register-heavy kernels for the occupancy-tuning tests: each makes ptxas choose many
// registers for its own reasons, so that lower budgets at the occupancy cliffs are worth
// trying. Outputs depend on every input so that nothing is optimised away.
#include <cstdint>

// 1. Latency-bound gather: 32 independent loads batched per iteration (ptxas hoists them all,
//    one register each), then a reduction. Fewer registers = smaller batches, more warps.
__global__ void gather_batched(const float *__restrict__ x, const int *__restrict__ idx,
                               float *out, int n, int iters) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
    for (int j = 0; j < iters; ++j) {
        float v[32];
#pragma unroll
        for (int u = 0; u < 32; ++u)
            v[u] = x[idx[(j * 32 + u) * n + t]];
#pragma unroll
        for (int u = 0; u < 32; ++u)
            acc = acc * 0.999f + v[u] * v[(u + 7) & 31];
    }
    out[t] = acc;
}

// 1b. Latency-bound pointer chase with 64 values kept live across the loop: ptxas keeps them
//     in registers (low occupancy); a lower budget spills them outside the loop, where it is
//     cheap, and more warps hide the chase's latency.
__global__ void chase_live_state(const int *__restrict__ next, const float *__restrict__ x,
                                 float *out, int n, int steps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float keep[64];
#pragma unroll
    for (int i = 0; i < 64; ++i)
        keep[i] = x[t + i * n];
    int p = t;
    float acc = 0.f;
    for (int s = 0; s < steps; ++s) {
        p = next[p];
        acc += __int_as_float((p & 0x007fffff) | 0x3f800000);
    }
    float r = acc;
#pragma unroll
    for (int i = 0; i < 64; ++i)
        r = r * keep[i] + keep[(i + 1) & 63];
    out[t] = r;
}

// 2. 64-bit math: a splitmix/xorshift mixer over 16 live 64-bit lanes (two registers each).
__global__ void mix64_lanes(const uint64_t *__restrict__ seed, uint64_t *out, int rounds) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t s[16];
#pragma unroll
    for (int i = 0; i < 16; ++i)
        s[i] = seed[t * 16 + i] ^ (0x9e3779b97f4a7c15ull * (i + 1));
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            uint64_t z = s[i] + s[(i + 5) & 15];
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            s[i] = z ^ (z >> 31);
        }
    }
    uint64_t h = 0;
#pragma unroll
    for (int i = 0; i < 16; ++i)
        h ^= s[i] + i;
    out[t] = h;
}

// 3. A dynamically indexed local array (stays in local memory at any budget) beside a
//    register-heavy unrolled polynomial.
__global__ void local_table_poly(const int *__restrict__ sel, const float *__restrict__ x,
                                 float *out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float table[48];
#pragma unroll
    for (int i = 0; i < 48; ++i)
        table[i] = x[(i * n + t) % (48 * n)] * (i + 1);
    float c[24];
#pragma unroll
    for (int i = 0; i < 24; ++i)
        c[i] = x[t + i * n] + 0.5f * i;
    float acc = 0.f;
    for (int k = 0; k < 16; ++k) {
        float y = table[sel[t * 16 + k] % 48];
        float p = c[23];
#pragma unroll
        for (int i = 22; i >= 0; --i)
            p = p * y + c[i];
        acc += p;
    }
    out[t] = acc;
}

// 4. Device calls: values live across non-inlined calls.
__device__ __noinline__ float smooth(float a, float b, float c) {
    return a * 0.25f + b * 0.5f + c * 0.25f;
}

__global__ void calls_across(const float *__restrict__ in, float *out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v[20];
#pragma unroll
    for (int i = 0; i < 20; ++i)
        v[i] = in[t + i * n];
    float acc = 0.f;
#pragma unroll
    for (int i = 1; i < 19; ++i)
        acc += smooth(v[i - 1], v[i], v[i + 1]) * v[(i * 7) % 20];
    out[t] = acc;
}

// 5. Static and dynamic shared memory: a tiled 1D convolution with a register window.
__global__ void conv_shared(const float *__restrict__ in, const float *__restrict__ w,
                            float *out, int n) {
    __shared__ float taps[64];
    extern __shared__ float tile[];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 64)
        taps[threadIdx.x] = w[threadIdx.x];
    tile[threadIdx.x] = in[t];
    tile[threadIdx.x + blockDim.x] = in[t + blockDim.x];
    __syncthreads();
    float r[32];
#pragma unroll
    for (int i = 0; i < 32; ++i)
        r[i] = tile[threadIdx.x + 2 * i];
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < 64; ++k)
        acc += taps[k] * r[k & 31] * r[(k * 3) & 31];
    out[t] = acc;
}

// 6. __launch_bounds__: ptxas may use up to 65536 / 256 = 255 registers per thread... capped
//    by the bounds to what 2 blocks of 256 threads allow (128).
__global__ void __launch_bounds__(256, 2)
    bounded_gather(const float *__restrict__ x, const int *__restrict__ idx, float *out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v[48];
#pragma unroll
    for (int u = 0; u < 48; ++u)
        v[u] = x[idx[u * n + t]];
    float acc = 0.f;
#pragma unroll
    for (int u = 0; u < 48; ++u)
        acc += v[u] * v[47 - u];
    out[t] = acc;
}

// 7. A user cap through __maxnreg__: never given more.
__global__ void __maxnreg__(48) capped_gather(const float *__restrict__ x,
                                              const int *__restrict__ idx, float *out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v[40];
#pragma unroll
    for (int u = 0; u < 40; ++u)
        v[u] = x[idx[u * n + t]];
    float acc = 0.f;
#pragma unroll
    for (int u = 0; u < 40; ++u)
        acc += v[u] * v[(u + 13) % 40];
    out[t] = acc;
}
