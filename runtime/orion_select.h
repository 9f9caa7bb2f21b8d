// nvcc-orion launch-time variant selection: the decision logic alone (issue 21, Orion §3.4).
//
// This header is compiled into users' objects, so it is C++11, header-only, needs no CUDA
// header, allocates nothing, throws nothing, and a static `Selector` is constant-initialised
// (no global constructor, trivially destructible: a spinlock instead of std::mutex, so use
// from other static destructors at exit stays safe). The CUDA side (events on the user's
// stream, finding and launching the variants) implements `Timer` and calls `begin`/`end`
// around each launch; see docs/selector.md for the contract and the parameters' reasons.
//
// Variant 0 is the kernel under its original name: what runs with no runtime, the fallback on
// every doubt. Variants 1..n-1 are the steps in the static model's predicted direction, in
// order, and those on the other side of variant 0 (`other_side`: more registers where the
// first step has fewer, or the reverse) for Orion's fail-safe: when the first step is slower
// than the original, the search tries the other direction before it keeps the original.
// At most kMaxVariants.
#ifndef NVCC_ORION_SELECT_H
#define NVCC_ORION_SELECT_H

// <sched.h> (POSIX) for sched_yield: all the spinlock needs of <thread>, whose yield is that
// call, without the parse of <thread> in every glue build (issue 47; same machine code).
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

namespace orion_select_v1 {

static const unsigned kMaxVariants = 5;  // Orion keeps at most five candidates
static const unsigned kMaxSamples = 16;  // timed samples kept per (key, variant)
static const unsigned kMaxPending = 8;   // timings in flight per key
static const unsigned kMaxProbe = 32;    // open-addressing probe limit: beyond it, the original

enum Mode { kOff = 0, kAdapt = 1, kTrain = 2 };

// Why a key is locked (kExploring: not yet).
enum Reason {
  kExploring = 0,
  kBest = 1,      // adapt: the last candidate was still faster; it is the best
  kSlowdown = 2,  // adapt: the next step was not faster; the best so far is kept
  kNoisy = 3,     // adapt: a candidate's spread exceeded noise_limit; the original is kept
  kShort = 4,     // adapt: the original runs shorter than short_us; the original is kept
  kTrained = 5,   // train: every variant had its launches; the original runs from then on
  kError = 6,     // a timer or launch failure; the original is kept
  kSingle = 7     // a single variant: nothing to choose
};

// What identifies a launch configuration. `shared` is the dynamic shared memory in bytes.
struct Key {
  uint32_t kernel;
  int32_t device;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared;
};

inline bool key_equal(const Key& a, const Key& b) {
  return a.kernel == b.kernel && a.device == b.device && a.grid[0] == b.grid[0] &&
         a.grid[1] == b.grid[1] && a.grid[2] == b.grid[2] && a.block[0] == b.block[0] &&
         a.block[1] == b.block[1] && a.block[2] == b.block[2] && a.shared == b.shared;
}

// Orders keys for deterministic profile output.
inline bool key_less(const Key& a, const Key& b) {
  const uint32_t x[9] = {a.kernel, static_cast<uint32_t>(a.device), a.grid[0], a.grid[1],
                         a.grid[2], a.block[0], a.block[1], a.block[2], a.shared};
  const uint32_t y[9] = {b.kernel, static_cast<uint32_t>(b.device), b.grid[0], b.grid[1],
                         b.grid[2], b.block[0], b.block[1], b.block[2], b.shared};
  for (unsigned i = 0; i < 9; ++i) {
    if (x[i] != y[i]) return x[i] < y[i];
  }
  return false;
}

inline uint32_t key_hash(const Key& k) {
  const uint32_t w[9] = {k.kernel, static_cast<uint32_t>(k.device), k.grid[0], k.grid[1],
                         k.grid[2], k.block[0], k.block[1], k.block[2], k.shared};
  uint32_t h = 2166136261u;  // FNV-1a over the words
  for (unsigned i = 0; i < 9; ++i) {
    h ^= w[i];
    h *= 16777619u;
  }
  return h ^ (h >> 15);
}

struct Params {
  unsigned warmup;          // launches of each candidate before timing (lazy module load)
  unsigned repeats;         // adapt: timed launches per candidate before it is judged
  double noise_limit;       // adapt: relative spread (MAD / median) above which: original
  double min_gain;          // adapt: a step must be at least this much faster
  double short_us;          // adapt: original's median below this (µs): original
  unsigned train_launches;  // train: timed launches per variant (at most kMaxSamples)
  unsigned max_errors;      // timer failures tolerated per key before it locks the original
};

inline Params default_params() {
  Params p;
  p.warmup = 1;
  p.repeats = 5;
  p.noise_limit = 0.05;
  p.min_gain = 0.02;
  p.short_us = 5.0;
  p.train_launches = 10;
  p.max_errors = 2;
  return p;
}

// The clock. The runtime implements it with CUDA events recorded on the launch's own stream
// (never a device synchronisation); the tests with a simulated clock. Calls may come from
// several threads at once; `poll` is called with the selector's lock held.
class Timer {
 public:
  // Before the launch, on its stream: a handle >= 0, or -1 (this launch is not timed).
  virtual int start(int device, void* stream) = 0;
  // After the launch was enqueued on the same stream.
  virtual void stop(int handle, void* stream) = 0;
  // 1: done, *ms holds the elapsed milliseconds; 0: not yet (only when !wait); -1: failed;
  // -2: lost through no fault of the launch (the device was reset), not counted as an error.
  // After 1, -1 or -2 the handle is released.
  virtual int poll(int handle, bool wait, float* ms) = 0;
  // Release a handle whose launch failed.
  virtual void discard(int handle) = 0;

