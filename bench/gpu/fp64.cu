// Double precision: exp, sin and cos of four elements per thread by their Taylor series, the
// twelve Horner recurrences interleaved (two registers per double).
#include "common.cuh"

constexpr int N = 1 << 22;
constexpr int PER = 4;  // elements per thread
constexpr int THREADS = 256;
constexpr int TERMS = 22;

// exp, sin, cos of x in [-1, 1] by Horner on their Taylor series (TERMS terms).
__host__ __device__ inline void series(double x, double* e, double* s, double* c) {
  double pe = 1, ps = 1, pc = 1;
  double x2 = x * x;
  for (int k = TERMS; k >= 1; --k) {
    pe = 1 + x * pe / k;
    ps = 1 - x2 * ps / ((2 * k) * (2 * k + 1));
    pc = 1 - x2 * pc / ((2 * k - 1) * (2 * k));
  }
  *e = pe;
  *s = x * ps;
  *c = pc;
}

__host__ __device__ inline double combine(double e, double s, double c) { return e * s + c; }

extern "C" __global__ void fp64_series(const double* __restrict__ in, double* __restrict__ out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = N / PER;
  if (t >= stride) return;
  double x[PER], pe[PER], ps[PER], pc[PER], x2[PER];
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    x[i] = in[t + i * stride];
    x2[i] = x[i] * x[i];
    pe[i] = ps[i] = pc[i] = 1;
  }
#pragma unroll 2
  for (int k = TERMS; k >= 1; --k) {
    double ik = 1.0 / k, is = 1.0 / ((2 * k) * (2 * k + 1)), ic = 1.0 / ((2 * k - 1) * (2 * k));
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      pe[i] = fma(x[i] * pe[i], ik, 1.0);
      ps[i] = fma(-x2[i] * ps[i], is, 1.0);
      pc[i] = fma(-x2[i] * pc[i], ic, 1.0);
    }
  }
#pragma unroll
  for (int i = 0; i < PER; ++i) out[t + i * stride] = combine(pe[i], x[i] * ps[i], pc[i]);
}

static std::vector<double> inputs() {
  bench::Rng rng(3);
  std::vector<double> v(N);
  for (auto& d : v) d = rng.uniform_d(-1, 1);
  return v;
}

static double reference(double x) { return combine(std::exp(x), std::sin(x), std::cos(x)); }

// Self-check: the series against the C library on [-1, 1].
static bool self_check() {
  double worst = 0;
  for (int i = 0; i <= 2000; ++i) {
    double x = -1 + i / 1000.0, e, s, c;
    series(x, &e, &s, &c);
    worst = std::max({worst, std::fabs(e - std::exp(x)), std::fabs(s - std::sin(x)),
                      std::fabs(c - std::cos(x))});
  }
  std::fprintf(stderr, "series against libm: worst %.3g\n", worst);
  return worst < 1e-14;
}

int main(int argc, char** argv) {
  const char* P = "fp64";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  auto in = inputs();
  double* din = bench::to_device(in);
  double* dout = bench::device_zeros<double>(N);
  int blocks = (N / PER + THREADS - 1) / THREADS;
  auto launch = [&] { fp64_series<<<blocks, THREADS>>>(din, dout); };
  auto check = [&] {
    auto out = bench::to_host(dout, N);
    std::vector<double> want(N);
    for (int i = 0; i < N; ++i) want[i] = reference(in[i]);
    // Double arithmetic, 22 terms: relative 1e-12 (floor 1: the result crosses zero).
    auto c = bench::compare(out.data(), want.data(), N, 1e-12, 1.0);
    return bench::report(P, c, out.data(), want.data());
  };
  return bench::measure(P, "fp64_series", fp64_series, THREADS, 0, launch, check);
}
