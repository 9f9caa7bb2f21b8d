// Build benchmark: small dense linear algebra. Register-blocked GEMM tiles templated on the
// tile shape (tunable), BLAS-1/2 style kernels that need few registers (nothing to tune).

template <typename T, int TM, int TN>
__global__ void gemm_tile(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ c,
                          int m, int n, int k) {
    int row = (blockIdx.y * blockDim.y + threadIdx.y) * TM;
    int col = (blockIdx.x * blockDim.x + threadIdx.x) * TN;
    T acc[TM][TN] = {};
    for (int p = 0; p < k; ++p) {
        T av[TM], bv[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) av[i] = a[(row + i) * k + p];
#pragma unroll
        for (int j = 0; j < TN; ++j) bv[j] = b[p * n + col + j];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            if (row + i < m && col + j < n) c[(row + i) * n + col + j] = acc[i][j];
}

template <typename T>
__global__ void axpy(T alpha, const T *__restrict__ x, T *__restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += alpha * x[i];
}

template <typename T>
__global__ void scal(T alpha, T *__restrict__ x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= alpha;
}

template <typename T>
__global__ void dot_partial(const T *__restrict__ x, const T *__restrict__ y, T *out, int n) {
    __shared__ T s[256];
    T acc = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        acc += x[i] * y[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

template <typename T>
__global__ void gemv_rows(const T *__restrict__ a, const T *__restrict__ x, T *__restrict__ y,
                          int m, int n) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= m) return;
    T acc = 0;
    for (int j = 0; j < n; ++j) acc += a[r * n + j] * x[j];
    y[r] = acc;
}

template <typename T, int N>
__global__ void batched_lu(T *__restrict__ mats, int count) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= count) return;
    T m[N][N];
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < N; ++j) m[i][j] = mats[(b * N + i) * N + j];
#pragma unroll
    for (int p = 0; p < N; ++p) {
        T inv = T(1) / m[p][p];
#pragma unroll
        for (int i = p + 1; i < N; ++i) {
            T f = m[i][p] * inv;
            m[i][p] = f;
#pragma unroll
            for (int j = p + 1; j < N; ++j) m[i][j] -= f * m[p][j];
        }
    }
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < N; ++j) mats[(b * N + i) * N + j] = m[i][j];
}

template <typename T>
__global__ void transpose(const T *__restrict__ in, T *__restrict__ out, int w, int h) {
    __shared__ T tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    if (x < w && y < h) tile[threadIdx.y][threadIdx.x] = in[y * w + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    if (x < h && y < w) out[y * h + x] = tile[threadIdx.x][threadIdx.y];
}

#define LINALG(T)                                                                   \
    template __global__ void gemm_tile<T, 4, 4>(const T *, const T *, T *, int, int, int); \
    template __global__ void gemm_tile<T, 8, 4>(const T *, const T *, T *, int, int, int); \
    template __global__ void gemm_tile<T, 8, 8>(const T *, const T *, T *, int, int, int); \
    template __global__ void axpy<T>(T, const T *, T *, int);                            \
    template __global__ void scal<T>(T, T *, int);                                       \
    template __global__ void dot_partial<T>(const T *, const T *, T *, int);             \
    template __global__ void gemv_rows<T>(const T *, const T *, T *, int, int);          \
    template __global__ void batched_lu<T, 4>(T *, int);                                 \
    template __global__ void batched_lu<T, 6>(T *, int);                                 \
    template __global__ void transpose<T>(const T *, T *, int, int);
LINALG(float)
LINALG(double)

// Latency-bound: a dependent index chase with row values held across it. ptxas keeps them all in
// registers (few warps); a lower budget spills them outside the loop and more warps hide the
// chase (tunable).
template <typename T, int B>
__global__ void csr_row_chain(const int *__restrict__ link, const T *__restrict__ w,
                   T *__restrict__ out, int n, int steps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    T keep[B];
#pragma unroll
    for (int i = 0; i < B; ++i) keep[i] = w[t + i * n];
    int p = t;
    T acc = 0;
    for (int s = 0; s < steps; ++s) {
        p = link[p];
        acc += T(p & 1023);
    }
#pragma unroll
    for (int i = 0; i < B; ++i) acc = acc * keep[i] + keep[(i + 3) % B];
    out[t] = acc;
}
template __global__ void csr_row_chain<float, 32>(const int *, const float *, float *, int, int);
template __global__ void csr_row_chain<float, 56>(const int *, const float *, float *, int, int);
template __global__ void csr_row_chain<double, 32>(const int *, const double *, double *, int, int);
template __global__ void csr_row_chain<double, 56>(const int *, const double *, double *, int, int);
