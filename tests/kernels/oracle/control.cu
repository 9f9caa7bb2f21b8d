// Oracle coverage: control and synchronisation. Block barriers (__syncthreads and its
// count/and/or reductions, named barriers with ids and counts, bar.arrive), divergent ifs
// (BSSY/BSYNC), __syncwarp with masks (WARPSYNC), calls to __noinline__ device functions
// (CALL/RET), many boolean conditions kept across a loop (PLOP3, P2R/R2P), and loops with
// uniform bounds (the uniform datapath: ULDC, UIADD3, ULOP3, UISETP).

__device__ __noinline__ float oracle_helper(const float *p, int n, float k) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i)
        s = s * k + p[i];
    return s;
}

__device__ __noinline__ int oracle_helper_int(int a, int b) {
    return a > b ? (a - b) * 3 : (b ^ a) + 7;
}

__global__ void oracle_barriers(const int *in, int *out) {
    __shared__ int buf[256];
    int t = threadIdx.x;
    int v = in[blockIdx.x * blockDim.x + t];
    buf[t] = v;
    __syncthreads();
    int cnt = __syncthreads_count(v > 10);
    int all = __syncthreads_and(v != 0);
    int any = __syncthreads_or(v < 0);
    if (t < 128) {
        buf[t] += buf[t + 128];
        asm volatile("bar.sync 1, 128;" ::: "memory");
        buf[t] += buf[(t + 64) & 127];
        asm volatile("bar.arrive 2, 256;" ::: "memory");
    } else {
        asm volatile("bar.sync 2, 256;" ::: "memory");
        buf[t] ^= cnt;
    }
    asm volatile("barrier.sync 3;" ::: "memory");
    out[blockIdx.x * blockDim.x + t] = buf[(t + 1) & 255] + cnt * 3 + all + any;
}

__global__ void oracle_divergent_calls(const float *in, const int *idx, float *out, int n,
                                       float k) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int j = idx[t];
    float r = 0.0f;
    if (j & 1) {
        r = oracle_helper(in + (j >> 1), n, k);
        __syncwarp(__activemask());
    } else if (j & 2) {
        r = static_cast<float>(oracle_helper_int(j, n));
    } else {
        for (int i = 0; i < (j & 15); ++i)
            r += in[i * n + t] * k;
    }
    __syncwarp(0xffff0000u);
    __syncwarp();
    out[t] = r + static_cast<float>(oracle_helper_int(t, j));
}

// Eleven conditions computed up front and used in every iteration of a loop whose body needs
// predicates of its own: more than the seven predicate registers, so ptxas keeps them as bit
// masks (P2R/R2P) or combines them (PLOP3).
__global__ void oracle_predicates(const int *in, int *out, int n, int lim) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int a = in[t], b = in[t + 1024], c = in[t + 2048];
    bool p0 = a > b, p1 = b > c, p2 = a == c, p3 = a < 0, p4 = b < 0, p5 = c < 0;
    bool p6 = (a & 3) == 1, p7 = (b & 5) == 4, p8 = c > lim, p9 = a > lim, p10 = (a ^ b) < c;
    int acc = 0;
    for (int i = 0; i < n; ++i) {
        int x = in[(i + 3) * 1024 + t];
        if (p0) acc += x;
        if (p1) acc ^= x << 1;
        if (p2) acc -= x >> 2;
        if (p3) acc += i;
        if (p4) acc *= 3;
        if (p5) acc ^= 0x55;
        if (p6) acc += x * x;
        if (p7) acc -= 7;
        if (p8) acc ^= i << 4;
        if (p9) acc += x & 0xff;
        if (p10) acc = ~acc;
        if (x > acc) acc += 11;
    }
    out[t] = acc;
}

// Uniform loop bounds and strides from kernel parameters keep ptxas on the uniform datapath.
__global__ void oracle_uniform(const float *in, float *out, int n, int stride, unsigned mask,
                               int shift) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int i = 0; i < n; i += 2) {
        int off = ((i * stride) & mask) >> shift;
        int off2 = (((i + 1) * stride) ^ mask) + (n - i);
        acc += in[off + t] * in[(off2 & 0xffff) + t];
    }
    unsigned u = (mask ^ static_cast<unsigned>(n)) | static_cast<unsigned>(stride << 3);
    out[t + (u & 0x3ff)] = acc;
}
