// High register pressure: many live 64-bit accumulators carried through nested loops.
#include <cstdint>

__global__ void regpressure(const uint64_t *__restrict__ in, uint64_t *__restrict__ out, int n,
                            int rounds) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t a0 = in[tid % n], a1 = a0 * 3u, a2 = a0 ^ 0x9e3779b97f4a7c15ull, a3 = a1 + a2;
    uint64_t a4 = a3 << 7, a5 = a4 | a0, a6 = a5 * a1, a7 = a6 - a2;
    uint64_t b0 = a7 >> 3, b1 = b0 + a4, b2 = b1 * a5, b3 = b2 ^ a6;
    double d0 = (double)a0, d1 = d0 * 1.5, d2 = d1 + 0.25, d3 = d2 * d0;
    for (int r = 0; r < rounds; ++r) {
#pragma unroll 4
        for (int j = 0; j < 16; ++j) {
            uint64_t x = in[(tid + j * 977 + r) % n];
            a0 += x * a7; a1 ^= a0 >> 13; a2 = a2 * 0x100000001b3ull + a1;
            a3 += a2 << (j & 7); a4 ^= a3; a5 += a4 * x; a6 = (a6 << 1) | (a5 >> 63);
            a7 += a6 ^ b0; b0 = b0 * 31u + a7; b1 ^= b0 + x; b2 += b1 >> 5; b3 ^= b2 * 7u;
            d0 = d0 * 0.999 + (double)(x & 0xffff); d1 += d0 * d2; d2 = d2 * 0.5 + d1; d3 -= d2;
        }
    }
    out[tid] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + b0 + b1 + b2 + b3 +
               (uint64_t)(d0 + d1 + d2 + d3);
}