 protected:
  ~Timer() {}
};

// The decision for one launch: which variant, and the timing handle (-1: untimed).
struct Plan {
  int variant;
  int handle;
  int entry;  // table slot, -1 when the key is not tracked
  int pending;
};

// Per-variant numbers, for tests and the profile.
struct VariantStats {
  unsigned launches;
  unsigned samples;
  double median_us;
  double spread;  // median absolute deviation / median
};

struct Snapshot {
  Key key;
  unsigned variants;
  int locked;  // -1 while exploring
  Reason reason;
  unsigned errors;
  bool flipped;  // adapt: the first step was slower and the other direction was searched
  VariantStats stats[kMaxVariants];
};

// Names the profile writer needs; the runtime answers from its registration tables. A null
// answer is written as "". `variant` is the selector's index (0 .. variants-1).
class ProfileNames {
 public:
  // Each question names the key's device too: one kernel id is one host function, but each
  // device runs its own build of it (another architecture's registers, another numbering).
  virtual const char* kernel(uint32_t kernel_id, int device) const = 0;
  virtual const char* variant(uint32_t kernel_id, int device, unsigned variant) const = 0;
  // The build's number of the selector's variant `variant` (the k of `__orion_v<k>`), which
  // the profile records: the tuner may drop a variant and keep the others' numbers, so the
  // selector's indices can have gaps in the build's numbering (docs/selector.md).
  virtual unsigned number(uint32_t kernel_id, int device, unsigned variant) const {
    (void)kernel_id;
    (void)device;
    return variant;
  }
  // What the driver reports of the selector's variant `variant` (registers per thread and
  // local memory per thread, bytes: CU_FUNC_ATTRIBUTE_NUM_REGS and _LOCAL_SIZE_BYTES);
  // negative when unknown, and then not written. A profile-guided build compares them with
  // its own variant of that number, so that a profile of another build of changed sources
  // (another ranking under the same index names) is refused rather than misapplied.
  virtual int registers(uint32_t kernel_id, int device, unsigned variant) const {
    (void)kernel_id;
    (void)device;
    (void)variant;
    return -1;
  }
  virtual int local_bytes(uint32_t kernel_id, int device, unsigned variant) const {
    (void)kernel_id;
    (void)device;
    (void)variant;
    return -1;
  }
  virtual const char* arch(int device) const = 0;
  virtual const char* device(int device) const = 0;

