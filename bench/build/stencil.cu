// Build benchmark: finite-difference stencils. High-order 3-D stencils that keep a column of
// values in registers (tunable); low-order and boundary kernels that do not (nothing to tune).

template <typename T, int R>
__global__ void stencil3d_column(const T *__restrict__ in, T *__restrict__ out, const T *__restrict__ w,
                                 int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x + R;
    int y = blockIdx.y * blockDim.y + threadIdx.y + R;
    if (x >= nx - R || y >= ny - R) return;
    int plane = nx * ny;
    T col[2 * R + 1];
#pragma unroll
    for (int k = 0; k < 2 * R; ++k) col[k + 1] = in[k * plane + y * nx + x];
    for (int z = R; z < nz - R; ++z) {
#pragma unroll
        for (int k = 0; k < 2 * R; ++k) col[k] = col[k + 1];
        col[2 * R] = in[(z + R) * plane + y * nx + x];
        T acc = w[0] * col[R];
#pragma unroll
        for (int r = 1; r <= R; ++r)
            acc += w[r] * (col[R - r] + col[R + r] + in[z * plane + y * nx + x - r] +
                           in[z * plane + y * nx + x + r] + in[z * plane + (y - r) * nx + x] +
                           in[z * plane + (y + r) * nx + x]);
        out[z * plane + y * nx + x] = acc;
    }
}

template <typename T>
__global__ void laplace2d(const T *__restrict__ in, T *__restrict__ out, int nx, int ny) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
    out[y * nx + x] = in[y * nx + x - 1] + in[y * nx + x + 1] + in[(y - 1) * nx + x] +
                      in[(y + 1) * nx + x] - 4 * in[y * nx + x];
}

template <typename T>
__global__ void periodic_halo(T *__restrict__ f, int nx, int ny, int r) {
    int y = blockIdx.x * blockDim.x + threadIdx.x;
    if (y >= ny) return;
    for (int k = 0; k < r; ++k) {
        f[y * nx + k] = f[y * nx + nx - 2 * r + k];
        f[y * nx + nx - r + k] = f[y * nx + r + k];
    }
}

template <typename T, int N>
__global__ void wave_update(T *__restrict__ u, const T *__restrict__ up, const T *__restrict__ lap,
                            T c2, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * N;
    T a[N], b[N], l[N];
#pragma unroll
    for (int j = 0; j < N; ++j) {
        a[j] = i + j < n ? u[i + j] : T(0);
        b[j] = i + j < n ? up[i + j] : T(0);
        l[j] = i + j < n ? lap[i + j] : T(0);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
        T nv = 2 * a[j] - b[j] + c2 * l[j] + T(0.01) * (a[(j + 1) % N] - a[(j + N - 1) % N]);
        if (i + j < n) u[i + j] = nv;
    }
}

template <typename T>
__global__ void residual_sq(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { T d = a[i] - b[i]; r[i] = d * d; }
}

#define STENCIL(T)                                                                          \
    template __global__ void stencil3d_column<T, 2>(const T *, T *, const T *, int, int, int); \
    template __global__ void stencil3d_column<T, 4>(const T *, T *, const T *, int, int, int); \
    template __global__ void stencil3d_column<T, 6>(const T *, T *, const T *, int, int, int); \
    template __global__ void stencil3d_column<T, 8>(const T *, T *, const T *, int, int, int); \
    template __global__ void laplace2d<T>(const T *, T *, int, int);                         \
    template __global__ void periodic_halo<T>(T *, int, int, int);                           \
    template __global__ void wave_update<T, 8>(T *, const T *, const T *, T, int);          \
    template __global__ void wave_update<T, 16>(T *, const T *, const T *, T, int);         \
    template __global__ void residual_sq<T>(const T *, const T *, T *, int);
STENCIL(float)
STENCIL(double)

// Latency-bound: a dependent index chase with cell values held across it. ptxas keeps them all in
// registers (few warps); a lower budget spills them outside the loop and more warps hide the
// chase (tunable).
template <typename T, int B>
__global__ void tracer_walk(const int *__restrict__ link, const T *__restrict__ w,
                   T *__restrict__ out, int n, int steps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    T keep[B];
#pragma unroll
    for (int i = 0; i < B; ++i) keep[i] = w[t + i * n];
    int p = t;
    T acc = 0;
    for (int s = 0; s < steps; ++s) {
        p = link[p];
        acc += T(p & 255);
    }
#pragma unroll
    for (int i = 0; i < B; ++i) acc = acc * keep[i] + keep[(i + 7) % B];
    out[t] = acc;
}
template __global__ void tracer_walk<float, 28>(const int *, const float *, float *, int, int);
template __global__ void tracer_walk<float, 44>(const int *, const float *, float *, int, int);
template __global__ void tracer_walk<double, 28>(const int *, const double *, double *, int, int);
template __global__ void tracer_walk<double, 44>(const int *, const double *, double *, int, int);
