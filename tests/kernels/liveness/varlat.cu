// Liveness test kernels (tests/liveness_oracle.rs): variable-latency instructions whose
// results come back through a scoreboard, not after a fixed number of cycles: conversions
// (I2F, F2I, F2F, I2F.F64), the multi-function unit (MUFU: exp, rcp, rsqrt, sin), global,
// shared and texture loads (LDG, LDS, TEX) and special registers (S2R). lv_nlm_diag follows
// the shape of imageDenoising's NLMdiag (the issue-46 case: `-plr` counted one more live
// register than the analysis around its I2F conversions on sm_80): window weights from
// float coordinates made of integer indices, read through a texture.
// liveness-oracle: -maxrregcount=32

#define WIN 3
#define BLOCK 8

__global__ void lv_nlm_diag(cudaTextureObject_t tex, unsigned *dst, int w, int h,
                            float noise, float lerpc) {
  const int ix = blockDim.x * blockIdx.x + threadIdx.x;
  const int iy = blockDim.y * blockIdx.y + threadIdx.y;
  const float x = (float)ix + 0.5f;
  const float y = (float)iy + 0.5f;
  __shared__ float fweights[BLOCK * BLOCK];
  float weight = 0;
  for (int n = -WIN; n <= WIN; n++) {
    float4 a = tex2D<float4>(tex, x + n, y + n);
    float4 b = tex2D<float4>(tex, x + (float)(threadIdx.x & 7) - 3.5f, y + (float)n);
    float d = (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z);
    weight += d;
  }
  const float gx = (float)(threadIdx.x - 3);
  const float gy = (float)(threadIdx.y - 3);
  fweights[threadIdx.y * BLOCK + threadIdx.x] =
      __expf(-(weight * noise + (gx * gx + gy * gy) * (1.0f / (WIN * WIN))));
  __syncthreads();
  if (ix < w && iy < h) {
    float sum = 0, r = 0, g = 0, bl = 0;
    int idx = 0;
    for (float i = -WIN; i <= WIN; i++)
      for (float j = -WIN; j <= WIN; j++) {
        const float wgt = fweights[idx++ & (BLOCK * BLOCK - 1)];
        float4 c = tex2D<float4>(tex, x + j, y + i);
        r += c.x * wgt;
        g += c.y * wgt;
        bl += c.z * wgt;
        sum += wgt;
      }
    sum = 1.0f / sum;
    const float fc = lerpc * sum;
    r = r * sum + fc * 0.25f;
    g = g * sum + fc * 0.5f;
    bl = bl * sum + fc * 0.75f;
    dst[w * iy + ix] = ((unsigned)__float2int_rn(r * 255.f) & 0xff) |
                       (((unsigned)__float2int_rn(g * 255.f) & 0xff) << 8) |
                       (((unsigned)__float2int_rn(bl * 255.f) & 0xff) << 16);
  }
}

// Conversions in both directions and widths, each result used a few instructions later,
// beside MUFU and loads whose results arrive out of order.
__global__ void lv_convert_mix(const int *gi, const float *gf, const double *gd, float *out,
                               long long *outl, int n) {
  __shared__ int si[256];
  const int t = threadIdx.x;
  si[t & 255] = gi[blockIdx.x * blockDim.x + t];
  __syncthreads();
  float acc = 0.f;
  double dacc = 0.0;
  long long lacc = 0;
  for (int k = 0; k < n; k++) {
    const int a = si[(t + k) & 255];
    const float f = gf[(t * 3 + k) % n];
    const double d = gd[(t + 7 * k) % n];
    const float fa = (float)a;
    const int back = (int)(f * 16.f);
    const double da = (double)a + (double)f;
    acc += __sinf(fa) * rsqrtf(fabsf(f) + 1.f) + __frcp_rn(fa + 2.f) + (float)back;
    dacc += da * d + (double)back;
    lacc += (long long)(f * 1e6f) + __double2ll_rn(d);
    if ((k & 3) == 3) acc += (float)(unsigned)clock();
  }
  out[blockIdx.x * blockDim.x + t] = acc + (float)dacc;
  outl[blockIdx.x * blockDim.x + t] = lacc + (long long)__float2uint_rz(acc);
}
