// Register-heavy batched small linear algebra, one problem per thread, as in implicit CFD
// line solvers and per-cell chemistry Jacobians: Cholesky factorisation and solve (a square
// root and a division per column), Givens QR (a square root and divisions per rotation) and
// a block-tridiagonal Thomas sweep; the whole matrix is live in registers. Two kernels call
// a __noinline__ device function of their own across the live matrix. Written for issue 46's
// coverage measurement (bench/results/spill2smem-heavy.md).
template <typename T> __device__ __forceinline__ T rt(T x) { return sqrt(x); }
template <> __device__ __forceinline__ float rt<float>(float x) { return sqrtf(x); }

// A scaled residual norm, kept out of line on purpose (a call across the live matrix).
template <typename T> __device__ __noinline__ T resid_scale(T a, T b, T c) {
  return rt<T>(a * a + b * b) / (c + T(1));
}

// Cholesky of an N x N symmetric positive definite matrix (lower triangle), then the solve.
template <typename T, int N, bool CALL>
__global__ void cholesky(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ x,
                         int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  T l[N][N], y[N];
#pragma unroll
  for (int r = 0; r < N; r++) {
    y[r] = b[i + r * n];
#pragma unroll
    for (int c = 0; c <= r; c++) l[r][c] = a[i + (r * N + c) * n] + (r == c ? T(2 * N) : T(0));
  }
#pragma unroll
  for (int c = 0; c < N; c++) {
    T d = l[c][c];
#pragma unroll
    for (int k = 0; k < c; k++) d -= l[c][k] * l[c][k];
    l[c][c] = rt<T>(d > T(1e-12) ? d : T(1e-12));
    const T inv = T(1) / l[c][c];
#pragma unroll
    for (int r = c + 1; r < N; r++) {
      T s = l[r][c];
#pragma unroll
      for (int k = 0; k < c; k++) s -= l[r][k] * l[c][k];
      l[r][c] = s * inv;
    }
  }
#pragma unroll
  for (int r = 0; r < N; r++) {
#pragma unroll
    for (int k = 0; k < r; k++) y[r] -= l[r][k] * y[k];
    y[r] /= l[r][r];
  }
#pragma unroll
  for (int r = N - 1; r >= 0; r--) {
#pragma unroll
    for (int k = r + 1; k < N; k++) y[r] -= l[k][r] * y[k];
    y[r] /= l[r][r];
  }
  T scale = T(1);
  if (CALL) scale = resid_scale<T>(y[0], y[N - 1], l[N - 1][N - 1]);
#pragma unroll
  for (int r = 0; r < N; r++) x[i + r * n] = y[r] * scale;
}

// Givens QR of an M x N matrix (M >= N) and R's diagonal and the rotated right-hand side out.
template <typename T, int M, int N>
__global__ void givens_qr(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ out,
                          int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  T q[M][N], y[M];
#pragma unroll
  for (int r = 0; r < M; r++) {
    y[r] = b[i + r * n];
#pragma unroll
    for (int c = 0; c < N; c++) q[r][c] = a[i + (r * N + c) * n] + (r == c ? T(3) : T(0));
  }
#pragma unroll
  for (int c = 0; c < N; c++)
#pragma unroll
    for (int r = M - 1; r > c; r--) {
      const T f = q[r - 1][c], g = q[r][c];
      const T h = rt<T>(f * f + g * g) + T(1e-30);
      const T cs = f / h, sn = g / h;
#pragma unroll
      for (int k = c; k < N; k++) {
        const T u = q[r - 1][k], v = q[r][k];
        q[r - 1][k] = cs * u + sn * v;
        q[r][k] = cs * v - sn * u;
      }
      const T u = y[r - 1], v = y[r];
      y[r - 1] = cs * u + sn * v;
      y[r] = cs * v - sn * u;
    }
#pragma unroll
  for (int c = 0; c < N; c++) out[i + c * n] = y[c] / q[c][c];
}

// Block-tridiagonal Thomas sweep with B x B diagonal blocks (diagonal approximated by its
// diagonal for the inverse, as a line-implicit smoother does), L lines of the sweep unrolled.
template <typename T, int B, int L, bool CALL>
__global__ void block_thomas(const T *__restrict__ lo, const T *__restrict__ di,
                             const T *__restrict__ up, const T *__restrict__ rhs,
                             T *__restrict__ x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  T c[L][B], d[L][B];
#pragma unroll
  for (int k = 0; k < L; k++)
#pragma unroll
    for (int e = 0; e < B; e++) {
      const int at = i + (k * B + e) * n;
      const T piv = di[at] + T(4) - (k > 0 ? lo[at] * c[k - 1][e] : T(0));
      c[k][e] = up[at] / piv;
      d[k][e] = (rhs[at] - (k > 0 ? lo[at] * d[k - 1][(e + 1) % B] : T(0))) / piv;
    }
#pragma unroll
  for (int k = L - 2; k >= 0; k--)
#pragma unroll
    for (int e = 0; e < B; e++) d[k][e] -= c[k][e] * d[k + 1][(e + k) % B];
  T s = T(1);
  if (CALL) s = resid_scale<T>(d[0][0], d[L - 1][B - 1], c[0][0]);
#pragma unroll
  for (int k = 0; k < L; k++)
#pragma unroll
    for (int e = 0; e < B; e++) x[i + (k * B + e) * n] = d[k][e] * s;
}

template __global__ void cholesky<float, 6, false>(const float *, const float *, float *, int);
template __global__ void cholesky<float, 8, false>(const float *, const float *, float *, int);
template __global__ void cholesky<float, 8, true>(const float *, const float *, float *, int);
template __global__ void cholesky<double, 5, false>(const double *, const double *, double *,
                                                    int);
template __global__ void cholesky<double, 6, true>(const double *, const double *, double *, int);
template __global__ void givens_qr<float, 8, 5>(const float *, const float *, float *, int);
template __global__ void givens_qr<float, 10, 6>(const float *, const float *, float *, int);
template __global__ void givens_qr<double, 6, 4>(const double *, const double *, double *, int);
template __global__ void givens_qr<double, 8, 5>(const double *, const double *, double *, int);
template __global__ void block_thomas<float, 4, 6, false>(const float *, const float *,
                                                          const float *, const float *, float *,
                                                          int);
template __global__ void block_thomas<float, 5, 8, true>(const float *, const float *,
                                                         const float *, const float *, float *,
                                                         int);
template __global__ void block_thomas<double, 3, 6, false>(const double *, const double *,
                                                           const double *, const double *,
                                                           double *, int);
template __global__ void block_thomas<double, 4, 6, true>(const double *, const double *,
                                                          const double *, const double *,
                                                          double *, int);
