// The `explain --html` example (tests/explain.rs, docs/explain.png): with
// `--orion-force=spill2smem --orion-block-size=128`, s_chain_f32 ships with its spills moved to
// shared memory (the checker proves it), and the rewrite of s_callee_spills is refused (the
// callee's frame: no MOV of the return address), which the table shows with the reason.

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


// A callee that itself keeps many values live.
__device__ __noinline__ float mix_deep(const float *p, int n, float a)
{
    float v[26];
#pragma unroll
    for (int k = 0; k < 26; k++) v[k] = p[(k * 5 + (int)a) % n] + a * k;
    for (int r = 0; r < n % 3 + 2; r++) {
#pragma unroll
        for (int k = 0; k < 26; k++) v[k] = v[k] * v[(k + 11) % 26] + v[(k + 3) % 26];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 26; k++) s += v[k];
    return s;
}


// The callee spills: its frame gets its own shared slots.
__global__ void s_callee_spills(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[i % n];
    float b = mix_deep(in, n, a);
    out[i] = b + mix_deep(in, n, b);
}

