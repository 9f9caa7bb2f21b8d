// Kernels for tests/sass_decode.rs: math slow paths, double precision, conversions.
#include <cstdint>

__global__ void m_fdiv(float *o, const float *a, const float *b) { o[threadIdx.x] = a[threadIdx.x] / b[threadIdx.x]; }
__global__ void m_ddiv(double *o, const double *a, const double *b) { o[threadIdx.x] = a[threadIdx.x] / b[threadIdx.x]; }
__global__ void m_fsqrt(float *o, const float *a) { o[threadIdx.x] = sqrtf(a[threadIdx.x]); }
__global__ void m_dsqrt(double *o, const double *a) { o[threadIdx.x] = sqrt(a[threadIdx.x]); }
__global__ void m_rsqrt(float *o, const float *a) { o[threadIdx.x] = rsqrtf(a[threadIdx.x]); }
__global__ void m_sincos(float *o, const float *a) {
    float s, c;
    sincosf(a[threadIdx.x], &s, &c);
    o[threadIdx.x] = s * c;
}
__global__ void m_dsin(double *o, const double *a) { o[threadIdx.x] = sin(a[threadIdx.x]) + cos(a[threadIdx.x]); }
__global__ void m_fast_math(float *o, const float *a) {
    float x = a[threadIdx.x];
    o[threadIdx.x] = __sinf(x) + __cosf(x) + __expf(x) + __logf(x) + __fdividef(x, 3.0f);
}
__global__ void m_exp_log(float *o, const float *a) { o[threadIdx.x] = expf(a[threadIdx.x]) + logf(a[threadIdx.x]) + powf(a[threadIdx.x], 2.5f); }
__global__ void m_dexp(double *o, const double *a) { o[threadIdx.x] = exp(a[threadIdx.x]) * log(a[threadIdx.x] + 1.0); }
__global__ void m_dfma_chain(double *o, const double *a, int n) {
    double x = a[0], y = a[1];
    for (int i = 0; i < n; i++) { x = fma(x, y, a[i + 2]); y = y * x - a[i]; }
    o[threadIdx.x] = x + y;
}
__global__ void m_convert(double *o, float *of, int *oi, const float *a, const int *b, const double *d) {
    int i = threadIdx.x;
    o[i] = (double)a[i] + (double)b[i] + (double)(unsigned)b[i + 1] + (double)(long long)d[i];
    of[i] = (float)d[i] + (float)b[i] + (float)(unsigned long long)b[i];
    oi[i] = (int)d[i] + (int)a[i] + (int)(unsigned)a[i + 1] + (int)(long long)a[i + 2];
}
__global__ void m_int64(long long *o, const long long *a, const long long *b) {
    int i = threadIdx.x;
    o[i] = a[i] / b[i] + a[i] % (b[i] | 1) + a[i] * b[i] + (a[i] >> 7);
}
__global__ void m_uint64(unsigned long long *o, const unsigned long long *a, unsigned long long d) {
    int i = threadIdx.x;
    o[i] = a[i] / d + a[i] % 1000003ULL + __umul64hi(a[i], d) + __popcll(a[i]) + __clzll(a[i]);
}
__global__ void m_int32(int *o, const int *a, const int *b) {
    int i = threadIdx.x;
    o[i] = a[i] / b[i] + a[i] % b[i] + __popc(a[i]) + __clz(b[i]) + __brev(a[i]) + __ffs(a[i]) +
           __mulhi(a[i], b[i]) + min(a[i], b[i]) + max(a[i], 3) + abs(b[i]);
}
__global__ void m_udiv(unsigned *o, const unsigned *a, unsigned d) { o[threadIdx.x] = a[threadIdx.x] / d + a[threadIdx.x] % 13u; }
__global__ void m_fminmax(float *o, const float *a) {
    float x = a[threadIdx.x];
    o[threadIdx.x] = fminf(x, 1.0f) + fmaxf(x, a[0]) + copysignf(x, a[1]) + truncf(x) + roundf(x) + rintf(x);
}
__global__ void m_dminmax(double *o, const double *a) {
    double x = a[threadIdx.x];
    o[threadIdx.x] = fmin(x, 1.0) + fmax(x, a[0]) + floor(x) + ceil(x) + fabs(x) + trunc(x);
}
__global__ void m_half(short *o, const float *a) {
    float x = a[threadIdx.x] * 2.0f;
    unsigned short b = __float_as_uint(x) >> 16;
    o[threadIdx.x] = (short)b;
}
__global__ void m_select(float *o, const float *a, const int *c) {
    int i = threadIdx.x;
    float x = a[i];
    if (c[i] > 0 && x < 3.0f) x = x * 2.0f;
    else if (c[i] < -5 || x != x) x = 0.0f;
    o[i] = x;
}
__global__ void m_isnan(int *o, const float *a, const double *d) {
    int i = threadIdx.x;
    o[i] = isnan(a[i]) + isinf(a[i]) * 2 + isnan(d[i]) * 4 + isinf(d[i]) * 8 + signbit(d[i]) * 16;
}
__global__ void m_pressure(float *o, const float *a) {
    float r[24];
#pragma unroll
    for (int k = 0; k < 24; k++) r[k] = a[threadIdx.x * 24 + k];
#pragma unroll
    for (int it = 0; it < 3; it++)
#pragma unroll
        for (int k = 0; k < 24; k++) r[k] = fmaf(r[k], r[(k + 5) % 24], r[(k + 11) % 24]);
    float s = 0;
#pragma unroll
    for (int k = 0; k < 24; k++) s += r[k] * (k + 1);
    o[threadIdx.x] = s;
}
__global__ void m_dpressure(double *o, const double *a) {
    double r[12];
#pragma unroll
    for (int k = 0; k < 12; k++) r[k] = a[threadIdx.x * 12 + k];
#pragma unroll
    for (int it = 0; it < 3; it++)
#pragma unroll
        for (int k = 0; k < 12; k++) r[k] = fma(r[k], r[(k + 5) % 12], r[(k + 7) % 12]);
    double s = 0;
#pragma unroll
    for (int k = 0; k < 12; k++) s += r[k];
    o[threadIdx.x] = s;
}
__global__ void m_bits(unsigned *o, const unsigned *a) {
    unsigned x = a[threadIdx.x];
    o[threadIdx.x] = __funnelshift_l(x, a[1], 5) ^ __byte_perm(x, a[2], 0x5410) ^ __sad(x, a[3], 1) ^ (x * 0x9e3779b9u) ^ __umulhi(x, 77u);
}
__global__ void m_dint64conv(double *o, const long long *a, const unsigned long long *b) {
    int i = threadIdx.x;
    o[i] = (double)a[i] * 0.5 + (double)b[i];
}
__global__ void m_frcp(float *o, const float *a) { o[threadIdx.x] = 1.0f / a[threadIdx.x] + __frcp_rn(a[threadIdx.x]); }
__global__ void m_drcp(double *o, const double *a) { o[threadIdx.x] = 1.0 / a[threadIdx.x] + __drcp_rn(a[threadIdx.x]); }
