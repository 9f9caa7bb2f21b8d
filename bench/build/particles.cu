// Build benchmark: particle methods. Pairwise force kernels with register tiles of targets
// (tunable), neighbour bookkeeping and integration kernels (nothing to tune).

template <typename T, int TILE>
__global__ void pair_forces(const T *__restrict__ pos, T *__restrict__ force, int n, T eps2) {
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * TILE;
    T px[TILE], py[TILE], pz[TILE], fx[TILE], fy[TILE], fz[TILE];
#pragma unroll
    for (int t = 0; t < TILE; ++t) {
        int i = min(base + t, n - 1);
        px[t] = pos[3 * i]; py[t] = pos[3 * i + 1]; pz[t] = pos[3 * i + 2];
        fx[t] = fy[t] = fz[t] = 0;
    }
    for (int j = 0; j < n; ++j) {
        T qx = pos[3 * j], qy = pos[3 * j + 1], qz = pos[3 * j + 2];
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            T dx = qx - px[t], dy = qy - py[t], dz = qz - pz[t];
            T r2 = dx * dx + dy * dy + dz * dz + eps2;
            T inv = rsqrt(r2);
            T s = inv * inv * inv;
            fx[t] += dx * s; fy[t] += dy * s; fz[t] += dz * s;
        }
    }
#pragma unroll
    for (int t = 0; t < TILE; ++t)
        if (base + t < n) {
            force[3 * (base + t)] = fx[t];
            force[3 * (base + t) + 1] = fy[t];
            force[3 * (base + t) + 2] = fz[t];
        }
}

template <typename T, int K>
__global__ void sph_density(const T *__restrict__ pos, const int *__restrict__ nbr, T *__restrict__ rho,
                            int n, T h) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T r[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        int j = nbr[i * K + k];
        T dx = pos[3 * j] - pos[3 * i], dy = pos[3 * j + 1] - pos[3 * i + 1];
        r[k] = dx * dx + dy * dy;
    }
    T acc = 0, h2 = h * h;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        T q = h2 - r[k];
        acc += q > 0 ? q * q * q * r[(k + 1) % K] : T(0);
    }
    rho[i] = acc;
}

template <typename T>
__global__ void leapfrog(T *__restrict__ x, T *__restrict__ v, const T *__restrict__ f, T dt, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { v[i] += dt * f[i]; x[i] += dt * v[i]; }
}

template <typename T>
__global__ void cell_index(const T *__restrict__ pos, int *__restrict__ cell, T inv, int g, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int cx = min(g - 1, max(0, int(pos[3 * i] * inv)));
    int cy = min(g - 1, max(0, int(pos[3 * i + 1] * inv)));
    int cz = min(g - 1, max(0, int(pos[3 * i + 2] * inv)));
    cell[i] = (cz * g + cy) * g + cx;
}

__global__ void count_cells(const int *__restrict__ cell, int *__restrict__ count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&count[cell[i]], 1);
}

template <typename T>
__global__ void kinetic_energy(const T *__restrict__ v, T *__restrict__ e, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) e[i] = T(0.5) * (v[3 * i] * v[3 * i] + v[3 * i + 1] * v[3 * i + 1] + v[3 * i + 2] * v[3 * i + 2]);
}

#define PARTICLES(T)                                                               \
    template __global__ void pair_forces<T, 4>(const T *, T *, int, T);           \
    template __global__ void pair_forces<T, 8>(const T *, T *, int, T);           \
    template __global__ void pair_forces<T, 12>(const T *, T *, int, T);          \
    template __global__ void sph_density<T, 16>(const T *, const int *, T *, int, T); \
    template __global__ void sph_density<T, 32>(const T *, const int *, T *, int, T); \
    template __global__ void leapfrog<T>(T *, T *, const T *, T, int);            \
    template __global__ void cell_index<T>(const T *, int *, T, int, int);        \
    template __global__ void kinetic_energy<T>(const T *, T *, int);
PARTICLES(float)
PARTICLES(double)

// Latency-bound: a dependent index chase with neighbour values held across it. ptxas keeps them all in
// registers (few warps); a lower budget spills them outside the loop and more warps hide the
// chase (tunable).
template <typename T, int B>
__global__ void neighbour_chain(const int *__restrict__ link, const T *__restrict__ w,
                   T *__restrict__ out, int n, int steps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    T keep[B];
#pragma unroll
    for (int i = 0; i < B; ++i) keep[i] = w[t + i * n];
    int p = t;
    T acc = 0;
    for (int s = 0; s < steps; ++s) {
        p = link[p];
        acc += T(p & 4095);
    }
#pragma unroll
    for (int i = 0; i < B; ++i) acc = acc * keep[i] + keep[(i + 1) % B];
    out[t] = acc;
}
template __global__ void neighbour_chain<float, 20>(const int *, const float *, float *, int, int);
template __global__ void neighbour_chain<float, 40>(const int *, const float *, float *, int, int);
template __global__ void neighbour_chain<double, 20>(const int *, const double *, double *, int, int);
template __global__ void neighbour_chain<double, 40>(const int *, const double *, double *, int, int);
