// Fixture matrix: arithmetic-heavy kernels with high register pressure.
// Unrolled FP32/FP64 chains, register blocking, templates instantiated several times,
// __launch_bounds__ (with a minimum block count) and __maxnreg__.
#include "matrix.cuh"

// 32 independent FP32 accumulators, all live across the unrolled loop.
__global__ void fma_chain_f32(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) acc[k] = in[(i + k * 97) % n];
#pragma unroll 4
    for (int it = 0; it < 64; ++it) {
#pragma unroll
        for (int k = 0; k < 32; ++k) acc[k] = fmaf(acc[k], acc[(k + 7) & 31], 0.25f * k + it);
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 32; ++k) s += acc[k] * (k + 1);
    out[i] = s;
}

// The same in FP64: 16 doubles are 32 registers.
__global__ void fma_chain_f64(const double *in, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double acc[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) acc[k] = in[(i + k * 31) % n];
    for (int it = 0; it < 48; ++it) {
#pragma unroll
        for (int k = 0; k < 16; ++k) acc[k] = fma(acc[k], acc[(k + 3) & 15], 1.0 / (k + 1 + it));
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < 16; ++k) s += acc[k];
    out[i] = s;
}

// Mixed precision: float inputs, double accumulation, transcendental calls.
__global__ void mixed_precision_poly(const float *x, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    double a = 0.0, b = 1.0, c = 0.5;
#pragma unroll
    for (int k = 0; k < 12; ++k) {
        a += (double)sinf(v * k) * b;
        b = b * 0.9 + cos((double)v + c);
        c = fma(a, b, c) * 0.5;
    }
    out[i] = a + b + c;
}

// 8x8 register tile of C = A * B (64 accumulators live).
__global__ void matmul_tile_8x8(const float *A, const float *B, float *C, int N) {
    int row0 = (blockIdx.y * blockDim.y + threadIdx.y) * 8;
    int col0 = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (row0 >= N || col0 >= N) return;
    float c[8][8];
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int q = 0; q < 8; ++q) c[r][q] = 0.f;
    for (int k = 0; k < N; ++k) {
        float a[8], b[8];
#pragma unroll
        for (int r = 0; r < 8; ++r) a[r] = A[(size_t)(row0 + r) * N + k];
#pragma unroll
        for (int q = 0; q < 8; ++q) b[q] = B[(size_t)k * N + col0 + q];
#pragma unroll
        for (int r = 0; r < 8; ++r)
#pragma unroll
            for (int q = 0; q < 8; ++q) c[r][q] = fmaf(a[r], b[q], c[r][q]);
    }
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int q = 0; q < 8; ++q) C[(size_t)(row0 + r) * N + col0 + q] = c[r][q];
}

// All-pairs gravity, four bodies per thread at once.
__global__ void nbody_accel(const float4 *pos, float3 *acc, int n) {
    int i0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i0 + 3 >= n) return;
    float3 a[4];
    float4 p[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        p[q] = pos[i0 + q];
        a[q] = make_float3(0.f, 0.f, 0.f);
    }
    for (int j = 0; j < n; ++j) {
        float4 o = pos[j];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            float dx = o.x - p[q].x, dy = o.y - p[q].y, dz = o.z - p[q].z;
            float r2 = dx * dx + dy * dy + dz * dz + 1e-6f;
            float inv = rsqrtf(r2);
            float s = o.w * inv * inv * inv;
            a[q].x += dx * s;
            a[q].y += dy * s;
            a[q].z += dz * s;
        }
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[i0 + q] = a[q];
}

// Complex multiply-accumulate over 8 complex lanes per thread.
__global__ void complex_mac(const float2 *x, const float2 *y, float2 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float2 acc[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) acc[k] = make_float2(0.f, 0.f);
    for (int j = 0; j < 32; ++j) {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float2 a = x[(i + j + k) % n], b = y[(i * 3 + j + k) % n];
            acc[k].x += a.x * b.x - a.y * b.y;
            acc[k].y += a.x * b.y + a.y * b.x;
        }
    }
    float2 s = make_float2(0.f, 0.f);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        s.x += acc[k].x;
        s.y += acc[k].y;
    }
    out[i] = s;
}

// Horner evaluation with N coefficients in registers; instantiated four times below.
template <typename T, int N>
__global__ void horner_unrolled(const T *coef, const T *x, T *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T c[N];
#pragma unroll
    for (int k = 0; k < N; ++k) c[k] = coef[k];
    T v = x[i], r = c[N - 1];
#pragma unroll
    for (int k = N - 2; k >= 0; --k) r = r * v + c[k];
    y[i] = r;
}
template __global__ void horner_unrolled<float, 4>(const float *, const float *, float *, int);
template __global__ void horner_unrolled<float, 16>(const float *, const float *, float *, int);
template __global__ void horner_unrolled<double, 8>(const double *, const double *, double *, int);
template __global__ void horner_unrolled<int, 12>(const int *, const int *, int *, int);

// __launch_bounds__ with a minimum number of resident blocks: caps the registers.
__global__ void __launch_bounds__(256, 4) bounded_saxpy_unrolled(float a, const float *x, float *y, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    float v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = (i + k < n) ? x[i + k] : 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k)
        if (i + k < n) y[i + k] = fmaf(a, v[k], y[i + k]);
}

// __launch_bounds__ with max threads only.
__global__ void __launch_bounds__(128) bounded_dot(const double *x, const double *y, double *out, int n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i + 3 * n / 4 < n; i += gridDim.x * blockDim.x) {
        s0 += x[i] * y[i];
        s1 += x[i + n / 4] * y[i + n / 4];
        s2 += x[i + n / 2] * y[i + n / 2];
        s3 += x[i + 3 * n / 4] * y[i + 3 * n / 4];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s0 + s1 + s2 + s3;
}

// __maxnreg__ (CUDA 12.4+): a per-kernel register cap without a block size.
__global__ void __maxnreg__(40) maxnreg_stencil(const float *in, float *out, int nx, int ny) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 2 || y < 2 || x >= nx - 2 || y >= ny - 2) return;
    float s = 0.f;
#pragma unroll
    for (int dy = -2; dy <= 2; ++dy)
#pragma unroll
        for (int dx = -2; dx <= 2; ++dx) s += in[(y + dy) * nx + x + dx] * (1.0f / (1 + dx * dx + dy * dy));
    out[y * nx + x] = s;
}
