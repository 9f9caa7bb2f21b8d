// Spill corpus, cap 32: built with `-maxrregcount=32` (manifest.json). Every kernel keeps
// more than 32 registers of state live across a loop whose trip count is only known at run
// time, so ptxas must spill at this cap on every arch from sm_75 to sm_90.
#include <cstdint>

// 3-D diffusion, one thread per (x, y) column: the column's z-slab lives in registers and is
// relaxed `steps` times (a Jacobi sweep along z) before the x/y neighbours are folded in.
#define C32_Z 36
__global__ void c32_stencil_column(const float *in, float *out, int nx, int ny, int steps)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x >= nx) return;
    size_t plane = (size_t)nx * ny;
    const float *col = in + (size_t)y * nx + x;
    float v[C32_Z];
#pragma unroll
    for (int z = 0; z < C32_Z; z++) v[z] = col[z * plane];
    for (int s = 0; s < steps; s++) {
        float prev = v[0];
#pragma unroll
        for (int z = 1; z < C32_Z - 1; z++) {
            float cur = v[z];
            v[z] = 0.25f * prev + 0.5f * cur + 0.25f * v[z + 1];
            prev = cur;
        }
    }
    int xl = x > 0 ? x - 1 : x, xr = x + 1 < nx ? x + 1 : x;
#pragma unroll
    for (int z = 0; z < C32_Z; z++) {
        const float *p = in + z * plane + (size_t)y * nx;
        out[z * plane + (size_t)y * nx + x] = 0.6f * v[z] + 0.2f * (p[xl] + p[xr]);
    }
}

// All-pairs gravity: each thread integrates six bodies against every body in the system.
#define C32_B 6
__global__ void c32_nbody(const float4 *pos, float4 *acc, int n, float eps2)
{
    int i0 = (blockIdx.x * blockDim.x + threadIdx.x) * C32_B;
    float px[C32_B], py[C32_B], pz[C32_B], ax[C32_B], ay[C32_B], az[C32_B];
#pragma unroll
    for (int b = 0; b < C32_B; b++) {
        float4 p = pos[(i0 + b) % n];
        px[b] = p.x; py[b] = p.y; pz[b] = p.z;
        ax[b] = ay[b] = az[b] = 0.f;
    }
    for (int j = 0; j < n; j++) {
        float4 q = pos[j];
#pragma unroll
        for (int b = 0; b < C32_B; b++) {
            float dx = q.x - px[b], dy = q.y - py[b], dz = q.z - pz[b];
            float r2 = dx * dx + dy * dy + dz * dz + eps2;
            float inv = rsqrtf(r2);
            float s = q.w * inv * inv * inv;
            ax[b] += dx * s; ay[b] += dy * s; az[b] += dz * s;
        }
    }
#pragma unroll
    for (int b = 0; b < C32_B; b++) acc[(i0 + b) % n] = make_float4(ax[b], ay[b], az[b], 0.f);
}

// C = A·B with a 6×6 register tile per thread (A column-major, B row-major panels).
#define C32_T 6
__global__ void c32_gemm_tile(const float *a, const float *b, float *c, int m, int n, int k)
{
    int r0 = (blockIdx.y * blockDim.y + threadIdx.y) * C32_T;
    int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * C32_T;
    float acc[C32_T][C32_T];
#pragma unroll
    for (int i = 0; i < C32_T; i++)
#pragma unroll
        for (int j = 0; j < C32_T; j++) acc[i][j] = 0.f;
    for (int p = 0; p < k; p++) {
        float ra[C32_T], rb[C32_T];
#pragma unroll
        for (int i = 0; i < C32_T; i++) ra[i] = a[(size_t)p * m + (r0 + i) % m];
#pragma unroll
        for (int j = 0; j < C32_T; j++) rb[j] = b[(size_t)p * n + (c0 + j) % n];
#pragma unroll
        for (int i = 0; i < C32_T; i++)
#pragma unroll
            for (int j = 0; j < C32_T; j++) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < C32_T; i++)
#pragma unroll
        for (int j = 0; j < C32_T; j++) c[(size_t)((r0 + i) % m) * n + (c0 + j) % n] = acc[i][j];
}

// FP64 compensated (Kahan) sums of ten interleaved streams: sum and compensation per stream.
#define C32_S 10
__global__ void c32_kahan_f64(const double *in, double *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    double sum[C32_S], comp[C32_S];
#pragma unroll
    for (int s = 0; s < C32_S; s++) sum[s] = comp[s] = 0.0;
    for (int i = t; i < n; i += stride) {
#pragma unroll
        for (int s = 0; s < C32_S; s++) {
            double y = in[(size_t)s * n + i] - comp[s];
            double u = sum[s] + y;
            comp[s] = (u - sum[s]) - y;
            sum[s] = u;
        }
    }
#pragma unroll
    for (int s = 0; s < C32_S; s++) out[(size_t)s * stride + t] = sum[s] + comp[s];
}

// Particle push: eight particles per thread, position and velocity, gravity, drag and a
// reflecting floor, for `substeps` small steps.
#define C32_P 8
__global__ void c32_particles(float3 *pos, float3 *vel, int n, float dt, int substeps)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * C32_P;
    float3 p[C32_P], v[C32_P];
