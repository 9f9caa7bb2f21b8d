// Fixture matrix: real device calls (__noinline__, recursion, a call chain, an indirect call),
// local arrays indexed at run time (real local memory), 64-bit integer and pointer math, loops.
#include "matrix.cuh"

// Recursion: ptxas must keep a call stack.
__device__ __noinline__ int fib_rec(int n) { return n < 2 ? n : fib_rec(n - 1) + fib_rec(n - 2); }

__global__ void recursive_fib(const int *n, int *out, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) out[i] = fib_rec(n[i] & 15);
}

// Recursion with a local array in every frame.
__device__ __noinline__ float tree_sum(const float *v, int lo, int hi, int depth) {
    float part[4];
    if (hi - lo <= 4 || depth > 6) {
        float s = 0.f;
        for (int k = lo; k < hi; ++k) s += v[k];
        return s;
    }
    int q = (hi - lo) / 4;
    for (int k = 0; k < 4; ++k) part[k] = tree_sum(v, lo + k * q, k == 3 ? hi : lo + (k + 1) * q, depth + 1);
    return part[(depth + lo) & 3] + part[0] + part[1] + part[2] + part[3];
}

__global__ void recursive_tree_sum(const float *v, float *out, int n) {
    if (threadIdx.x == 0) out[blockIdx.x] = tree_sum(v, 0, n, 0);
}

// A call chain a -> b -> c -> d, each keeping values live across its call.
__device__ __noinline__ float chain_d(float x, int k) { return x * x - k; }
__device__ __noinline__ float chain_c(float x, int k) {
    float y = x + 1.f;
    return chain_d(y, k) * y + chain_d(x, k + 1);
}
__device__ __noinline__ float chain_b(float x, int k) {
    float t = sqrtf(fabsf(x));
    return chain_c(t, k) + t * chain_c(x * 0.5f, k * 2);
}
__device__ __noinline__ float chain_a(float x, int k) { return chain_b(x, k) - chain_b(-x, k + 3); }

__global__ void call_chain(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = chain_a(in[i], i & 7);
}

// Many values live across a single call (caller-saved registers pressure).
__device__ __noinline__ float opaque_scale(float x, float y) { return x * 0.75f + y; }

__global__ void live_across_call(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[12];
#pragma unroll
    for (int k = 0; k < 12; ++k) v[k] = in[(i + k) % n] * (k + 1);
    float r = opaque_scale(v[0], v[11]);
#pragma unroll
    for (int k = 0; k < 12; ++k) r += v[k] * opaque_scale(r, (float)k);
    out[i] = r;
}

// Indirect calls through a device function-pointer table.
typedef float (*unary_fn)(float);
__device__ __noinline__ float op_sq(float x) { return x * x; }
__device__ __noinline__ float op_neg(float x) { return -x; }
__device__ __noinline__ float op_half(float x) { return 0.5f * x; }
__device__ unary_fn g_ops[3] = {op_sq, op_neg, op_half};

__global__ void indirect_dispatch(const float *in, const int *which, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = g_ops[which[i] % 3](in[i]);
}

// Local array with a data-dependent index: real local memory, not spills.
__global__ void local_histogram(const unsigned char *data, int *out, int n) {
    int hist[64];
    for (int k = 0; k < 64; ++k) hist[k] = 0;
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * 256;
    for (int k = 0; k < 256 && base + k < n; ++k) hist[data[base + k] & 63]++;
    int best = 0;
    for (int k = 1; k < 64; ++k)
        if (hist[k] > hist[best]) best = k;
    out[blockIdx.x * blockDim.x + threadIdx.x] = best * 1000 + hist[best];
}

// Insertion sort of a per-thread buffer.
__global__ void local_insertion_sort(const float *in, float *out, int n) {
    float buf[24];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if ((i + 1) * 24 > n) return;
    for (int k = 0; k < 24; ++k) buf[k] = in[i * 24 + k];
    for (int k = 1; k < 24; ++k) {
        float key = buf[k];
        int j = k - 1;
        while (j >= 0 && buf[j] > key) {
            buf[j + 1] = buf[j];
            --j;
        }
        buf[j + 1] = key;
    }
    for (int k = 0; k < 24; ++k) out[i * 24 + k] = buf[k];
}

// 64-bit pointer arithmetic with large strides.
__global__ void ptr_math_64(const double *base, double *out, size_t pitch_bytes, long long rows, long long cols) {
    long long r = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows || c >= cols) return;
    const char *row = reinterpret_cast<const char *>(base) + r * pitch_bytes;
    const double *p = reinterpret_cast<const double *>(row) + c;
    uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    out[r * cols + c] = *p + (double)(addr & 0xfff) + (double)(r * cols);
}

// 64-bit integer hashing (splitmix64) in a loop.
__global__ void hash_splitmix64(unsigned long long seed, unsigned long long *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long z = seed + (unsigned long long)i * 0x9e3779b97f4a7c15ULL;
    for (int k = 0; k < 8; ++k) {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
    }
    out[i] = z;
}

// 64-bit division and remainder (calls into the compiler's division routine).
__global__ void divmod_u64(const unsigned long long *a, const unsigned long long *b, unsigned long long *q,
                           unsigned long long *r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long d = b[i] | 1ULL;
    q[i] = a[i] / d;
    r[i] = a[i] % d;
}

// Data-dependent while loop.
__global__ void collatz_steps(const unsigned int *start, int *steps, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long v = start[i] | 1u;
    int s = 0;
    while (v != 1 && s < 1000) {
        v = (v & 1) ? 3 * v + 1 : v >> 1;
        ++s;
    }
    steps[i] = s;
}

// Triangular nested loops with a break.
__global__ void nested_triangular(const float *m, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.f;
    for (int r = 0; r <= i; ++r) {
        for (int c = r; c < n; ++c) {
            float v = m[r * n + c];
            if (v < -1e30f) break;
            s += v / (1 + r + c);
        }
    }
    out[i] = s;
}
