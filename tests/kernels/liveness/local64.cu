// Liveness test kernels (tests/liveness_oracle.rs): 64-bit local memory (LDL.64/STL.64,
// LDL.128): dynamically indexed local arrays of doubles and 64-bit integers, and
// register-hungry code the test also builds with a low -maxrregcount so that it spills.
// liveness-oracle: -maxrregcount=32; -maxrregcount=48
#include <cstdint>

__global__ void lv_local_f64(const double *in, double *out, const int *idx, int n) {
    double buf[24];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 24; k++) buf[k] = in[t * 24 + k];
    double s = 0;
    for (int k = 0; k < n; k++) {
        int j = idx[k] % 24;
        buf[j] = buf[j] * 1.5 + buf[(j + 5) % 24];
        s += buf[j];
    }
    out[t] = s + buf[idx[0] & 15];
}

__global__ void lv_local_u64(const uint64_t *in, uint64_t *out, int rounds) {
    uint64_t st[16];
    int t = threadIdx.x;
    for (int k = 0; k < 16; k++) st[k] = in[t + k * 64] ^ (uint64_t)k * 0x9e3779b97f4a7c15ULL;
    for (int r = 0; r < rounds; r++) {
        int a = (int)(st[r & 15] & 15), b = (int)((st[(r + 3) & 15] >> 7) & 15);
        st[a] += st[b] ^ (st[a] << 13);
        st[b] = (st[b] >> 7) | (st[a] << 57);
    }
    uint64_t h = 0;
    for (int k = 0; k < 16; k++) h ^= st[k] * (k + 1);
    out[t] = h;
}

// Many long-lived doubles: spills under -maxrregcount=32/40.
__global__ void lv_pressure_f64(const double *a, double *o, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double c[14];
#pragma unroll
    for (int k = 0; k < 14; k++) c[k] = a[k * 1024 + t];
    double acc = 0;
    for (int it = 0; it < n; it++) {
#pragma unroll
        for (int k = 0; k < 14; k++) {
            c[k] = c[k] * c[(k + 1) % 14] + 0.125 * k;
            acc += c[k] * (it + 1);
        }
    }
#pragma unroll
    for (int k = 0; k < 14; k++) o[k * 1024 + t] = c[k] + acc;
}

// 32-bit and vector pressure with a loop-carried float4 set.
__global__ void lv_pressure_vec(const float4 *a, float4 *o, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v[10];
#pragma unroll
    for (int k = 0; k < 10; k++) v[k] = a[t * 10 + k];
    for (int it = 0; it < n; it++) {
#pragma unroll
        for (int k = 0; k < 10; k++) {
            float4 w = v[(k + 3) % 10];
            v[k].x = fmaf(v[k].x, w.y, w.z);
            v[k].y = fmaf(v[k].y, w.w, v[k].x);
            v[k].z = v[k].z * 0.5f + w.x;
            v[k].w = v[k].w - v[k].z * w.x;
        }
    }
#pragma unroll
    for (int k = 0; k < 10; k++) o[t * 10 + k] = v[k];
}
