// Liveness test kernels (tests/liveness_oracle.rs): calls. Non-inlined device functions
// (CALL.REL.NOINC, what a call clobbers), calls through function pointers, recursion
// (BSSY/BSYNC around recursive calls), printf (vprintf), and values live across calls.
#include <cstdio>
// liveness-oracle: -maxrregcount=32
#include <cstdint>

__device__ __noinline__ float lv_f_poly(float x, float a, float b, float c) {
    return ((a * x + b) * x + c) * x;
}
__device__ __noinline__ double lv_f_mixd(double x, int k) {
    double s = 0;
    for (int i = 0; i < k; i++) s += x / (i + 1.0);
    return s;
}
__device__ __noinline__ int lv_f_many(int a, int b, int c, int d, int e, int f, int g, int h,
                                      int i, int j) {
    return (a - b) * (c ^ d) + (e | f) - (g & h) + i * j;
}
__device__ __noinline__ void lv_f_out(int *p, int v, int w) {
    if (v > w) p[0] = v - w;
    else p[1] = w - v;
}
__device__ __noinline__ uint64_t lv_f_u64(uint64_t a, uint64_t b) { return (a * b) ^ (a >> 17); }

// Many values live across several calls (what a call clobbers must be saved).
__global__ void lv_call_live_across(const float *a, float *o, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x0 = a[t], x1 = a[t + n], x2 = a[t + 2 * n], x3 = a[t + 3 * n];
    float r = lv_f_poly(x0, x1, x2, x3);
    float s = lv_f_poly(r, x0, x1, 2.f);
    float u = lv_f_poly(s, x3, x2, r);
    o[t] = r + s * x1 + u * x3 + x0;
}

__global__ void lv_call_args(int *o, const int *a) {
    int t = threadIdx.x;
    int v[10];
    for (int k = 0; k < 10; k++) v[k] = a[t * 10 + k];
    int r = lv_f_many(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
    int q = lv_f_many(r, v[9], v[8], v[7], v[6], v[5], v[4], v[3], v[2], v[1]);
    lv_f_out(o + t * 2, r, q);
}

// Calls under a guard and in a loop; a double and a 64-bit result.
__global__ void lv_call_guarded(const double *a, double *o, uint64_t *h, int k) {
    int t = threadIdx.x;
    double x = a[t];
    double y = 0;
    if (x > 0.0) y = lv_f_mixd(x, k);
    uint64_t acc = t;
    for (int i = 0; i < k; i++)
        if (i & 1) acc = lv_f_u64(acc, (uint64_t)i + 7);
    o[t] = x + y;
    h[t] = acc;
}

// Calls through function pointers: a table chosen per thread and a pointer from memory.
typedef float (*unary_fn)(float);
__device__ __noinline__ float lv_u_sq(float x) { return x * x; }
__device__ __noinline__ float lv_u_neg(float x) { return -x + 1.f; }
__device__ __noinline__ float lv_u_half(float x) { return x * 0.5f; }
__device__ __noinline__ float lv_u_cube(float x) { return x * x * x; }
__device__ unary_fn lv_table[4] = {lv_u_sq, lv_u_neg, lv_u_half, lv_u_cube};

__global__ void lv_call_pointer(const float *a, float *o, const int *sel, int n) {
    int t = threadIdx.x;
    float x = a[t], keep = a[t + 64];
    for (int i = 0; i < n; i++) {
        unary_fn f = lv_table[(sel[i] + t) & 3];
        x = f(x) + keep;
    }
    o[t] = x * keep;
}

__global__ void lv_call_pointer_param(float *o, unary_fn f, unary_fn g) {
    float x = o[threadIdx.x];
    float y = (threadIdx.x & 1) ? f(x) : g(x);
    o[threadIdx.x] = y + f(y + x);
}

// Recursion: a tree-walk with two recursive calls and a divergent base case, and mutual
// recursion with a value live across both calls.
__device__ __noinline__ int lv_r_walk(const int *tree, int node, int depth) {
    if (depth == 0 || node >= 255) return tree[node & 255];
    int v = tree[node];
    int l = 0, r = 0;
    if (v & 1) l = lv_r_walk(tree, node * 2 + 1, depth - 1);
    if (v & 2) r = lv_r_walk(tree, node * 2 + 2, depth - 1);
    return v + l * 3 + r;
}
__device__ __noinline__ int lv_r_odd(int n, int acc);
__device__ __noinline__ int lv_r_even(int n, int acc) {
    if (n <= 0) return acc;
    return lv_r_odd(n - 1, acc * 2 + n);
}
__device__ __noinline__ int lv_r_odd(int n, int acc) {
    if (n <= 0) return -acc;
    int k = lv_r_even(n - 1, acc + 3);
    return k ^ acc;
}
__device__ __noinline__ double lv_r_pow(double x, int e) {
    if (e == 0) return 1.0;
    double h = lv_r_pow(x, e / 2);
    return (e & 1) ? h * h * x : h * h;
}

__global__ void lv_recurse(const int *tree, int *o, double *d, int depth) {
    int t = threadIdx.x;
    int w = lv_r_walk(tree, t & 7, depth);
    int m = lv_r_even(t & 15, w);
    o[t] = w + m;
    d[t] = lv_r_pow(1.0 + t * 0.01, depth + (t & 3));
}

// printf: vprintf through CALL.ABS, values live across it.
__global__ void lv_printf(const int *a, float *o, int verbose) {
    int t = threadIdx.x;
    int v = a[t];
    float f = o[t] * 3.f;
    if (verbose && v < 0) printf("thread %d value %d f %f\n", t, v, f);
    if (verbose > 1) printf("block %d\n", blockIdx.x);
    o[t] = f + v;
}
