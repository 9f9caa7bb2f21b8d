// The selection logic of runtime/orion_select.h against a simulated clock. Built and run by
// tests/runtime_select.rs (with ThreadSanitizer where the compiler has it). Prints "ok <case>"
// per passing case and "FAIL <case>: ..." per failed check; exits 1 on any failure.
// argv[1]: where the profile case writes its JSON (the Rust test reads it back).
#include "orion_select.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace orion_select_v1;

static int g_failures = 0;
static const char* g_case = "";

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::printf("FAIL %s: %s:%d: %s\n", g_case, __FILE__, __LINE__, #cond);           \
      ++g_failures;                                                                      \
    }                                                                                    \
  } while (0)

// The simulated clock: a launch's duration is set by the test; a timing becomes readable after
// `latency` non-blocking polls (0: at the first), as a CUDA event completes some time later.
class SimTimer : public Timer {
 public:
  explicit SimTimer(unsigned latency = 0) : latency_(latency) {}
  int start(int, void*) override {
    std::lock_guard<std::mutex> g(m_);
    ++starts;
    if (fail_starts) return -1;
    int h = next_++;
    open_[h] = Slot();
    return h;
  }
  void stop(int h, void*) override {
    std::lock_guard<std::mutex> g(m_);
    ++stops;
    open_[h].stopped = true;
  }
  int poll(int h, bool wait, float* ms) override {
    std::lock_guard<std::mutex> g(m_);
    ++polls;
    std::map<int, Slot>::iterator it = open_.find(h);
    if (it == open_.end() || !it->second.stopped) {
      ++bad_calls;
      return -1;
    }
    if (!wait && it->second.polled++ < latency_) return 0;
    if (fail_polls) {
      open_.erase(it);
      return -1;
    }
    *ms = static_cast<float>(it->second.us / 1000.0);
    open_.erase(it);
    return 1;
  }
  void discard(int h) override {
    std::lock_guard<std::mutex> g(m_);
    ++discards;
    open_.erase(h);
  }
  void set(int h, double us) {
    std::lock_guard<std::mutex> g(m_);
    open_[h].us = us;
  }
  size_t outstanding() {
    std::lock_guard<std::mutex> g(m_);
    return open_.size();
  }
  unsigned starts = 0, stops = 0, polls = 0, discards = 0, bad_calls = 0;
  bool fail_starts = false, fail_polls = false;

 private:
  struct Slot {
    double us = 0;
    bool stopped = false;
    unsigned polled = 0;
  };
  std::mutex m_;
  std::map<int, Slot> open_;
  int next_ = 0;
  unsigned latency_;
};

// Deterministic jitter.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 2654435761u + 1) {}
  double uniform() {  // [-1, 1)
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (static_cast<double>(s >> 11) / 9007199254740992.0) * 2.0 - 1.0;
  }
};

// A kernel whose variant v takes base[v] µs ± jitter[v] (relative).
struct Model {
  std::vector<double> base, jitter;
  Rng rng{7};
  double us(int v) { return base[v] * (1.0 + (jitter.empty() ? 0.0 : jitter[v]) * rng.uniform()); }
};

static Key key_of(uint32_t kernel, uint32_t grid = 64, uint32_t shared = 0) {
  Key k = {kernel, 0, {grid, 1, 1}, {128, 1, 1}, shared};
  return k;
}

static int g_stream_token;
static void* const kStream = &g_stream_token;

template <class S>
static int launch(S& sel, SimTimer& t, const Key& k, unsigned nv, Model& m, bool capturing = false,
                  bool ok = true, uint32_t other_side = 0) {
  Plan p = sel.begin(k, nv, kStream, capturing, other_side);
  if (p.handle >= 0) t.set(p.handle, m.us(p.variant));
  sel.end(p, kStream, ok);
  return p.variant;
}

// Launches until the key locks (or `limit` launches); returns the launches it took.
template <class S>
static unsigned until_locked(S& sel, SimTimer& t, const Key& k, unsigned nv, Model& m,
                             unsigned limit = 1000) {
  for (unsigned i = 1; i <= limit; ++i) {
    launch(sel, t, k, nv, m);
    Snapshot s;
    if (sel.inspect(k, &s) && s.locked >= 0) return i;
  }
  return limit + 1;
}

