// Liveness test kernels (tests/liveness_oracle.rs): generic-address loads, stores and
// atomics (LD.E, ST.E, ATOM.E): pointers that may name shared or global memory, chosen at
// run time, so ptxas cannot specialise the access.
#include <cstdint>

__device__ __noinline__ float gen_sum(const float *p, int n) {
    float s = 0.f;
    for (int i = 0; i < n; i++) s += p[i * 3];
    return s;
}

__global__ void lv_generic_select(const float *g, float *out, int use_shared, int n) {
    __shared__ float tile[256];
    tile[threadIdx.x & 255] = g[threadIdx.x] * 2.f;
    __syncthreads();
    const float *src = use_shared ? tile : g + blockIdx.x * 64;
    float acc = 0.f;
    for (int i = 0; i < n; i++) acc = acc * 0.5f + src[(threadIdx.x + i * 7) & 63];
    float *dst = (use_shared & 2) ? tile : out;
    dst[threadIdx.x & 63] = acc;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + 1) & 255] + acc;
}

struct Node {
    int key;
    long long payload;
    double weight;
    Node *next;
};

// A linked walk through generic pointers (64-bit and 32-bit generic loads).
__global__ void lv_generic_chase(Node *head, double *out, int steps) {
    __shared__ Node local_nodes[4];
    if (threadIdx.x < 4) {
        local_nodes[threadIdx.x].key = threadIdx.x;
        local_nodes[threadIdx.x].payload = threadIdx.x * 3;
        local_nodes[threadIdx.x].weight = 0.25 * threadIdx.x;
        local_nodes[threadIdx.x].next = threadIdx.x < 3 ? &local_nodes[threadIdx.x + 1] : head;
    }
    __syncthreads();
    Node *p = (threadIdx.x & 1) ? local_nodes : head;
    double w = 0;
    long long acc = 0;
    for (int s = 0; s < steps && p; s++) {
        w += p->weight * p->key;
        acc ^= p->payload;
        p = p->next;
    }
    out[threadIdx.x] = w + (double)acc;
}

// Generic atomics and a generic 128-bit access.
__global__ void lv_generic_atomics(int *g, float4 *v, int where, int n) {
    __shared__ int counters[32];
    __shared__ float4 vs[64];
    if (threadIdx.x < 32) counters[threadIdx.x] = 0;
    if (threadIdx.x < 64) vs[threadIdx.x] = v[threadIdx.x];
    __syncthreads();
    int *c = where ? counters : g;
    float4 *pv = (where > 1) ? vs : v;
    int old = atomicAdd(&c[threadIdx.x & 31], n);
    atomicMax(&c[(threadIdx.x + 5) & 31], old);
    int prev = atomicCAS(&c[0], old, old + 1);
    float4 x = pv[threadIdx.x & 63];
    x.x += prev;
    x.w *= old;
    pv[(threadIdx.x + 1) & 63] = x;
    __syncthreads();
    if (threadIdx.x < 32) g[64 + threadIdx.x] = counters[threadIdx.x];
}

// A generic pointer passed to a non-inlined function.
__global__ void lv_generic_call(const float *g, float *out, int which) {
    __shared__ float buf[128];
    buf[threadIdx.x & 127] = g[threadIdx.x];
    __syncthreads();
    const float *p = which ? buf : g;
    out[threadIdx.x] = gen_sum(p + (threadIdx.x & 7), which + 3);
}