 protected:
  ~ProfileNames() {}
};

// Median and relative median absolute deviation of n <= kMaxSamples samples.
inline void median_spread(const float* in, unsigned n, double* median, double* spread) {
  if (n == 0) {
    *median = 0.0;
    *spread = 0.0;
    return;
  }
  float v[kMaxSamples];
  for (unsigned i = 0; i < n; ++i) v[i] = in[i];
  for (unsigned pass = 0; pass < 2; ++pass) {
    for (unsigned i = 1; i < n; ++i) {  // insertion sort: n is tiny
      float x = v[i];
      unsigned j = i;
      for (; j > 0 && v[j - 1] > x; --j) v[j] = v[j - 1];
      v[j] = x;
    }
    double m = (n % 2) ? v[n / 2] : 0.5 * (static_cast<double>(v[n / 2 - 1]) + v[n / 2]);
    if (pass == 0) {
      *median = m;
      for (unsigned i = 0; i < n; ++i) {
        double d = static_cast<double>(v[i]) - m;
        v[i] = static_cast<float>(d < 0 ? -d : d);
      }
    } else {
      *spread = *median > 0 ? m / *median : 0.0;
    }
  }
}

namespace detail {

struct Stats {
  uint32_t launches;
  uint32_t count;     // samples held (at most kMaxSamples)
  uint32_t inflight;  // timed launches not yet polled
  float samples[kMaxSamples];
};

struct Pending {
  uint32_t state;  // kFree, kReserved (by begin, until end stores the handle), kTiming
  int32_t handle;
  uint32_t variant;
};
enum { kFree = 0, kReserved = 1, kTiming = 2 };

// Every member has a constant initialiser so that a static selector is constant-initialised
// in every language version (C++20 refuses indeterminate members in constant initialisation),
// and every initialiser is zero so that it lands in .bss, not 64 KiB of .data in each object.
struct Entry {
  std::atomic<uint32_t> published{0u};  // 0: empty; 1: key valid (release/acquire)
  std::atomic<uint32_t> chosen{0u};     // 0 while exploring, else the locked variant + 1
  Key key = Key();
  uint32_t variants = 0;
  uint32_t current = 0;  // adapt: the candidate being measured; train: round-robin counter
  uint32_t best = 0;
  uint32_t reason = 0;
  uint32_t errors = 0;
  uint32_t other = 0;    // adapt: bit v set when variant v is on the other side of variant 0
  uint32_t flipped = 0;  // adapt: searching the other direction (the fail-safe)
  Pending pending[kMaxPending] = {};
  Stats stats[kMaxVariants] = {};
};

// A spinlock (the selector's and the runtime glue's): constant-initialised and trivially destructible (std::mutex is not, with
// libc++). Critical sections are a few hundred instructions and a non-blocking event query.
class SpinLock {
 public:
  void lock() {
    while (flag_.exchange(true, std::memory_order_acquire)) sched_yield();
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};
class Guard {
 public:
  explicit Guard(SpinLock& l) : l_(l) { l_.lock(); }
  ~Guard() { l_.unlock(); }

 private:
  Guard(const Guard&);
  Guard& operator=(const Guard&);
  SpinLock& l_;
};

}  // namespace detail

template <unsigned Capacity>
class BasicSelector {
 public:
  // The implicit constructor is constexpr: a selector with static storage is constant-
  // initialised before any code runs (mode kOff, an empty table), so there is no global
  // constructor and no initialisation-order question.

  // Call once before the launches that should be selected (the runtime does it on first use,
  // under its own once-flag); until then every launch gets the original. Once a mode is on, the
  // configuration is final: pending timings hold handles of that timer.
  void configure(Mode mode, const Params& params, Timer* timer) {
    detail::Guard g(lock_);
    if (mode_load() != kOff) return;
    params_ = params;
    if (params_.repeats == 0) params_.repeats = 1;
    if (params_.repeats > kMaxSamples) params_.repeats = kMaxSamples;
    if (params_.train_launches == 0) params_.train_launches = 1;
    if (params_.train_launches > kMaxSamples) params_.train_launches = kMaxSamples;
    timer_ = timer;
    mode_.store(timer ? mode : kOff, std::memory_order_release);
  }