static Snapshot snap(Selector& sel, const Key& k) {
  Snapshot s;
  std::memset(&s, 0, sizeof s);
  s.locked = -2;
  sel.inspect(k, &s);
  return s;
}

static Selector* fresh(Mode mode, SimTimer* t, Params p = default_params()) {
  Selector* s = new Selector();
  s->configure(mode, p, t);
  return s;
}

static void direction_search() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 90, 80, 70, 75};
  m.jitter = {0.005, 0.005, 0.005, 0.005, 0.005};
  Key k = key_of(1);
  unsigned n = until_locked(*sel, t, k, 5, m);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 3);
  CHECK(s.reason == kSlowdown);
  // warm-up + repeats per candidate, the four steps and the slowdown that ended them; the
  // launch after the last timing locks
  CHECK(n == 5 * 6 + 1);
  for (unsigned v = 0; v < 5; ++v) CHECK(s.stats[v].launches == 6 && s.stats[v].samples == 5);
  CHECK(std::fabs(s.stats[3].median_us - 70) < 1.0);
  delete sel;
}

static void stops_at_first_slowdown() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 110, 60};  // the third would win, but Orion stops at the first slowdown
  Key k = key_of(2);
  until_locked(*sel, t, k, 3, m);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 0);
  CHECK(s.reason == kSlowdown);
  CHECK(!s.flipped);
  CHECK(s.stats[2].launches == 0);
  delete sel;
}

// Orion's fail-safe: the first step (fewer registers) is slower than the original, so the
// search tries the other direction (variants 3 and 4, more registers) and keeps its best; the
// rest of the first direction is never launched.
static void other_direction_after_a_slower_first_step() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 120, 60, 80, 90};
  Key k = key_of(21);
  const uint32_t other = (1u << 3) | (1u << 4);
  for (unsigned i = 0; i < 1000; ++i) {
    launch(*sel, t, k, 5, m, false, true, other);
    Snapshot s;
    if (sel->inspect(k, &s) && s.locked >= 0) break;
  }
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 3);
  CHECK(s.reason == kSlowdown);
  CHECK(s.flipped);
  CHECK(s.stats[2].launches == 0);
  CHECK(s.stats[4].launches > 0);
  delete sel;
}

// The other direction is no better either: the original stays; and with no other side the
// first slowdown ends the search as before.
static void both_directions_slower_keep_the_original() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 120, 60, 130};
  Key k = key_of(22);
  for (unsigned i = 0; i < 1000; ++i) {
    launch(*sel, t, k, 4, m, false, true, 1u << 3);
    Snapshot s;
    if (sel->inspect(k, &s) && s.locked >= 0) break;
  }
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 0 && s.reason == kSlowdown && s.flipped);
  CHECK(s.stats[2].launches == 0);
  delete sel;
}

static void last_candidate_is_best() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 90, 80};
  Key k = key_of(3);
  until_locked(*sel, t, k, 3, m);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 2);
  CHECK(s.reason == kBest);
  delete sel;
}

static void gain_within_noise_is_no_step() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 99.5, 50};  // 0.5 % < min_gain
  Key k = key_of(4);
  until_locked(*sel, t, k, 3, m);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 0);
  CHECK(s.reason == kSlowdown);
  delete sel;
}

static void noisy_original_kept() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 50};
  m.jitter = {0.4, 0.0};
  Key k = key_of(5);
  until_locked(*sel, t, k, 2, m);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 0);
  CHECK(s.reason == kNoisy);
  CHECK(s.stats[0].spread > 0.05);
  CHECK(s.stats[1].launches == 0);
  delete sel;
}

static void noisy_candidate_keeps_original() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 50};
  m.jitter = {0.0, 0.4};
  Key k = key_of(6);
  until_locked(*sel, t, k, 2, m);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 0);
  CHECK(s.reason == kNoisy);
  delete sel;
}

static void short_kernel_kept() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {3, 1};  // below the 5 µs launch-overhead threshold
  Key k = key_of(7);
  unsigned n = until_locked(*sel, t, k, 2, m);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 0);
  CHECK(s.reason == kShort);
  CHECK(s.stats[1].launches == 0);
  CHECK(n == 6 + 1);
  delete sel;
}

