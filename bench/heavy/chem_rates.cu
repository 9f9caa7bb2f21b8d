// Register-heavy chemistry kernels in the manner of a combustion code's reaction step
// (S3D-style getrates: third-body efficiencies, falloff reactions, equilibrium constants from
// Gibbs energies, then production rates per species): per grid point every species'
// concentration and Gibbs energy and every reaction's rate constant are live together, and
// the rate constants need exponentials, logarithms, powers and IEEE divisions (the division
// and reciprocal slow paths; the sqrt slow path in the falloff centring). Written for issue
// 46's coverage measurement (bench/results/spill2smem-heavy.md).
template <typename T> __device__ __forceinline__ T ex(T x) { return exp(x); }
template <> __device__ __forceinline__ float ex<float>(float x) { return expf(x); }
template <typename T> __device__ __forceinline__ T lg(T x) { return log(x); }
template <> __device__ __forceinline__ float lg<float>(float x) { return logf(x); }
template <typename T> __device__ __forceinline__ T rt(T x) { return sqrt(x); }
template <typename T> __device__ __forceinline__ T mx(T a, T b) { return a > b ? a : b; }
template <> __device__ __forceinline__ float rt<float>(float x) { return sqrtf(x); }

// Gibbs energies of NS species from two NASA-style polynomial ranges, then equilibrium
// constants and reverse rates of NR reactions.
template <typename T, int NS, int NR>
__global__ void gibbs_rates(const T *__restrict__ temp, const T *__restrict__ y,
                            T *__restrict__ wdot, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const T t = temp[i] + T(500), tl = lg<T>(t), ti = T(1) / t;
  const bool hi = t > T(1000);
  T g[NS], c[NS];
#pragma unroll
  for (int s = 0; s < NS; s++) {
    const T a0 = hi ? T(3.1 + 0.01 * s) : T(2.9 + 0.02 * s), a1 = T(1e-3 * (s + 1));
    const T a5 = T(-1000.0 * (s + 2)), a6 = T(4.0 - 0.1 * s);
    g[s] = a0 * (T(1) - tl) - T(0.5) * a1 * t - a5 * ti + a6;
    c[s] = y[i + s * n] / T(1 + s);
  }
  T w[NS];
#pragma unroll
  for (int s = 0; s < NS; s++) w[s] = T(0);
#pragma unroll
  for (int r = 0; r < NR; r++) {
    const int a = (r * 3) % NS, b = (r * 5 + 2) % NS, p = (r * 7 + 1) % NS, q = (r + 4) % NS;
    const T kf = ex<T>(T(10.0 + 0.05 * r) + T(0.7) * tl - T(4000 + 31 * r) * ti);
    const T kc = ex<T>(g[a] + g[b] - g[p] - g[q]);
    const T kr = kf / mx(kc, T(1e-30));
    const T rate = kf * c[a] * c[b] - kr * c[p] * c[q];
    w[a] -= rate;
    w[b] -= rate;
    w[p] += rate;
    w[q] += rate;
  }
#pragma unroll
  for (int s = 0; s < NS; s++) wdot[i + s * n] = w[s] * T(1 + s);
}

// Troe falloff reactions: the third-body concentration from per-species efficiencies, the
// reduced pressure, and the broadening factor through logarithms, a power and divisions.
template <typename T, int NS, int NF>
__global__ void troe_falloff(const T *__restrict__ temp, const T *__restrict__ conc,
                             T *__restrict__ kout, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const T t = temp[i] + T(600), ti = T(1) / t, tl = lg<T>(t);
  T c[NS];
  T sum = 0;
#pragma unroll
  for (int s = 0; s < NS; s++) {
    c[s] = conc[i + s * n] + T(1e-8);
    sum += c[s];
  }
  T k[NF];
#pragma unroll
  for (int f = 0; f < NF; f++) {
    T m = sum;
#pragma unroll
    for (int s = 0; s < NS; s++) m += T(0.1 * ((s * 7 + f) % 5)) * c[s];
    const T k0 = ex<T>(T(30.0 + 0.2 * f) - T(1.5) * tl - T(500 + 20 * f) * ti);
    const T kinf = ex<T>(T(20.0 + 0.1 * f) + T(0.3) * tl - T(100 + 9 * f) * ti);
    const T pr = k0 * m / kinf;
    const T fcent = T(0.4) * ex<T>(-t / T(200 + f)) + T(0.6) * ex<T>(-t / T(1500 + f)) +
                    ex<T>(T(-5000 - f) * ti);
    const T lf = lg<T>(fcent + T(1e-30)) * T(0.4342944819);
    const T cc = T(-0.4) - T(0.67) * lf, nn = T(0.75) - T(1.27) * lf;
    const T lp = lg<T>(pr + T(1e-30)) * T(0.4342944819) + cc;
    const T fx = lf / (T(1) + (lp / (nn - T(0.14) * lp)) * (lp / (nn - T(0.14) * lp)));
    k[f] = kinf * pr / (T(1) + pr) * ex<T>(fx * T(2.302585093)) * rt<T>(t * T(1e-3));
  }
#pragma unroll
  for (int f = 0; f < NF; f++) {
    T v = k[f];
#pragma unroll
    for (int g = 0; g < NF; g++) v += k[g] * c[(f + g) % NS] / (c[(f * 3 + g) % NS] + T(1));
    kout[i + f * n] = v;
  }
}

// Mixture viscosity by Wilke's rule: the pairwise factors of NS species need a square root
// and a division each, with every species' viscosity and mole fraction live.
template <typename T, int NS>
__global__ void wilke(const T *__restrict__ temp, const T *__restrict__ x, T *__restrict__ mu,
                      int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const T t = temp[i] + T(300), st = rt<T>(t);
  T xs[NS], ms[NS];
#pragma unroll
  for (int s = 0; s < NS; s++) {
    xs[s] = x[i + s * n];
    ms[s] = T(1e-6 * (1 + 0.3 * s)) * st / (T(1) + T(100 + 10 * s) / t);
  }
  T out = 0;
#pragma unroll
  for (int a = 0; a < NS; a++) {
    T phi = 0;
#pragma unroll
    for (int b = 0; b < NS; b++) {
      const T wr = T((2.0 + a) / (2.0 + b));
      const T num = T(1) + rt<T>(ms[a] / ms[b]) * T(__builtin_sqrt(1.0 / wr));
      phi += xs[b] * num * num / rt<T>(T(8) * (T(1) + wr));
    }
    out += xs[a] * ms[a] / phi;
  }
  mu[i] = out;
}

template __global__ void gibbs_rates<float, 16, 24>(const float *, const float *, float *, int);
template __global__ void gibbs_rates<float, 22, 36>(const float *, const float *, float *, int);
template __global__ void gibbs_rates<float, 30, 48>(const float *, const float *, float *, int);
template __global__ void gibbs_rates<double, 12, 20>(const double *, const double *, double *, int);
template __global__ void gibbs_rates<double, 18, 30>(const double *, const double *, double *, int);
template __global__ void troe_falloff<float, 12, 6>(const float *, const float *, float *, int);
template __global__ void troe_falloff<float, 20, 10>(const float *, const float *, float *, int);
template __global__ void troe_falloff<double, 10, 6>(const double *, const double *, double *, int);
template __global__ void troe_falloff<double, 14, 8>(const double *, const double *, double *, int);
template __global__ void wilke<float, 10>(const float *, const float *, float *, int);
template __global__ void wilke<float, 16>(const float *, const float *, float *, int);
template __global__ void wilke<double, 8>(const double *, const double *, double *, int);
template __global__ void wilke<double, 12>(const double *, const double *, double *, int);
