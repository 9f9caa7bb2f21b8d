// Build benchmark (issue 45): a template-heavy file of register-heavy kernels the default
// mode leaves alone (the model calls them DRAM- or issue-bound, counting no data reuse) and
// adapt/train build measured variants for: gathers from a table resident in L2, column
// stencils, banded products re-reading x, and polynomial evaluation, each instantiated per
// element type and width, the way kernel libraries ship one file per family.
#include <cuda_fp16.h>

template <typename T> __device__ __forceinline__ float widen(T v) { return (float)v; }
template <> __device__ __forceinline__ float widen<__half>(__half v) { return __half2float(v); }

// Each thread sums K gathered strips of W values; the table is re-read by many threads.
template <typename T, int W, int K>
__global__ void gather_strips(const T *__restrict__ table, const int *__restrict__ index,
                              float *__restrict__ out, int rows, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float acc[W];
#pragma unroll
    for (int j = 0; j < W; ++j) acc[j] = 0.f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        int r = index[t * K + k] % rows;
#pragma unroll
        for (int j = 0; j < W; ++j) acc[j] = fmaf(widen(table[r * W + j]), 1.0f + k, acc[j]);
    }
#pragma unroll
    for (int j = 0; j < W; ++j) out[(size_t)j * n + t] = acc[j];
}

// A column stencil with a window of D planes in registers; neighbours re-read from L1/L2.
template <typename T, int D>
__global__ void column_stencil(const T *__restrict__ in, T *__restrict__ out, int nx, int ny,
                               int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < 1 || x >= nx - 1 || y < 1 || y >= ny - 1) return;
    auto at = [=](int xx, int yy, int zz) { return ((size_t)zz * ny + yy) * nx + xx; };
    float win[D + 2];
#pragma unroll
    for (int i = 0; i < D + 2; ++i) win[i] = widen(in[at(x, y, i)]);
    for (int z0 = 1; z0 + D < nz; z0 += D) {
#pragma unroll
        for (int i = 1; i <= D; ++i) {
            int z = z0 + i - 1;
            float s = 0.4f * win[i] + 0.1f * (win[i - 1] + win[i + 1]) +
                      0.1f * (widen(in[at(x - 1, y, z)]) + widen(in[at(x + 1, y, z)]) +
                              widen(in[at(x, y - 1, z)]) + widen(in[at(x, y + 1, z)]));
            out[at(x, y, z)] = (T)s;
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) win[i] = win[i + D];
#pragma unroll
        for (int i = 2; i < D + 2; ++i) win[i] = widen(in[at(x, y, min(z0 + D - 1 + i, nz - 1))]);
    }
}

// Banded product: R outputs per thread, x re-read for every band row.
template <typename T, int R>
__global__ void band_product(const T *__restrict__ a, const float *__restrict__ x,
                             float *__restrict__ y, int n, int band) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float acc[R];
#pragma unroll
    for (int j = 0; j < R; ++j) acc[j] = 0.f;
    for (int k = 0; k < band; ++k) {
        float v = widen(a[(size_t)k * n + row]);
        int col = (row + k) % 512;
#pragma unroll
        for (int j = 0; j < R; ++j) acc[j] = fmaf(v, x[col * R + j], acc[j]);
    }
#pragma unroll
    for (int j = 0; j < R; ++j) y[(size_t)j * n + row] = acc[j];
}

// Issue-bound: a P-term polynomial per element, coefficients held in registers.
template <int P>
__global__ void poly_terms(const float *__restrict__ c, const float *__restrict__ x,
                           float *__restrict__ y, int n) {
    float k[P];
#pragma unroll
    for (int j = 0; j < P; ++j) k[j] = c[j];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i], r[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int j = P - 1; j >= 0; --j) {
            r[j & 3] = fmaf(r[j & 3], v, k[j]);
            r[(j + 1) & 3] = fmaf(r[(j + 1) & 3], v * v, k[P - 1 - j]);
        }
        y[i] = r[0] + r[1] + r[2] + r[3];
    }
}

#define GATHER(T, W, K) \
    template __global__ void gather_strips<T, W, K>(const T *, const int *, float *, int, int);
GATHER(float, 24, 8)
GATHER(float, 32, 8)
GATHER(float, 40, 12)
GATHER(float, 48, 16)
GATHER(__half, 32, 8)
GATHER(__half, 48, 12)
#define STENCIL(T, D) template __global__ void column_stencil<T, D>(const T *, T *, int, int, int);
STENCIL(float, 16)
STENCIL(float, 24)
STENCIL(float, 32)
STENCIL(__half, 24)
STENCIL(double, 16)
STENCIL(double, 24)
#define BAND(T, R) template __global__ void band_product<T, R>(const T *, const float *, float *, int, int);
BAND(float, 16)
BAND(float, 24)
BAND(float, 32)
BAND(__half, 24)
BAND(double, 16)
BAND(double, 32)
#define POLY(P) template __global__ void poly_terms<P>(const float *, const float *, float *, int);
POLY(24)
POLY(32)
POLY(40)
POLY(48)
POLY(56)
POLY(64)