static void locked_is_final() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 80, 90};
  Key k = key_of(8);
  until_locked(*sel, t, k, 3, m);
  unsigned starts = t.starts, polls = t.polls;
  Snapshot before = snap(*sel, k);
  for (int i = 0; i < 1000; ++i) CHECK(launch(*sel, t, k, 3, m) == 1);
  Snapshot after = snap(*sel, k);
  CHECK(t.starts == starts);  // no timing after the lock
  CHECK(t.polls == polls);
  CHECK(before.stats[1].launches == after.stats[1].launches);  // and not even the lock
  CHECK(after.locked == 1);
  delete sel;
}

static void late_timings() {
  SimTimer t(3);  // each event completes three polls after it was recorded
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 90, 80, 70, 75};
  Key k = key_of(9);
  until_locked(*sel, t, k, 5, m);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 3);
  for (unsigned v = 0; v < 5; ++v) CHECK(s.stats[v].samples + 0u <= 5u);  // in flight capped
  CHECK(t.bad_calls == 0);
  sel->flush(true);
  CHECK(t.outstanding() == 0);
  delete sel;
}

static void capture_gets_original_or_locked() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 80, 90};
  Key k = key_of(10);
  launch(*sel, t, k, 3, m);
  launch(*sel, t, k, 3, m);
  unsigned starts = t.starts;
  for (int i = 0; i < 20; ++i) CHECK(launch(*sel, t, k, 3, m, true) == 0);
  CHECK(t.starts == starts);
  until_locked(*sel, t, k, 3, m);
  CHECK(launch(*sel, t, k, 3, m, true) == 1);
  // a key first seen during capture is not tracked
  CHECK(launch(*sel, t, key_of(11), 3, m, true) == 0);
  Snapshot s;
  CHECK(!sel->inspect(key_of(11), &s));
  delete sel;
}

static void bounded_table() {
  SimTimer t;
  BasicSelector<4>* sel = new BasicSelector<4>();
  sel->configure(kAdapt, default_params(), &t);
  Model m;
  m.base = {100, 80};
  for (uint32_t i = 0; i < 10; ++i) launch(*sel, t, key_of(i), 2, m);
  CHECK(sel->size() == 4);
  unsigned starts = t.starts;
  unsigned untracked = 0;
  for (uint32_t i = 0; i < 10; ++i) {
    Snapshot s;
    if (!sel->inspect(key_of(i), &s)) {
      ++untracked;
      for (int j = 0; j < 20; ++j) CHECK(launch(*sel, t, key_of(i), 2, m) == 0);
    }
  }
  CHECK(untracked == 6);
  CHECK(t.starts == starts);
  CHECK(sizeof(BasicSelector<4>) < 4 * 1024);
  CHECK(sizeof(Selector) < 80 * 1024);
  delete sel;
}

static void timer_failures_lock_original() {
  SimTimer t;
  t.fail_starts = true;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 50};
  Key k = key_of(12);
  unsigned n = until_locked(*sel, t, k, 2, m);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 0 && s.reason == kError);
  CHECK(n < 10);

  SimTimer t2;
  t2.fail_polls = true;
  Selector* sel2 = fresh(kAdapt, &t2);
  until_locked(*sel2, t2, k, 2, m);
  s = snap(*sel2, k);
  CHECK(s.locked == 0 && s.reason == kError);
  delete sel;
  delete sel2;
}

static void launch_failure_locks_original() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100, 50};
  Key k = key_of(13);
  launch(*sel, t, k, 2, m);
  launch(*sel, t, k, 2, m, false, false);  // the second launch is timed, and fails
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 0 && s.reason == kError);
  CHECK(t.discards == 1);
  CHECK(t.outstanding() == 0);
  delete sel;
}

