// Kernels that spill under -maxrregcount=40 (and 32) and call the compiler's helper
// subroutines in their own text sections: the single-precision sqrt slow path (k_sqrt), the
// double-precision division and reciprocal slow paths (k_ddiv). k_light, last in the file so
// ptxas compiles it first, calls the double helpers too: in the whole module ptxas numbers its
// copies $__internal_0_$ and $__internal_1_$, so the spilling kernels' helpers are numbered
// from 2 there, and from 0 in a build of the spilling kernels alone (--entry). Read by
// tests/rewrite_audit.rs.
#define N 24
__global__ void k_sqrt(const float* __restrict__ a, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v[N];
#pragma unroll
  for (int j = 0; j < N; ++j) v[j] = a[i + j * n];
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    float t = sqrtf(v[j] * v[(j + 5) % N] + 1.0f);
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = v[k] * 0.999f + t * v[(k + j) % N];
    s += t;
  }
#pragma unroll
  for (int j = 0; j < N; ++j) out[i + j * n] = v[j] + s;
}
__global__ void k_ddiv(const double* __restrict__ a, double* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) v[j] = a[i + j * n];
  double s = 0.0;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    double t = v[(j + 3) % 16] / (v[j] + 2.0);
#pragma unroll
    for (int k = 0; k < 16; ++k) v[k] = v[k] * 0.5 + t * v[(k + j) % 16];
    s += 1.0 / t;
  }
#pragma unroll
  for (int j = 0; j < 16; ++j) out[i + j * n] = v[j] + s;
}
__global__ void k_plain(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * 2.0f;
}
__global__ void k_light(const double* a, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0 / a[i] + a[i] / (a[i] + 3.0);
}
