// nvcc-orion launch-time selector: the CUDA glue around `orion_select.h` (issue 21).
//
// What it owns: the renamed launch entry points (orion_launch_redirect.h), finding a kernel's
// variants from its host handle, launching them, the CUDA-event `Timer`, and the train profile
// at exit. The decisions are `orion_select.h`'s. docs/selector.md says why each step is done
// this way; the short version:
//
// * Nothing but the original launch happens until an original launch of that kernel on that
//   device has succeeded. With no GPU, no driver or a broken one, every launch is therefore
//   exactly the original call, and the runtime's error state is untouched.
// * Variants are found by name: `cudaGetFuncBySymbol` -> `cuFuncGetName` / `cuFuncGetModule`
//   -> `cuModuleGetFunction("<mangled>__orion_v<k>")`, every k = 1..4 (the tuner may drop one
//   and keep the others' numbers). The driver functions come from
//   `cudaGetDriverEntryPointByVersion`, so no -lcuda.
// * A variant is launched with `cuLaunchKernel` on the user's stream with the same argument
//   pointers; variant 0 is always the original entry point, unchanged.
// * Any doubt (no entry point, an error, a capture query failing, shared memory that does not
//   fit, a pending runtime error of the user's) means the original.
//
// The entry points are weak and hidden: every object built under adapt/train carries a copy,
// the linker keeps one per executable or shared library, and all state lives in that copy.
// C++11, no exceptions, no RTTI, nothing from the C++ runtime library (libc only).

#include "orion_runtime.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

// The selector's template code is emitted weak in each object: hidden, so that a shared
// library never exports it.
#pragma GCC visibility push(hidden)
#include "orion_select.h"
#pragma GCC visibility pop

#define ORION_RT_API extern "C" __attribute__((weak, visibility("hidden")))

// Declared by nvcc's crt/device_functions.h only under __CUDACC__; cudart defines them.
extern "C" cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t*, const void*);
extern "C" cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t,
                                                    cudaStream_t);
extern "C" cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t, dim3, dim3, void**, size_t,
                                                         cudaStream_t);
extern "C" cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void*, dim3, dim3, void**, size_t,
                                                       cudaStream_t);
extern "C" cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t*, const void*,
                                                          void**);

#ifndef ORION_RT_DEFAULT_MODE
#define ORION_RT_DEFAULT_MODE 1  // the build's mode (1 adapt, 2 train); NVCC_ORION overrides
#endif

