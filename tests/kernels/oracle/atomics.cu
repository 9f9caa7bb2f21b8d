// Oracle coverage: shared and global atomics and reductions, 32- and 64-bit, with and without
// a used result (ATOMS/ATOMG versus RED), compare-and-swap and exchange.

__global__ void oracle_atomics_shared(const int *in, int *out, unsigned long long *out64) {
    __shared__ int hist[64];
    __shared__ unsigned long long wide[32];
    __shared__ float fsum[32];
    int t = threadIdx.x;
    if (t < 64)
        hist[t] = 0;
    if (t < 32) {
        wide[t] = 0;
        fsum[t] = 0.0f;
    }
    __syncthreads();
    int v = in[blockIdx.x * blockDim.x + t];
    int old = atomicAdd(&hist[v & 63], 1);
    atomicMax(&hist[(v >> 6) & 63], v);
    atomicMin(&hist[(v >> 3) & 63], v);
    atomicOr(&hist[t & 63], v);
    int c = atomicCAS(&hist[(t + 1) & 63], old, v);
    int x = atomicExch(&hist[(t + 2) & 63], c);
    unsigned long long w = atomicAdd(&wide[t & 31], static_cast<unsigned long long>(v));
    unsigned long long w2 = atomicCAS(&wide[(t + 5) & 31], w, w + 3);
    atomicAdd(&fsum[t & 31], static_cast<float>(v));
    unsigned inc = atomicInc(reinterpret_cast<unsigned *>(&hist[(t + 9) & 63]), 100u);
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = hist[t & 63] + old + c + x + static_cast<int>(inc) +
                                       static_cast<int>(fsum[t & 31]);
    out64[blockIdx.x * blockDim.x + t] = wide[t & 31] ^ w ^ w2;
}

__global__ void oracle_atomics_global(const int *in, int *counters, unsigned long long *c64,
                                      float *fsum, double *dsum, int *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[t];
    // Results unused: reductions (RED).
    atomicAdd(&counters[v & 15], 1);
    atomicMax(&counters[16 + (v & 7)], v);
    atomicAnd(&counters[24], v);
    atomicAdd(&c64[v & 3], static_cast<unsigned long long>(v));
    atomicAdd(&fsum[v & 7], 0.5f * v);
    atomicAdd(&dsum[v & 7], 0.25 * v);
    // Results used: atomics (ATOMG).
    int old = atomicAdd(&counters[32 + (v & 15)], v);
    int cas = atomicCAS(&counters[48], old, v);
    unsigned long long o64 = atomicAdd(&c64[4 + (v & 3)], 2ull);
    unsigned long long cas64 = atomicCAS(&c64[8], o64, o64 + static_cast<unsigned>(v));
    unsigned long long x64 = atomicExch(&c64[9], cas64);
    float f = atomicAdd(&fsum[8 + (v & 7)], 1.0f);
    double d = atomicAdd(&dsum[8 + (v & 7)], 1.0);
    out[t] = old + cas + static_cast<int>(o64 ^ cas64 ^ x64) + static_cast<int>(f + d);
}
