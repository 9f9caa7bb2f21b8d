// An unrolled small-matrix kernel: each thread multiplies its own 6x6 matrices, D = (A B) B,
// everything in registers (A, B and the product: 108 floats live at once).
#include "common.cuh"

constexpr int D = 6;
constexpr int BATCH = 1 << 16;
constexpr int THREADS = 128;

// Structure of arrays: element (r, c) of item i at [(r * D + c) * BATCH + i].
extern "C" __global__ void matmul_small(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= BATCH) return;
  float A[D][D], B[D][D], C[D][D];
#pragma unroll
  for (int r = 0; r < D; ++r)
#pragma unroll
    for (int c = 0; c < D; ++c) {
      A[r][c] = a[(r * D + c) * BATCH + i];
      B[r][c] = b[(r * D + c) * BATCH + i];
    }
#pragma unroll
  for (int r = 0; r < D; ++r)
#pragma unroll
    for (int c = 0; c < D; ++c) {
      float s = 0;
#pragma unroll
      for (int k = 0; k < D; ++k) s += A[r][k] * B[k][c];
      C[r][c] = s;
    }
#pragma unroll
  for (int r = 0; r < D; ++r)
#pragma unroll
    for (int c = 0; c < D; ++c) {
      float s = 0;
#pragma unroll
      for (int k = 0; k < D; ++k) s += C[r][k] * B[k][c];
      out[(r * D + c) * BATCH + i] = s;
    }
}

// (A B) B for item i, in double.
static void ref_item(const std::vector<float>& a, const std::vector<float>& b, int batch, int i,
                     double out[D][D]) {
  double C[D][D];
  auto at = [&](const std::vector<float>& m, int r, int c) { return double(m[(r * D + c) * batch + i]); };
  for (int r = 0; r < D; ++r)
    for (int c = 0; c < D; ++c) {
      C[r][c] = 0;
      for (int k = 0; k < D; ++k) C[r][c] += at(a, r, k) * at(b, k, c);
    }
  for (int r = 0; r < D; ++r)
    for (int c = 0; c < D; ++c) {
      out[r][c] = 0;
      for (int k = 0; k < D; ++k) out[r][c] += C[r][k] * at(b, k, c);
    }
}

static void inputs(int batch, std::vector<float>& a, std::vector<float>& b) {
  bench::Rng rng(4);
  a.resize(size_t(D) * D * batch);
  b.resize(a.size());
  for (auto& f : a) f = rng.uniform(-1, 1);
  for (auto& f : b) f = rng.uniform(-1, 1);
}

// Self-check: A (B B) computed separately equals (A B) B (associativity, in double).
static bool self_check() {
  std::vector<float> a, b;
  inputs(64, a, b);
  double worst = 0;
  for (int i = 0; i < 64; ++i) {
    double got[D][D], BB[D][D];
    ref_item(a, b, 64, i, got);
    for (int r = 0; r < D; ++r)
      for (int c = 0; c < D; ++c) {
        BB[r][c] = 0;
        for (int k = 0; k < D; ++k) BB[r][c] += double(b[(r * D + k) * 64 + i]) * b[(k * D + c) * 64 + i];
      }
    for (int r = 0; r < D; ++r)
      for (int c = 0; c < D; ++c) {
        double s = 0;
        for (int k = 0; k < D; ++k) s += double(a[(r * D + k) * 64 + i]) * BB[k][c];
        worst = std::max(worst, std::fabs(s - got[r][c]));
      }
  }
  std::fprintf(stderr, "associativity: worst %.3g\n", worst);
  return worst < 1e-12;
}

int main(int argc, char** argv) {
  const char* P = "matmul_small";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  std::vector<float> a, b;
  inputs(BATCH, a, b);
  float* da = bench::to_device(a);
  float* db = bench::to_device(b);
  float* dout = bench::device_zeros<float>(a.size());
  auto launch = [&] { matmul_small<<<BATCH / THREADS, THREADS>>>(da, db, dout); };
  auto check = [&] {
    auto out = bench::to_host(dout, a.size());
    std::vector<double> got, want;
    for (int i = 0; i < BATCH; i += 3) {
      double r[D][D];
      ref_item(a, b, BATCH, i, r);
      for (int e = 0; e < D * D; ++e) {
        got.push_back(out[size_t(e) * BATCH + i]);
        want.push_back(r[e / D][e % D]);
      }
    }
    // Two float products of 6 terms in [-1, 1]: relative 1e-5 of magnitude ~1.
    auto c = bench::compare(got.data(), want.data(), got.size(), 1e-5, 1.0);
    return bench::report(P, c, got.data(), want.data());
  };
  return bench::measure(P, "matmul_small", matmul_small, THREADS, 0, launch, check);
}
