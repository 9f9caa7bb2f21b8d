// Shared by every program of the GPU harness (bench/gpu): deterministic inputs, the no-GPU
// check, CUDA-event timing, output checks against a CPU reference, and the one CSV line each
// timed kernel prints.
//
// Exit status of every program (run.sh and tests/gpu_harness.rs rely on these):
//   0  every kernel's output matched its CPU reference (or, for the oversized launch, the
//      driver refused the launch where the kernel's own limit says it must)
//   1  an output mismatch (or a CPU reference that failed its own self-check)
//   2  an unexpected CUDA error
//   3  no usable GPU (one line "NO-GPU <program>: <reason>" on stdout)
//   4  bad command line
//
// Modes: no argument: run on the GPU; --cpu-only: compute the CPU reference and check it
// against an independent formulation (what CI runs where there is no GPU).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace bench {

constexpr int EXIT_OK = 0;
constexpr int EXIT_MISMATCH = 1;
constexpr int EXIT_CUDA = 2;
constexpr int EXIT_NO_GPU = 3;
constexpr int EXIT_USAGE = 4;

constexpr int WARMUP_RUNS = 3;
// BENCH_WARMUP_RUNS overrides WARMUP_RUNS: run.sh gives the adapt and train builds enough
// untimed launches for the launch-time selector to finish measuring first (docs/selector.md:
// adapt locks within about 30 launches of a key, train measures every variant 11 times).
inline int warmup_runs() {
  const char* v = std::getenv("BENCH_WARMUP_RUNS");
  int n = v ? std::atoi(v) : 0;
  return n > 0 && n <= 100000 ? n : WARMUP_RUNS;
}
constexpr int TIMED_RUNS = 21;  // the median of at least 20

// true: --cpu-only. Anything else on the command line is a usage error.
inline bool cpu_only(int argc, char** argv, const char* program) {
  if (argc == 1) return false;
  if (argc == 2 && std::strcmp(argv[1], "--cpu-only") == 0) return true;
  std::fprintf(stderr, "usage: %s [--cpu-only]\n", program);
  std::exit(EXIT_USAGE);
}

// Deterministic inputs (xorshift64*), never all zero.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  double unit() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  float uniform(float lo, float hi) { return lo + float(unit()) * (hi - lo); }
  double uniform_d(double lo, double hi) { return lo + unit() * (hi - lo); }
};

// Exit with status 3 and one line when there is no usable GPU (no driver, no device).
inline void require_gpu(const char* program) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("NO-GPU %s: %s\n", program,
                e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
    std::exit(EXIT_NO_GPU);
  }
  // DEVICE,<name>,<CUDA driver API version>: run.sh records it when nvidia-smi is missing.
  cudaDeviceProp prop;
  int driver = 0;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess && cudaDriverGetVersion(&driver) == cudaSuccess)
    std::printf("DEVICE,%s,%d\n", prop.name, driver);
}

#define BENCH_CUDA(call)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                   cudaGetErrorString(e_));                                               \
      std::exit(bench::EXIT_CUDA);                                                        \
    }                                                                                     \
  } while (0)

// The result of comparing n values against the reference: |got - want| <= rel * max(|want|,
// floor) for each (floor: the scale below which relative error means nothing).
struct Check {
  size_t n = 0, bad = 0, first_bad = 0;
  double worst = 0;      // worst error / allowed
  bool nonzero = false;  // some reference value is not zero
  bool ok() const { return n > 0 && bad == 0 && nonzero; }
};

template <class G, class W>
Check compare(const G* got, const W* want, size_t n, double rel, double floor) {
  Check c;
  c.n = n;
  for (size_t i = 0; i < n; ++i) {
    double w = double(want[i]), g = double(got[i]);
    if (w != 0) c.nonzero = true;
    double allowed = rel * std::max(std::fabs(w), floor);
    double err = std::fabs(g - w);
    double ratio = err / allowed;
    if (!(err <= allowed)) {  // NaN counts as bad
      if (c.bad == 0) c.first_bad = i;
      ++c.bad;
      ratio = std::isfinite(ratio) ? ratio : 1e30;
    }
    c.worst = std::max(c.worst, ratio);
  }
  return c;
}

// Report a check on stderr; true when it passed.
template <class G, class W>
bool report(const char* what, const Check& c, const G* got, const W* want) {
  if (c.ok()) {
    std::fprintf(stderr, "%s: %zu values within bounds (worst %.3g of the allowed error)\n",
                 what, c.n, c.worst);
    return true;
  }
  if (!c.nonzero) {
    std::fprintf(stderr, "%s: the reference is all zero\n", what);
  } else {
    std::fprintf(stderr, "%s: %zu of %zu values out of bounds; first at %zu: got %.9g, want %.9g\n",
                 what, c.bad, c.n, c.first_bad, double(got[c.first_bad]),
                 double(want[c.first_bad]));
  }
  return false;
}

