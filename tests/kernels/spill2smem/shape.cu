// Kernels for the thread-shape tests (tests/thread_shape.rs): each keeps more values live
// than a 31-register budget allows, so ptxas spills; they differ only in what they declare
// about their block.

#define LIVE 30

// The body: a ring of values updated in a loop whose trip count the compiler cannot know.
__device__ __forceinline__ float ring(const float *in, int i, int n)
{
    float v[LIVE];
#pragma unroll
    for (int k = 0; k < LIVE; k++) v[k] = in[(i * 3 + k * 13) % n] + 0.5f * k;
    for (int r = 0; r < (n & 5) + 2; r++) {
#pragma unroll
        for (int k = 0; k < LIVE; k++) v[k] = v[k] * v[(k + 5) % LIVE] - v[(k + 17) % LIVE];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < LIVE; k++) s += v[k] * ((k % 5) + 1);
    return s;
}

// `__launch_bounds__(256)` (EIATTR_MAX_THREADS): 256 threads in any shape.
__global__ void __launch_bounds__(256) shape_bounds(const float *in, float *out, int n)
{
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int i = blockIdx.x * blockDim.x * blockDim.y * blockDim.z + t;
    out[i] = ring(in, i, n);
}

// Nothing declared: the block size is the setting's or the worst case.
__global__ void shape_free(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = ring(in, i + 1, n);
}

// Given `.reqntid 256, 1, 1` in its PTX by the test (EIATTR_REQNTID): exactly 256 × 1 × 1.
__global__ void shape_reqntid(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = ring(in, i + 2, n);
}
