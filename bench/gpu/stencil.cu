// A stencil with a wide halo held in registers: each thread walks down one column keeping
// the 2R+1 values of the vertical stencil in a register window (shifted each row), and adds
// the horizontal neighbours of the centre row.
#include "common.cuh"

constexpr int W = 4096, H = 4096;
constexpr int R = 6;        // halo radius
constexpr int ROWS = 64;    // rows per thread
constexpr int THREADS = 128;

__host__ __device__ inline float coef(int k) { return 1.0f / float(2 + k * k); }  // k in -R..R

__host__ __device__ inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

extern "C" __global__ void stencil_halo(const float* __restrict__ in, float* __restrict__ out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y0 = blockIdx.y * ROWS;
  if (x >= W) return;
  float win[2 * R + 1];
#pragma unroll
  for (int k = 0; k < 2 * R + 1; ++k) win[k] = in[clampi(y0 - R + k, 0, H - 1) * W + x];
  for (int y = y0; y < y0 + ROWS; ++y) {
    float acc = 0.f;
#pragma unroll
    for (int k = -R; k <= R; ++k) acc += coef(k) * win[k + R];
#pragma unroll
    for (int k = 1; k <= R; ++k)
      acc += coef(k) * (in[y * W + clampi(x - k, 0, W - 1)] + in[y * W + clampi(x + k, 0, W - 1)]);
    out[y * W + x] = acc;
#pragma unroll
    for (int k = 0; k < 2 * R; ++k) win[k] = win[k + 1];
    win[2 * R] = in[clampi(y + R + 1, 0, H - 1) * W + x];
  }
}

static double ref_at(const std::vector<float>& in, int w, int h, int y, int x) {
  double acc = 0;
  for (int k = -R; k <= R; ++k) acc += double(coef(k)) * in[size_t(clampi(y + k, 0, h - 1)) * w + x];
  for (int k = 1; k <= R; ++k)
    acc += double(coef(k)) * (double(in[size_t(y) * w + clampi(x - k, 0, w - 1)]) +
                              in[size_t(y) * w + clampi(x + k, 0, w - 1)]);
  return acc;
}

static std::vector<float> inputs(int w, int h) {
  bench::Rng rng(2);
  std::vector<float> v(size_t(w) * h);
  for (auto& f : v) f = rng.uniform(0.5f, 1.5f);
  return v;
}

// Self-check: on a linear field a*x + b*y + c the symmetric stencil gives the field times
// the sum of its weights (away from the clamped edges).
static bool self_check() {
  const int w = 64, h = 64;
  std::vector<float> lin(w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) lin[y * w + x] = 0.25f * x + 0.5f * y + 3.0f;
  double total = 0;
  for (int k = -R; k <= R; ++k) total += coef(k);
  for (int k = 1; k <= R; ++k) total += 2 * coef(k);
  double worst = 0;
  for (int y = R; y < h - R; ++y)
    for (int x = R; x < w - R; ++x)
      worst = std::max(worst, std::fabs(ref_at(lin, w, h, y, x) - total * lin[y * w + x]));
  std::fprintf(stderr, "linear field: worst deviation %.3g\n", worst);
  return worst < 1e-4;
}

int main(int argc, char** argv) {
  const char* P = "stencil";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  auto in = inputs(W, H);
  float* din = bench::to_device(in);
  float* dout = bench::device_zeros<float>(size_t(W) * H);
  dim3 grid(W / THREADS, H / ROWS);
  auto launch = [&] { stencil_halo<<<grid, THREADS>>>(din, dout); };
  auto check = [&] {
    auto out = bench::to_host(dout, size_t(W) * H);
    std::vector<double> got, want;
    for (int s = 0; s < 8192; ++s) {
      int y = (s * 977) % H, x = (s * 7919 + (s & 7)) % W;
      if (s < 16) y = s;  // the clamped top rows
      got.push_back(out[size_t(y) * W + x]);
      want.push_back(ref_at(in, W, H, y, x));
    }
    // 25 positive float terms of magnitude ~1: relative 1e-5.
    auto c = bench::compare(got.data(), want.data(), got.size(), 1e-5, 1.0);
    return bench::report(P, c, got.data(), want.data());
  };
  return bench::measure(P, "stencil_halo", stencil_halo, THREADS, 0, launch, check);
}
