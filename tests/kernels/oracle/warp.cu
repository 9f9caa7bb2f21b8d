// Oracle coverage: warp-level collectives. Shuffles (idx/up/down/xor, 32- and 64-bit), votes
// (all/any/ballot, activemask), match (any/all), redux (sm_80+) and __syncwarp with masks.

__global__ void oracle_shuffle(const float *in, const double *ind, float *out, double *outd) {
    int t = threadIdx.x;
    float v = in[blockIdx.x * blockDim.x + t];
    double d = ind[blockIdx.x * blockDim.x + t];
    float s = __shfl_sync(0xffffffffu, v, (t * 7) & 31);
    s += __shfl_up_sync(0xffffffffu, v, 1);
    s += __shfl_down_sync(0xffffffffu, v, 2);
    s += __shfl_xor_sync(0xffffffffu, v, 4);
    s += __shfl_sync(0x0000ffffu, v, 3, 16);
    d += __shfl_xor_sync(0xffffffffu, d, 16);
    d += __shfl_sync(0xffffffffu, d, t ^ 5);
    out[blockIdx.x * blockDim.x + t] = s;
    outd[blockIdx.x * blockDim.x + t] = d;
}

__global__ void oracle_vote_match(const int *in, unsigned *out) {
    int t = threadIdx.x;
    int v = in[blockIdx.x * blockDim.x + t];
    unsigned r = 0;
    if (v != 0) {
        // Divergent: the active mask and votes of a partial warp.
        unsigned m = __activemask();
        r += __ballot_sync(m, v > 3);
        r += __all_sync(m, v & 1) ? 1u : 0u;
        r += __any_sync(m, v < -2) ? 2u : 0u;
        __syncwarp(m);
    }
    r += __popc(__ballot_sync(0xffffffffu, v == 7));
#if __CUDA_ARCH__ >= 700
    r += __match_any_sync(0xffffffffu, v);
    int pred;
    r += __match_all_sync(0xffffffffu, v >> 4, &pred);
    r += pred;
    r += __match_any_sync(0xffffffffu, static_cast<unsigned long long>(v) * 0x100000001ull);
#endif
    __syncwarp(0x0000ffffu);
    out[blockIdx.x * blockDim.x + t] = r;
}

__global__ void oracle_redux(const int *in, int *out) {
    int t = threadIdx.x;
    int v = in[blockIdx.x * blockDim.x + t];
    int r = v;
#if __CUDA_ARCH__ >= 800
    r = __reduce_add_sync(0xffffffffu, static_cast<unsigned>(v));
    r ^= __reduce_min_sync(0xffffffffu, v);
    r += __reduce_max_sync(0xffffffffu, v);
    r ^= static_cast<int>(__reduce_and_sync(0xffffffffu, static_cast<unsigned>(v)));
    r ^= static_cast<int>(__reduce_or_sync(0xffffffffu, static_cast<unsigned>(v)));
    r += static_cast<int>(__reduce_xor_sync(0xffffffffu, static_cast<unsigned>(v)));
    r += static_cast<int>(__reduce_max_sync(0xffffffffu, static_cast<unsigned>(v)));
#endif
    out[blockIdx.x * blockDim.x + t] = r;
}
