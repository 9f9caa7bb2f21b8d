// The selector's own per-launch cost on the host (issue 21: under 1 µs once locked): begin +
// end around a launch that is not made, for a locked key, many locked keys, several threads,
// and a key the full table does not track. Run by scripts/bench-selector.sh; results in
// bench/results/selector.md. argv[1]: launches per row (default 10 000 000).
#include "orion_select.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

using namespace orion_select_v1;

// Completes every timing at once with a fixed time per variant: the keys lock fast.
class InstantTimer : public Timer {
 public:
  int start(int, void*) override { return 0; }
  void stop(int, void*) override {}
  int poll(int, bool, float* ms) override {
    *ms = 0.1f;
    return 1;
  }
  void discard(int) override {}
};

static Selector g_sel;  // static, as the runtime will have it
static InstantTimer g_timer;
static volatile int g_sink;

static Key key_of(uint32_t k) {
  Key key = {k, 0, {1024, 1, 1}, {256, 1, 1}, 0};
  return key;
}

static double ns_per_launch(unsigned keys, unsigned long n, uint32_t first_key) {
  auto t0 = std::chrono::steady_clock::now();
  int acc = 0;
  for (unsigned long i = 0; i < n; ++i) {
    Plan p = g_sel.begin(key_of(first_key + static_cast<uint32_t>(i % keys)), 3, 0, false);
    acc += p.variant;
    g_sel.end(p, 0, true);
  }
  g_sink = acc;
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}

int main(int argc, char** argv) {
  unsigned long n = argc > 1 ? std::strtoul(argv[1], 0, 10) : 10000000ul;
  g_sel.configure(kAdapt, default_params(), &g_timer);
  for (uint32_t k = 0; k < 128; ++k) {  // fill the table and lock every key
    for (int i = 0; i < 64; ++i) g_sel.end(g_sel.begin(key_of(k), 3, 0, false), 0, true);
  }
  Snapshot s;
  if (g_sel.size() == 0 || !g_sel.inspect(key_of(0), &s) || s.locked < 0) {
    std::printf("keys did not lock\n");
    return 1;
  }
  std::printf("| case | ns per launch |\n|---|---:|\n");
  std::printf("| one locked key | %.1f |\n", ns_per_launch(1, n, 0));
  std::printf("| %u locked keys, round robin | %.1f |\n", g_sel.size(),
              ns_per_launch(g_sel.size(), n, 0));
  std::printf("| key beyond the full table (original, untracked) | %.1f |\n",
              ns_per_launch(1, n / 10 + 1, 1000));
  const unsigned threads = 4;
  std::vector<double> per(threads);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t)
    ts.push_back(std::thread([&per, t, n] { per[t] = ns_per_launch(16, n / 4 + 1, t * 16); }));
  for (size_t t = 0; t < ts.size(); ++t) ts[t].join();
  double worst = 0;
  for (size_t t = 0; t < per.size(); ++t) worst = per[t] > worst ? per[t] : worst;
  std::printf("| %u threads, 16 locked keys each (slowest thread) | %.1f |\n", threads, worst);
  return 0;
}
