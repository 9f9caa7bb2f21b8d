// Kernels whose call frames change with the register budget (issue 47): each keeps many
// values live across calls to a non-inlined helper, so at another budget ptxas saves other
// registers around the call and the helper's .debug_frame FDE has another length. A chain
// of dependent loads makes them latency-bound. tests/tuning/tune_entry.rs builds them at 32
// registers, where the helper's FDE is longer than at ptxas's own budgets.
__device__ __noinline__ float blend(const float *__restrict__ p, int stride, float s) {
    float a = s;
#pragma unroll
    for (int i = 0; i < 6; ++i) a = a * p[i * stride] + (float)(i + 2);
    return a;
}

template <int LIVE>
__global__ void __launch_bounds__(256)
    keep_live(const float *__restrict__ x, const int *__restrict__ ix, float *__restrict__ y, int n,
              int rounds) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[LIVE];
#pragma unroll
    for (int i = 0; i < LIVE; ++i) acc[i] = x[(t + i * 5) % n];
    int r = ix[t % n];
    for (int k = 0; k < rounds; ++k) {
#pragma unroll
        for (int h = 0; h < 12; ++h) r = ix[r];
        float s = blend(x + r % n, 2, (float)k);
#pragma unroll
        for (int i = 0; i < LIVE; ++i) acc[i] = acc[i] * s + acc[(i + 5) % LIVE];
    }
    float out = 0.0f;
#pragma unroll
    for (int i = 0; i < LIVE; ++i) out += acc[i] * (float)(i + 3);
    y[t] = out;
}

template __global__ void keep_live<24>(const float *, const int *, float *, int, int);
template __global__ void keep_live<36>(const float *, const int *, float *, int, int);
template __global__ void keep_live<56>(const float *, const int *, float *, int, int);

__global__ void plain_copy(const float *__restrict__ x, float *__restrict__ y, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) y[t] = blend(x + t, 1, 1.0f);
}
