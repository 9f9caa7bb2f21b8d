// Register-heavy kernels in the manner of Rodinia's CFD solvers (euler3d's compute_flux,
// compute_step_factor, time_step): per element the flow variables and their neighbours'
// are live at once, and the speed of sound and the velocities need IEEE square roots and
// divisions, which call the compiler's helper subroutines (the sqrt slow path, the
// single-precision division and the double-precision reciprocal slow paths). Written for
// issue 46's coverage measurement (bench/results/spill2smem-heavy.md); not from Rodinia.
#define NNB 4
#define GAMMA 1.4

template <typename T>
__device__ __forceinline__ void flux_contribution(T density, T mx, T my, T mz, T e, T p,
                                                  T *fx, T *fy, T *fz) {
  const T vx = mx / density, vy = my / density, vz = mz / density;
  const T de_p = e + p;
  fx[0] = mx;             fy[0] = my;             fz[0] = mz;
  fx[1] = mx * vx + p;    fy[1] = mx * vy;        fz[1] = mx * vz;
  fx[2] = fx[1] - p;      fy[2] = my * vy + p;    fz[2] = my * vz;
  fx[3] = mz * vx;        fy[3] = mz * vy;        fz[3] = mz * vz + p;
  fx[4] = vx * de_p;      fy[4] = vy * de_p;      fz[4] = vz * de_p;
}

template <typename T>
__device__ __forceinline__ T sqrt_t(T x) { return sqrt(x); }
template <>
__device__ __forceinline__ float sqrt_t<float>(float x) { return sqrtf(x); }

template <typename T>
__global__ void compute_flux(int nelr, const int *__restrict__ nb, const T *__restrict__ normals,
                             const T *__restrict__ vars, T *__restrict__ fluxes, T smoothing) {
  const int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i >= nelr) return;
  const T d = vars[i], mx = vars[i + nelr], my = vars[i + 2 * nelr], mz = vars[i + 3 * nelr],
          e = vars[i + 4 * nelr];
  const T vx = mx / d, vy = my / d, vz = mz / d;
  const T speed2 = vx * vx + vy * vy + vz * vz;
  const T p = T(GAMMA - 1) * (e - T(0.5) * d * speed2);
  const T sos = sqrt_t<T>(T(GAMMA) * p / d);
  T fx[5], fy[5], fz[5];
  flux_contribution(d, mx, my, mz, e, p, fx, fy, fz);
  T acc[5] = {0, 0, 0, 0, 0};
#pragma unroll
  for (int j = 0; j < NNB; j++) {
    const int n = nb[i + j * nelr];
    const T nx = normals[i + (j * 3 + 0) * nelr], ny = normals[i + (j * 3 + 1) * nelr],
            nz = normals[i + (j * 3 + 2) * nelr];
    const T nlen = sqrt_t<T>(nx * nx + ny * ny + nz * nz);
    if (n >= 0) {
      const T dn = vars[n], mxn = vars[n + nelr], myn = vars[n + 2 * nelr],
              mzn = vars[n + 3 * nelr], en = vars[n + 4 * nelr];
      const T vxn = mxn / dn, vyn = myn / dn, vzn = mzn / dn;
      const T s2n = vxn * vxn + vyn * vyn + vzn * vzn;
      const T pn = T(GAMMA - 1) * (en - T(0.5) * dn * s2n);
      const T sosn = sqrt_t<T>(T(GAMMA) * pn / dn);
      T fxn[5], fyn[5], fzn[5];
      flux_contribution(dn, mxn, myn, mzn, en, pn, fxn, fyn, fzn);
      const T factor = -nlen * smoothing * T(0.5) *
                       (sqrt_t<T>(speed2) + sqrt_t<T>(s2n) + sos + sosn);
      acc[0] += factor * (d - dn);
      acc[1] += factor * (mx - mxn);
      acc[2] += factor * (my - myn);
      acc[3] += factor * (mz - mzn);
      acc[4] += factor * (e - en);
#pragma unroll
      for (int k = 0; k < 5; k++)
        acc[k] += T(0.5) * (nx * (fx[k] + fxn[k]) + ny * (fy[k] + fyn[k]) + nz * (fz[k] + fzn[k]));
    } else {
      acc[1] += nx * p;
      acc[2] += ny * p;
      acc[3] += nz * p;
    }
  }
#pragma unroll
  for (int k = 0; k < 5; k++) fluxes[i + k * nelr] = acc[k];
}

// Flux over a stencil of neighbours kept in registers: eight at once.
template <typename T, int W>
__global__ void flux_window(int nelr, const T *__restrict__ vars, T *__restrict__ out) {
  const int i = blockDim.x * blockIdx.x + threadIdx.x;
  T d[W], m[W], e[W];
#pragma unroll
  for (int j = 0; j < W; j++) {
    d[j] = vars[i + j * nelr] + T(1);
    m[j] = vars[i + (j + W) * nelr];
    e[j] = vars[i + (j + 2 * W) * nelr] + T(2);
  }
  T acc = 0;
#pragma unroll
  for (int j = 0; j < W; j++) {
    const T v = m[j] / d[j];
    const T p = T(GAMMA - 1) * (e[j] - T(0.5) * d[j] * v * v);
    const T c = sqrt_t<T>(T(GAMMA) * (p < T(0) ? -p : p) / d[j]);
#pragma unroll
    for (int k = 0; k < W; k++) {
      m[k] = m[k] * T(0.999) + c * d[(k + j) % W];
      e[k] += v * m[(k + 3) % W];
    }
    acc += c + v;
  }
#pragma unroll
  for (int j = 0; j < W; j++) out[i + j * nelr] = m[j] + e[j] + acc;
}

template <typename T>
__global__ void step_factor(int nelr, const T *__restrict__ vars, const T *__restrict__ areas,
                            T *__restrict__ sf) {
  const int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i >= nelr) return;
  const T d = vars[i], mx = vars[i + nelr], my = vars[i + 2 * nelr], mz = vars[i + 3 * nelr],
          e = vars[i + 4 * nelr];
  const T s2 = (mx * mx + my * my + mz * mz) / (d * d);
  const T p = T(GAMMA - 1) * (e - T(0.5) * d * s2);
  sf[i] = T(0.5) / (sqrt_t<T>(areas[i]) * (sqrt_t<T>(s2) + sqrt_t<T>(T(GAMMA) * p / d)));
}

template __global__ void compute_flux<float>(int, const int *, const float *, const float *,
                                             float *, float);
template __global__ void compute_flux<double>(int, const int *, const double *, const double *,
                                              double *, double);
template __global__ void flux_window<float, 12>(int, const float *, float *);
template __global__ void flux_window<float, 16>(int, const float *, float *);
template __global__ void flux_window<double, 8>(int, const double *, double *);
template __global__ void flux_window<double, 10>(int, const double *, double *);
template __global__ void step_factor<float>(int, const float *, const float *, float *);
template __global__ void step_factor<double>(int, const double *, const double *, double *);
