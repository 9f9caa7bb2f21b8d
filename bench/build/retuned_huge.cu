// Build benchmark (issue 47): a few huge kernels, most of ptxas's time in each. Long unrolled
// bodies over a large register state, advanced by a chain of dependent loads (latency bound):
// every variant round is a long ptxas run, and most kernels are retuned.

// A state of N values mixed with its neighbours at three distances each step.
template <typename T, int N>
__global__ void __launch_bounds__(256)
    mix_state(const int *__restrict__ next, const T *__restrict__ w, T *__restrict__ out, int n,
              int iters) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    T v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = (T)((t * (i + 1)) ^ (i * 13));
    int r = next[t % n];
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < 16; ++c) r = next[r];
        T s = w[r & 255], u = w[(r >> 8) & 255];
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = v[i] * s + v[(i + 1) % N] * u - v[(i + 7) % N];
#pragma unroll
        for (int i = 0; i < N; i += 2) v[i] = v[i] + v[(i + 31) % N] * s;
    }
    T acc = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) acc += v[i] * (T)(i + 1);
    out[t] = acc;
}

// A butterfly network over N values, the twiddles fetched through the chain.
template <typename T, int N>
__global__ void __launch_bounds__(256)
    butterfly(const int *__restrict__ next, const T *__restrict__ tw, T *__restrict__ out, int n,
              int iters) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    T v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = (T)((t + i * 5) & 1023);
    int r = next[t % n];
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < 16; ++c) r = next[r];
        T w = tw[r & 255];
#pragma unroll
        for (int span = N / 2; span > 0; span /= 2)
#pragma unroll
            for (int i = 0; i < N; ++i)
                if ((i & span) == 0) {
                    T a = v[i], b = v[i + span] * w;
                    v[i] = a + b;
                    v[i + span] = a - b;
                }
    }
#pragma unroll
    for (int i = 0; i < N; ++i) out[(size_t)t * N + i] = v[i];
}

template __global__ void mix_state<float, 160>(const int *, const float *, float *, int, int);
template __global__ void mix_state<float, 224>(const int *, const float *, float *, int, int);
template __global__ void mix_state<double, 96>(const int *, const double *, double *, int, int);
template __global__ void butterfly<float, 128>(const int *, const float *, float *, int, int);
template __global__ void butterfly<float, 64>(const int *, const float *, float *, int, int);
template __global__ void butterfly<double, 64>(const int *, const double *, double *, int, int);
