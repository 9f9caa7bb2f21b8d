// Register-heavy kernels that call __noinline__ device functions of their own besides the
// compiler's helper subroutines (sqrt, division): particle interactions, a colour transform
// and a small solver, each keeping a block of values live across the calls. Written for
// issue 46's coverage measurement (bench/results/spill2smem-heavy.md).
#define NP 12

__device__ __noinline__ float inv_dist(float dx, float dy, float dz, float soft) {
  return 1.0f / sqrtf(dx * dx + dy * dy + dz * dz + soft);
}

__device__ __noinline__ double dnorm(double a, double b, double c) {
  return sqrt(a * a + b * b + c * c) / (fabs(a) + fabs(b) + fabs(c) + 1.0);
}

__global__ void particles_f32(const float4 *__restrict__ pos, float4 *__restrict__ acc,
                              int n, float soft) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x[NP], y[NP], z[NP];
#pragma unroll
  for (int j = 0; j < NP; j++) {
    const float4 p = pos[(i + j * 97) % n];
    x[j] = p.x; y[j] = p.y; z[j] = p.z;
  }
  float ax = 0, ay = 0, az = 0;
#pragma unroll
  for (int j = 0; j < NP; j++)
#pragma unroll
    for (int k = j + 1; k < NP; k++) {
      const float s = inv_dist(x[j] - x[k], y[j] - y[k], z[j] - z[k], soft);
      const float s3 = s * s * s;
      ax += (x[k] - x[j]) * s3;
      ay += (y[k] - y[j]) * s3;
      az += (z[k] - z[j]) / (s3 + 1.0f);
      x[k] += 0.001f * ax;
    }
  acc[i] = make_float4(ax, ay, az, x[0] + y[NP - 1] + z[NP / 2]);
}

__global__ void particles_f64(const double *__restrict__ pos, double *__restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  double x[8], y[8], z[8];
#pragma unroll
  for (int j = 0; j < 8; j++) {
    x[j] = pos[i + j * n];
    y[j] = pos[i + (j + 8) * n];
    z[j] = pos[i + (j + 16) * n];
  }
  double e = 0;
#pragma unroll
  for (int j = 0; j < 8; j++)
#pragma unroll
    for (int k = 0; k < 8; k++)
      if (k != j) {
        const double r = dnorm(x[j] - x[k], y[j] - y[k], z[j] - z[k]);
        e += 1.0 / (r + 0.5);
        y[k] += 1e-3 * r;
      }
#pragma unroll
  for (int j = 0; j < 8; j++) out[i + j * n] = x[j] + y[j] + z[j] + e;
}

__device__ __noinline__ float gamma_curve(float v, float g) {
  return v <= 0.0031308f ? 12.92f * v : 1.055f * __powf(v, 1.0f / g) - 0.055f;
}

__global__ void colour_3x3(const float *__restrict__ in, float *__restrict__ out, int n,
                           float g) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float m[9], v[16];
#pragma unroll
  for (int j = 0; j < 9; j++) m[j] = in[j] + 1.0f;
  const float det = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
                    m[2] * (m[3] * m[7] - m[4] * m[6]);
#pragma unroll
  for (int j = 0; j < 16; j++) v[j] = in[i + (j + 1) * n] / det;
  float s = 0;
#pragma unroll
  for (int j = 0; j < 16; j++) {
    const float c = gamma_curve(v[j], g);
#pragma unroll
    for (int k = 0; k < 16; k++) v[k] = v[k] * 0.99f + c * m[(j + k) % 9] / (v[(k + 1) % 16] + 2.0f);
    s += sqrtf(fabsf(c));
  }
#pragma unroll
  for (int j = 0; j < 16; j++) out[i + j * n] = v[j] + s;
}
