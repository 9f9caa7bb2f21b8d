// Measured-path coverage (issue 45): stencils. Each thread walks a column of a 3D grid with
// a sliding window of planes in registers; every input value is read by its 6 or 26
// neighbours, mostly from L1 and L2, while the no-reuse model counts each read as DRAM.
#define AT(x, y, z) ((((z) * ny) + (y)) * nx + (x))

__global__ void stencil7_column(const float *__restrict__ in, float *__restrict__ out, int nx,
                                int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < 1 || x >= nx - 1 || y < 1 || y >= ny - 1) return;
    float win[18];
#pragma unroll
    for (int i = 0; i < 18; ++i) win[i] = in[AT(x, y, i)];
    for (int z0 = 1; z0 + 16 < nz; z0 += 16) {
#pragma unroll
        for (int i = 1; i < 17; ++i) {
            int z = z0 + i - 1;
            float s = 0.4f * win[i] + 0.1f * (win[i - 1] + win[i + 1]) +
                      0.1f * (in[AT(x - 1, y, z)] + in[AT(x + 1, y, z)] + in[AT(x, y - 1, z)] +
                              in[AT(x, y + 1, z)]);
            out[AT(x, y, z)] = s;
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) win[i] = win[i + 16];
#pragma unroll
        for (int i = 2; i < 18; ++i) win[i] = in[AT(x, y, min(z0 + 15 + i, nz - 1))];
    }
}

__global__ void stencil27_block(const float *__restrict__ in, float *__restrict__ out, int nx,
                                int ny, int nz, float c0, float c1, float c2, float c3) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < 1 || x >= nx - 1 || y < 1 || y >= ny - 1) return;
    float p[3][3][3];
#pragma unroll
    for (int dz = 0; dz < 2; ++dz)
#pragma unroll
        for (int dy = 0; dy < 3; ++dy)
#pragma unroll
            for (int dx = 0; dx < 3; ++dx) p[dz][dy][dx] = in[AT(x + dx - 1, y + dy - 1, dz)];
    for (int z = 1; z < nz - 1; ++z) {
#pragma unroll
        for (int dy = 0; dy < 3; ++dy)
#pragma unroll
            for (int dx = 0; dx < 3; ++dx) p[2][dy][dx] = in[AT(x + dx - 1, y + dy - 1, z + 1)];
        float faces = p[0][1][1] + p[2][1][1] + p[1][0][1] + p[1][2][1] + p[1][1][0] + p[1][1][2];
        float edges = p[0][0][1] + p[0][2][1] + p[0][1][0] + p[0][1][2] + p[2][0][1] + p[2][2][1] +
                      p[2][1][0] + p[2][1][2] + p[1][0][0] + p[1][0][2] + p[1][2][0] + p[1][2][2];
        float corners = p[0][0][0] + p[0][0][2] + p[0][2][0] + p[0][2][2] + p[2][0][0] +
                        p[2][0][2] + p[2][2][0] + p[2][2][2];
        out[AT(x, y, z)] = c0 * p[1][1][1] + c1 * faces + c2 * edges + c3 * corners;
#pragma unroll
        for (int dy = 0; dy < 3; ++dy)
#pragma unroll
            for (int dx = 0; dx < 3; ++dx) {
                p[0][dy][dx] = p[1][dy][dx];
                p[1][dy][dx] = p[2][dy][dx];
            }
    }
}
