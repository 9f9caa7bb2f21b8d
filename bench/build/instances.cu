// Build benchmark (issues 31 and 35): a template-heavy instance file, the way quantized-matmul
// and attention libraries ship one file per element type. 48 instantiations of latency-bound,
// register-hungry kernels: tile sizes x element types x three kernels, launch bounds on one.
#include <cuda_fp16.h>

template <typename T> __device__ __forceinline__ float widen(T v) { return (float)v; }
template <> __device__ __forceinline__ float widen<__half>(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T narrow(float v) { return (T)v; }
template <> __device__ __forceinline__ __half narrow<__half>(float v) { return __float2half(v); }

// Dequantize a tile into registers, follow a chain of dependent index loads (latency bound),
// then fold the tile: the tile stays live across the chain.
template <typename T, int TILE>
__global__ void dequant_walk(const T *__restrict__ q, const float *__restrict__ scale,
                             const int *__restrict__ next, float *__restrict__ out, int rows,
                             int hops) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float w[TILE];
    float s = scale[t % rows];
#pragma unroll
    for (int i = 0; i < TILE; ++i) w[i] = widen(q[(size_t)i * rows + t % rows]) * s;
    int r = t % rows;
    for (int h = 0; h < hops; ++h) r = next[r];
    float acc = (float)r;
#pragma unroll
    for (int i = 0; i < TILE; ++i) acc = fmaf(acc, w[i], w[(i + 5) % TILE]);
    out[t] = acc;
}

// One attention tile: a query row kept in registers, keys fetched by a gathered index.
template <typename T, int TILE>
__global__ void __launch_bounds__(256) attn_tile(const T *__restrict__ qry,
                                                 const T *__restrict__ key,
                                                 const int *__restrict__ order,
                                                 T *__restrict__ out, int n, int steps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float qv[TILE];
#pragma unroll
    for (int i = 0; i < TILE; ++i) qv[i] = widen(qry[(size_t)(t % n) * TILE + i]);
    float best = -1e30f, sum = 0.0f;
    int k = order[t % n];
    for (int s = 0; s < steps; ++s) {
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < TILE; ++i) dot = fmaf(qv[i], widen(key[(size_t)k * TILE + i]), dot);
        best = fmaxf(best, dot);
        sum += __expf(dot - best);
        k = order[k];
    }
    out[t] = narrow<T>(sum + best);
}

// Stream-k style fixup: partial tiles from several blocks combined in registers.
template <typename T, int TILE>
__global__ void fixup(const T *__restrict__ partial, const int *__restrict__ owner,
                      T *__restrict__ c, int tiles, int splits) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[TILE];
#pragma unroll
    for (int i = 0; i < TILE; ++i) acc[i] = 0.0f;
    int o = owner[t % tiles];
    for (int s = 0; s < splits; ++s) {
#pragma unroll
        for (int i = 0; i < TILE; ++i) acc[i] += widen(partial[((size_t)o * splits + s) * TILE + i]);
        o = owner[o];
    }
#pragma unroll
    for (int i = 0; i < TILE; ++i) c[(size_t)(t % tiles) * TILE + i] = narrow<T>(acc[i]);
}

#define TILES(K, T) \
    template __global__ void K<T, 24>(PARAMS_##K(T)); \
    template __global__ void K<T, 32>(PARAMS_##K(T)); \
    template __global__ void K<T, 48>(PARAMS_##K(T)); \
    template __global__ void K<T, 64>(PARAMS_##K(T));
#define PARAMS_dequant_walk(T) const T *, const float *, const int *, float *, int, int
#define PARAMS_attn_tile(T) const T *, const T *, const int *, T *, int, int
#define PARAMS_fixup(T) const T *, const int *, T *, int, int
#define TYPES(K) TILES(K, float) TILES(K, double) TILES(K, int) TILES(K, __half)

TYPES(dequant_walk)
TYPES(attn_tile)
TYPES(fixup)
