// A latency-bound walk: each thread follows a random cycle through a million nodes (every load
// waits for the one before it) and folds each node it visits into one of its WIDTH features,
// which stay live in registers for the whole walk.
// Only more resident warps hide the chain's latency, so the register budget decides its speed:
// the kind of kernel the launch-time selector exists for (the model sees it latency-bound, so
// adapt embeds lower budgets for the GPU to measure).
#include "common.cuh"

constexpr int NODES = 1 << 20;
constexpr int THREADS = 256;
constexpr int WIDTH = 56;
constexpr int ROUNDS = 2;  // the walk is ROUNDS * WIDTH steps

extern "C" __global__ void chase_walk(const int* __restrict__ next, const float* __restrict__ feat,
                                      float* __restrict__ out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= NODES) return;
  float f[WIDTH];
#pragma unroll
  for (int i = 0; i < WIDTH; ++i) f[i] = feat[size_t(i) * NODES + t];
  int v = t;
  unsigned seen = 0;
  for (int r = 0; r < ROUNDS; ++r) {
#pragma unroll
    for (int i = 0; i < WIDTH; ++i) {
      v = next[v];
      seen = seen * 33u + unsigned(v);
      f[i] = fmaf(f[i], 0.5f, float(v & 15) * (1.0f / 16.0f));
    }
  }
  float score = float(seen & 0xffffu) * (1.0f / 65536.0f);
#pragma unroll
  for (int i = 0; i < WIDTH; ++i) score = fmaf(score, f[i], f[(i + 3) % WIDTH]);
  out[t] = score;
}

// One cycle through every node in a shuffled order: next[order[k]] = order[k + 1].
static void inputs(std::vector<int>& order, std::vector<int>& next, std::vector<float>& feat) {
  bench::Rng rng(17);
  order.resize(NODES);
  for (int i = 0; i < NODES; ++i) order[i] = i;
  for (int i = NODES - 1; i > 0; --i) std::swap(order[i], order[rng.next() % uint64_t(i + 1)]);
  next.resize(NODES);
  for (int k = 0; k < NODES; ++k) next[order[k]] = order[(k + 1) % NODES];
  feat.resize(size_t(WIDTH) * NODES);
  for (auto& x : feat) x = rng.uniform(-0.5f, 0.5f);
}

// The walk's hash by following `next`.
static unsigned walk(const std::vector<int>& next, int t) {
  int v = t;
  unsigned seen = 0;
  for (int s = 0; s < ROUNDS * WIDTH; ++s) {
    v = next[v];
    seen = seen * 33u + unsigned(v);
  }
  return seen;
}

// Thread t's output, in the kernel's order of float operations.
static float reference(const std::vector<int>& next, const std::vector<float>& feat, int t) {
  float f[WIDTH];
  for (int i = 0; i < WIDTH; ++i) f[i] = feat[size_t(i) * NODES + t];
  int v = t;
  for (int s = 0; s < ROUNDS * WIDTH; ++s) {
    v = next[v];
    f[s % WIDTH] = std::fmaf(f[s % WIDTH], 0.5f, float(v & 15) * (1.0f / 16.0f));
  }
  float score = float(walk(next, t) & 0xffffu) * (1.0f / 65536.0f);
  for (int i = 0; i < WIDTH; ++i) score = std::fmaf(score, f[i], f[(i + 3) % WIDTH]);
  return score;
}

// Self-check: the walk by following `next` against the walk by position on the cycle (the
// node s steps after order[k] is order[(k + s) % NODES]).
static bool self_check() {
  std::vector<int> order, next;
  std::vector<float> feat;
  inputs(order, next, feat);
  std::vector<int> at(NODES);
  for (int k = 0; k < NODES; ++k) at[order[k]] = k;
  int bad = 0;
  for (int t = 0; t < NODES; t += 997) {
    unsigned seen = 0;
    for (int s = 1; s <= ROUNDS * WIDTH; ++s) seen = seen * 33u + unsigned(order[(at[t] + s) % NODES]);
    bad += seen != walk(next, t);
  }
  std::fprintf(stderr, "two walks: %d disagree\n", bad);
  return bad == 0;
}

int main(int argc, char** argv) {
  const char* P = "chase";
  if (bench::cpu_only(argc, argv, P)) return bench::cpu_verdict(P, self_check());
  bench::require_gpu(P);
  std::vector<int> order, next;
  std::vector<float> feat;
  inputs(order, next, feat);
  int* dnext = bench::to_device(next);
  float* dfeat = bench::to_device(feat);
  float* dout = bench::device_zeros<float>(NODES);
  auto launch = [&] { chase_walk<<<NODES / THREADS, THREADS>>>(dnext, dfeat, dout); };
  auto check = [&] {
    auto out = bench::to_host(dout, NODES);
    std::vector<float> want(NODES);
    for (int t = 0; t < NODES; ++t) want[t] = reference(next, feat, t);
    // Fused float steps in the same order as the kernel's: relative 1e-5 of at least 1.
    auto c = bench::compare(out.data(), want.data(), NODES, 1e-5, 1.0);
    return bench::report(P, c, out.data(), want.data());
  };
  return bench::measure(P, "chase_walk", chase_walk, THREADS, 0, launch, check);
}
