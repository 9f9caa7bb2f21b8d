// Two kernels for the multi-variant emitter (tests/multi_variant.rs): one whose many live
// values give the tuner lower register budgets to build, and one under __launch_bounds__
// (its .maxntid must come along into every variant), which spills at ptxas's own choice so
// that the spill -> shared rewrite has something to move.
#define LIVE 40
#define BOUNDED_LIVE 28

__global__ void mv_pressure(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[LIVE];
#pragma unroll
    for (int k = 0; k < LIVE; k++) v[k] = in[(i + 13 * k) % n] + k;
    for (int r = 0; r < (n & 7) + 2; r++) {
#pragma unroll
        for (int k = 0; k < LIVE; k++) v[k] = v[k] * v[(k + 5) % LIVE] - v[(k + 17) % LIVE];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < LIVE; k++) s += v[k] * (k % 3);
    out[i] = s;
}

__global__ void __launch_bounds__(256, 8) mv_bounded(const float *in, float *out, int n)
{
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[BOUNDED_LIVE];
#pragma unroll
    for (int k = 0; k < BOUNDED_LIVE; k++) v[k] = in[(i + 7 * k) % n] * (k + 1);
    for (int r = 0; r < (n & 3) + 2; r++) {
#pragma unroll
        for (int k = 0; k < BOUNDED_LIVE; k++) v[k] = v[k] * v[(k + 9) % BOUNDED_LIVE] + v[(k + 23) % BOUNDED_LIVE];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < BOUNDED_LIVE; k++) s += v[k] * (k & 3);
    tile[threadIdx.x] = s;
    __syncthreads();
    out[i] = tile[(threadIdx.x + 1) % blockDim.x];
}
