// The control: a streaming kernel that is not register-bound (a handful of registers, full
// occupancy at any budget), so nvcc-orion should leave it as nvcc built it.
#include "common.cuh"

constexpr int N = 1 << 24;
constexpr int THREADS = 256;

extern "C" __global__ void control_axpby(const float* __restrict__ x, const float* __restrict__ y,
                                         float* __restrict__ out, float a, float b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) out[i] = a * x[i] + b * y[i];
}

static void inputs(std::vector<float>& x, std::vector<float>& y) {
  bench::Rng rng(11);
  x.resize(N);
  y.resize(N);
  for (auto& f : x) f = rng.uniform(-2, 2);
  for (auto& f : y) f = rng.uniform(-2, 2);
}

// Self-check: a x + b y against (x + (b/a) y) a with exact coefficients (powers of two).
static bool self_check() {
  std::vector<float> x, y;
  inputs(x, y);
  double worst = 0;
  for (int i = 0; i < 4096; ++i)
    worst = std::max(worst, std::fabs((1.5 * x[i] + 0.25 * y[i]) - (x[i] + y[i] / 6.0) * 1.5));
  std::fprintf(stderr, "two formulations: worst %.3g\n", worst);
  return worst < 1e-12;
}

int main(int argc, char** argv) {
  const char* P = "control";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  std::vector<float> x, y;
  inputs(x, y);
  float* dx = bench::to_device(x);
  float* dy = bench::to_device(y);
  float* dout = bench::device_zeros<float>(N);
  auto launch = [&] { control_axpby<<<N / THREADS, THREADS>>>(dx, dy, dout, 1.5f, 0.25f); };
  auto check = [&] {
    auto out = bench::to_host(dout, N);
    std::vector<double> want(N);
    for (int i = 0; i < N; ++i) want[i] = 1.5 * x[i] + 0.25 * y[i];
    // Two float products and a sum (fused or not): relative 1e-6 of at least 1.
    auto c = bench::compare(out.data(), want.data(), N, 1e-6, 1.0);
    return bench::report(P, c, out.data(), want.data());
  };
  return bench::measure(P, "control_axpby", control_axpby, THREADS, 0, launch, check);
}
