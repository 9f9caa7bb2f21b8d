// Fixture matrix: memory spaces and warp-level operations. Static and dynamic shared memory,
// atomics, warp shuffles and votes, constant memory, a __device__ global, printf, templates.
#include <cstdio>
#include "matrix.cuh"

__constant__ float c_coeffs[64];
__constant__ int c_lut[256];
__device__ unsigned long long g_event_count;
__device__ float g_scratch[1024];

// Static shared memory, padded against bank conflicts.
__global__ void static_smem_transpose(const float *in, float *out, int w, int h) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Dynamic shared memory: block-wide inclusive scan.
__global__ void dynamic_smem_scan(const int *in, int *out, int n) {
    extern __shared__ int buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        int v = threadIdx.x >= off ? buf[threadIdx.x - off] : 0;
        __syncthreads();
        buf[threadIdx.x] += v;
        __syncthreads();
    }
    if (i < n) out[i] = buf[threadIdx.x];
}

// Static and dynamic shared memory in the same kernel.
__global__ void mixed_smem(const float *in, float *out, int n) {
    __shared__ float stat[256];
    extern __shared__ float dyn[];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    stat[t & 255] = i < n ? in[i] : 0.f;
    dyn[t] = stat[(t * 7) & 255];
    __syncthreads();
    if (i < n) out[i] = dyn[blockDim.x - 1 - t] + stat[t & 255];
}

// Shared-memory histogram merged into global with atomics.
__global__ void atomic_histogram(const unsigned char *data, unsigned int *hist, int n) {
    __shared__ unsigned int local[256];
    for (int k = threadIdx.x; k < 256; k += blockDim.x) local[k] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int k = threadIdx.x; k < 256; k += blockDim.x) atomicAdd(&hist[k], local[k]);
}

// atomicCAS loop: FP64 max.
__device__ double atomic_max_f64(double *addr, double v) {
    unsigned long long *p = reinterpret_cast<unsigned long long *>(addr);
    unsigned long long old = *p, assumed;
    do {
        assumed = old;
        if (__longlong_as_double(assumed) >= v) break;
        old = atomicCAS(p, assumed, __double_as_longlong(v));
    } while (assumed != old);
    return __longlong_as_double(old);
}

__global__ void atomic_cas_max(const double *in, double *result, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomic_max_f64(result, in[i]);
}

// Warp reduction with shuffles, one atomic per warp.
__global__ void warp_reduce_shfl(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.f;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

// Warp scan with shuffle-up, ballot and popc.
__global__ void warp_scan_vote(const int *in, int *out, int *counts, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = i < n ? in[i] : 0;
    for (int off = 1; off < 32; off <<= 1) {
        int u = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += u;
    }
    unsigned int positive = __ballot_sync(0xffffffffu, v > 0);
    if (i < n) out[i] = v;
    if (lane == 0) counts[i / 32] = __popc(positive) + (__all_sync(0xffffffffu, v >= 0) ? 100 : 0);
}

// Shuffle xor butterfly over doubles (64-bit shuffles are two SHFLs).
__global__ void warp_butterfly_f64(double *data, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = i < n ? data[i] : 0.0;
    for (int mask = 1; mask < 32; mask <<= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, mask));
    if (i < n) data[i] = v;
}

// Constant memory: polynomial coefficients and a lookup table.
__global__ void const_poly_eval(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], r = 0.f;
    for (int k = 63; k >= 0; --k) r = r * v + c_coeffs[k];
    y[i] = r + (float)c_lut[i & 255];
}

// A __device__ global counter and scratch array.
__global__ void device_global_counter(const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && in[i] > 0.f) {
        atomicAdd(&g_event_count, 1ULL);
        g_scratch[i & 1023] = in[i];
    }
}

// printf from device code.
__global__ void printf_report(const int *values, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && values[i] < 0) printf("block %d thread %d: negative value %d at %d\n", blockIdx.x, threadIdx.x, values[i], i);
}

// Block reduction in static shared memory, templated on the block size (three instances).
template <int BLOCK>
__global__ void block_reduce_sum(const float *in, float *out, int n) {
    __shared__ float s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.f;
    __syncthreads();
#pragma unroll
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
template __global__ void block_reduce_sum<64>(const float *, float *, int);
template __global__ void block_reduce_sum<256>(const float *, float *, int);
template __global__ void block_reduce_sum<1024>(const float *, float *, int);

// Vectorised loads and stores (128-bit) with read-only loads.
__global__ void vector_copy_ldg(const float4 *__restrict__ in, float4 *__restrict__ out, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = __ldg(&in[i]);
        out[i] = make_float4(v.w, v.z, v.y, v.x);
    }
}