namespace orion_rt_v1 {
// Internal linkage: each object carrying the glue has its own copy; the weak entry points
// below all resolve to the first object's copy, so one copy's state serves the whole image.
namespace {

namespace sel = orion_select_v1;

static const unsigned kMaxKernels = 256;  // (kernel, device) pairs resolved per image
static const unsigned kMaxHandles = 256;  // stub handles (cudaKernel_t) mapped to host handles
static const unsigned kMaxDevices = 16;
static const unsigned kMaxEvents = 64;    // timing event pairs in flight, all keys together
static const size_t kDefaultShared = 48 * 1024;  // dynamic + static without an opt-in

typedef CUresult(CUDAAPI* FuncGetModule)(CUmodule*, CUfunction);
typedef CUresult(CUDAAPI* FuncGetName)(const char**, CUfunction);
typedef CUresult(CUDAAPI* ModuleGetFunction)(CUfunction*, CUmodule, const char*);
typedef CUresult(CUDAAPI* FuncGetAttribute)(int*, CUfunction_attribute, CUfunction);
typedef CUresult(CUDAAPI* FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
typedef CUresult(CUDAAPI* LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**, void**);
typedef CUresult(CUDAAPI* StreamIsCapturing)(CUstream, CUstreamCaptureStatus*);

struct Driver {
  FuncGetModule func_get_module;
  FuncGetName func_get_name;
  ModuleGetFunction module_get_function;
  FuncGetAttribute func_get_attribute;
  FuncSetAttribute func_set_attribute;
  LaunchKernel launch_kernel;
  StreamIsCapturing stream_is_capturing;
};

// One (kernel, device): the original and its variants. Written once under the lock, then
// published; read lock-free.
struct Kernel {
  std::atomic<uint32_t> state{0u};  // 0 empty, 1 resolved (published with release)
  const void* func = nullptr;
  int device = 0;
  uint32_t id = 0;        // FNV-1a of the mangled name: the same in every run
  unsigned variants = 0;  // 1 + the variants found (1: the original only)
  // The build's number k of the selector's variant i (`__orion_v<k>`; 0 for the original):
  // increasing, with gaps where the tuner dropped a variant.
  unsigned char number[sel::kMaxVariants] = {};
  CUfunction fn[sel::kMaxVariants] = {};
  int static_shared[sel::kMaxVariants] = {};
  // The dynamic-shared limit of each (the original's as last read; a variant's as last set):
  // read lock-free by `fitting`, raised under the lock by `refit` (release after the driver
  // call, so a launch that sees the raised limit sees the driver's state too).
  std::atomic<int> max_dynamic[sel::kMaxVariants] = {};
  // The original's limit at which raising a variant's failed (0: never): not tried again
  // until the user changes the original's limit.
  int refused[sel::kMaxVariants] = {};
  // What the profile records to tell builds apart (-1: unknown): cuFuncGetAttribute's
  // CU_FUNC_ATTRIBUTE_NUM_REGS and _LOCAL_SIZE_BYTES.
  int registers[sel::kMaxVariants] = {};
  int local_bytes[sel::kMaxVariants] = {};
  const char* name = nullptr;  // owned by the driver's module
  char* variant_names = nullptr;  // the names of variants 1.., NUL-separated, malloc'd once
  // Bit v: variant v has registers on the other side of the original's from variant 1's
  // (Orion's fail-safe searches that direction when the first step is slower).
  uint32_t other_side = 0;
};

struct Handle {
  std::atomic<const void*> kernel{nullptr};  // cudaKernel_t
  std::atomic<const void*> func{nullptr};
};

struct Event {
  std::atomic<uint32_t> state{0u};  // 0 free, 1 in use (claimed by CAS: start runs unlocked)
  int device = 0;  // the device + 1 once created (0: none; all zero keeps the state in .bss)
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
};

struct DeviceInfo {
  uint32_t known = 0;
  char arch[16] = {};
  char name[256] = {};
};

// CUDA events recorded on the launch's own stream, polled without waiting; only the exit
// flush of train waits, for that event alone.
class EventTimer : public sel::Timer {
 public:
  int start(int device, void* stream) override;
  void stop(int handle, void* stream) override;
  int poll(int handle, bool wait, float* ms) override;
  void discard(int handle) override;
};

class Names : public sel::ProfileNames {
 public:
  const char* kernel(uint32_t kernel_id) const override;
  const char* variant(uint32_t kernel_id, unsigned variant) const override;
  unsigned number(uint32_t kernel_id, unsigned variant) const override;
  int registers(uint32_t kernel_id, unsigned variant) const override;
  int local_bytes(uint32_t kernel_id, unsigned variant) const override;
  const char* arch(int device) const override;
  const char* device(int device) const override;
};


// All state, constant-initialised and zeroed (.bss): no global constructor, and a kernel
// launched from another static destructor at exit still finds it valid.
struct State {
  std::atomic<int> phase{0};  // 0 not configured, 1 configuring, 2 on, 3 off
  Driver driver = Driver();
  sel::detail::SpinLock lock;  // the resolve path (rare)
  Kernel kernels[kMaxKernels];
  Handle handles[kMaxHandles];
  Event events[kMaxEvents];
  DeviceInfo devices[kMaxDevices];
  std::atomic<bool> said[4] = {};  // NVCC_ORION_VERBOSE messages, once each
  const char* profile_out = nullptr;
  alignas(EventTimer) unsigned char timer[sizeof(EventTimer)] = {};
  sel::Selector selector;
};

State g_state;

enum Said { kSaidOff = 0, kSaidNoDriver = 1, kSaidError = 2, kSaidProfile = 3 };

void say(Said which, const char* fmt, const char* detail) {
  // Read here, not at configuration: the messages that matter most come before it.
  if (!std::getenv("NVCC_ORION_VERBOSE") || g_state.said[which].exchange(true)) return;
  std::fprintf(stderr, "nvcc-orion: ");
  std::fprintf(stderr, fmt, detail);
  std::fputc('\n', stderr);
}

uint32_t fnv(const char* s) {
  uint32_t h = 2166136261u;
  for (; *s; ++s) {
    h ^= static_cast<unsigned char>(*s);
    h *= 16777619u;
  }
  return h;
}

size_t hash_ptr(const void* p, int device) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  v ^= v >> 17;
  v *= 0x9E3779B1u;
  return static_cast<size_t>(v ^ static_cast<uintptr_t>(device) * 0x85EBCA6Bu);
}

// A failing runtime call of the glue's own sets the runtime's last error; the glue only runs
// when there was none (checked before), so clearing restores exactly the user's state.
void clear_error(cudaError_t e) {
  if (e != cudaSuccess) (void)cudaGetLastError();
}

// --- configuration ---------------------------------------------------------------------

void write_profile_at_exit() {
  State& s = g_state;
  if (s.phase.load(std::memory_order_acquire) != 2 || !s.profile_out) return;
  s.selector.flush(true);
  Names names;
  if (!s.selector.write_profile(s.profile_out, names)) {
    say(kSaidProfile, "cannot write the profile %s", s.profile_out);
  }
}

template <typename F>
bool entry(const char* symbol, unsigned version, F* out) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, version, cudaEnableDefault, &status);
  clear_error(e);
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || !p) return false;
  *out = reinterpret_cast<F>(p);
  return true;
}

