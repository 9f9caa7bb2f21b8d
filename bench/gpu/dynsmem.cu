// Dynamic shared memory: a 1-D convolution of radius 16 whose input tile (block + halo) lives
// in extern __shared__ memory sized at launch; each thread computes OUT = 32 outputs at once
// (32 accumulators) from a window of OUT + 2R values it holds in registers.
#include "common.cuh"

constexpr int N = 1 << 24;
constexpr int R = 16;
constexpr int OUT = 32;
constexpr int THREADS = 128;
constexpr int TILE = THREADS * OUT;

__constant__ float c_w[2 * R + 1];

__host__ __device__ inline float weight(int k) { return 0.5f + 0.03125f * float((k * 7) % 11); }

extern "C" __global__ void dynsmem_conv(const float* __restrict__ in, float* __restrict__ out) {
  extern __shared__ float tile[];  // TILE + 2R floats
  int base = blockIdx.x * TILE;
  for (int j = threadIdx.x; j < TILE + 2 * R; j += blockDim.x) {
    int g = base - R + j;
    tile[j] = (g >= 0 && g < N) ? in[g] : 0.f;
  }
  __syncthreads();
  float win[OUT + 2 * R];
#pragma unroll
  for (int j = 0; j < OUT + 2 * R; ++j) win[j] = tile[threadIdx.x * OUT + j];
  float acc[OUT];
#pragma unroll
  for (int o = 0; o < OUT; ++o) acc[o] = 0;
#pragma unroll
  for (int k = 0; k <= 2 * R; ++k) {
    float w = c_w[k];
#pragma unroll
    for (int o = 0; o < OUT; ++o) acc[o] += w * win[o + k];
  }
#pragma unroll
  for (int o = 0; o < OUT; ++o) {
    int g = base + threadIdx.x * OUT + o;
    if (g < N) out[g] = acc[o];
  }
}

static double ref_at(const std::vector<float>& in, int n, int i) {
  double acc = 0;
  for (int k = 0; k <= 2 * R; ++k) {
    int g = i - R + k;
    if (g >= 0 && g < n) acc += double(weight(k)) * in[g];
  }
  return acc;
}

static std::vector<float> inputs(int n) {
  bench::Rng rng(6);
  std::vector<float> v(n);
  for (auto& f : v) f = rng.uniform(-1, 1);
  return v;
}

// Self-check: a constant signal gives the constant times the weights' sum away from the
// edges, and a unit impulse reproduces the weights (reversed).
static bool self_check() {
  const int n = 256;
  std::vector<float> ones(n, 2.0f), pulse(n, 0.0f);
  pulse[100] = 1;
  double sum = 0;
  for (int k = 0; k <= 2 * R; ++k) sum += weight(k);
  bool ok = std::fabs(ref_at(ones, n, 128) - 2 * sum) < 1e-9;
  for (int k = 0; k <= 2 * R; ++k) ok = ok && ref_at(pulse, n, 100 + R - k) == double(weight(k));
  std::fprintf(stderr, "constant and impulse responses %s\n", ok ? "match" : "DIFFER");
  return ok;
}

int main(int argc, char** argv) {
  const char* P = "dynsmem";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  auto in = inputs(N);
  float w[2 * R + 1];
  for (int k = 0; k <= 2 * R; ++k) w[k] = weight(k);
  BENCH_CUDA(cudaMemcpyToSymbol(c_w, w, sizeof w));
  float* din = bench::to_device(in);
  float* dout = bench::device_zeros<float>(N);
  const size_t shared = (TILE + 2 * R) * sizeof(float);
  auto launch = [&] { dynsmem_conv<<<N / TILE, THREADS, shared>>>(din, dout); };
  auto check = [&] {
    auto out = bench::to_host(dout, N);
    std::vector<double> got, want;
    for (int s = 0; s < 16384; ++s) {
      int i = s < 64 ? s : (s < 128 ? N - 1 - (s - 64) : int((uint64_t(s) * 1000003) % N));
      got.push_back(out[i]);
      want.push_back(ref_at(in, N, i));
    }
    // 33 float terms of magnitude <= 1: relative 1e-5 of ~1.
    auto c = bench::compare(got.data(), want.data(), got.size(), 1e-5, 1.0);
    return bench::report(P, c, got.data(), want.data());
  };
  return bench::measure(P, "dynsmem_conv", dynsmem_conv, THREADS, shared, launch, check);
}