  // Before a launch. `variants`: how many this kernel has; `capturing`: the stream is being
  // captured into a graph (then nothing is timed and nothing switches); `other_side`: bit v
  // set when variant v lies on the other side of variant 0 from variant 1 (registers), the
  // direction Orion's fail-safe tries when the first step is slower (0: none).
  Plan begin(const Key& key, unsigned variants, void* stream, bool capturing,
             uint32_t other_side = 0) {
    Plan plan = {0, -1, -1, -1};
    if (variants > kMaxVariants) variants = kMaxVariants;
    if (mode_load() == kOff || variants <= 1) return plan;
    int slot = find(key);
    if (slot >= 0) {
      int locked = locked_of(table_[slot], std::memory_order_acquire);
      if (locked >= 0) {  // the cheap path: no lock, no timing
        plan.variant = locked;
        return plan;
      }
    }
    if (capturing) return plan;  // the original until a variant is locked
    Timer* timer = 0;
    {
      detail::Guard g(lock_);
      slot = insert(key, variants, other_side);
      if (slot < 0) return plan;  // table full: the original, untracked
      detail::Entry& e = table_[slot];
      plan.entry = slot;
      drain(e, false);
      plan.variant = decide(e);
      // `launches` counts the launches made while measuring: not the one that locked the key,
      // as the lock-free path after it counts nothing either.
      if (locked_of(e) >= 0) return plan;
      detail::Stats& s = e.stats[plan.variant];
      s.launches += 1;
      if (wants_timing(e, plan.variant)) {
        for (unsigned i = 0; i < kMaxPending; ++i) {
          if (e.pending[i].state == detail::kFree) {
            e.pending[i].state = detail::kReserved;
            e.pending[i].variant = static_cast<uint32_t>(plan.variant);
            s.inflight += 1;
            plan.pending = static_cast<int>(i);
            timer = timer_;
            break;
          }
        }
      }
    }
    if (timer) {  // the event is recorded outside the lock
      plan.handle = timer->start(key.device, stream);
      if (plan.handle < 0) release(plan, true);
    }
    return plan;
  }

  // After the launch. `launched`: false when the launch failed; the key then locks the original
  // (the runtime relaunches the original itself).
  void end(const Plan& plan, void* stream, bool launched) {
    if (plan.entry < 0) return;
    if (!launched) {
      if (plan.handle >= 0) timer_->discard(plan.handle);
      detail::Guard g(lock_);
      detail::Entry& e = table_[plan.entry];
      if (plan.pending >= 0 && plan.handle >= 0) free_pending(e, plan.pending);
      e.errors += 1;
      lock(e, 0, kError);
      return;
    }
    if (plan.handle < 0) return;
    timer_->stop(plan.handle, stream);
    detail::Guard g(lock_);
    detail::Pending& p = table_[plan.entry].pending[plan.pending];
    p.handle = plan.handle;
    p.state = detail::kTiming;
  }

  // Collects finished timings of every key; with `wait`, waits for all of them (at exit,
  // before the profile is written).
  void flush(bool wait) {
    detail::Guard g(lock_);
    for (unsigned i = 0; i < Capacity; ++i) {
      detail::Entry& e = table_[i];
      if (e.published.load(std::memory_order_relaxed)) {
        drain(e, wait);
        if (mode_load() == kAdapt && locked_of(e) < 0) decide(e);
      }
    }
  }

  unsigned size() const { return size_.load(std::memory_order_acquire); }

  // The state of one key; false when it is not tracked.
  bool inspect(const Key& key, Snapshot* out) {
    detail::Guard g(lock_);
    int slot = find(key);
    if (slot < 0) return false;
    snapshot(table_[slot], out);
    return true;
  }

