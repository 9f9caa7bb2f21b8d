// Oracle coverage: wide memory accesses (64- and 128-bit global, shared and local loads and
// stores), texture fetches (1-D linear, 2-D, layered, gather) and surface reads and writes.

__global__ void oracle_wide_access(const float4 *in4, const double2 *ind2, const float2 *in2,
                                   float4 *out4, double *outd, int idx) {
    __shared__ __align__(16) float4 s4[128];
    __shared__ __align__(8) float2 s2[128];
    int t = threadIdx.x;
    int g = blockIdx.x * blockDim.x + t;
    float4 a = in4[g];
    double2 d = ind2[g];
    float2 b = in2[g];
    s4[t] = a;
    s2[t] = b;
    __syncthreads();
    float4 c = s4[(t + 1) & 127];
    float2 e = s2[(t + 5) & 127];
    // A per-thread array indexed by a runtime value lives in local memory (LDL/STL).
    float4 local[8];
    for (int i = 0; i < 8; ++i)
        local[i] = make_float4(c.x + i, c.y - i, e.x * i, e.y);
    float4 l = local[idx & 7];
    out4[g] = make_float4(a.x + c.x + l.x, a.y + c.y + l.y, a.z + c.z + l.z, a.w + c.w + l.w);
    outd[2 * g] = d.x + e.x;
    outd[2 * g + 1] = d.y * e.y;
}

__global__ void oracle_texture(cudaTextureObject_t lin, cudaTextureObject_t tex2,
                               cudaTextureObject_t layered, float *out, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    float4 v = tex1Dfetch<float4>(lin, y * w + x);
    float s = tex1Dfetch<float>(lin, x);
    float u = tex2D<float>(tex2, x + 0.5f, y + 0.5f);
    float4 g = tex2Dgather<float4>(tex2, x * 0.25f, y * 0.5f, 1);
    float l = tex2DLayered<float>(layered, x + 0.5f, y + 0.5f, x & 3);
    float lod = tex2DLod<float>(tex2, x * 0.125f, y * 0.125f, 1.5f);
    out[y * w + x] = v.x + v.y * v.z - v.w + s + u + g.x + g.w + l + lod;
}

__global__ void oracle_surface(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    float v = surf2Dread<float>(src, x * 4, y);
    float2 p = surf2Dread<float2>(src, (x ^ 1) * 8, y, cudaBoundaryModeClamp);
    float4 q = surf2Dread<float4>(src, (x & ~3) * 16, y ^ 1, cudaBoundaryModeZero);
    surf2Dwrite(v * 2.0f + p.x + q.z, dst, x * 4, y);
    surf2Dwrite(make_float4(q.w, q.z, p.y, v), dst, ((w - 1 - x) & ~3) * 16, y);
    surf1Dwrite(p.x - p.y, dst, x * 4);
}
