// Liveness test kernels (tests/liveness_oracle.rs): code ptxas predicates instead of
// branching: guarded writes, guarded loads and stores, guarded exits, select chains.
#include <cstdint>

// Short conditional bodies become guarded instructions; several writes of one register
// under complementary guards.
__global__ void lv_pred_select(const int *a, int *o, int n, int t) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i];
    int r = x;
    if (x > t) r = x - t;
    if (x < -t) r = x + t;
    if ((x & 3) == 1) r ^= 0x5a;
    int s = 0;
    if (r & 1) s = a[i + 1];
    if (r & 2) s += a[i + 2];
    if (r & 4) o[i + n] = s;
    o[i] = r + s;
}

// A long unrolled loop of compare-and-swap on registers (a sorting network), all guarded
// moves, then guarded stores.
__global__ void lv_pred_sortnet(const float *in, float *out, float lim) {
    float v[8];
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = in[base + k];
#pragma unroll
    for (int pass = 0; pass < 8; pass++) {
#pragma unroll
        for (int k = pass & 1; k + 1 < 8; k += 2) {
            if (v[k] > v[k + 1]) {
                float t = v[k];
                v[k] = v[k + 1];
                v[k + 1] = t;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (v[k] < lim) out[base + k] = v[k];
}

// Guarded 64-bit arithmetic and guarded double loads on both sides of a branch.
__global__ void lv_pred_wide(const double *a, const long long *b, double *o, long long *p, int m) {
    int i = threadIdx.x;
    double d = 0.0;
    long long q = b[i];
    if (m & 1) d = a[i];
    if (m & 2) q = q * 3 + b[i + 32];
    if (m & 4) d += a[i + 64];
    if (q > 100) d = -d;
    if (d > 0.5) p[i] = q;
    o[i] = d;
}

// Guarded early exits inside a loop, and a value written only under a guard and read after.
__global__ void lv_pred_exit_loop(const int *a, int *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int last = -1, cnt = 0;
    for (int k = 0; k < n; k++) {
        int v = a[i * n + k];
        if (v == 0) break;
        if (v > 0) last = v;
        cnt += v & 1;
    }
    if (cnt == 0) return;
    o[i] = last * cnt;
}

// Values defined under one predicate and used under another, with a predicate computed
// from a uniform condition.
__global__ void lv_pred_mixed(const float *a, float *o, int mode, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    float y, z;
    bool p = mode > 2;
    bool q = (i & 1) != 0;
    if (p) y = x * k; else y = x + k;
    if (q) z = y * y; else z = x;
    if (p && q) z += a[i + 1];
    if (p != q) o[i + 1024] = z;
    o[i] = y - z;
}