static void single_variant_and_off() {
  SimTimer t;
  Selector* sel = fresh(kAdapt, &t);
  Model m;
  m.base = {100};
  for (int i = 0; i < 10; ++i) CHECK(launch(*sel, t, key_of(14), 1, m) == 0);
  CHECK(t.starts == 0 && sel->size() == 0);
  delete sel;

  static Selector unconfigured;  // constant-initialised: off until configure
  Model m2;
  m2.base = {100, 50};
  for (int i = 0; i < 10; ++i) CHECK(launch(unconfigured, t, key_of(15), 2, m2) == 0);
  CHECK(t.starts == 0 && unconfigured.size() == 0);

  unconfigured.configure(kTrain, default_params(), &t);
  unconfigured.configure(kAdapt, default_params(), 0);  // ignored: the first one is final
  for (int i = 0; i < 4; ++i) launch(unconfigured, t, key_of(15), 2, m2);
  CHECK(t.starts == 2 && unconfigured.size() == 1);  // train: one warm-up each, then timed

  Selector* no_timer = fresh(kAdapt, 0);
  for (int i = 0; i < 10; ++i) CHECK(launch(*no_timer, t, key_of(16), 2, m2) == 0);
  CHECK(no_timer->size() == 0);
  delete no_timer;
}

static void median_and_spread() {
  double m = 0, s = 0;
  const float odd[] = {3, 1, 2};
  median_spread(odd, 3, &m, &s);
  CHECK(m == 2 && std::fabs(s - 0.5) < 1e-12);
  const float even[] = {10, 14, 12, 16};  // median 13; deviations 3 1 1 3: MAD 2
  median_spread(even, 4, &m, &s);
  CHECK(m == 13 && std::fabs(s - 2.0 / 13) < 1e-9);
  median_spread(even, 0, &m, &s);
  CHECK(m == 0 && s == 0);
}

// Train: variant v's i-th timed launch takes base[v] + i µs.
struct Ramp {
  std::vector<double> base;
  std::vector<unsigned> n;
};

static void train_run(Selector& sel, SimTimer& t, const Key& k, Ramp& r, std::vector<int>* seq,
                      unsigned launches) {
  for (unsigned i = 0; i < launches; ++i) {
    Plan p = sel.begin(k, static_cast<unsigned>(r.base.size()), kStream, false);
    if (seq) seq->push_back(p.variant);
    if (p.handle >= 0) t.set(p.handle, r.base[p.variant] + r.n[p.variant]++);
    sel.end(p, kStream, true);
  }
}

static void train_round_robin() {
  SimTimer t;
  Params p = default_params();
  p.train_launches = 6;
  Selector* sel = fresh(kTrain, &t, p);
  Ramp r;
  r.base = {100, 200, 50};
  r.n = {0, 0, 0};
  Key k = key_of(17);
  std::vector<int> seq;
  train_run(*sel, t, k, r, &seq, 40);
  for (unsigned i = 0; i < 21; ++i) CHECK(seq[i] == static_cast<int>(i % 3));
  for (unsigned i = 21; i < seq.size(); ++i) CHECK(seq[i] == 0);
  Snapshot s = snap(*sel, k);
  CHECK(s.locked == 0 && s.reason == kTrained);
  for (unsigned v = 0; v < 3; ++v) {
    CHECK(s.stats[v].launches == 7);  // one warm-up, six timed
    CHECK(s.stats[v].samples == 6);
    // samples base+0..5: median base+2.5, MAD 1.5
    CHECK(std::fabs(s.stats[v].median_us - (r.base[v] + 2.5)) < 1e-3);
    CHECK(std::fabs(s.stats[v].spread - 1.5 / (r.base[v] + 2.5)) < 1e-6);
  }
  CHECK(t.starts == 18);
  delete sel;
}

