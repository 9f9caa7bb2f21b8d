// A module with shared memory already: `tile_sum`'s 99 floats (396 bytes, no multiple of 16,
// so the writable segment's size depends on the order of the shared sections). `chain_dot`
// keeps a 48-wide row live across a chain of gathered loads, so at 32 registers it spills;
// spill2smem gives it a `.nv.shared.<kernel>` of its own beside `tile_sum`'s, where ptxas's
// own shared-memory spilling puts one. tests/assembly/rewrite_segments.rs compares the
// rewrite's layout with that ptxas build's.
#include "chain_dot.cuh"

__global__ void tile_sum(float *__restrict__ y, const float *__restrict__ x, int n) {
    __shared__ float tile[99];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x % 99] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = tile[(threadIdx.x + 1) % 99] + tile[threadIdx.x % 99];
}

template __global__ void chain_dot<48>(const float *, const int *, float *, int, int);