  // Writes the profile JSON (format in docs/selector.md): one entry per key and launched
  // variant, sorted by key then variant, numbers printed locale-independently. False when the
  // file cannot be written.
  bool write_profile(const char* path, const ProfileNames& names) {
    std::FILE* f = std::fopen(path, "w");
    if (!f) return false;
    bool ok = write_profile(f, names);
    if (std::fclose(f) != 0) ok = false;
    return ok;
  }

  bool write_profile(std::FILE* f, const ProfileNames& names) {
    detail::Guard g(lock_);
    unsigned order[Capacity];
    unsigned n = 0;
    for (unsigned i = 0; i < Capacity; ++i) {
      if (!table_[i].published.load(std::memory_order_relaxed)) continue;
      unsigned j = n++;
      for (; j > 0 && key_less(table_[i].key, table_[order[j - 1]].key); --j)
        order[j] = order[j - 1];
      order[j] = i;
    }
    std::fputs("{\n  \"format\": \"nvcc-orion-profile\",\n  \"version\": 1,\n  \"entries\": [", f);
    bool first = true;
    for (unsigned o = 0; o < n; ++o) {
      Snapshot s;
      snapshot(table_[order[o]], &s);
      for (unsigned v = 0; v < s.variants; ++v) {
        if (s.stats[v].launches == 0) continue;
        std::fputs(first ? "\n    {" : ",\n    {", f);
        first = false;
        std::fputs("\"kernel\": ", f);
        json_string(f, names.kernel(s.key.kernel, s.key.device));
        std::fputs(", \"arch\": ", f);
        json_string(f, names.arch(s.key.device));
        std::fputs(", \"device\": ", f);
        json_string(f, names.device(s.key.device));
        std::fprintf(f,
                     ", \"key\": {\"kernel_id\": %lu, \"device\": %ld, \"grid\": [%lu, %lu, %lu], "
                     "\"block\": [%lu, %lu, %lu], \"shared\": %lu}",
                     static_cast<unsigned long>(s.key.kernel), static_cast<long>(s.key.device),
                     static_cast<unsigned long>(s.key.grid[0]),
                     static_cast<unsigned long>(s.key.grid[1]),
                     static_cast<unsigned long>(s.key.grid[2]),
                     static_cast<unsigned long>(s.key.block[0]),
                     static_cast<unsigned long>(s.key.block[1]),
                     static_cast<unsigned long>(s.key.block[2]),
                     static_cast<unsigned long>(s.key.shared));
        std::fprintf(f, ", \"variant\": %u, \"variant_name\": ", names.number(s.key.kernel, s.key.device, v));
        json_string(f, names.variant(s.key.kernel, s.key.device, v));
        int registers = names.registers(s.key.kernel, s.key.device, v);
        if (registers >= 0) std::fprintf(f, ", \"registers\": %d", registers);
        int local_bytes = names.local_bytes(s.key.kernel, s.key.device, v);
        if (local_bytes >= 0) std::fprintf(f, ", \"local_bytes\": %d", local_bytes);
        std::fprintf(f, ", \"launches\": %u, \"samples\": %u, \"median_us\": ", s.stats[v].launches,
                     s.stats[v].samples);
        json_fixed(f, s.stats[v].median_us, 1000);
        std::fputs(", \"spread\": ", f);
        json_fixed(f, s.stats[v].spread, 10000);
        std::fputs("}", f);
      }
    }
    std::fputs(first ? "]\n}\n" : "\n  ]\n}\n", f);
    return std::ferror(f) == 0;
  }

 private:
  int mode_load() const { return mode_.load(std::memory_order_acquire); }

  // Lock-free: slots are only ever published (never removed), key written before the release.
  int find(const Key& key) const {
    uint32_t h = key_hash(key);
    unsigned probes = Capacity < kMaxProbe ? Capacity : kMaxProbe;
    for (unsigned i = 0; i < probes; ++i) {
      unsigned slot = (h + i) % Capacity;
      const detail::Entry& e = table_[slot];
      if (!e.published.load(std::memory_order_acquire)) return -1;
      if (key_equal(e.key, key)) return static_cast<int>(slot);
    }
    return -1;
  }