// Once, after the first original launch that succeeded (so a driver and a device exist).
// Until it finishes, other threads get the original.
bool configured() {
  State& s = g_state;
  int phase = s.phase.load(std::memory_order_acquire);
  if (phase >= 2) return phase == 2;
  int expected = 0;
  if (!s.phase.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return false;
  const char* env = std::getenv("NVCC_ORION");
  int mode = ORION_RT_DEFAULT_MODE;
  if (env && std::strcmp(env, "adapt") == 0) mode = sel::kAdapt;
  if (env && std::strcmp(env, "train") == 0) mode = sel::kTrain;
  if (env && (std::strcmp(env, "off") == 0 || std::strcmp(env, "0") == 0)) mode = sel::kOff;
  if (mode == sel::kOff) {
    say(kSaidOff, "selector off (NVCC_ORION=%s): original kernels run", env);
    s.phase.store(3, std::memory_order_release);
    return false;
  }
  Driver d;
  bool ok = entry("cuFuncGetModule", 12000, &d.func_get_module) &&
            entry("cuFuncGetName", 12030, &d.func_get_name) &&
            entry("cuModuleGetFunction", 12000, &d.module_get_function) &&
            entry("cuFuncGetAttribute", 12000, &d.func_get_attribute) &&
            entry("cuFuncSetAttribute", 12000, &d.func_set_attribute) &&
            entry("cuLaunchKernel", 12000, &d.launch_kernel) &&
            entry("cuStreamIsCapturing", 12000, &d.stream_is_capturing);
  if (!ok) {
    say(kSaidNoDriver, "selector off: the driver lacks %s; original kernels run",
        "cuFuncGetName/cuFuncGetModule (driver 12.3 or newer)");
    s.phase.store(3, std::memory_order_release);
    return false;
  }
  s.driver = d;
  if (mode == sel::kTrain) {
    s.profile_out = std::getenv("NVCC_ORION_PROFILE_OUT");
    if (!s.profile_out || !*s.profile_out) {
      s.profile_out = nullptr;
      say(kSaidProfile, "train: %s is not set; no profile is written", "NVCC_ORION_PROFILE_OUT");
    }
  }
  EventTimer* timer = new (s.timer) EventTimer();
  s.selector.configure(static_cast<sel::Mode>(mode), sel::default_params(), timer);
  if (s.profile_out) std::atexit(write_profile_at_exit);
  s.phase.store(2, std::memory_order_release);
  return true;
}

// --- finding the variants --------------------------------------------------------------

Kernel* find_kernel(const void* func, int device) {
  size_t h = hash_ptr(func, device);
  for (unsigned i = 0; i < kMaxKernels; ++i) {
    Kernel& k = g_state.kernels[(h + i) % kMaxKernels];
    if (!k.state.load(std::memory_order_acquire)) return nullptr;
    if (k.func == func && k.device == device) return &k;
  }
  return nullptr;
}

// The registers and local bytes of variant `i` (the profile's check against the build).
void resources(Kernel& k, unsigned i, CUfunction f) {
  const Driver& d = g_state.driver;
  if (d.func_get_attribute(&k.registers[i], CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS)
    k.registers[i] = -1;
  if (d.func_get_attribute(&k.local_bytes[i], CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f) !=
      CUDA_SUCCESS)
    k.local_bytes[i] = -1;
}

// The variants whose register count lies on the other side of the original's from the first
// step's (unknown counts are never the other side).
uint32_t other_side_of(const Kernel& k) {
  if (k.variants < 3 || k.registers[0] < 0 || k.registers[1] < 0) return 0;
  bool first_up = k.registers[1] > k.registers[0];
  uint32_t mask = 0;
  for (unsigned v = 2; v < k.variants; ++v) {
    int r = k.registers[v];
    if (r >= 0 && r != k.registers[0] && (r > k.registers[0]) != first_up) mask |= 1u << v;
  }
  return mask;
}

// Fills `k` from the original's handle. Any failure leaves the original alone (1 variant).
void resolve(Kernel& k, const void* func) {
  const Driver& d = g_state.driver;
  k.variants = 1;
  cudaFunction_t f = nullptr;
  cudaError_t e = cudaGetFuncBySymbol(&f, func);
  clear_error(e);
  CUmodule m = nullptr;
  const char* name = nullptr;
  if (e != cudaSuccess || !f || d.func_get_module(&m, f) != CUDA_SUCCESS ||
      d.func_get_name(&name, f) != CUDA_SUCCESS || !name) {
    say(kSaidError, "selector: cannot inspect a kernel (%s); it runs unchanged", "driver error");
    return;
  }
  int cluster = 0;
  (void)d.func_get_attribute(&cluster, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f);
  k.fn[0] = f;
  k.name = name;
  k.id = fnv(name);
  (void)d.func_get_attribute(&k.static_shared[0], CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
  int limit = 0;
  (void)d.func_get_attribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f);
  k.max_dynamic[0].store(limit, std::memory_order_relaxed);
  resources(k, 0, f);
  if (cluster > 0) return;  // compile-time cluster dimensions: the original only
  size_t len = std::strlen(name) + 16;
  char* names = static_cast<char*>(std::calloc(sel::kMaxVariants - 1, len));
  if (!names) return;
  // Every k: the tuner drops a variant whose registers differ from its standalone build and
  // keeps the others' numbers, so a missing k is no end. The present ones keep their order.
  unsigned n = 1;
  for (unsigned number = 1; number < sel::kMaxVariants; ++number) {
    char* v = names + (n - 1) * len;
    std::snprintf(v, len, "%s__orion_v%u", name, number);
    CUfunction vf = nullptr;
    if (d.module_get_function(&vf, m, v) != CUDA_SUCCESS || !vf) continue;
    if (d.func_get_attribute(&k.static_shared[n], CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, vf) !=
            CUDA_SUCCESS ||
        d.func_get_attribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, vf) !=
            CUDA_SUCCESS)
      continue;
    k.max_dynamic[n].store(limit, std::memory_order_relaxed);
    resources(k, n, vf);
    k.fn[n] = vf;
    k.number[n] = static_cast<unsigned char>(number);
    ++n;
  }
  k.variants = n;
  k.variant_names = names;
  k.other_side = other_side_of(k);
}

const Kernel* kernel_for(const void* func, int device) {
  const Kernel* found = find_kernel(func, device);
  if (found) return found;
  sel::detail::Guard g(g_state.lock);
  size_t h = hash_ptr(func, device);
  for (unsigned i = 0; i < kMaxKernels; ++i) {
    Kernel& k = g_state.kernels[(h + i) % kMaxKernels];
    if (k.state.load(std::memory_order_relaxed)) {
      if (k.func == func && k.device == device) return &k;
      continue;
    }
    k.func = func;
    k.device = device;
    resolve(k, func);
    k.state.store(1, std::memory_order_release);
    return &k;
  }
  return nullptr;  // table full: the original
}

// What the original may use in all: its static size plus its dynamic limit, or the default
// 48 KiB. The driver accepted that for the original, so it is within the device's opt-in
// maximum.
size_t budget_of(const Kernel& k, int original_limit) {
  size_t budget = static_cast<size_t>(k.static_shared[0]) + static_cast<size_t>(original_limit);
  return budget < kDefaultShared ? kDefaultShared : budget;
}

// The rare path of `fitting`: the launch's dynamic size is above what a variant allows, or
// above the original's limit as last read. The user may have raised the original's limit
// since (cudaFuncSetAttribute with cudaFuncAttributeMaxDynamicSharedMemorySize): read it again
// and raise the limit of each variant that fits the original's budget, once, under the lock.
unsigned refit(Kernel& k, size_t shmem) {
  const Driver& d = g_state.driver;
  sel::detail::Guard g(g_state.lock);
  int original = 0;
  if (d.func_get_attribute(&original, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                           k.fn[0]) != CUDA_SUCCESS)
    original = k.max_dynamic[0].load(std::memory_order_relaxed);
  k.max_dynamic[0].store(original, std::memory_order_relaxed);
  size_t budget = budget_of(k, original);
  for (unsigned v = 1; v < k.variants; ++v) {
    size_t static_size = static_cast<size_t>(k.static_shared[v]);
    if (static_size + shmem > budget) return v;
    if (shmem <= static_cast<size_t>(k.max_dynamic[v].load(std::memory_order_relaxed))) continue;
    if (k.refused[v] == original) return v;
    int raised = static_cast<int>(budget - static_size);
    if (d.func_set_attribute(k.fn[v], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, raised) !=
        CUDA_SUCCESS) {
      k.refused[v] = original;
      return v;
    }
    k.max_dynamic[v].store(raised, std::memory_order_release);
  }
  return k.variants;
}

// How many variants (a prefix: they are ordered) this launch's shared memory leaves room for.
// A variant needs no more than the original is allowed (its static size plus the dynamic
// maximum the user opted into, or the default 48 KiB), and the dynamic size within its own
// limit. Launches within the limits as last read cost two loads per variant; only one above
// them takes `refit`.
unsigned fitting(Kernel& k, size_t shmem) {
  int original = k.max_dynamic[0].load(std::memory_order_relaxed);
  size_t budget = budget_of(k, original);
  for (unsigned v = 1; v < k.variants; ++v) {
    if (static_cast<size_t>(k.static_shared[v]) + shmem > budget)
      return shmem > static_cast<size_t>(original) ? refit(k, shmem) : v;
    if (shmem > static_cast<size_t>(k.max_dynamic[v].load(std::memory_order_acquire)))
      return refit(k, shmem);
  }
  return k.variants;
}

// --- launching ---------------------------------------------------------------------------

// How the program launched: the original goes back the same way, so that whatever stands
// between the program and the runtime (an interposer, a tracer) sees the same calls.
enum Via { kPlain, kPlainPtsz, kEx, kExPtsz, kStub, kStubPtsz };

struct Original {
  Via via;
  const void* func;
  cudaKernel_t kernel;
};

cudaError_t launch_original(const Original& o, dim3 grid, dim3 block, void** args, size_t shmem,
                            cudaStream_t stream) {
  switch (o.via) {
    case kPlain:
      return cudaLaunchKernel(o.func, grid, block, args, shmem, stream);
    case kPlainPtsz:
      return cudaLaunchKernel_ptsz(o.func, grid, block, args, shmem, stream);
    case kEx:
    case kExPtsz: {
      cudaLaunchConfig_t config = {};
      config.gridDim = grid;
      config.blockDim = block;
      config.dynamicSmemBytes = shmem;
      config.stream = stream;
      return o.via == kEx ? cudaLaunchKernelExC(&config, o.func, args)
                          : cudaLaunchKernelExC_ptsz(&config, o.func, args);
    }
    case kStub:
      return __cudaLaunchKernel(o.kernel, grid, block, args, shmem, stream);
    case kStubPtsz:
      return __cudaLaunchKernel_ptsz(o.kernel, grid, block, args, shmem, stream);
  }
  return cudaErrorInvalidValue;
}

// The selector's path: on any doubt, the original.
cudaError_t dispatch(const Original& o, dim3 grid, dim3 block, void** args, size_t shmem,
                     cudaStream_t stream) {
  State& s = g_state;
  int phase = s.phase.load(std::memory_order_acquire);
  if (phase == 3 || !o.func) return launch_original(o, grid, block, args, shmem, stream);
  int device = -1;
  // Nothing is known yet, or the user has an error pending: the original, alone. The first
  // launch that succeeds turns the selector on (a driver and a device exist).
  if (phase != 2 || cudaPeekAtLastError() != cudaSuccess) {
    cudaError_t e = launch_original(o, grid, block, args, shmem, stream);
    if (e == cudaSuccess && phase == 0 && cudaPeekAtLastError() == cudaSuccess) {
      (void)configured();
    } else if (e != cudaSuccess && phase == 0) {
      say(kSaidError, "selector idle: the launch failed (%s); original kernels run",
          cudaGetErrorString(e));
    }
    return e;
  }
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) {
    clear_error(e);
    return launch_original(o, grid, block, args, shmem, stream);
  }
  Kernel* k = find_kernel(o.func, device);
  if (!k) {
    // Resolved after this kernel's original launch on this device succeeded.
    e = launch_original(o, grid, block, args, shmem, stream);
    if (e == cudaSuccess) (void)kernel_for(o.func, device);
    return e;
  }
  unsigned n = k->variants > 1 ? fitting(*k, shmem) : 1;
  if (n <= 1) return launch_original(o, grid, block, args, shmem, stream);
  bool ptsz = o.via == kPlainPtsz || o.via == kExPtsz || o.via == kStubPtsz;
  CUstream cu_stream = (stream == nullptr && ptsz) ? CU_STREAM_PER_THREAD : stream;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  bool capturing = s.driver.stream_is_capturing(cu_stream, &capture) != CUDA_SUCCESS ||
                   capture != CU_STREAM_CAPTURE_STATUS_NONE;
  sel::Key key;
  key.kernel = k->id;
  key.device = device;
  key.grid[0] = grid.x;
  key.grid[1] = grid.y;
  key.grid[2] = grid.z;
  key.block[0] = block.x;
  key.block[1] = block.y;
  key.block[2] = block.z;
  key.shared = static_cast<uint32_t>(shmem);
  sel::Plan plan = s.selector.begin(key, n, cu_stream, capturing, k->other_side);
  if (plan.variant <= 0 || static_cast<unsigned>(plan.variant) >= n) {
    e = launch_original(o, grid, block, args, shmem, stream);
    s.selector.end(plan, cu_stream, e == cudaSuccess);
    return e;
  }
  CUresult r = s.driver.launch_kernel(k->fn[plan.variant], grid.x, grid.y, grid.z, block.x,
                                      block.y, block.z, static_cast<unsigned>(shmem), cu_stream,
                                      args, nullptr);
  s.selector.end(plan, cu_stream, r == CUDA_SUCCESS);
  if (r == CUDA_SUCCESS) return cudaSuccess;
  say(kSaidError, "selector: a variant failed to launch (CUresult %s); the original runs",
      r == CUDA_ERROR_INVALID_VALUE ? "invalid value" : "error");
  return launch_original(o, grid, block, args, shmem, stream);
}

