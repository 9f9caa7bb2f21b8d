// Fixture matrix: cross-block and warp-level cooperation without <cooperative_groups.h>.
//
// The PyPI toolkit that scripts/setup.sh installs has the cooperative_groups headers but not
// CCCL (`nv/target`, package nvidia-cuda-cccl), so `#include <cooperative_groups.h>` fails to
// compile there. The grid barrier is therefore written by hand (a sense-reversing barrier in
// global memory, valid under a cooperative launch), next to the warp-level primitives that
// cooperative groups lower to (__activemask, __match_any_sync, __syncwarp, __reduce_*_sync).
#include "matrix.cuh"

__device__ unsigned int g_barrier_count;
__device__ volatile unsigned int g_barrier_sense;

__device__ __noinline__ void grid_barrier(unsigned int blocks) {
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        unsigned int sense = g_barrier_sense;
        __threadfence();
        if (atomicAdd(&g_barrier_count, 1u) == blocks - 1) {
            g_barrier_count = 0;
            __threadfence();
            g_barrier_sense = sense ^ 1u;
        } else {
            while (g_barrier_sense == sense) __nanosleep(64);
        }
        __threadfence();
    }
    __syncthreads();
}

// Two phases separated by a grid-wide barrier (needs a cooperative launch).
__global__ void grid_sync_two_phase(float *data, float *partial, int n) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int nthreads = gridDim.x * blockDim.x;
    float s = 0.f;
    for (unsigned int i = tid; i < (unsigned int)n; i += nthreads) s += data[i];
    partial[tid] = s;
    grid_barrier(gridDim.x);
    if (tid == 0) {
        float t = 0.f;
        for (unsigned int k = 0; k < nthreads; ++k) t += partial[k];
        data[0] = t;
    }
}

// A reduction over 16-lane tiles with shuffles and a sub-warp mask.
__global__ void tiled_partition_reduce(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    unsigned int lane = threadIdx.x & 31;
    unsigned int tile_mask = (lane < 16) ? 0x0000ffffu : 0xffff0000u;
    for (int off = 8; off > 0; off >>= 1) v += __shfl_down_sync(tile_mask, v, off, 16);
    if ((lane & 15) == 0) atomicAdd(out, v);
}

// A coalesced group: one atomic per set of active lanes, ranks from the active mask.
__global__ void coalesced_increment(const int *flags, int *counter, int *slot, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && flags[i]) {
        unsigned int active = __activemask();
        unsigned int lane = threadIdx.x & 31;
        int leader = __ffs(active) - 1;
        int rank = __popc(active & ((1u << lane) - 1));
        int base = 0;
        if ((int)lane == leader) base = atomicAdd(counter, __popc(active));
        base = __shfl_sync(active, base, leader);
        slot[i] = base + rank;
    }
}

// Lanes grouped by key (__match_any_sync), then a per-group sum.
__global__ void match_any_groups(const int *keys, const int *vals, int *sums, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int key = i < n ? keys[i] : -1;
    unsigned int peers = __match_any_sync(0xffffffffu, key);
    int lane = threadIdx.x & 31;
    int leader = __ffs(peers) - 1;
    int v = i < n ? vals[i] : 0;
#if __CUDA_ARCH__ >= 800
    int total = __reduce_add_sync(peers, v);
#else
    int total = 0;
    for (unsigned int m = peers; m; m &= m - 1) total += __shfl_sync(peers, v, __ffs(m) - 1);
#endif
    __syncwarp();
    if (lane == leader && key >= 0) atomicAdd(&sums[key & 255], total);
}

// Block-level synchronisation with a shared halo.
__global__ void block_group_stencil(const float *in, float *out, int n) {
    __shared__ float s[258];
    int i = blockIdx.x * 256 + threadIdx.x;
    s[threadIdx.x + 1] = i < n ? in[i] : 0.f;
    if (threadIdx.x == 0) s[0] = i > 0 ? in[i - 1] : 0.f;
    if (threadIdx.x == 255) s[257] = i + 1 < n ? in[i + 1] : 0.f;
    __syncthreads();
    if (i < n) out[i] = 0.25f * s[threadIdx.x] + 0.5f * s[threadIdx.x + 1] + 0.25f * s[threadIdx.x + 2];
}
