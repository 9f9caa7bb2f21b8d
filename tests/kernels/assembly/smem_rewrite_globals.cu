// A module with `__device__` data (initialized: `.nv.global.init`, file bytes in the
// writable segment; zeroed: `.nv.global`, NOBITS) and shared memory (`tile_sum`'s 99 floats)
// besides `chain_dot`, which keeps a 48-wide row live across a chain of gathered loads and
// spills at 32 registers. ptxas lays the NOBITS sections out in its kernels' code order with
// the module's own (`.nv.global`, `.nv.shared.reserved.0`) right after the first kernel's;
// tests/assembly/rewrite_segments.rs compares spill2smem's layout with ptxas's own
// shared-memory spilling of `chain_dot`.
__device__ float bias = 0.5f;
__device__ float seen[5];

#define CHAIN_DOT_TAIL(acc) ((acc) + bias)
#include "chain_dot.cuh"

__global__ void tile_sum(float *__restrict__ y, const float *__restrict__ x, int n) {
    __shared__ float tile[99];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x % 99] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = tile[(threadIdx.x + 1) % 99] + tile[threadIdx.x % 99];
    if (i == 0) seen[n % 5] = y[0];
}

template __global__ void chain_dot<48>(const float *, const int *, float *, int, int);
