// Build benchmark (issue 47): a file where tuning acts on most kernels. One register-hungry
// templated kernel, instantiated 48 times (state size x chain length x element type) the way a
// kernel library ships one file per family: each thread keeps a state vector live across a
// chain of dependent index loads (latency bound), so ptxas's register count caps occupancy and
// most instantiations are retuned (and embed variants under adapt).

template <typename T, int N, int CHAIN>
__global__ void __launch_bounds__(256)
    walk_state(const int *__restrict__ next, T *__restrict__ out, int n, int iters) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    T v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = (T)((t * (i + 3)) ^ (i * 7));
    int r = next[t % n];
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < CHAIN; ++c) r = next[r];
        T s = (T)(r & 15);
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = v[i] * s + v[(i + 1) % N];
    }
    T acc = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) acc += v[i];
    out[t] = acc;
}

#define P(T) const int *, T *, int, int
#define SIZES(T, C)                                            \
    template __global__ void walk_state<T, 32, C>(P(T));       \
    template __global__ void walk_state<T, 48, C>(P(T));       \
    template __global__ void walk_state<T, 64, C>(P(T));       \
    template __global__ void walk_state<T, 80, C>(P(T));       \
    template __global__ void walk_state<T, 96, C>(P(T));       \
    template __global__ void walk_state<T, 112, C>(P(T));      \
    template __global__ void walk_state<T, 128, C>(P(T));      \
    template __global__ void walk_state<T, 144, C>(P(T));
#define CHAINS(T) SIZES(T, 10) SIZES(T, 16)

CHAINS(float)
CHAINS(double)
CHAINS(int)