// --- handles of the <<<>>> stubs -----------------------------------------------------------

void remember(cudaKernel_t kernel, const void* func) {
  size_t h = hash_ptr(kernel, 0);
  for (unsigned i = 0; i < kMaxHandles; ++i) {
    Handle& slot = g_state.handles[(h + i) % kMaxHandles];
    const void* expected = nullptr;
    if (slot.kernel.compare_exchange_strong(expected, kernel, std::memory_order_acq_rel) ||
        expected == kernel) {
      slot.func.store(func, std::memory_order_release);
      return;
    }
  }
}

const void* func_of(cudaKernel_t kernel) {
  if (!kernel) return nullptr;
  size_t h = hash_ptr(kernel, 0);
  for (unsigned i = 0; i < kMaxHandles; ++i) {
    const Handle& slot = g_state.handles[(h + i) % kMaxHandles];
    const void* k = slot.kernel.load(std::memory_order_acquire);
    if (!k) return nullptr;
    if (k == kernel) return slot.func.load(std::memory_order_acquire);
  }
  return nullptr;
}

// --- the timer -----------------------------------------------------------------------------

int EventTimer::start(int device, void* stream) {
  for (unsigned i = 0; i < kMaxEvents; ++i) {
    Event& ev = g_state.events[i];
    uint32_t expected = 0;
    if (!ev.state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) continue;
    if (ev.device != 0 && ev.device != device + 1) {
      ev.state.store(0, std::memory_order_release);
      continue;
    }
    if (!ev.start) {
      cudaError_t a = cudaEventCreateWithFlags(&ev.start, cudaEventDefault);
      cudaError_t b = a == cudaSuccess ? cudaEventCreateWithFlags(&ev.stop, cudaEventDefault) : a;
      if (b != cudaSuccess) {
        clear_error(b);
        if (ev.start) (void)cudaEventDestroy(ev.start);
        ev.start = ev.stop = nullptr;
        ev.state.store(0, std::memory_order_release);
        return -1;
      }
      ev.device = device + 1;
    }
    cudaError_t e = cudaEventRecord(ev.start, static_cast<cudaStream_t>(stream));
    if (e != cudaSuccess) {
      clear_error(e);
      ev.state.store(0, std::memory_order_release);
      return -1;
    }
    return static_cast<int>(i);
  }
  return -1;  // every event pair busy: this launch is not timed
}