  // Under the lock.
  int insert(const Key& key, unsigned variants, uint32_t other_side) {
    uint32_t h = key_hash(key);
    unsigned probes = Capacity < kMaxProbe ? Capacity : kMaxProbe;
    for (unsigned i = 0; i < probes; ++i) {
      unsigned slot = (h + i) % Capacity;
      detail::Entry& e = table_[slot];
      if (e.published.load(std::memory_order_relaxed)) {
        if (key_equal(e.key, key)) return static_cast<int>(slot);
        continue;
      }
      e.key = key;
      e.variants = variants;
      e.current = 0;
      e.best = 0;
      e.reason = kExploring;
      e.errors = 0;
      // Variant 0 and variant 1 define the directions; variants beyond the count do not exist.
      e.other = other_side & ((1u << variants) - 1u) & ~3u;
      e.flipped = 0;
      e.published.store(1, std::memory_order_release);
      size_.fetch_add(1, std::memory_order_release);
      return static_cast<int>(slot);
    }
    return -1;
  }

  // The locked variant, -1 while exploring.
  static int locked_of(const detail::Entry& e,
                       std::memory_order order = std::memory_order_relaxed) {
    return static_cast<int>(e.chosen.load(order)) - 1;
  }

  void lock(detail::Entry& e, unsigned variant, Reason why) {
    if (locked_of(e) >= 0) return;
    e.reason = why;
    e.chosen.store(variant + 1, std::memory_order_release);
  }

  void free_pending(detail::Entry& e, int index) {
    detail::Pending& p = e.pending[index];
    if (p.state == detail::kFree) return;
    e.stats[p.variant].inflight -= 1;
    p.state = detail::kFree;
  }

  // A failed start: the reservation is returned and counted as an error.
  void release(const Plan& plan, bool error) {
    detail::Guard g(lock_);
    detail::Entry& e = table_[plan.entry];
    free_pending(e, plan.pending);
    if (error) note_error(e);
  }

  void note_error(detail::Entry& e) {
    e.errors += 1;
    if (e.errors > params_.max_errors) lock(e, 0, kError);
  }

  // Polls the key's finished timings into its samples (under the lock).
  void drain(detail::Entry& e, bool wait) {
    for (unsigned i = 0; i < kMaxPending; ++i) {
      detail::Pending& p = e.pending[i];
      if (p.state != detail::kTiming) continue;
      float ms = 0;
      int r = timer_->poll(p.handle, wait, &ms);
      if (r == 0) continue;
      detail::Stats& s = e.stats[p.variant];
      if (r > 0 && ms >= 0 && s.count < kMaxSamples) s.samples[s.count++] = ms * 1000.0f;
      free_pending(e, static_cast<int>(i));
      if (r == -1) note_error(e);
    }
  }

  bool wants_timing(const detail::Entry& e, int variant) const {
    const detail::Stats& s = e.stats[variant];
    if (s.launches <= params_.warmup) return false;  // launches already counts this one
    unsigned goal = mode_load() == kTrain ? params_.train_launches : params_.repeats;
    return s.count + s.inflight < goal;
  }

  // The variant for the next launch; advances or locks the key (under the lock).
  int decide(detail::Entry& e) {
    int locked = locked_of(e);
    if (locked >= 0) return locked;
    if (mode_load() == kTrain) return decide_train(e);
    return decide_adapt(e);
  }

  int decide_train(detail::Entry& e) {
    unsigned done = 0;
    for (unsigned v = 0; v < e.variants; ++v) {
      if (e.stats[v].count >= params_.train_launches) ++done;
    }
    if (done == e.variants) {
      lock(e, 0, kTrained);
      return 0;
    }
    unsigned v = e.current % e.variants;
    e.current += 1;
    return static_cast<int>(v);
  }

