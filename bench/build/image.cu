// Build benchmark: image processing. Separable and full convolutions with the filter window
// in registers (tunable); per-pixel maps and a histogram (nothing to tune).

template <typename T, int R>
__global__ void conv2d_full(const T *__restrict__ img, const T *__restrict__ k, T *__restrict__ out,
                            int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < R || y < R || x >= w - R || y >= h - R) return;
    T kk[2 * R + 1][2 * R + 1];
#pragma unroll
    for (int i = 0; i <= 2 * R; ++i)
#pragma unroll
        for (int j = 0; j <= 2 * R; ++j) kk[i][j] = k[i * (2 * R + 1) + j];
    T acc = 0;
#pragma unroll
    for (int i = -R; i <= R; ++i)
#pragma unroll
        for (int j = -R; j <= R; ++j) acc += kk[i + R][j + R] * img[(y + i) * w + x + j];
    out[y * w + x] = acc;
}

template <typename T, int R>
__global__ void conv_rows(const T *__restrict__ img, const T *__restrict__ k, T *__restrict__ out,
                          int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < R || x >= w - R || y >= h) return;
    T acc = 0;
#pragma unroll
    for (int j = -R; j <= R; ++j) acc += k[j + R] * img[y * w + x + j];
    out[y * w + x] = acc;
}

template <typename T, int N>
__global__ void bilateral(const T *__restrict__ img, T *__restrict__ out, int w, int h, T sigma) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < N || y < N || x >= w - N || y >= h - N) return;
    T c = img[y * w + x], num = 0, den = 0;
    T row[2 * N + 1];
    for (int i = -N; i <= N; ++i) {
#pragma unroll
        for (int j = -N; j <= N; ++j) row[j + N] = img[(y + i) * w + x + j];
#pragma unroll
        for (int j = 0; j <= 2 * N; ++j) {
            T d = row[j] - c;
            T wgt = exp(-d * d * sigma - T(i * i + (j - N) * (j - N)) * T(0.1));
            num += wgt * row[j];
            den += wgt;
        }
    }
    out[y * w + x] = num / den;
}

template <typename T>
__global__ void gamma_map(T *__restrict__ img, T g, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) img[i] = pow(img[i], g);
}

template <typename T>
__global__ void rgb_to_luma(const T *__restrict__ rgb, T *__restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = T(0.299) * rgb[3 * i] + T(0.587) * rgb[3 * i + 1] + T(0.114) * rgb[3 * i + 2];
}

template <typename T>
__global__ void histogram(const T *__restrict__ img, unsigned *__restrict__ bins, int n) {
    __shared__ unsigned local[64];
    if (threadIdx.x < 64) local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int b = min(63, max(0, int(img[i] * T(64))));
        atomicAdd(&local[b], 1u);
    }
    __syncthreads();
    if (threadIdx.x < 64) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

#define IMAGE(T)                                                                  \
    template __global__ void conv2d_full<T, 2>(const T *, const T *, T *, int, int); \
    template __global__ void conv2d_full<T, 3>(const T *, const T *, T *, int, int); \
    template __global__ void conv2d_full<T, 4>(const T *, const T *, T *, int, int); \
    template __global__ void conv_rows<T, 4>(const T *, const T *, T *, int, int);   \
    template __global__ void conv_rows<T, 8>(const T *, const T *, T *, int, int);   \
    template __global__ void bilateral<T, 3>(const T *, T *, int, int, T);           \
    template __global__ void bilateral<T, 5>(const T *, T *, int, int, T);           \
    template __global__ void gamma_map<T>(T *, T, int);                             \
    template __global__ void rgb_to_luma<T>(const T *, T *, int);                   \
    template __global__ void histogram<T>(const T *, unsigned *, int);
IMAGE(float)
IMAGE(double)

// Latency-bound: a dependent index chase with pixel values held across it. ptxas keeps them all in
// registers (few warps); a lower budget spills them outside the loop and more warps hide the
// chase (tunable).
template <typename T, int B>
__global__ void region_walk(const int *__restrict__ link, const T *__restrict__ w,
                   T *__restrict__ out, int n, int steps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    T keep[B];
#pragma unroll
    for (int i = 0; i < B; ++i) keep[i] = w[t + i * n];
    int p = t;
    T acc = 0;
    for (int s = 0; s < steps; ++s) {
        p = link[p];
        acc += T(p & 2047);
    }
#pragma unroll
    for (int i = 0; i < B; ++i) acc = acc * keep[i] + keep[(i + 9) % B];
    out[t] = acc;
}
template __global__ void region_walk<float, 36>(const int *, const float *, float *, int, int);
template __global__ void region_walk<float, 60>(const int *, const float *, float *, int, int);
template __global__ void region_walk<double, 36>(const int *, const double *, double *, int, int);
template __global__ void region_walk<double, 60>(const int *, const double *, double *, int, int);
