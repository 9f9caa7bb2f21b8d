// Register-heavy kernels in the manner of SHOC's S3D chemistry (ratt, rdsmh, qssa, rdwdot):
// per grid point many species' rates are live at once, combined through exponentials,
// logarithms and IEEE divisions (double precision: the reciprocal and division slow paths;
// single precision: the division and sqrt slow paths). Written for issue 46's coverage
// measurement (bench/results/spill2smem-heavy.md); not from SHOC.
template <typename T> __device__ __forceinline__ T ex(T x) { return exp(x); }
template <> __device__ __forceinline__ float ex<float>(float x) { return expf(x); }
template <typename T> __device__ __forceinline__ T lg(T x) { return log(x); }
template <> __device__ __forceinline__ float lg<float>(float x) { return logf(x); }

// Forward and reverse rates of NR reactions over NS species, all in registers.
template <typename T, int NS, int NR>
__global__ void ratt(const T *__restrict__ temp, const T *__restrict__ conc,
                     T *__restrict__ wdot, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const T t = temp[i] + T(300);
  const T tinv = T(1) / t, alogt = lg<T>(t);
  T c[NS], w[NS];
#pragma unroll
  for (int s = 0; s < NS; s++) {
    c[s] = conc[i + s * n];
    w[s] = 0;
  }
#pragma unroll
  for (int r = 0; r < NR; r++) {
    const int a = r % NS, b = (r * 7 + 3) % NS, p = (r * 5 + 1) % NS;
    const T kf = ex<T>(T(3.2 + 0.1 * r) + T(0.5) * alogt - T(1000 + 17 * r) * tinv);
    const T keq = ex<T>(T(0.3) * alogt - T(200 + r) * tinv);
    const T kr = kf / (keq + T(1e-30));
    const T rate = kf * c[a] * c[b] - kr * c[p];
    w[a] -= rate;
    w[b] -= rate;
    w[p] += rate / (c[p] + T(1e-12));
  }
#pragma unroll
  for (int s = 0; s < NS; s++) wdot[i + s * n] = w[s];
}

// Quasi-steady-state species: a small dense solve by division, every coefficient live.
template <typename T, int NQ>
__global__ void qssa(const T *__restrict__ rf, const T *__restrict__ rb, T *__restrict__ out,
                     int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  T a[NQ][NQ], r[NQ];
#pragma unroll
  for (int j = 0; j < NQ; j++) {
    r[j] = rb[i + j * n];
#pragma unroll
    for (int k = 0; k < NQ; k++) a[j][k] = rf[i + (j * NQ + k) * n] + (j == k ? T(4) : T(0));
  }
#pragma unroll
  for (int j = 0; j < NQ; j++) {
    const T inv = T(1) / a[j][j];
#pragma unroll
    for (int k = j + 1; k < NQ; k++) {
      const T f = a[k][j] * inv;
#pragma unroll
      for (int m = j; m < NQ; m++) a[k][m] -= f * a[j][m];
      r[k] -= f * r[j];
    }
  }
#pragma unroll
  for (int j = NQ - 1; j >= 0; j--) {
    T s = r[j];
#pragma unroll
    for (int k = j + 1; k < NQ; k++) s -= a[j][k] * r[k];
    r[j] = s / a[j][j];
  }
#pragma unroll
  for (int j = 0; j < NQ; j++) out[i + j * n] = r[j];
}

// Mixture-averaged diffusion: pairwise terms with square roots of molecular weights.
template <typename T, int NS>
__global__ void diffusion(const T *__restrict__ y, const T *__restrict__ wt, T *__restrict__ d,
                          int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  T x[NS], sum[NS];
#pragma unroll
  for (int s = 0; s < NS; s++) {
    x[s] = y[i + s * n] + T(1e-20);
    sum[s] = 0;
  }
#pragma unroll
  for (int s = 0; s < NS; s++)
#pragma unroll
    for (int k = 0; k < NS; k++)
      if (k != s) sum[s] += x[k] / sqrt(wt[s] * wt[k] + T(s + k));
#pragma unroll
  for (int s = 0; s < NS; s++) d[i + s * n] = (T(1) - x[s]) / sum[s];
}

template __global__ void ratt<double, 12, 24>(const double *, const double *, double *, int);
template __global__ void ratt<double, 16, 32>(const double *, const double *, double *, int);
template __global__ void ratt<float, 22, 40>(const float *, const float *, float *, int);
template __global__ void ratt<float, 28, 48>(const float *, const float *, float *, int);
template __global__ void qssa<double, 5>(const double *, const double *, double *, int);
template __global__ void qssa<float, 7>(const float *, const float *, float *, int);
template __global__ void diffusion<double, 10>(const double *, const double *, double *, int);
template __global__ void diffusion<float, 18>(const float *, const float *, float *, int);
