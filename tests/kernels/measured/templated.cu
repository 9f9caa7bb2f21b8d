// Measured-path coverage (issue 45): templated instantiations of a register-heavy gather
// and a register-blocked window sum, the way libraries ship one instance per shape.
template <int W>
__global__ void window_gather(const float *__restrict__ table, const int *__restrict__ index,
                              float *__restrict__ out, int rows, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float acc[W];
#pragma unroll
    for (int j = 0; j < W; ++j) acc[j] = 0.f;
#pragma unroll 4
    for (int k = 0; k < 12; ++k) {
        int r = index[t * 12 + k] % rows;
#pragma unroll
        for (int j = 0; j < W; ++j) acc[j] += table[r * W + j] * (1.0f + k);
    }
#pragma unroll
    for (int j = 0; j < W; ++j) out[(size_t)j * n + t] = acc[j];
}

template <typename T, int R>
__global__ void row_window(const T *__restrict__ in, T *__restrict__ out, int width) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    T w[2 * R + 1];
#pragma unroll
    for (int j = 0; j < 2 * R + 1; ++j) w[j] = in[(size_t)row * width + j];
    for (int x = R; x + R + 1 < width; ++x) {
        T s = 0;
#pragma unroll
        for (int j = 0; j < 2 * R + 1; ++j) s += w[j] * (T)(j + 1);
        out[(size_t)row * width + x] = s;
#pragma unroll
        for (int j = 0; j < 2 * R; ++j) w[j] = w[j + 1];
        w[2 * R] = in[(size_t)row * width + x + R + 1];
    }
}

template __global__ void window_gather<24>(const float *, const int *, float *, int, int);
template __global__ void window_gather<32>(const float *, const int *, float *, int, int);
template __global__ void window_gather<48>(const float *, const int *, float *, int, int);
template __global__ void row_window<float, 16>(const float *, float *, int);
template __global__ void row_window<float, 24>(const float *, float *, int);
template __global__ void row_window<double, 12>(const double *, double *, int);
