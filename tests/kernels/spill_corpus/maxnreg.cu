// Spill corpus, `__maxnreg__`: no register flag; each kernel's own `__maxnreg__(N)` (32, 40
// or 64) is the limit, and each keeps more than N registers of state live across a run-time
// loop.
#include <cstdint>

// Bilinear resampling of 20 channels per pixel, the channel accumulators live across taps.
#define MN_CH 20
__global__ void __maxnreg__(32)
mn32_resample(const float *src, float *dst, int w, int h, float sx, float sy, int taps)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    float acc[MN_CH] = {}, wsum[MN_CH] = {};
    for (int t = 0; t < taps; t++) {
        float fx = (x + 0.5f) * sx + t * 0.25f, fy = (y + 0.5f) * sy;
        int ix = min(int(fx), w - 2), iy = min(int(fy), h - 2);
        float ax = fx - ix, ay = fy - iy;
#pragma unroll
        for (int c = 0; c < MN_CH; c++) {
            const float *p = src + ((size_t)c * h + iy) * w + ix;
            float v = (p[0] * (1 - ax) + p[1] * ax) * (1 - ay) + (p[w] * (1 - ax) + p[w + 1] * ax) * ay;
            float wt = 1.f / (1.f + t + c * v * v);
            acc[c] += wt * v;
            wsum[c] += wt;
        }
    }
#pragma unroll
    for (int c = 0; c < MN_CH; c++) dst[((size_t)c * h + y) * w + x] = acc[c] / wsum[c];
}

// FP64 Horner evaluation of a 3×3 matrix polynomial (nine doubles of result, nine of the
// argument) per thread.
__global__ void __maxnreg__(32) mn32_matpoly_f64(const double *m, const double *coef, double *out, int deg)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double a[9], r[9];
#pragma unroll
    for (int e = 0; e < 9; e++) { a[e] = m[9 * t + e]; r[e] = e % 4 == 0 ? coef[deg] : 0.0; }
    for (int d = deg - 1; d >= 0; d--) {
        double n[9];
#pragma unroll
        for (int i = 0; i < 3; i++)
#pragma unroll
            for (int j = 0; j < 3; j++)
                n[3 * i + j] = r[3 * i] * a[j] + r[3 * i + 1] * a[3 + j] + r[3 * i + 2] * a[6 + j];
#pragma unroll
        for (int e = 0; e < 9; e++) r[e] = n[e] + (e % 4 == 0 ? coef[d] : 0.0);
    }
#pragma unroll
    for (int e = 0; e < 9; e++) out[9 * t + e] = r[e];
}

// Blake2s-style mixing of a 16-word state with 16 message words kept live.
__device__ __forceinline__ uint32_t mn_rotr(uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }
#define MN_G(a, b, c, d, x, y)                                                                 \
    a = a + b + x; d = mn_rotr(d ^ a, 16); c = c + d; b = mn_rotr(b ^ c, 12);                  \
    a = a + b + y; d = mn_rotr(d ^ a, 8);  c = c + d; b = mn_rotr(b ^ c, 7);
__global__ void __maxnreg__(32) mn32_blake_like(const uint32_t *msg, uint32_t *out, int rounds)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t v[16], m[16];
#pragma unroll
    for (int i = 0; i < 16; i++) { m[i] = msg[16 * t + i]; v[i] = 0x6a09e667u ^ (i * 0x85ebca6bu) ^ t; }
    for (int r = 0; r < rounds; r++) {
        MN_G(v[0], v[4], v[8], v[12], m[0], m[1]) MN_G(v[1], v[5], v[9], v[13], m[2], m[3])
        MN_G(v[2], v[6], v[10], v[14], m[4], m[5]) MN_G(v[3], v[7], v[11], v[15], m[6], m[7])
        MN_G(v[0], v[5], v[10], v[15], m[8], m[9]) MN_G(v[1], v[6], v[11], v[12], m[10], m[11])
        MN_G(v[2], v[7], v[8], v[13], m[12], m[13]) MN_G(v[3], v[4], v[9], v[14], m[14], m[15])
        uint32_t m0 = m[0];
#pragma unroll
        for (int i = 0; i < 15; i++) m[i] = m[i + 1] ^ v[i];
        m[15] = m0 + r;
    }
#pragma unroll
    for (int i = 0; i < 16; i++) out[16 * t + i] = v[i] ^ m[i];
}

// Templated 5-point 1-D convolution over a register window (float and double), limit 40.
template <typename T, int W>
__global__ void __maxnreg__(40) mn40_window(const T *in, T *out, int n, int passes)
{
    int i0 = (blockIdx.x * blockDim.x + threadIdx.x) * W;
    T v[W];
#pragma unroll
    for (int w = 0; w < W; w++) v[w] = in[(i0 + w) % n];
    for (int p = 0; p < passes; p++) {
        T m2 = v[0], m1 = v[1];
#pragma unroll
        for (int w = 2; w < W - 2; w++) {
            T c = v[w];
            v[w] = T(0.375) * c + T(0.25) * (m1 + v[w + 1]) + T(0.0625) * (m2 + v[w + 2]);
            m2 = m1;
            m1 = c;
        }
    }
#pragma unroll
    for (int w = 0; w < W; w++) out[(i0 + w) % n] = v[w];
}
template __global__ void mn40_window<float, 48>(const float *, float *, int, int);
template __global__ void mn40_window<double, 24>(const double *, double *, int, int);

// Batched 4×4 double2 (complex) matrix-vector products, limit 64: 16 complex matrix entries.
__global__ void __maxnreg__(64) mn64_zgemv4(const double2 *mats, const double2 *x, double2 *y, int n, int reps)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double2 a[16], v[4];
#pragma unroll
    for (int e = 0; e < 16; e++) a[e] = mats[16 * (t % n) + e];
#pragma unroll
    for (int e = 0; e < 4; e++) v[e] = x[4 * (t % n) + e];
    for (int r = 0; r < reps; r++) {
        double2 w[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            double re = 0.0, im = 0.0;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                re += a[4 * i + j].x * v[j].x - a[4 * i + j].y * v[j].y;
                im += a[4 * i + j].x * v[j].y + a[4 * i + j].y * v[j].x;
            }
            w[i] = make_double2(re, im);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) v[i] = w[i];
    }
#pragma unroll
    for (int i = 0; i < 4; i++) y[4 * t + i] = v[i];
}
