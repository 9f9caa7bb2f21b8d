// The `explain --html` example (tests/explain.rs, docs/explain.png): with
// `--orion-force=spill2smem --orion-block-size=128`, s_chain_f32 ships with its spills moved to
// shared memory (the checker proves it), and the rewrite of s_recursive is refused (a
// recursive callee moves the stack pointer), which the table shows with the reason.

#define N_LIVE 34

// Many FP32 values live across a loop: the classic spill.
__global__ void s_chain_f32(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[N_LIVE];
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = in[(i + k * 17) % n] * (k + 1);
    for (int r = 0; r < n % 7 + 3; r++) {
#pragma unroll
        for (int k = 0; k < N_LIVE; k++) v[k] = v[k] * v[(k + 3) % N_LIVE] + v[(k + 11) % N_LIVE];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) s += v[k] * (k & 3);
    out[i] = s;
}


// Recursion: ptxas gives the recursive function a frame of its own (it moves R1), which the
// spill → shared rewrite does not handle, so the kernel keeps ptxas's code.
__device__ float deep_rec(const float *p, int n, float a, int depth)
{
    float v[N_LIVE];
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = p[(k * 5 + (int)a) % n] + a * k;
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) v[k] = v[k] * v[(k + 11) % N_LIVE] + v[(k + 3) % N_LIVE];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N_LIVE; k++) s += v[k];
    if (depth > 0) s += deep_rec(p, n, s, depth - 1) * v[7];
    return s;
}

__global__ void s_recursive(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = deep_rec(in, n, in[i % n], n % 4);
}
