// A kernel whose own static shared memory (45568 bytes) leaves no room for even one spill
// slot laid out for 1024 threads (4 KiB a slot), and room for exactly 7 at 128 threads (512
// bytes a slot): compiled with -maxrregcount=24 it spills 63 words (tests/spill2smem.rs).
#define N 32
__global__ void no_room(const float *in, float *out, int n)
{
    __shared__ float tile[11392];
    float acc[N];
#pragma unroll
    for (int j = 0; j < N; j++) acc[j] = in[threadIdx.x + j * n];
    for (int i = 0; i < n; i++) {
        tile[(threadIdx.x + i) % 11392] = acc[0] + acc[N - 1];
        __syncthreads();
#pragma unroll
        for (int j = 0; j < N; j++)
            acc[j] = acc[j] * tile[(threadIdx.x * 7 + j + i) % 11392] + acc[(j + 1) % N];
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < N; j++) out[threadIdx.x + j * n] = acc[j];
}
