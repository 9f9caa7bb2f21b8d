// A kernel launched with more threads than the block size nvcc-orion is told to assume
// (bench-orion-flags below: 128; the launch uses 256). No __launch_bounds__: a rewrite that
// lays shared-memory slots out for 128 threads is only safe if the cubin also tells the
// driver so (a max-threads attribute), making the launch fail. So the only passes are:
//   - the kernel's own limit (cudaFuncGetAttributes.maxThreadsPerBlock) is below 256 and the
//     driver refuses the launch ("launch-refused"), or
//   - the limit allows 256 threads and the output is right ("ok").
// Wrong output, or a refused launch the limit does not explain, is a failure.
//
// The kernel keeps 40 values loaded before a chain of dependent lookups and folds them in
// after it: register-hungry, with room for spills that are touched only outside the loop.
//
// bench-orion-flags: --orion-block-size=128
#include "common.cuh"

constexpr int N = 1 << 20;        // threads in all
constexpr int TABLE = 1 << 16;    // lookup table entries
constexpr int HOPS = 32;
constexpr int VALUES = 40;
constexpr int THREADS = 256;      // more than the 128 assumed at build time

// vals and out are not __restrict__, and the loop may store to out: the values must be loaded
// before the loop (left to itself, the compiler sinks the loads past it).
extern "C" __global__ void oversize_chain(const int* __restrict__ next, const float* vals, float* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= N) return;
  float v[VALUES];
#pragma unroll
  for (int i = 0; i < VALUES; ++i) v[i] = vals[size_t(i) * N + t];
  int at = t % TABLE;
  unsigned mix = 0;
  for (int h = 0; h < HOPS; ++h) {
    at = next[at];
    mix = mix * 31u + unsigned(at);
    if (mix == 0xFFFFFFFFu) out[t] = 0.f;  // never taken with these inputs
  }
  float acc = float(mix & 1023) * (1.0f / 1024.0f);
#pragma unroll
  for (int i = 0; i < VALUES; ++i) acc = acc * 0.5f + v[i] * v[(i + 7) % VALUES];
  out[t] = acc;
}

static double ref_at(const std::vector<int>& next, const std::vector<float>& vals, int t) {
  int at = t % TABLE;
  unsigned mix = 0;
  for (int h = 0; h < HOPS; ++h) {
    at = next[at];
    mix = mix * 31u + unsigned(at);
  }
  double acc = float(mix & 1023) * (1.0f / 1024.0f);
  for (int i = 0; i < VALUES; ++i)
    acc = acc * 0.5 + double(vals[size_t(i) * N + t]) * vals[size_t((i + 7) % VALUES) * N + t];
  return acc;
}

static void inputs(std::vector<int>& next, std::vector<float>& vals) {
  bench::Rng rng(10);
  next.resize(TABLE);
  for (auto& n : next) n = int(rng.next() % TABLE);
  vals.resize(size_t(VALUES) * N);
  for (auto& f : vals) f = rng.uniform(-1, 1);
}

// Self-check: the fold is a geometric sum; with all values 1 it approaches 2 (exactly
// 2 - 2^-39 + start * 2^-40).
static bool self_check() {
  std::vector<int> next(TABLE);
  for (int i = 0; i < TABLE; ++i) next[i] = (i + 1) % TABLE;
  std::vector<float> ones(size_t(VALUES) * N, 1.0f);
  int t = 5;
  unsigned mix = 0;
  for (int h = 1; h <= HOPS; ++h) mix = mix * 31u + unsigned(t + h);
  double start = float(mix & 1023) / 1024.0f;
  double want = 2 - std::ldexp(1.0, -(VALUES - 1)) + start * std::ldexp(1.0, -VALUES);
  double got = ref_at(next, ones, t);
  std::fprintf(stderr, "geometric fold: %.17g against %.17g\n", got, want);
  return std::fabs(got - want) < 1e-15;
}

int main(int argc, char** argv) {
  const char* P = "oversize";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  std::vector<int> next;
  std::vector<float> vals;
  inputs(next, vals);
  int* dnext = bench::to_device(next);
  float* dvals = bench::to_device(vals);
  float* dout = bench::device_zeros<float>(N);
  int limit = bench::max_threads(oversize_chain);
  std::fprintf(stderr, "%s: the kernel's limit is %d threads per block; launching %d\n", P, limit,
               THREADS);
  auto launch = [&] { oversize_chain<<<N / THREADS, THREADS>>>(dnext, dvals, dout); };
  if (limit < THREADS) {
    // The driver must refuse this launch; output is never looked at.
    launch();
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    int regs = 0;
    double occ = 0;
    bench::resources(oversize_chain, THREADS, 0, &regs, &occ);
    bench::result_line(P, "oversize_chain", regs, occ, -1, e != cudaSuccess ? "launch-refused" : "LAUNCH-NOT-REFUSED");
    std::fprintf(stderr, "%s: %s\n", P, e != cudaSuccess ? cudaGetErrorString(e) : "the launch was not refused");
    return e != cudaSuccess ? bench::EXIT_OK : bench::EXIT_MISMATCH;
  }
  auto check = [&] {
    auto out = bench::to_host(dout, N);
    std::vector<double> got, want;
    for (int t = 0; t < N; t += 7) {
      got.push_back(out[t]);
      want.push_back(ref_at(next, vals, t));
    }
    // 40 float fused steps halving the running sum: relative 1e-5 of at least 1.
    auto c = bench::compare(got.data(), want.data(), got.size(), 1e-5, 1.0);
    return bench::report(P, c, got.data(), want.data());
  };
  return bench::measure(P, "oversize_chain", oversize_chain, THREADS, 0, launch, check);
}
