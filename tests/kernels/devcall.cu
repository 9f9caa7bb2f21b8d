// Device function calls: a non-inlined helper, a recursive function and a template.
__device__ __noinline__ float poly(float x, int degree) {
    float acc = 0.0f;
    for (int i = 0; i < degree; ++i) acc = acc * x + (float)(i + 1);
    return acc;
}

__device__ __noinline__ int collatz_steps(unsigned long long v, int depth) {
    if (v <= 1 || depth > 64) return depth;
    return collatz_steps((v & 1) ? 3 * v + 1 : v / 2, depth + 1);
}

template <typename T> __device__ T clamp01(T v) { return v < T(0) ? T(0) : (v > T(1) ? T(1) : v); }

__global__ void devcall(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = clamp01(poly(in[i], 8)) + (float)collatz_steps((unsigned long long)i + 7, 0);
}