  // Orion §3.4: the original first, then each next candidate of the predicted direction
  // while it is faster than the best by more than the noise; the first step that is not
  // faster locks the best. The fail-safe: when that is the direction's first step (nothing
  // beat the original), the other direction is searched the same way before the original is
  // kept.
  int decide_adapt(detail::Entry& e) {
    for (;;) {
      const detail::Stats& s = e.stats[e.current];
      if (s.count < params_.repeats) return static_cast<int>(e.current);
      double m = 0, sp = 0;
      median_spread(s.samples, s.count, &m, &sp);
      if (sp > params_.noise_limit) {
        lock(e, 0, kNoisy);
        return 0;
      }
      if (e.current == 0) {
        if (m < params_.short_us) {
          lock(e, 0, kShort);
          return 0;
        }
        e.best = 0;
        e.current = next_step(e, 0);
        continue;
      }
      double mb = 0, spb = 0;
      const detail::Stats& b = e.stats[e.best];
      median_spread(b.samples, b.count, &mb, &spb);
      double need = params_.min_gain > spb + sp ? params_.min_gain : spb + sp;
      if (m > mb * (1.0 - need)) {
        unsigned other = first_other(e);
        if (e.best == 0 && !e.flipped && other < e.variants) {
          e.flipped = 1;
          e.current = other;
          continue;
        }
        lock(e, e.best, kSlowdown);
        return static_cast<int>(e.best);
      }
      e.best = e.current;
      unsigned next = next_step(e, e.current);
      if (next >= e.variants) {
        lock(e, e.best, kBest);
        return static_cast<int>(e.best);
      }
      e.current = next;
    }
  }

  // The variant after `from` in the direction being searched (the other one once flipped),
  // or `variants` when there is none.
  static unsigned next_step(const detail::Entry& e, unsigned from) {
    uint32_t side = e.flipped ? 1u : 0u;
    for (unsigned v = from + 1; v < e.variants; ++v) {
      if (((e.other >> v) & 1u) == side) return v;
    }
    return e.variants;
  }

  static unsigned first_other(const detail::Entry& e) {
    for (unsigned v = 1; v < e.variants; ++v) {
      if ((e.other >> v) & 1u) return v;
    }
    return e.variants;
  }

  void snapshot(const detail::Entry& e, Snapshot* out) const {
    out->key = e.key;
    out->variants = e.variants;
    out->locked = locked_of(e);
    out->reason = static_cast<Reason>(e.reason);
    out->errors = e.errors;
    out->flipped = e.flipped != 0;
    for (unsigned v = 0; v < kMaxVariants; ++v) {
      const detail::Stats& s = e.stats[v];
      out->stats[v].launches = s.launches;
      out->stats[v].samples = s.count;
      median_spread(s.samples, s.count, &out->stats[v].median_us, &out->stats[v].spread);
    }
  }

  static void json_string(std::FILE* f, const char* s) {
    std::fputc('"', f);
    for (; s && *s; ++s) {
      unsigned char c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\') {
        std::fputc('\\', f);
        std::fputc(c, f);
      } else if (c < 0x20) {
        std::fprintf(f, "\\u%04x", c);
      } else {
        std::fputc(c, f);
      }
    }
    std::fputc('"', f);
  }

  // printf's %f follows the user's LC_NUMERIC; this does not.
  static void json_fixed(std::FILE* f, double v, unsigned long scale) {
    if (!(v >= 0) || v > 1e12) v = 0;  // NaN, negative, absurd: never invalid JSON
    unsigned long long units = static_cast<unsigned long long>(v * scale + 0.5);
    unsigned digits = 0;
    for (unsigned long s = scale; s > 1; s /= 10) ++digits;
    std::fprintf(f, "%llu.%0*llu", units / scale, static_cast<int>(digits), units % scale);
  }

  std::atomic<int> mode_{0};  // written last by configure (release)
  Timer* timer_ = nullptr;
  Params params_ = Params();
  detail::SpinLock lock_;
  std::atomic<unsigned> size_{0u};
  detail::Entry table_[Capacity];
};

// 128 keys × ~0.5 KiB: a fixed 68 KiB of zeroed storage (.bss) per object that embeds it.
typedef BasicSelector<128> Selector;

}  // namespace orion_select_v1

#endif  // NVCC_ORION_SELECT_H
