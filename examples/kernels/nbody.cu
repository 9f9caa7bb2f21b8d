// All-pairs gravitational n-body step (softened Plummer potential), leapfrog update.
// Each thread integrates BPT bodies at once, so one shared-memory tile load is reused
// BPT times; the price is BPT x (position + acceleration) values live in registers.
#include <cuda_runtime.h>

#ifndef BPT
#define BPT 8
#endif
#define TILE 128

__global__ void __launch_bounds__(TILE)
nbody_step(const float4 *__restrict__ pos_mass, float4 *__restrict__ vel,
           float4 *__restrict__ pos_out, int n, float dt, float softening2)
{
    __shared__ float4 tile[TILE];

    float3 p[BPT];
    float3 acc[BPT];
    float pot[BPT];
    const int base = blockIdx.x * TILE * BPT + threadIdx.x;

#pragma unroll
    for (int b = 0; b < BPT; ++b) {
        const int i = min(base + b * TILE, n - 1);
        const float4 pm = pos_mass[i];
        p[b] = make_float3(pm.x, pm.y, pm.z);
        acc[b] = make_float3(0.f, 0.f, 0.f);
        pot[b] = 0.f;
    }

    for (int start = 0; start < n; start += TILE) {
        const int j = start + threadIdx.x;
        // Zero-mass padding keeps the inner loop branch-free.
        tile[threadIdx.x] = j < n ? pos_mass[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        __syncthreads();

#pragma unroll 8
        for (int k = 0; k < TILE; ++k) {
            const float4 q = tile[k];
#pragma unroll
            for (int b = 0; b < BPT; ++b) {
                const float dx = q.x - p[b].x;
                const float dy = q.y - p[b].y;
                const float dz = q.z - p[b].z;
                const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, softening2)));
                const float inv_r = rsqrtf(r2);
                const float m_inv_r = q.w * inv_r;
                const float s = m_inv_r * inv_r * inv_r;
                acc[b].x = fmaf(dx, s, acc[b].x);
                acc[b].y = fmaf(dy, s, acc[b].y);
                acc[b].z = fmaf(dz, s, acc[b].z);
                pot[b] -= m_inv_r;
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int b = 0; b < BPT; ++b) {
        const int i = base + b * TILE;
        if (i < n) {
            float4 v = vel[i];
            v.x = fmaf(acc[b].x, dt, v.x);
            v.y = fmaf(acc[b].y, dt, v.y);
            v.z = fmaf(acc[b].z, dt, v.z);
            v.w = pot[b]; // per-body potential, used for the energy check on the host
            vel[i] = v;
            pos_out[i] = make_float4(fmaf(v.x, dt, p[b].x), fmaf(v.y, dt, p[b].y),
                                     fmaf(v.z, dt, p[b].z), pos_mass[i].w);
        }
    }
}