static void concurrent_threads() {
  SimTimer t(2);
  Selector* sel = fresh(kAdapt, &t);
  const unsigned kKernels = 16, kThreads = 8;
  // kernel k's best is variant k % 4: faster by 10 µs per step up to it, then slower
  std::vector<std::vector<double> > base(kKernels);
  for (unsigned k = 0; k < kKernels; ++k) {
    for (unsigned v = 0; v < 4; ++v)
      base[k].push_back(v <= k % 4 ? 100.0 - 10 * v : 100.0 - 10 * (k % 4) + 20);
  }
  std::vector<std::thread> threads;
  for (unsigned th = 0; th < kThreads; ++th) {
    threads.push_back(std::thread([&, th] {
      Rng rng(th + 1);
      for (unsigned i = 0; i < 1500; ++i) {
        unsigned k = (i * 7 + th) % kKernels;
        Key key = key_of(k);
        Plan p = sel->begin(key, 4, kStream, false);
        if (p.handle >= 0) t.set(p.handle, base[k][p.variant] * (1 + 0.002 * rng.uniform()));
        sel->end(p, kStream, true);
      }
    }));
  }
  for (size_t i = 0; i < threads.size(); ++i) threads[i].join();
  sel->flush(true);
  CHECK(sel->size() == kKernels);
  for (unsigned k = 0; k < kKernels; ++k) {
    Snapshot s = snap(*sel, key_of(k));
    CHECK(s.locked == static_cast<int>(k % 4));
  }
  CHECK(t.outstanding() == 0);
  CHECK(t.bad_calls == 0);
  CHECK(t.starts == t.stops + t.discards);
  delete sel;
}

class Names : public ProfileNames {
 public:
  const char* kernel(uint32_t id, int) const override {
    return id == 20 ? "_Z4walkPfi" : id == 21 ? "scale\"q\\uote" : 0;
  }
  const char* variant(uint32_t id, int, unsigned v) const override {
    static const char* walk[] = {"_Z4walkPfi", "_Z4walkPfi__orion_r40", "_Z4walkPfi__orion_r32"};
    return id == 20 && v < 3 ? walk[v] : 0;
  }
  const char* arch(int) const override { return "sm_90"; }
  const char* device(int) const override { return "Simulated GPU"; }
};

static void profile_written(const char* path) {
  SimTimer t;
  Params p = default_params();
  p.train_launches = 4;
  Selector* sel = fresh(kTrain, &t, p);
  Ramp walk;
  walk.base = {100, 80, 90};
  walk.n = {0, 0, 0};
  Ramp scale;
  scale.base = {10, 12};
  scale.n = {0, 0};
  train_run(*sel, t, key_of(21, 8, 1024), scale, 0, 30);
  train_run(*sel, t, key_of(20, 256), walk, 0, 30);
  train_run(*sel, t, key_of(20, 64), walk, 0, 7);  // cut short: 7 launches, 2 timed
  sel->flush(true);
  CHECK(sel->write_profile(path, Names()));
  CHECK(!sel->write_profile("/nonexistent-dir/x.json", Names()));
  delete sel;
}

int main(int argc, char** argv) {
  struct Case {
    const char* name;
    void (*run)();
  } cases[] = {
      {"direction_search", direction_search},
      {"stops_at_first_slowdown", stops_at_first_slowdown},
      {"last_candidate_is_best", last_candidate_is_best},
      {"other_direction_after_a_slower_first_step", other_direction_after_a_slower_first_step},
      {"both_directions_slower_keep_the_original", both_directions_slower_keep_the_original},
      {"gain_within_noise_is_no_step", gain_within_noise_is_no_step},
      {"noisy_original_kept", noisy_original_kept},
      {"noisy_candidate_keeps_original", noisy_candidate_keeps_original},
      {"short_kernel_kept", short_kernel_kept},
      {"locked_is_final", locked_is_final},
      {"late_timings", late_timings},
      {"capture_gets_original_or_locked", capture_gets_original_or_locked},
      {"bounded_table", bounded_table},
      {"timer_failures_lock_original", timer_failures_lock_original},
      {"launch_failure_locks_original", launch_failure_locks_original},
      {"single_variant_and_off", single_variant_and_off},
      {"median_and_spread", median_and_spread},
      {"train_round_robin", train_round_robin},
      {"concurrent_threads", concurrent_threads},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    g_case = cases[i].name;
    int before = g_failures;
    cases[i].run();
    if (g_failures == before) std::printf("ok %s\n", g_case);
  }
  if (argc > 1) {
    g_case = "profile_written";
    int before = g_failures;
    profile_written(argv[1]);
    if (g_failures == before) std::printf("ok %s\n", g_case);
  }
  std::fflush(stdout);
  return g_failures ? 1 : 0;
}
