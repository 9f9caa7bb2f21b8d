// One kernel that spills under -maxrregcount=40 and calls the compiler's double-precision
// division and reciprocal helper subroutines in its own text section (k_ddiv, smaller than
// helpers.cu's so that adapt's object-size cap leaves room for three of its variants), and
// k_light, last in the file so ptxas compiles it first, with helpers of its own: ptxas numbers
// k_ddiv's helpers from 2 in the whole module, from 0 in a build of k_ddiv alone (--entry),
// and otherwise again in adapt's module with variants copied in. Read by
// tests/assembly/rewrite_audit.rs.
__global__ void k_ddiv(const double* __restrict__ a, double* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v[12];
#pragma unroll
  for (int j = 0; j < 12; ++j) v[j] = a[i + j * n];
  double s = 0.0;
#pragma unroll
  for (int j = 0; j < 12; ++j) {
    double t = v[(j + 3) % 12] / (v[j] + 2.0);
#pragma unroll
    for (int k = 0; k < 12; ++k) v[k] = v[k] * 0.5 + t * v[(k + j) % 12];
    s += 1.0 / t;
  }
#pragma unroll
  for (int j = 0; j < 12; ++j) out[i + j * n] = v[j] + s;
}
__global__ void k_plain(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * 2.0f;
}
__global__ void k_light(const double* a, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0 / a[i] + a[i] / (a[i] + 3.0);
}
