// n-body forces with many accumulators: each thread owns BODIES bodies (position and four
// accumulators each: acceleration and potential) against one slice of the others, so the
// kernel lives on its registers. The slices' partial sums are added on the host.
#include "common.cuh"

constexpr int N = 16384;     // bodies
constexpr int BODIES = 8;    // bodies per thread
constexpr int SLICES = 16;   // slices of the interaction partners (grid.y)
constexpr float EPS2 = 0.01f;
constexpr int THREADS = 128;

extern "C" __global__ void nbody_forces(const float4* __restrict__ pos, float4* __restrict__ out) {
  const int owners = N / BODIES;
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= owners) return;
  float px[BODIES], py[BODIES], pz[BODIES];
  float ax[BODIES], ay[BODIES], az[BODIES], pot[BODIES];
#pragma unroll
  for (int b = 0; b < BODIES; ++b) {
    float4 p = pos[t + b * owners];
    px[b] = p.x;
    py[b] = p.y;
    pz[b] = p.z;
    ax[b] = ay[b] = az[b] = pot[b] = 0.f;
  }
  const int per = N / SLICES;
  const int j0 = blockIdx.y * per;
#pragma unroll 4
  for (int j = j0; j < j0 + per; ++j) {
    float4 q = pos[j];
#pragma unroll
    for (int b = 0; b < BODIES; ++b) {
      float dx = q.x - px[b], dy = q.y - py[b], dz = q.z - pz[b];
      float r2 = dx * dx + dy * dy + dz * dz + EPS2;
      float inv = rsqrtf(r2);
      float s = q.w * inv * inv * inv;
      ax[b] += dx * s;
      ay[b] += dy * s;
      az[b] += dz * s;
      pot[b] -= q.w * inv;
    }
  }
#pragma unroll
  for (int b = 0; b < BODIES; ++b)
    out[blockIdx.y * N + t + b * owners] = make_float4(ax[b], ay[b], az[b], pot[b]);
}

// The reference for body i: acceleration and potential in double.
static void ref_body(const std::vector<float4>& p, int n, int i, double r[4]) {
  r[0] = r[1] = r[2] = r[3] = 0;
  for (int j = 0; j < n; ++j) {
    double dx = double(p[j].x) - p[i].x, dy = double(p[j].y) - p[i].y,
           dz = double(p[j].z) - p[i].z;
    double r2 = dx * dx + dy * dy + dz * dz + EPS2;
    double inv = 1.0 / std::sqrt(r2);
    double s = p[j].w * inv * inv * inv;
    r[0] += dx * s;
    r[1] += dy * s;
    r[2] += dz * s;
    r[3] -= p[j].w * inv;
  }
}

static std::vector<float4> inputs(int n) {
  bench::Rng rng(1);
  std::vector<float4> p(n);
  for (auto& b : p)
    b = make_float4(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0.5f, 1.5f));
  return p;
}

// Self-check: Newton's third law (the mass-weighted accelerations of a closed system sum to
// zero, up to the self-term, which is zero) and one pair against the closed form.
static bool self_check() {
  const int n = 512;
  auto p = inputs(n);
  double sum[3] = {0, 0, 0}, mag = 0;
  for (int i = 0; i < n; ++i) {
    double r[4];
    ref_body(p, n, i, r);
    for (int k = 0; k < 3; ++k) {
      sum[k] += p[i].w * r[k];
      mag += std::fabs(p[i].w * r[k]);
    }
  }
  bool momentum = mag > 0 && std::fabs(sum[0]) + std::fabs(sum[1]) + std::fabs(sum[2]) < 1e-9 * mag;
  std::vector<float4> two = {make_float4(0, 0, 0, 1), make_float4(3, 4, 0, 2)};
  double r[4];
  ref_body(two, 2, 0, r);
  double d = std::pow(25.0 + EPS2, 1.5);
  bool pair = std::fabs(r[0] - 2 * 3 / d) < 1e-12 && std::fabs(r[1] - 2 * 4 / d) < 1e-12 &&
              std::fabs(r[3] + 2 / std::sqrt(25.0 + EPS2) + 1 / std::sqrt(double(EPS2))) < 1e-9;
  std::fprintf(stderr, "momentum %s, pair %s\n", momentum ? "conserved" : "NOT conserved",
               pair ? "matches" : "DIFFERS");
  return momentum && pair;
}

int main(int argc, char** argv) {
  const char* P = "nbody";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  auto p = inputs(N);
  float4* dp = bench::to_device(p);
  float4* dout = bench::device_zeros<float4>(size_t(N) * SLICES);
  dim3 grid((N / BODIES + THREADS - 1) / THREADS, SLICES);
  auto launch = [&] { nbody_forces<<<grid, THREADS>>>(dp, dout); };
  auto check = [&] {
    auto out = bench::to_host(dout, size_t(N) * SLICES);
    // 512 sampled bodies: the slices' sum against the double reference.
    std::vector<double> got, want;
    double scale = 0;
    for (int s = 0; s < 512; ++s) {
      int i = (s * 7919) % N;
      double r[4], g[4] = {0, 0, 0, 0};
      ref_body(p, N, i, r);
      for (int sl = 0; sl < SLICES; ++sl) {
        float4 o = out[size_t(sl) * N + i];
        g[0] += o.x, g[1] += o.y, g[2] += o.z, g[3] += o.w;
      }
      for (int k = 0; k < 4; ++k) {
        got.push_back(g[k]);
        want.push_back(r[k]);
        scale += std::fabs(r[k]);
      }
    }
    // float sums of 16384 terms: relative 1e-3 of the typical magnitude.
    auto c = bench::compare(got.data(), want.data(), got.size(), 1e-3, scale / got.size());
    return bench::report(P, c, got.data(), want.data());
  };
  return bench::measure(P, "nbody_forces", nbody_forces, THREADS, 0, launch, check);
}
