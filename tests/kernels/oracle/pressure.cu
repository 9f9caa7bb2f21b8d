// Oracle coverage: moderate register pressure. Many accumulators live across a loop (and a
// second kernel keeps a tile of values in registers) so ptxas uses a large register range,
// register pairs and quads at high numbers, and possibly spills under a small budget.

__global__ void oracle_pressure_accum(const float4 *in, float *out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[24];
#pragma unroll
    for (int j = 0; j < 24; ++j)
        acc[j] = 0.0f;
    for (int i = 0; i < n; ++i) {
        float4 v = in[i * 4096 + t];
        float4 u = in[i * 4096 + t + 2048];
#pragma unroll
        for (int j = 0; j < 24; ++j)
            acc[j] = fmaf(acc[j], (j & 1) ? v.x : u.y, (j & 2) ? v.z * u.w : v.w - u.x);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 24; ++j)
        s += acc[j] * (j + 1);
    out[t] = s;
}

__global__ void oracle_pressure_tile(const double *in, double *out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double tile[12];
#pragma unroll
    for (int j = 0; j < 12; ++j)
        tile[j] = in[j * 4096 + t];
    for (int i = 0; i < n; ++i) {
#pragma unroll
        for (int j = 0; j < 12; ++j)
            tile[j] = fma(tile[j], tile[(j + 5) % 12], tile[(j + 7) % 12]);
    }
#pragma unroll
    for (int j = 0; j < 12; ++j)
        out[j * 4096 + t] = tile[j];
}
