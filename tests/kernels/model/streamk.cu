// A stream-K GEMM's fixup, the shape of issue 32's finding 1: each block runs a range of the
// K loop over one output tile with the tile's accumulators in registers (the B fragment staged
// in shared memory); the block that ends a tile waits for the peer before it and adds the
// partial sums that peer parked in a workspace, then runs the epilogue; a block that does not
// end its tile parks its partials and raises its flag. ptxas keeps the accumulators in
// registers; a lower budget spills some of them inside the MAC loop and the fixup, so its code
// is not ptxas's own code with more warps (tests/model_coherence.rs).
#include <cuda_runtime.h>

#define ACC 32

__global__ void streamk_fixup(const float *__restrict__ a, const float *__restrict__ b,
                              float *__restrict__ c, float *workspace, int *flags, int k_iters,
                              int iters_per_block, int peers)
{
    __shared__ float tile[64 * ACC];
    const int tid = threadIdx.x;
    const int block = blockIdx.x;
    const int begin = block * iters_per_block;
    const int end = min(begin + iters_per_block, k_iters);
    for (int i = tid; i < 64 * ACC; i += blockDim.x)
        tile[i] = b[i];
    __syncthreads();
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i)
        acc[i] = 0.0f;
    // The MAC loop over this block's share of K, a row of the B fragment per step.
    for (int k = begin; k < end; ++k) {
        const float x = a[(size_t)k * blockDim.x + tid];
#pragma unroll 1
        for (int r = 0; r < 64; r += 8) {
            const float *row = &tile[(r + (k & 7)) * ACC];
#pragma unroll
            for (int i = 0; i < ACC; ++i)
                acc[i] = fmaf(x, row[i], acc[i]);
        }
    }
    const bool ends_tile = end == k_iters || (block % (peers + 1)) == peers;
    if (!ends_tile) {
        // Park the partials and raise the flag.
#pragma unroll
        for (int i = 0; i < ACC; ++i)
            workspace[((size_t)block * ACC + i) * blockDim.x + tid] = acc[i];
        __threadfence();
        __syncthreads();
        if (tid == 0)
            atomicExch(&flags[block], 1);
        return;
    }
    // The fixup: wait for the peer before this block, then add its partials.
    if (block > 0 && peers > 0) {
        const int peer = block - 1;
        if (tid == 0)
            while (atomicAdd(&flags[peer], 0) == 0) {
            }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < ACC; ++i)
            acc[i] += workspace[((size_t)peer * ACC + i) * blockDim.x + tid];
    }
    // The epilogue: a scaled store of the tile.
    float scale = 1.0f;
#pragma unroll
    for (int i = 0; i < ACC; ++i) {
        scale = fmaf(scale, 0.999f, acc[(i * 7) % ACC]);
        c[((size_t)block * ACC + i) * blockDim.x + tid] = acc[i] * scale;
    }
}
