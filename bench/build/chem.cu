// Build benchmark: a combustion-chemistry style module. Per-species rate kernels templated on
// the precision and the mechanism size; many live species values make ptxas take many
// registers (tunable), the bookkeeping kernels stay small (nothing to tune).
#include <cmath>

template <typename T, int NS>
__global__ void reaction_rates(const T *__restrict__ conc, const T *__restrict__ temp,
                               const T *__restrict__ coef, T *__restrict__ wdot, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T c[NS];
#pragma unroll
    for (int s = 0; s < NS; ++s) c[s] = conc[s * n + i];
    T t = temp[i], lt = log(t), rt = T(1) / t;
#pragma unroll
    for (int r = 0; r < NS; ++r) {
        T kf = exp(coef[3 * r] + coef[3 * r + 1] * lt - coef[3 * r + 2] * rt);
        T q = kf * c[r] * c[(r + 3) % NS] - T(0.5) * kf * c[(r + 1) % NS];
        c[(r + 5) % NS] += q;
        c[r] -= q;
    }
#pragma unroll
    for (int s = 0; s < NS; ++s) wdot[s * n + i] = c[s];
}

template <typename T, int NS>
__global__ void thermo_props(const T *__restrict__ temp, const T *__restrict__ nasa,
                             T *__restrict__ cp, T *__restrict__ h, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T t = temp[i];
    T acc_cp = 0, acc_h = 0;
    T v[NS];
#pragma unroll
    for (int s = 0; s < NS; ++s) {
        const T *a = nasa + 7 * s;
        v[s] = a[0] + t * (a[1] + t * (a[2] + t * (a[3] + t * a[4])));
        acc_h += v[s] * (a[5] + a[6] / t);
    }
#pragma unroll
    for (int s = 0; s < NS; ++s) acc_cp += v[s] * v[(s * 7 + 1) % NS];
    cp[i] = acc_cp;
    h[i] = acc_h;
}

template <typename T>
__global__ void mass_to_mole(const T *__restrict__ y, const T *__restrict__ mw, T *__restrict__ x,
                             int n, int ns) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T sum = 0;
    for (int s = 0; s < ns; ++s) sum += y[s * n + i] / mw[s];
    for (int s = 0; s < ns; ++s) x[s * n + i] = y[s * n + i] / (mw[s] * sum);
}

template <typename T>
__global__ void clip_negative(T *__restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] < T(0)) y[i] = T(0);
}

template <typename T>
__global__ void update_state(T *__restrict__ y, const T *__restrict__ dy, T dt, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += dt * dy[i];
}

template <typename T, int NS>
__global__ void jacobian_diag(const T *__restrict__ conc, const T *__restrict__ k,
                              T *__restrict__ jac, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T c[NS], d[NS];
#pragma unroll
    for (int s = 0; s < NS; ++s) { c[s] = conc[s * n + i]; d[s] = 0; }
#pragma unroll
    for (int r = 0; r < NS; ++r) {
        T kr = k[r];
        d[r] -= kr * c[(r + 1) % NS];
        d[(r + 1) % NS] -= kr * c[r];
        d[(r + 2) % NS] += kr * c[r] * c[(r + 1) % NS];
    }
#pragma unroll
    for (int s = 0; s < NS; ++s) jac[s * n + i] = d[s];
}

template <typename T>
__global__ void max_norm(const T *__restrict__ v, T *__restrict__ out, int n) {
    __shared__ T s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? fabs(v[i]) : T(0);
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) s[threadIdx.x] = fmax(s[threadIdx.x], s[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

#define CHEM(T)                                                                          \
    template __global__ void reaction_rates<T, 9>(const T *, const T *, const T *, T *, int);  \
    template __global__ void reaction_rates<T, 21>(const T *, const T *, const T *, T *, int); \
    template __global__ void reaction_rates<T, 32>(const T *, const T *, const T *, T *, int); \
    template __global__ void thermo_props<T, 12>(const T *, const T *, T *, T *, int);         \
    template __global__ void thermo_props<T, 24>(const T *, const T *, T *, T *, int);         \
    template __global__ void jacobian_diag<T, 16>(const T *, const T *, T *, int);            \
    template __global__ void jacobian_diag<T, 28>(const T *, const T *, T *, int);            \
    template __global__ void mass_to_mole<T>(const T *, const T *, T *, int, int);            \
    template __global__ void clip_negative<T>(T *, int);                                      \
    template __global__ void update_state<T>(T *, const T *, T, int);                         \
    template __global__ void max_norm<T>(const T *, T *, int);
CHEM(float)
CHEM(double)

// Latency-bound: a dependent index chase with per-species values held across it. ptxas keeps them all in
// registers (few warps); a lower budget spills them outside the loop and more warps hide the
// chase (tunable).
template <typename T, int B>
__global__ void species_chain(const int *__restrict__ link, const T *__restrict__ w,
                   T *__restrict__ out, int n, int steps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    T keep[B];
#pragma unroll
    for (int i = 0; i < B; ++i) keep[i] = w[t + i * n];
    int p = t;
    T acc = 0;
    for (int s = 0; s < steps; ++s) {
        p = link[p];
        acc += T(p & 511);
    }
#pragma unroll
    for (int i = 0; i < B; ++i) acc = acc * keep[i] + keep[(i + 5) % B];
    out[t] = acc;
}
template __global__ void species_chain<float, 24>(const int *, const float *, float *, int, int);
template __global__ void species_chain<float, 48>(const int *, const float *, float *, int, int);
template __global__ void species_chain<double, 24>(const int *, const double *, double *, int, int);
template __global__ void species_chain<double, 48>(const int *, const double *, double *, int, int);
