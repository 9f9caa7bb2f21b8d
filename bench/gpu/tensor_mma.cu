// Tensor cores through inline PTX (sm_80 and later): C = A B^T with fp16 inputs and fp32
// accumulation. Each warp computes a 32x32 tile with ldmatrix.x4 and mma.sync.m16n8k16
// (2 x 4 tiles, 32 accumulators); a block of four warps shares 64x64 tiles of A and B
// staged through shared memory.
#include <cuda_fp16.h>

#include "common.cuh"

constexpr int M = 2048, NN = 2048, K = 1024;
constexpr int BK = 32;         // k per stage
constexpr int LD = BK + 8;     // padded row (halves): 80 bytes, 16-byte aligned rows
constexpr int THREADS = 128;   // four warps, 2 x 2 warp tiles of 32 x 32

// A is M x K row-major, Bt is N x K row-major (B stored transposed), C is M x N row-major.
extern "C" __global__ void __launch_bounds__(THREADS)
    tensor_mma(const __half* __restrict__ a, const __half* __restrict__ bt, float* __restrict__ c) {
  __shared__ __align__(16) __half As[64 * LD];
  __shared__ __align__(16) __half Bs[64 * LD];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
  float acc[2][4][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    // 64 rows x 32 halves = 256 chunks of 8 halves per operand: two per thread.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      int chunk = threadIdx.x + r * THREADS, row = chunk / 4, col = (chunk % 4) * 8;
      *reinterpret_cast<uint4*>(&As[row * LD + col]) =
          *reinterpret_cast<const uint4*>(&a[(m0 + row) * K + k0 + col]);
      *reinterpret_cast<uint4*>(&Bs[row * LD + col]) =
          *reinterpret_cast<const uint4*>(&bt[(n0 + row) * K + k0 + col]);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[2][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        // Matrices: rows 0-7 / 8-15 by lanes 0-7 / 8-15, k 0-7 / 8-15 by lanes 0-15 / 16-31.
        int row = wm + i * 16 + (lane % 8) + ((lane / 8) % 2) * 8, col = kk + (lane / 16) * 8;
        unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(&As[row * LD + col]));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(af[i][0]), "=r"(af[i][1]), "=r"(af[i][2]), "=r"(af[i][3])
                     : "r"(addr));
      }
#pragma unroll
      for (int j = 0; j < 4; j += 2) {
        // Two n-tiles at once: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
        int row = wn + j * 8 + (lane % 8) + (lane / 16) * 8, col = kk + ((lane / 8) % 2) * 8;
        unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(&Bs[row * LD + col]));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(bf[j][0]), "=r"(bf[j][1]), "=r"(bf[j + 1][0]), "=r"(bf[j + 1][1])
                     : "r"(addr));
      }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
              "{%8,%9}, {%0,%1,%2,%3};\n"
              : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
              : "r"(af[i][0]), "r"(af[i][1]), "r"(af[i][2]), "r"(af[i][3]), "r"(bf[j][0]),
                "r"(bf[j][1]));
    }
    __syncthreads();
  }
  // Accumulator layout: (row g, cols 2t, 2t+1) and (row g + 8, the same cols).
  int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int row = m0 + wm + i * 16 + g, col = n0 + wn + j * 8 + 2 * t;
      c[row * NN + col] = acc[i][j][0];
      c[row * NN + col + 1] = acc[i][j][1];
      c[(row + 8) * NN + col] = acc[i][j][2];
      c[(row + 8) * NN + col + 1] = acc[i][j][3];
    }
}

// Inputs are multiples of 1/64 in [-1, 1]: exact in fp16, and their products' sums are exact
// in double (what the self-check relies on). Stored as the integers q (value q / 64).
static std::vector<int> quantised(size_t n, uint64_t seed) {
  bench::Rng rng(seed);
  std::vector<int> q(n);
  for (auto& v : q) v = int(rng.next() % 129) - 64;
  return q;
}

static double ref_at(const std::vector<int>& a, const std::vector<int>& bt, int k, int i, int j) {
  double s = 0;
  for (int x = 0; x < k; ++x) s += (a[size_t(i) * k + x] / 64.0) * (bt[size_t(j) * k + x] / 64.0);
  return s;
}

// Self-check: the double reference against exact integer arithmetic.
static bool self_check() {
  auto a = quantised(64 * K, 8), bt = quantised(64 * K, 9);
  bool ok = true;
  bool nonzero = false;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      int64_t s = 0;
      for (int x = 0; x < K; ++x) s += int64_t(a[size_t(i) * K + x]) * bt[size_t(j) * K + x];
      nonzero = nonzero || s != 0;
      ok = ok && ref_at(a, bt, K, i, j) == double(s) / 4096.0;
    }
  std::fprintf(stderr, "reference %s integer arithmetic\n", ok ? "equals" : "DIFFERS from");
  return ok && nonzero;
}

int main(int argc, char** argv) {
  const char* P = "tensor_mma";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  auto a = quantised(size_t(M) * K, 8), bt = quantised(size_t(NN) * K, 9);
  std::vector<__half> ha(a.size()), hb(bt.size());
  for (size_t i = 0; i < a.size(); ++i) ha[i] = __float2half(a[i] / 64.0f);
  for (size_t i = 0; i < bt.size(); ++i) hb[i] = __float2half(bt[i] / 64.0f);
  __half* da = bench::to_device(ha);
  __half* db = bench::to_device(hb);
  float* dc = bench::device_zeros<float>(size_t(M) * NN);
  dim3 grid(NN / 64, M / 64);
  auto launch = [&] { tensor_mma<<<grid, THREADS>>>(da, db, dc); };
  auto check = [&] {
    auto c = bench::to_host(dc, size_t(M) * NN);
    std::vector<double> got, want;
    for (int s = 0; s < 4096; ++s) {
      int i = (s * 613) % M, j = (s * 7919 + s / 64) % NN;
      got.push_back(c[size_t(i) * NN + j]);
      want.push_back(ref_at(a, bt, K, i, j));
    }
    // Exact products summed in fp32 over K = 1024 (sums of magnitude ~10): 1e-4 relative of
    // at least 1.
    auto r = bench::compare(got.data(), want.data(), got.size(), 1e-4, 1.0);
    return bench::report(P, r, got.data(), want.data());
  };
  return bench::measure(P, "tensor_mma", tensor_mma, THREADS, 0, launch, check);
}