void EventTimer::stop(int handle, void* stream) {
  clear_error(cudaEventRecord(g_state.events[handle].stop, static_cast<cudaStream_t>(stream)));
}

int EventTimer::poll(int handle, bool wait, float* ms) {
  Event& ev = g_state.events[handle];
  cudaError_t e = wait ? cudaEventSynchronize(ev.stop) : cudaEventQuery(ev.stop);
  if (e == cudaErrorNotReady) {
    clear_error(e);
    return 0;
  }
  int result = -1;
  if (e == cudaSuccess) {
    e = cudaEventElapsedTime(ms, ev.start, ev.stop);
    if (e == cudaSuccess) result = 1;
  }
  clear_error(e);
  ev.state.store(0, std::memory_order_release);
  return result;
}

void EventTimer::discard(int handle) {
  g_state.events[handle].state.store(0, std::memory_order_release);
}

// --- names for the profile -------------------------------------------------------------------

const Kernel* by_id(uint32_t id) {
  for (unsigned i = 0; i < kMaxKernels; ++i) {
    const Kernel& k = g_state.kernels[i];
    if (k.state.load(std::memory_order_acquire) && k.name && k.id == id) return &k;
  }
  return nullptr;
}

const char* Names::kernel(uint32_t kernel_id) const {
  const Kernel* k = by_id(kernel_id);
  return k ? k->name : nullptr;
}

