// Kernels whose code section holds local functions, for adding a copy under a new name
// (`nvcc_orion::cubin::entry`, issue 47): `mixed` calls a `__noinline__` helper, which ptxas
// compiles into the kernel's own section as `$<kernel>$<helper>` (with its own frame
// records); `ratio` divides floats, whose slow path ptxas compiles there as
// `$__internal_<n>_$__cuda_sm3x_div_rn_noftz_f32_slowpath`, numbered over the module.
__device__ __noinline__ float mix_row(const float *a, int i, int n)
{
    float s = 0.f;
    for (int j = 0; j < n; ++j)
        s = fmaf(s, a[i * n + j], 1.f);
    return s;
}

__global__ void mixed(const float *a, float *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = mix_row(a, t, n) + mix_row(a, t + 1, n);
}

__global__ void ratio(const float *a, const float *b, float *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = a[t] / b[t];
}

__global__ void plain(float *x, float k)
{
    x[threadIdx.x] *= k;
}
