// A module with no shared memory at all: before sm_90 ptxas writes no NOBITS section and no
// writable segment for it. `chain_dot` keeps a 48-wide row live across a chain of gathered
// loads, so at 32 registers it spills; spill2smem moves the spills into the module's first
// `.nv.shared.<kernel>`, for which ptxas adds a program header (a writable `LOAD`) when its own
// shared-memory spilling does the same. tests/assembly/rewrite_segments.rs compares the
// rewrite's layout with that ptxas build's.
#include "chain_dot.cuh"

__global__ void scale(float *__restrict__ y, const float *__restrict__ x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

template __global__ void chain_dot<48>(const float *, const int *, float *, int, int);