const char* Names::variant(uint32_t kernel_id, unsigned variant) const {
  const Kernel* k = by_id(kernel_id);
  if (!k || variant >= k->variants) return nullptr;
  if (variant == 0) return k->name;
  return k->variant_names + (variant - 1) * (std::strlen(k->name) + 16);
}

unsigned Names::number(uint32_t kernel_id, unsigned variant) const {
  const Kernel* k = by_id(kernel_id);
  return k && variant < k->variants ? k->number[variant] : variant;
}

int Names::registers(uint32_t kernel_id, unsigned variant) const {
  const Kernel* k = by_id(kernel_id);
  return k && variant < k->variants ? k->registers[variant] : -1;
}

int Names::local_bytes(uint32_t kernel_id, unsigned variant) const {
  const Kernel* k = by_id(kernel_id);
  return k && variant < k->variants ? k->local_bytes[variant] : -1;
}

DeviceInfo* device_info(int device) {
  if (device < 0 || static_cast<unsigned>(device) >= kMaxDevices) return nullptr;
  DeviceInfo& d = g_state.devices[device];
  if (!d.known) {
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    clear_error(e);
    if (e != cudaSuccess) return nullptr;
    std::snprintf(d.arch, sizeof d.arch, "sm_%d%d", p.major, p.minor);
    std::snprintf(d.name, sizeof d.name, "%s", p.name);
    d.known = 1;
  }
  return &d;
}