#pragma unroll
    for (int q = 0; q < C32_P; q++) { p[q] = pos[(base + q) % n]; v[q] = vel[(base + q) % n]; }
    for (int s = 0; s < substeps; s++) {
#pragma unroll
        for (int q = 0; q < C32_P; q++) {
            v[q].y -= 9.81f * dt;
            v[q].x *= 0.999f; v[q].z *= 0.999f;
            p[q].x += v[q].x * dt; p[q].y += v[q].y * dt; p[q].z += v[q].z * dt;
            if (p[q].y < 0.f) { p[q].y = -p[q].y; v[q].y = -0.8f * v[q].y; }
        }
    }
#pragma unroll
    for (int q = 0; q < C32_P; q++) { pos[(base + q) % n] = p[q]; vel[(base + q) % n] = v[q]; }
}

// ChaCha-style keystream: two 16-word blocks mixed side by side (32 words of state).
__device__ __forceinline__ uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
#define QR(a, b, c, d)                                                                         \
    a += b; d ^= a; d = rotl32(d, 16); c += d; b ^= c; b = rotl32(b, 12);                      \
    a += b; d ^= a; d = rotl32(d, 8);  c += d; b ^= c; b = rotl32(b, 7);
__global__ void c32_chacha_x2(const uint32_t *key, uint32_t *out, int rounds)
{
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t x[16], y[16];
#pragma unroll
    for (int i = 0; i < 16; i++) { x[i] = key[i] ^ (2 * t); y[i] = key[i] ^ (2 * t + 1); }
    for (int r = 0; r < rounds; r++) {
        QR(x[0], x[4], x[8], x[12]) QR(x[1], x[5], x[9], x[13])
        QR(x[2], x[6], x[10], x[14]) QR(x[3], x[7], x[11], x[15])
        QR(y[0], y[4], y[8], y[12]) QR(y[1], y[5], y[9], y[13])
        QR(y[2], y[6], y[10], y[14]) QR(y[3], y[7], y[11], y[15])
        QR(x[0], x[5], x[10], x[15]) QR(x[1], x[6], x[11], x[12])
        QR(x[2], x[7], x[8], x[13]) QR(x[3], x[4], x[9], x[14])
        QR(y[0], y[5], y[10], y[15]) QR(y[1], y[6], y[11], y[12])
        QR(y[2], y[7], y[8], y[13]) QR(y[3], y[4], y[9], y[14])
    }
#pragma unroll
    for (int i = 0; i < 16; i++) { out[32 * t + i] = x[i] + key[i]; out[32 * t + 16 + i] = y[i] + key[i]; }
}

// A polynomial evaluated by a called function (not inlined) while 28 values stay live in the
// caller across every call.
__device__ __noinline__ float c32_horner(float x, const float *c, int deg)
{
    float r = c[deg];
    for (int d = deg - 1; d >= 0; d--) r = fmaf(r, x, c[d]);
    return r;
}
#define C32_L 28
__global__ void c32_devcall(const float *in, const float *coef, float *out, int n, int deg)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[C32_L];
#pragma unroll
    for (int k = 0; k < C32_L; k++) v[k] = in[(i + k * 31) % n];
    for (int r = 0; r < deg; r++) {
        float h = c32_horner(v[r % 4], coef, deg);
#pragma unroll
        for (int k = 0; k < C32_L; k++) v[k] = fmaf(v[(k + 5) % C32_L], h, v[k]);
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < C32_L; k++) s += v[k] * (k + 1);
    out[i] = s;
}

// A tile staged in dynamic shared memory (`extern __shared__`, sized at launch), then a
// 36-wide register accumulation over it.
#define C32_D 36
__global__ void c32_dyn_smem(const float *in, float *out, int n, int tile)
{
    extern __shared__ float stage[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = threadIdx.x; k < tile; k += blockDim.x) stage[k] = in[(blockIdx.x * tile + k) % n];
    __syncthreads();
    float acc[C32_D];
#pragma unroll
    for (int d = 0; d < C32_D; d++) acc[d] = in[(i + d) % n];
    for (int k = 0; k < tile; k++) {
        float s = stage[k];
#pragma unroll
        for (int d = 0; d < C32_D; d++) acc[d] = fmaf(acc[(d + 1) % C32_D], s, acc[d]);
    }
    float r = 0.f;
#pragma unroll
    for (int d = 0; d < C32_D; d++) r += acc[d] * d;
    out[i] = r;
}

// The same register-tiled 1-D correlation for float and double (explicit instantiations).
template <typename T, int W>
__global__ void c32_correlate(const T *sig, const T *taps, T *out, int n, int ntaps)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * W;
    T acc[W], win[W];
#pragma unroll
    for (int w = 0; w < W; w++) { acc[w] = T(0); win[w] = sig[(i + w) % n]; }
    for (int t = 0; t < ntaps; t++) {
        T h = taps[t];
#pragma unroll
        for (int w = 0; w < W; w++) acc[w] += h * win[w];
#pragma unroll
        for (int w = 0; w < W - 1; w++) win[w] = win[w + 1];
        win[W - 1] = sig[(i + W + t) % n];
    }
#pragma unroll
    for (int w = 0; w < W; w++) out[(i + w) % n] = acc[w];
}
template __global__ void c32_correlate<float, 20>(const float *, const float *, float *, int, int);
template __global__ void c32_correlate<double, 10>(const double *, const double *, double *, int, int);
