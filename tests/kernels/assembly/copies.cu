// A module for adding a kernel under a new name (`nvcc_orion::cubin::entry`, issue 31): a
// register-hungry kernel with static shared memory and an `atomicAdd` on a global (its
// address in bank 4), beside one without either. With `-DCHATTY` a third kernel calls
// `printf` and `assert`: ptxas gives every string of the module a bank-4 slot even when it
// compiles one kernel alone (`--entry`), in another order than for the whole module.
#include <cassert>
#include <cstdio>

__device__ unsigned tiles_done;

#define WIDTH 40

__global__ void tile(const float *__restrict__ a, float *__restrict__ out, int n)
{
    __shared__ float stage[256];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float f[WIDTH];
#pragma unroll
    for (int i = 0; i < WIDTH; ++i)
        f[i] = a[(size_t)i * n + t % n];
    stage[threadIdx.x % 256] = f[threadIdx.x % WIDTH];
    __syncthreads();
    float s = stage[(threadIdx.x + 1) % 256];
#pragma unroll
    for (int i = 0; i < WIDTH; ++i)
        s = fmaf(s, f[i], f[(i + 7) % WIDTH]);
    atomicAdd(&tiles_done, 1u);
    out[t] = s;
}

__global__ void scale(float *x, float k, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n)
        x[t] *= k;
}

#ifdef CHATTY
__global__ void chatty(int x)
{
    assert(x > 0);
    printf("x=%d\n", x);
}
#endif