// The --cpu-only verdict: one line, exit status.
inline int cpu_verdict(const char* program, bool ok) {
  std::printf("%s %s: CPU reference %s\n", ok ? "CPU-OK" : "CPU-FAIL", program,
              ok ? "checked against an independent formulation" : "failed its self-check");
  return ok ? EXIT_OK : EXIT_MISMATCH;
}

// Median time in ms of `launch()` over TIMED_RUNS runs after warmup_runs(), each timed with
// CUDA events. Returns a negative value when a launch fails (the error is left in *err).
template <class F>
float median_ms(F launch, cudaError_t* err) {
  *err = cudaSuccess;
  for (int i = 0, n = warmup_runs(); i < n; ++i) {
    launch();
    if ((*err = cudaGetLastError()) != cudaSuccess) return -1;
  }
  if ((*err = cudaDeviceSynchronize()) != cudaSuccess) return -1;
  cudaEvent_t a, b;
  BENCH_CUDA(cudaEventCreate(&a));
  BENCH_CUDA(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int i = 0; i < TIMED_RUNS; ++i) {
    BENCH_CUDA(cudaEventRecord(a));
    launch();
    BENCH_CUDA(cudaEventRecord(b));
    if ((*err = cudaEventSynchronize(b)) != cudaSuccess) break;
    if ((*err = cudaGetLastError()) != cudaSuccess) break;
    float t = 0;
    BENCH_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (*err != cudaSuccess) return -1;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Registers per thread as the driver sees them, and the occupancy (resident warps over the
// SM's maximum) at this block size and dynamic shared memory.
template <class K>
void resources(K kernel, int threads, size_t dynamic_shared, int* registers, double* occupancy) {
  cudaFuncAttributes attr;
  BENCH_CUDA(cudaFuncGetAttributes(&attr, kernel));
  *registers = attr.numRegs;
  int blocks = 0, dev = 0;
  cudaDeviceProp prop;
  BENCH_CUDA(cudaGetDevice(&dev));
  BENCH_CUDA(cudaGetDeviceProperties(&prop, dev));
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, dynamic_shared) !=
      cudaSuccess) {
    cudaGetLastError();
    blocks = 0;
  }
  int warps = (threads + prop.warpSize - 1) / prop.warpSize;
  *occupancy = double(blocks * warps) / double(prop.maxThreadsPerMultiProcessor / prop.warpSize);
}

// The kernel's own limit on threads per block (launch bounds, max-threads attribute,
// registers): a launch with more must be refused by the driver.
template <class K>
int max_threads(K kernel) {
  cudaFuncAttributes attr;
  BENCH_CUDA(cudaFuncGetAttributes(&attr, kernel));
  return attr.maxThreadsPerBlock;
}

// The one line per timed kernel that run.sh collects:
//   RESULT,<program>,<kernel>,<registers>,<occupancy>,<median ms>,<check>
// check: ok, MISMATCH, launch-refused (the expected outcome of an oversized launch), or
// LAUNCH-ERROR (a launch that should have run).
inline void result_line(const char* program, const char* kernel, int registers, double occupancy,
                        float ms, const char* check) {
  std::printf("RESULT,%s,%s,%d,%.4f,%.6f,%s\n", program, kernel, registers, occupancy, ms, check);
}

// Time `launch` and compare what it wrote (via `check()`, true when it matches): prints the
// RESULT line and returns the program's exit status for this kernel.
template <class K, class F, class C>
int measure(const char* program, const char* name, K kernel, int threads, size_t dynamic_shared,
            F launch, C check) {
  int regs = 0;
  double occ = 0;
  resources(kernel, threads, dynamic_shared, &regs, &occ);
  cudaError_t err;
  float ms = median_ms(launch, &err);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", program, name, cudaGetErrorString(err));
    result_line(program, name, regs, occ, -1, "LAUNCH-ERROR");
    return EXIT_CUDA;
  }
  bool ok = check();
  result_line(program, name, regs, occ, ms, ok ? "ok" : "MISMATCH");
  return ok ? EXIT_OK : EXIT_MISMATCH;
}

// Device buffer helpers.
template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  BENCH_CUDA(cudaMalloc(&d, h.size() * sizeof(T) + 1));
  BENCH_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <class T>
T* device_zeros(size_t n) {
  T* d = nullptr;
  BENCH_CUDA(cudaMalloc(&d, n * sizeof(T) + 1));
  BENCH_CUDA(cudaMemset(d, 0, n * sizeof(T)));
  return d;
}

template <class T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  BENCH_CUDA(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace bench
