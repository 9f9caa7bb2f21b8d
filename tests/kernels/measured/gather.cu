// Measured-path coverage (issue 45): register-heavy kernels whose data is reused between
// threads, which the static model's DRAM floor (no reuse) cannot see.
//
// A gather: each thread sums 16 rows of a 64 K-float table (256 KiB, resident in L2) picked
// by an index list, each row a float4 strip. With 65536 threads each table element is read
// by about 40 threads; the model counts every byte as DRAM traffic.
__global__ void gather_rows(const float4 *__restrict__ table, const int *__restrict__ index,
                            float4 *__restrict__ out, int rows, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float4 acc[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        int r = index[t * 16 + k] % rows;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            float4 v = table[(r * 8 + j) % (rows * 2)];
            float w = 1.0f + 0.0625f * k;
            acc[j].x = fmaf(v.x, w, acc[j].x);
            acc[j].y = fmaf(v.y, w, acc[j].y);
            acc[j].z = fmaf(v.z, w, acc[j].z);
            acc[j].w = fmaf(v.w, w, acc[j].w);
        }
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) out[t * 8 + j] = acc[j];
}
