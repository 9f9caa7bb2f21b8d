// Spill corpus, launch bounds: no register flag; each kernel's own `__launch_bounds__(256, 4)`
// or `__launch_bounds__(128, 8)` (1024 resident threads per SM, so at most 64 registers) is
// the limit, and each keeps more than 64 registers of state live across a run-time loop.
#include <cstdint>

// SGEMM 8×8 register tile with the A/B panels staged through static shared memory.
#define LB_T 8
__global__ void __launch_bounds__(256, 4)
lb256_sgemm_smem(const float *a, const float *b, float *c, int m, int n, int k)
{
    __shared__ float sa[8][128 + 1], sb[8][128 + 1];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    int r0 = blockIdx.y * 128, c0 = blockIdx.x * 128;
    float acc[LB_T][LB_T] = {};
    for (int p0 = 0; p0 < k; p0 += 8) {
        for (int e = threadIdx.x; e < 8 * 128; e += 256) {
            int kk = e / 128, j = e % 128;
            sa[kk][j] = a[(size_t)((p0 + kk) % k) * m + (r0 + j) % m];
            sb[kk][j] = b[(size_t)((p0 + kk) % k) * n + (c0 + j) % n];
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {
            float ra[LB_T], rb[LB_T];
#pragma unroll
            for (int i = 0; i < LB_T; i++) ra[i] = sa[kk][ty * LB_T + i];
#pragma unroll
            for (int j = 0; j < LB_T; j++) rb[j] = sb[kk][tx * LB_T + j];
#pragma unroll
            for (int i = 0; i < LB_T; i++)
#pragma unroll
                for (int j = 0; j < LB_T; j++) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < LB_T; i++)
#pragma unroll
        for (int j = 0; j < LB_T; j++)
            c[(size_t)((r0 + ty * LB_T + i) % m) * n + (c0 + tx * LB_T + j) % n] = acc[i][j];
}

// FP64 block reduction of 40 moments (sums of x^p for p = 1..40) per element: the moments
// stay in registers across the grid-stride loop, then go through shared memory.
#define LB_MOM 40
__global__ void __launch_bounds__(256, 4) lb256_moments_f64(const double *x, double *out, int n)
{
    __shared__ double part[256];
    double m[LB_MOM];
#pragma unroll
    for (int p = 0; p < LB_MOM; p++) m[p] = 0.0;
    for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) {
        double v = x[i], q = v;
#pragma unroll
        for (int p = 0; p < LB_MOM; p++) { m[p] += q; q *= v; }
    }
#pragma unroll
    for (int p = 0; p < LB_MOM; p++) {
        part[threadIdx.x] = m[p];
        __syncthreads();
        for (int s = 128; s > 0; s >>= 1) {
            if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) out[blockIdx.x * LB_MOM + p] = part[0];
        __syncthreads();
    }
}

// Lennard-Jones forces, float4 positions, eight atoms per thread, neighbour list of `nn`.
#define LB_A 8
__global__ void __launch_bounds__(256, 4)
lb256_lj_f4(const float4 *pos, const int *nbr, float4 *force, int n, int nn, float cut2)
{
    int i0 = (blockIdx.x * 256 + threadIdx.x) * LB_A;
    float4 p[LB_A], f[LB_A];
#pragma unroll
    for (int a = 0; a < LB_A; a++) { p[a] = pos[(i0 + a) % n]; f[a] = make_float4(0.f, 0.f, 0.f, 0.f); }
    for (int j = 0; j < nn; j++) {
        float4 q = pos[nbr[(size_t)(i0 % n) * nn + j]];
#pragma unroll
        for (int a = 0; a < LB_A; a++) {
            float dx = p[a].x - q.x, dy = p[a].y - q.y, dz = p[a].z - q.z;
            float r2 = dx * dx + dy * dy + dz * dz;
            if (r2 < cut2 && r2 > 0.f) {
                float i2 = 1.f / r2, i6 = i2 * i2 * i2;
                float s = 24.f * i2 * i6 * (2.f * i6 - 1.f);
                f[a].x += s * dx; f[a].y += s * dy; f[a].z += s * dz; f[a].w += 4.f * i6 * (i6 - 1.f);
            }
        }
    }
#pragma unroll
    for (int a = 0; a < LB_A; a++) force[(i0 + a) % n] = f[a];
}

// Philox-like counter-based generator, 8×4 interleaved streams plus keys, in 64-bit products.
__global__ void __launch_bounds__(256, 4) lb256_philox_x8(uint32_t *out, uint32_t seed, int rounds)
{
    uint32_t t = blockIdx.x * 256 + threadIdx.x;
    uint32_t c[8][4], k[8][2];
#pragma unroll
    for (int s = 0; s < 8; s++) {
#pragma unroll
        for (int w = 0; w < 4; w++) c[s][w] = t * 8 + s + w * 0x1000193u;
        k[s][0] = seed ^ (s * 0x9e3779b9u); k[s][1] = seed + s * 0xbb67ae85u;
    }
    uint32_t acc[32] = {};
    for (int r = 0; r < rounds; r++) {
#pragma unroll
        for (int s = 0; s < 8; s++) {
            uint64_t p0 = (uint64_t)0xd2511f53u * c[s][0], p1 = (uint64_t)0xcd9e8d57u * c[s][2];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[s][1] ^ k[s][0];
            uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[s][3] ^ k[s][1];
            c[s][1] = (uint32_t)p1; c[s][3] = (uint32_t)p0; c[s][0] = n0; c[s][2] = n2;
            k[s][0] += 0x9e3779b9u; k[s][1] += 0xbb67ae85u;
#pragma unroll
            for (int w = 0; w < 4; w++) acc[s * 4 + w] ^= c[s][w] + r;
        }
    }
#pragma unroll
    for (int w = 0; w < 32; w++) out[32 * t + w] = acc[w] ^ c[w / 4][w % 4];
}

// DGEMM 6×6 double tile.
#define LB_D 6
__global__ void __launch_bounds__(128, 8)
lb128_dgemm_6x6(const double *a, const double *b, double *c, int m, int n, int k)
{
    int r0 = (blockIdx.y * 8 + threadIdx.x / 16) * LB_D;
    int c0 = (blockIdx.x * 16 + threadIdx.x % 16) * LB_D;
    double acc[LB_D][LB_D] = {};
    for (int p = 0; p < k; p++) {
        double ra[LB_D], rb[LB_D];
#pragma unroll
        for (int i = 0; i < LB_D; i++) ra[i] = a[(size_t)p * m + (r0 + i) % m];
#pragma unroll
        for (int j = 0; j < LB_D; j++) rb[j] = b[(size_t)p * n + (c0 + j) % n];
#pragma unroll
        for (int i = 0; i < LB_D; i++)
#pragma unroll
            for (int j = 0; j < LB_D; j++) acc[i][j] = fma(ra[i], rb[j], acc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < LB_D; i++)
#pragma unroll
        for (int j = 0; j < LB_D; j++) c[(size_t)((r0 + i) % m) * n + (c0 + j) % n] = acc[i][j];
}

// Wave equation, leapfrog, a 36-deep column of (u, u_prev) pairs per thread: 72 live values.
#define LB_W 36
__global__ void __launch_bounds__(128, 8)
lb128_wave_column(const float *u0, const float *u1, float *out, int nx, int steps, float c2)
{
    int x = blockIdx.x * 128 + threadIdx.x;
    float u[LB_W], up[LB_W];
#pragma unroll
    for (int z = 0; z < LB_W; z++) { u[z] = u1[(size_t)z * nx + x % nx]; up[z] = u0[(size_t)z * nx + x % nx]; }
    for (int s = 0; s < steps; s++) {
        float below = 0.f;
#pragma unroll
        for (int z = 0; z < LB_W; z++) {
            float above = z + 1 < LB_W ? u[z + 1] : 0.f;
            float nxt = 2.f * u[z] - up[z] + c2 * (below - 2.f * u[z] + above);
            below = u[z];
            up[z] = u[z];
            u[z] = nxt;
        }
    }
#pragma unroll
    for (int z = 0; z < LB_W; z++) out[(size_t)z * nx + x % nx] = u[z];
}

// Histogram equalisation in dynamic shared memory (`extern __shared__`, bins chosen at
// launch), with 72 per-thread partial counters live across the input loop.
#define LB_H 72
__global__ void __launch_bounds__(128, 8)
lb128_dyn_hist(const uint8_t *img, unsigned *hist, int n, int bins)
{
    extern __shared__ unsigned shist[];
    for (int b = threadIdx.x; b < bins; b += 128) shist[b] = 0;
    __syncthreads();
    unsigned local[LB_H];
#pragma unroll
    for (int h = 0; h < LB_H; h++) local[h] = 0;
    for (int i = blockIdx.x * 128 + threadIdx.x; i < n; i += gridDim.x * 128) {
        unsigned v = img[i];
#pragma unroll
        for (int h = 0; h < LB_H; h++) local[h] += (v * (h + 1)) >> 8 == (unsigned)h;
        atomicAdd(&shist[v % bins], 1u);
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < LB_H; h++) atomicAdd(&shist[h % bins], local[h]);
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += 128) atomicAdd(&hist[b], shist[b]);
}

// Templated RK4 step for a coupled nonlinear system (float and double): the state, the
// running sum of the stages and the stage being evaluated stay live through each step.
template <typename T, int D>
__device__ __forceinline__ void lb_rhs(const T (&y)[D], T (&dy)[D], T k)
{
#pragma unroll
    for (int d = 0; d < D; d++) dy[d] = -k * y[d] + y[(d + 1) % D] * y[(d + 4) % D];
}
template <typename T, int D>
__global__ void __launch_bounds__(128, 8) lb128_rk4(const T *y0, T *y1, T k, T h, int steps)
{
    int t = blockIdx.x * 128 + threadIdx.x;
    T y[D], kk[D], sum[D], tmp[D];
#pragma unroll
    for (int d = 0; d < D; d++) y[d] = y0[t * D + d];
    for (int s = 0; s < steps; s++) {
        lb_rhs<T, D>(y, kk, k);
#pragma unroll
        for (int d = 0; d < D; d++) { sum[d] = kk[d]; tmp[d] = y[d] + T(0.5) * h * kk[d]; }
        lb_rhs<T, D>(tmp, kk, k);
#pragma unroll
        for (int d = 0; d < D; d++) { sum[d] += 2 * kk[d]; tmp[d] = y[d] + T(0.5) * h * kk[d]; }
        lb_rhs<T, D>(tmp, kk, k);
#pragma unroll
        for (int d = 0; d < D; d++) { sum[d] += 2 * kk[d]; tmp[d] = y[d] + h * kk[d]; }
        lb_rhs<T, D>(tmp, kk, k);
#pragma unroll
        for (int d = 0; d < D; d++) y[d] += h / T(6) * (sum[d] + kk[d]);
    }
#pragma unroll
    for (int d = 0; d < D; d++) y1[t * D + d] = y[d];
}
template __global__ void lb128_rk4<float, 24>(const float *, float *, float, float, int);
template __global__ void lb128_rk4<double, 12>(const double *, double *, double, double, int);
