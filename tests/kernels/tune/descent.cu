// Kernels whose lower register budgets are predicted unevenly, for the default mode's
// descent (issue 47; tests/tuning/tune_entry.rs, sm_90, -O3):
// - hop_sum<54, 12> calls a non-inlined function in its loop: the nearest cliff (64
//   registers) buys few warps for its spills and is predicted slower than ptxas's own code,
//   the next (40) much faster. The descent goes on past the first, since nothing had beaten
//   ptxas's code yet, and chooses 40 as the full search does.
// - chase_acc<80, 16> keeps 80 values live across a dependent-load chain: 80 registers are
//   predicted faster than ptxas's code, 48 slower than 80, and the descent stops there.
template <typename T>
__device__ __noinline__ T blend(const T *__restrict__ a, int s, T z) {
    T r = z;
#pragma unroll
    for (int i = 0; i < 6; ++i) r = r * a[i * s] + (T)i;
    return r;
}

template <int LIVE, int CHASE>
__global__ void __launch_bounds__(256) hop_sum(const int *__restrict__ next,
                                               const float *__restrict__ w,
                                               float *__restrict__ out, int n, int rounds) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v[LIVE];
#pragma unroll
    for (int i = 0; i < LIVE; ++i) v[i] = (float)((t * 5 + i) & 31);
    int p = next[t % n];
    for (int k = 0; k < rounds; ++k) {
#pragma unroll
        for (int c = 0; c < CHASE; ++c) p = next[p];
        float s = blend<float>(w + (p % n), 7, (float)k);
#pragma unroll
        for (int i = 0; i < LIVE; ++i) v[i] = v[i] * s + v[(i + 7) % LIVE];
    }
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < LIVE; ++i) acc += v[i] * (float)(2 * i + 1);
    out[t] = acc;
}

template <int LIVE, int CHASE>
__global__ void __launch_bounds__(256) chase_acc(const int *__restrict__ next,
                                                 const float *__restrict__ w,
                                                 float *__restrict__ out, int n, int rounds) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v[LIVE];
#pragma unroll
    for (int i = 0; i < LIVE; ++i) v[i] = w[(t + i * 33) % n];
    int p = next[t % n];
    for (int k = 0; k < rounds; ++k) {
#pragma unroll
        for (int c = 0; c < CHASE; ++c) p = next[p];
        float s = w[p];
#pragma unroll
        for (int i = 0; i < LIVE; ++i) v[i] = fmaf(v[i], s, v[(i + 5) % LIVE]);
    }
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < LIVE; ++i) acc += v[i] * (float)(i + 1);
    out[t] = acc;
}

template __global__ void hop_sum<54, 12>(const int *__restrict__, const float *__restrict__,
                                         float *__restrict__, int, int);
template __global__ void chase_acc<80, 16>(const int *__restrict__, const float *__restrict__,
                                           float *__restrict__, int, int);
