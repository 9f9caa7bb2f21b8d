// Relocatable code (`-rdc`): a register-hungry kernel that calls a device function another
// translation unit defines. nvlink refuses a kernel whose register limit is below its
// callee's count, which is known only when the callee's file is compiled (issue 30).
#define WIDTH 48

__device__ float fold(const float *f, int n, float seed);

__global__ void far_walk(const int *__restrict__ next, const float *__restrict__ feat,
                         float *__restrict__ out, int nodes, int steps)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float f[WIDTH];
#pragma unroll
    for (int i = 0; i < WIDTH; ++i)
        f[i] = feat[(size_t)i * nodes + t % nodes];
    int v = t % nodes;
    unsigned seen = 0;
    for (int s = 0; s < steps; ++s) {
        v = next[v];
        seen = seen * 33u + (unsigned)v;
    }
    float score = (float)(seen & 0xffff);
#pragma unroll
    for (int i = 0; i < WIDTH; ++i)
        score = fmaf(score, f[i], f[(i + 3) % WIDTH]);
    out[t] = fold(f, WIDTH, score);
}
