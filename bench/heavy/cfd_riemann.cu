// Register-heavy approximate Riemann solvers for the compressible Euler equations, in the
// manner of finite-volume CFD codes (Rusanov, HLL and Roe-averaged fluxes over the faces of a
// cell): the left and right states of several faces, their primitive variables and the
// wave-speed estimates are live at once, and the sound speeds, Roe averages and the
// normalisations need IEEE square roots and divisions (the sqrt and division slow paths in
// single precision, the reciprocal and division slow paths in double). Written for issue 46's
// coverage measurement (bench/results/spill2smem-heavy.md).
#define GAM 1.4

template <typename T> __device__ __forceinline__ T rt(T x) { return sqrt(x); }
template <> __device__ __forceinline__ float rt<float>(float x) { return sqrtf(x); }
template <typename T> __device__ __forceinline__ T mx2(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T mn2(T a, T b) { return a < b ? a : b; }

// The primitive variables of a conserved state (density, momentum, total energy).
template <typename T> struct Prim {
  T r, u, v, w, p, h, c;
};

template <typename T>
__device__ __forceinline__ Prim<T> prim(T r, T mu, T mv, T mw, T e) {
  Prim<T> q;
  q.r = r;
  q.u = mu / r;
  q.v = mv / r;
  q.w = mw / r;
  q.p = T(GAM - 1) * (e - T(0.5) * r * (q.u * q.u + q.v * q.v + q.w * q.w));
  q.h = (e + q.p) / r;
  q.c = rt<T>(T(GAM) * (q.p < T(0) ? -q.p : q.p) / r);
  return q;
}

// Rusanov flux over F faces, every face's two states loaded before any flux is formed.
template <typename T, int F>
__global__ void rusanov(const T *__restrict__ u, const int *__restrict__ nb, T *__restrict__ res,
                        int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  T s[F][5];
#pragma unroll
  for (int f = 0; f < F; f++) {
    const int j = nb[i * F + f];
#pragma unroll
    for (int k = 0; k < 5; k++) s[f][k] = u[j + k * n] + (k == 0 || k == 4 ? T(2) : T(0));
  }
  const Prim<T> a = prim<T>(u[i] + T(2), u[i + n], u[i + 2 * n], u[i + 3 * n], u[i + 4 * n] + T(2));
  T acc[5] = {0, 0, 0, 0, 0};
#pragma unroll
  for (int f = 0; f < F; f++) {
    const Prim<T> b = prim<T>(s[f][0], s[f][1], s[f][2], s[f][3], s[f][4]);
    const T nx = T(f % 3 == 0), ny = T(f % 3 == 1), nz = T(f % 3 == 2);
    const T una = a.u * nx + a.v * ny + a.w * nz, unb = b.u * nx + b.v * ny + b.w * nz;
    const T smax = mx2<T>(rt<T>(una * una) + a.c, rt<T>(unb * unb) + b.c);
    acc[0] += T(0.5) * (a.r * una + b.r * unb) - T(0.5) * smax * (b.r - a.r);
    acc[1] += T(0.5) * (a.r * a.u * una + a.p * nx + b.r * b.u * unb + b.p * nx) -
              T(0.5) * smax * (s[f][1] - a.r * a.u);
    acc[2] += T(0.5) * (a.r * a.v * una + a.p * ny + b.r * b.v * unb + b.p * ny) -
              T(0.5) * smax * (s[f][2] - a.r * a.v);
    acc[3] += T(0.5) * (a.r * a.w * una + a.p * nz + b.r * b.w * unb + b.p * nz) -
              T(0.5) * smax * (s[f][3] - a.r * a.w);
    acc[4] += T(0.5) * (a.r * a.h * una + b.r * b.h * unb) - T(0.5) * smax * (s[f][4] - a.h);
  }
#pragma unroll
  for (int k = 0; k < 5; k++) res[i + k * n] = acc[k] / T(F);
}

// HLL flux with Roe-averaged wave speeds: the Roe averages take square roots of both
// densities and a division by their sum.
template <typename T, int F>
__global__ void hll_roe(const T *__restrict__ ul, const T *__restrict__ ur, T *__restrict__ flux,
                        int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  T l[F][5], r[F][5];
#pragma unroll
  for (int f = 0; f < F; f++)
#pragma unroll
    for (int k = 0; k < 5; k++) {
      l[f][k] = ul[i + (f * 5 + k) * n] + (k == 0 || k == 4 ? T(3) : T(0));
      r[f][k] = ur[i + (f * 5 + k) * n] + (k == 0 || k == 4 ? T(3) : T(0));
    }
  T out[5] = {0, 0, 0, 0, 0};
#pragma unroll
  for (int f = 0; f < F; f++) {
    const Prim<T> a = prim<T>(l[f][0], l[f][1], l[f][2], l[f][3], l[f][4]);
    const Prim<T> b = prim<T>(r[f][0], r[f][1], r[f][2], r[f][3], r[f][4]);
    const T sa = rt<T>(a.r), sb = rt<T>(b.r), inv = T(1) / (sa + sb);
    const T uh = (sa * a.u + sb * b.u) * inv;
    const T hh = (sa * a.h + sb * b.h) * inv;
    const T ch = rt<T>(T(GAM - 1) * mx2<T>(hh - T(0.5) * uh * uh, T(1e-6)));
    const T sl = mn2<T>(a.u - a.c, uh - ch), sr = mx2<T>(b.u + b.c, uh + ch);
    const T fl[5] = {a.r * a.u, a.r * a.u * a.u + a.p, a.r * a.u * a.v, a.r * a.u * a.w,
                     a.r * a.u * a.h};
    const T fr[5] = {b.r * b.u, b.r * b.u * b.u + b.p, b.r * b.u * b.v, b.r * b.u * b.w,
                     b.r * b.u * b.h};
    const T den = T(1) / (sr - sl + T(1e-12));
#pragma unroll
    for (int k = 0; k < 5; k++) {
      const T hllf = (sr * fl[k] - sl * fr[k] + sl * sr * (r[f][k] - l[f][k])) * den;
      out[k] += sl >= T(0) ? fl[k] : (sr <= T(0) ? fr[k] : hllf);
    }
  }
#pragma unroll
  for (int k = 0; k < 5; k++) flux[i + k * n] = out[k];
}

// Viscous fluxes from the velocity gradients of a cell and its neighbours: the stress tensor
// of each neighbour pair and Sutherland's viscosity (a square root and a division) live at once.
template <typename T, int NB>
__global__ void viscous(const T *__restrict__ q, const T *__restrict__ grad,
                        T *__restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  T g[NB][9], tmp[NB];
#pragma unroll
  for (int b = 0; b < NB; b++) {
    tmp[b] = q[i + b * n] + T(250);
#pragma unroll
    for (int k = 0; k < 9; k++) g[b][k] = grad[i + (b * 9 + k) * n];
  }
  T fx = 0, fy = 0, fz = 0, fe = 0;
#pragma unroll
  for (int b = 0; b < NB; b++) {
    const T t = tmp[b];
    const T mu = T(1.458e-6) * t * rt<T>(t) / (t + T(110.4));
    const T div = g[b][0] + g[b][4] + g[b][8];
    const T txx = mu * (T(2) * g[b][0] - T(2.0 / 3.0) * div);
    const T tyy = mu * (T(2) * g[b][4] - T(2.0 / 3.0) * div);
    const T tzz = mu * (T(2) * g[b][8] - T(2.0 / 3.0) * div);
    const T txy = mu * (g[b][1] + g[b][3]), txz = mu * (g[b][2] + g[b][6]);
    const T tyz = mu * (g[b][5] + g[b][7]);
#pragma unroll
    for (int c = 0; c < NB; c++) {
      const T w = T(1) / (T(1 + b + c) + tmp[c] * T(1e-3));
      fx += w * (txx * g[c][0] + txy * g[c][1] + txz * g[c][2]);
      fy += w * (txy * g[c][3] + tyy * g[c][4] + tyz * g[c][5]);
      fz += w * (txz * g[c][6] + tyz * g[c][7] + tzz * g[c][8]);
    }
    fe += mu * t / (T(0.72) * (t + T(1)));
  }
  out[i] = fx;
  out[i + n] = fy;
  out[i + 2 * n] = fz;
  out[i + 3 * n] = fe;
}

template __global__ void rusanov<float, 4>(const float *, const int *, float *, int);
template __global__ void rusanov<float, 6>(const float *, const int *, float *, int);
template __global__ void rusanov<float, 8>(const float *, const int *, float *, int);
template __global__ void rusanov<double, 4>(const double *, const int *, double *, int);
template __global__ void rusanov<double, 6>(const double *, const int *, double *, int);
template __global__ void hll_roe<float, 2>(const float *, const float *, float *, int);
template __global__ void hll_roe<float, 3>(const float *, const float *, float *, int);
template __global__ void hll_roe<float, 4>(const float *, const float *, float *, int);
template __global__ void hll_roe<double, 2>(const double *, const double *, double *, int);
template __global__ void hll_roe<double, 3>(const double *, const double *, double *, int);
template __global__ void viscous<float, 3>(const float *, const float *, float *, int);
template __global__ void viscous<float, 4>(const float *, const float *, float *, int);
template __global__ void viscous<float, 6>(const float *, const float *, float *, int);
template __global__ void viscous<double, 3>(const double *, const double *, double *, int);
template __global__ void viscous<double, 4>(const double *, const double *, double *, int);
