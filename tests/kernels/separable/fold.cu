// The device function walk.cu's far_walk calls across translation units: it keeps 24 values
// live through a loop, so ptxas gives it many registers.
__device__ float fold(const float *f, int n, float seed)
{
    float acc[24];
#pragma unroll
    for (int i = 0; i < 24; ++i)
        acc[i] = f[i] * seed + f[i + 24];
    float s = 0;
    for (int k = 0; k < n; ++k) {
#pragma unroll
        for (int i = 0; i < 24; ++i)
            acc[i] = fmaf(acc[i], acc[(i + 5) % 24], s);
        s += acc[k % 24];
    }
    return s;
}
