// Liveness test kernels (tests/liveness_oracle.rs): loops, switches (BRX jump tables),
// warp shuffles and votes, atomics, barriers under divergence.
#include <cstdint>

__global__ void lv_switch_loop(const int *ops, float *o, int n) {
    float acc = 0.f, aux = 1.f;
    int t = threadIdx.x;
    for (int i = 0; i < n; i++) {
        switch (ops[i * 32 + t] & 15) {
        case 0: acc += aux; break;
        case 1: acc *= 1.01f; break;
        case 2: aux = acc * 0.5f; break;
        case 3: acc -= aux * aux; break;
        case 4: aux += 2.f; break;
        case 5: acc = sqrtf(fabsf(acc)); break;
        case 6: aux = -aux; break;
        case 7: acc = fmaxf(acc, aux); break;
        case 8: acc = fminf(acc, aux); break;
        case 9: aux = __expf(aux * 0.01f); break;
        case 10: acc += i; break;
        case 11: aux *= i + 1; break;
        default: acc = acc * aux; break;
        }
    }
    o[t] = acc + aux;
}

__global__ void lv_nested_loops(const float *a, float *o, int rows, int cols) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float best = -1e30f;
    int bi = -1;
    for (int r = 0; r < rows; r++) {
        float s = 0.f;
        for (int c = 0; c < cols; c++) {
            float v = a[(r * cols + c) * 64 + (t & 63)];
            if (v < 0.f) continue;
            s += v;
            if (s > 1e6f) break;
        }
        if (s > best) {
            best = s;
            bi = r;
        }
    }
    o[t] = best + bi;
}

__global__ void lv_shuffle_reduce(const float *a, float *o, int *votes) {
    float v = a[blockIdx.x * blockDim.x + threadIdx.x];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffff, v, off);
    float w = __shfl_sync(0xffffffff, v, 0);
    float x = __shfl_xor_sync(0xffffffff, w * threadIdx.x, 3);
    float y = __shfl_up_sync(0xffffffff, x, 1);
    unsigned b = __ballot_sync(0xffffffff, y > 0.f);
    int all = __all_sync(0xffffffff, x >= 0.f);
    int m = __match_any_sync(0xffffffff, (int)y);
    if ((threadIdx.x & 31) == 0) {
        o[blockIdx.x] = w;
        votes[blockIdx.x * 3] = __popc(b);
        votes[blockIdx.x * 3 + 1] = all;
    }
    votes[blockIdx.x * 3 + 2 + threadIdx.x] = m;
}

__global__ void lv_atomics(int *g, unsigned long long *g64, float *gf, double *gd, int n) {
    __shared__ int hist[64];
    __shared__ unsigned long long sh64;
    for (int i = threadIdx.x; i < 64; i += blockDim.x) hist[i] = 0;
    if (threadIdx.x == 0) sh64 = 0;
    __syncthreads();
    for (int i = 0; i < n; i++) {
        int v = g[blockIdx.x * n + i];
        atomicAdd(&hist[v & 63], 1);
        atomicOr(&sh64, 1ull << (v & 63));
    }
    int old = atomicExch(&g[0], threadIdx.x);
    atomicAdd(gf, (float)old);
    atomicAdd(gd, 0.5 * old);
    unsigned long long prev = atomicCAS(g64, 0ull, (unsigned long long)old);
    atomicMin(&g[1], (int)prev);
    __syncthreads();
    if (threadIdx.x < 64) atomicAdd(&g[2 + threadIdx.x], hist[threadIdx.x]);
    if (threadIdx.x == 0) atomicAdd(g64 + 1, sh64);
}

__global__ void lv_divergent_barrier(float *o, const float *a, int k) {
    __shared__ float s[256];
    float x = a[threadIdx.x];
    if (threadIdx.x < k) {
        x = x * 2.f;
        __syncwarp();
    } else {
        x = x - 1.f;
    }
    s[threadIdx.x] = x;
    __syncthreads();
    float y = 0;
    for (int i = 0; i < 8; i++) y += s[(threadIdx.x + i * 32) & 255];
    o[threadIdx.x] = y;
}
