// Static and dynamic shared memory, with a block-level reduction.
__global__ void shmem_reduce(const float *in, float *out, int n) {
    __shared__ float tile[256];
    extern __shared__ float dyn[];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? in[i] : 0.0f;
    dyn[t] = tile[t] * 2.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            tile[t] += tile[t + s];
            dyn[t] = fmaxf(dyn[t], dyn[t + s]);
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = tile[0] + dyn[0];
}

void launch_shmem_reduce(const float *in, float *out, int n) {
    shmem_reduce<<<(n + 255) / 256, 256, 256 * sizeof(float)>>>(in, out, n);
}
