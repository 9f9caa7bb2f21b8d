// Device calls and math slow paths: a non-inlined device function per step, taking sinf and
// cosf of arguments beyond 105615 (the Payne-Hanek reduction: a local-memory table walk) and
// powf, called several times per element.
#include "common.cuh"

constexpr int N = 1 << 20;
constexpr int STEPS = 4;
constexpr int THREADS = 256;

__device__ __noinline__ float step(float x, float p, float acc) {
  float s = sinf(x) * cosf(0.5f * x);
  float q = powf(p, 1.7f);
  return acc + s + q * 0.25f;
}

extern "C" __global__ void devcalls(const float* __restrict__ in, float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  float x = in[i];
  float acc = 0;
  for (int k = 0; k < STEPS; ++k) acc = step(x + 1024.0f * k, 0.5f + 0.125f * k, acc);
  out[i] = acc;
}

static double ref_elem(float x) {
  double acc = 0;
  for (int k = 0; k < STEPS; ++k) {
    float xk = x + 1024.0f * k;  // the same float argument the device sees
    acc += std::sin(double(xk)) * std::cos(double(0.5f * xk)) +
           std::pow(0.5 + 0.125 * k, 1.7) * 0.25;
  }
  return acc;
}

static std::vector<float> inputs() {
  bench::Rng rng(5);
  std::vector<float> v(N);
  for (auto& f : v) f = rng.uniform(2e5f, 4e6f);
  return v;
}

// Self-check: sin(x) cos(x/2) = (sin(3x/2) + sin(x/2)) / 2 against the reference's terms.
static bool self_check() {
  auto in = inputs();
  double worst = 0;
  for (int i = 0; i < 4096; ++i) {
    double alt = 0;
    for (int k = 0; k < STEPS; ++k) {
      double xk = double(in[i] + 1024.0f * k), h = double(0.5f * float(xk));
      // h is x/2 exactly (halving a float is exact): the product-to-sum identity applies.
      alt += 0.5 * (std::sin(xk + h) + std::sin(xk - h)) + std::exp(1.7 * std::log(0.5 + 0.125 * k)) * 0.25;
    }
    worst = std::max(worst, std::fabs(alt - ref_elem(in[i])));
  }
  std::fprintf(stderr, "product-to-sum identity: worst %.3g\n", worst);
  return worst < 1e-9;
}

int main(int argc, char** argv) {
  const char* P = "devcalls";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  auto in = inputs();
  float* din = bench::to_device(in);
  float* dout = bench::device_zeros<float>(N);
  auto launch = [&] { devcalls<<<N / THREADS, THREADS>>>(din, dout); };
  auto check = [&] {
    auto out = bench::to_host(dout, N);
    std::vector<double> want(N);
    for (int i = 0; i < N; ++i) want[i] = ref_elem(in[i]);
    // sinf/cosf/powf within a few ulp, four steps of terms of magnitude <= 1: 4e-6 absolute.
    auto c = bench::compare(out.data(), want.data(), N, 4e-6, 1.0);
    return bench::report(P, c, out.data(), want.data());
  };
  return bench::measure(P, "devcalls", devcalls, THREADS, 0, launch, check);
}