const char* Names::arch(int device) const {
  DeviceInfo* d = device_info(device);
  return d ? d->arch : nullptr;
}

const char* Names::device(int device) const {
  DeviceInfo* d = device_info(device);
  return d ? d->name : nullptr;
}

}  // namespace
}  // namespace orion_rt_v1

// --- the entry points ------------------------------------------------------------------------

using orion_rt_v1::Original;

ORION_RT_API cudaError_t orion_launch(const void* func, dim3 grid, dim3 block, void** args,
                                      size_t shmem, cudaStream_t stream) {
  Original o = {orion_rt_v1::kPlain, func, nullptr};
  return orion_rt_v1::dispatch(o, grid, block, args, shmem, stream);
}

ORION_RT_API cudaError_t orion_rt_v1_cudaLaunchKernel(const void* func, dim3 grid, dim3 block,
                                                      void** args, size_t shmem,
                                                      cudaStream_t stream) {
  return orion_launch(func, grid, block, args, shmem, stream);
}

ORION_RT_API cudaError_t orion_rt_v1_cudaLaunchKernel_ptsz(const void* func, dim3 grid,
                                                           dim3 block, void** args, size_t shmem,
                                                           cudaStream_t stream) {
  Original o = {orion_rt_v1::kPlainPtsz, func, nullptr};
  return orion_rt_v1::dispatch(o, grid, block, args, shmem, stream);
}

