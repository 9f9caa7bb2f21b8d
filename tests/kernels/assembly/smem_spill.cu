// Kernels of the held-out file's shape (issue 47): a register-hungry templated kernel that
// keeps many values live across calls to a non-inlined helper (its own function in each
// kernel's code section), behind a chain of dependent loads. Under ptxas's shared-memory
// spilling (the `enable_smem_spilling` candidate, `--orion-force=pragma`) the spilled
// registers get a `.nv.shared.<kernel>` section of the kernel's own, which ptxas's own
// build has not: tests/tuning/tune_entry.rs has them spliced and compares the result byte
// for byte with a whole-module ptxas run at the chosen budgets.
template <typename T, int N>
__device__ __noinline__ T fold(const T *__restrict__ p, int stride, T seed) {
    T a = seed;
#pragma unroll
    for (int i = 0; i < N; ++i) a = a * p[i * stride] + (T)(2 * i + 1);
    return a;
}

template <typename T, int LIVE, int N>
__global__ void __launch_bounds__(256)
    hop_fold(const int *__restrict__ ix, const T *__restrict__ x, T *__restrict__ y, int n,
             int rounds) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    T acc[LIVE];
#pragma unroll
    for (int i = 0; i < LIVE; ++i) acc[i] = (T)((t * 5 + i) & 31);
    int r = ix[t % n];
    for (int k = 0; k < rounds; ++k) {
#pragma unroll
        for (int h = 0; h < 12; ++h) r = ix[r];
        T s = fold<T, N>(x + (r % n), 2, (T)k);
#pragma unroll
        for (int i = 0; i < LIVE; ++i) acc[i] = acc[i] * s + acc[(i + 5) % LIVE];
    }
    T out = 0;
#pragma unroll
    for (int i = 0; i < LIVE; ++i) out += acc[i] * (T)(i + 2);
    y[t] = out;
}

template __global__ void hop_fold<float, 36, 4>(const int *, const float *, float *, int, int);
template __global__ void hop_fold<float, 36, 16>(const int *, const float *, float *, int, int);
template __global__ void hop_fold<float, 52, 4>(const int *, const float *, float *, int, int);
template __global__ void hop_fold<float, 52, 16>(const int *, const float *, float *, int, int);
template __global__ void hop_fold<float, 60, 4>(const int *, const float *, float *, int, int);
template __global__ void hop_fold<float, 60, 16>(const int *, const float *, float *, int, int);
template __global__ void hop_fold<double, 36, 4>(const int *, const double *, double *, int, int);
template __global__ void hop_fold<double, 36, 16>(const int *, const double *, double *, int, int);
template __global__ void hop_fold<double, 52, 4>(const int *, const double *, double *, int, int);
template __global__ void hop_fold<double, 52, 16>(const int *, const double *, double *, int, int);
template __global__ void hop_fold<double, 60, 4>(const int *, const double *, double *, int, int);
template __global__ void hop_fold<double, 60, 16>(const int *, const double *, double *, int, int);
