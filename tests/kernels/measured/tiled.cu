// Measured-path coverage (issue 45): tiles re-read from L2, DRAM streams and issue-bound
// arithmetic, each holding many values in registers.

// Banded matrix times a small block of vectors: every thread keeps 16 outputs and re-reads
// the same 32 KiB of x (resident in L1/L2) for every row band.
__global__ void band_times_block(const float *__restrict__ a, const float *__restrict__ x,
                                 float *__restrict__ y, int n, int band) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float acc[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) acc[j] = 0.f;
    for (int k = 0; k < band; ++k) {
        float v = a[(size_t)k * n + row];
        int col = (row + k) % 512;
#pragma unroll
        for (int j = 0; j < 16; ++j) acc[j] = fmaf(v, x[col * 16 + j], acc[j]);
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) y[(size_t)j * n + row] = acc[j];
}

// A stream: 16 float4 loads in flight per thread, one pass over the data (DRAM-bound).
__global__ void stream_blend(const float4 *__restrict__ a, const float4 *__restrict__ b,
                             float4 *__restrict__ out, float s, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    float4 va[8], vb[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        int i = min(t + j * stride, n - 1);
        va[j] = a[i];
        vb[j] = b[i];
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        int i = t + j * stride;
        if (i < n)
            out[i] = make_float4(fmaf(s, va[j].x, vb[j].w), fmaf(s, va[j].y, vb[j].z),
                                 fmaf(s, va[j].z, vb[j].y), fmaf(s, va[j].w, vb[j].x));
    }
}

// Issue-bound: a 24-term polynomial per element with its coefficients in registers.
__global__ void poly_eval(const float *__restrict__ c, const float *__restrict__ x,
                          float *__restrict__ y, int n) {
    float k[24];
#pragma unroll
    for (int j = 0; j < 24; ++j) k[j] = c[j];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i], r[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int j = 23; j >= 0; --j) {
            r[j & 3] = fmaf(r[j & 3], v, k[j]);
            r[(j + 1) & 3] = fmaf(r[(j + 1) & 3], v * v, k[23 - j]);
        }
        y[i] = r[0] + r[1] + r[2] + r[3];
    }
}