// With launch attributes (cooperative, cluster, priority, ...) the original, always.
ORION_RT_API cudaError_t orion_rt_v1_cudaLaunchKernelExC(const cudaLaunchConfig_t* config,
                                                         const void* func, void** args) {
  if (!config || config->numAttrs != 0) return cudaLaunchKernelExC(config, func, args);
  Original o = {orion_rt_v1::kEx, func, nullptr};
  return orion_rt_v1::dispatch(o, config->gridDim, config->blockDim, args,
                               config->dynamicSmemBytes, config->stream);
}

ORION_RT_API cudaError_t orion_rt_v1_cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config,
                                                              const void* func, void** args) {
  if (!config || config->numAttrs != 0) return cudaLaunchKernelExC_ptsz(config, func, args);
  Original o = {orion_rt_v1::kExPtsz, func, nullptr};
  return orion_rt_v1::dispatch(o, config->gridDim, config->blockDim, args,
                               config->dynamicSmemBytes, config->stream);
}

// The <<<>>> stub asks once for its kernel's handle; the glue notes which host handle it
// belongs to, so that the stub's launches can be keyed like cudaLaunchKernel's.
ORION_RT_API cudaError_t orion_rt_v1___cudaGetKernel(cudaKernel_t* kernel, const void* func) {
  cudaError_t e = __cudaGetKernel(kernel, func);
  if (e == cudaSuccess && kernel && *kernel) orion_rt_v1::remember(*kernel, func);
  return e;
}

ORION_RT_API cudaError_t orion_rt_v1___cudaLaunchKernel(cudaKernel_t kernel, dim3 grid,
                                                        dim3 block, void** args, size_t shmem,
                                                        cudaStream_t stream) {
  Original o = {orion_rt_v1::kStub, orion_rt_v1::func_of(kernel), kernel};
  return orion_rt_v1::dispatch(o, grid, block, args, shmem, stream);
}

ORION_RT_API cudaError_t orion_rt_v1___cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid,
                                                             dim3 block, void** args,
                                                             size_t shmem, cudaStream_t stream) {
  Original o = {orion_rt_v1::kStubPtsz, orion_rt_v1::func_of(kernel), kernel};
  return orion_rt_v1::dispatch(o, grid, block, args, shmem, stream);
}
