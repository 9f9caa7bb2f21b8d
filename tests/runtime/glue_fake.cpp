// The glue's GPU-side paths without a GPU (tests/runtime_glue.rs): the glue object linked
// against a simulated CUDA runtime and driver, written here. The simulation has one device,
// a kernel `_Z4walkPfi` with two variants, a simulated clock that each launch advances by its
// function's duration (original 100 µs, v1 80 µs, v2 90 µs), and events that read that clock.
// argv[1] picks the scenario; each prints `ok <case>` per check passed. Scenario `train_gap`
// renames v2 to `_Z4walkPfi__orion_v3` and makes it the fastest (70 µs): the build dropped
// its variant 2 and kept the others' numbers. Scenario `bench N` (scripts/bench-selector.sh)
// prints the glue's own cost per launch once adapt has locked, and for a kernel without
// variants, with every simulated CUDA call next to free. Scenario `shared_raise`: the user
// raises the original's dynamic-shared limit after it was resolved; the glue raises the
// variants' to match where they fit. Each function has a register count and local bytes, which
// the train profile records.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "orion_runtime.h"

extern "C" cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t*, const void*);
extern "C" cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t,
                                                    cudaStream_t);
extern "C" cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t, dim3, dim3, void**, size_t,
                                                         cudaStream_t);
extern "C" cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void*, dim3, dim3, void**, size_t,
                                                       cudaStream_t);
extern "C" cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t*, const void*,
                                                          void**);

namespace {

bool g_gpu = true;                 // false: every call fails like a machine without a driver
cudaError_t g_last = cudaSuccess;  // the runtime's last error
double g_clock = 0;                // µs
int g_other_calls = 0;             // calls other than launches and error queries
std::vector<std::string> g_launched;  // which function ran: "orig", "v1", "v2"
bool g_record = true;                 // false (bench): launches are not recorded
const char* g_missing = nullptr;      // a driver entry point this "driver" lacks (old_driver)
void** g_last_args = nullptr;
CUstream g_capturing = nullptr;

const int kOptin = 227 * 1024;  // the device's opt-in maximum of shared memory per block

struct FakeFunc {
  const char* name;
  double us;
  int shared;
  int registers;
  int local_bytes;
  int max_dynamic;  // -1: the default, 48 KiB less the static size
  int set_calls;    // cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) that changed it
  int limit() const { return max_dynamic < 0 ? 48 * 1024 - shared : max_dynamic; }
};
FakeFunc g_orig = {"_Z4walkPfi", 100, 0, 32, 224, -1, 0};
FakeFunc g_v1 = {"_Z4walkPfi__orion_v1", 80, 16384, 40, 96, -1, 0};
FakeFunc g_v2 = {"_Z4walkPfi__orion_v2", 90, 0, 64, 0, -1, 0};
FakeFunc g_plain = {"_Z5plainPf", 50, 0, 16, 0, -1, 0};  // a kernel without variants
int g_attribute_calls = 0;  // cuFuncGetAttribute
int g_module;  // its address is the module
int g_kernel_handle;

struct FakeEvent {
  double t;
};

void walk_host() {}   // the "host stub": its address is the kernel's handle
void plain_host() {}  // the same for g_plain

cudaError_t fail(cudaError_t e) {
  g_last = e;
  return e;
}

cudaError_t run_original(void** args, size_t shmem) {
  if (!g_gpu) return fail(cudaErrorInsufficientDriver);
  if (shmem > static_cast<size_t>(g_orig.limit())) return fail(cudaErrorInvalidValue);
  if (g_record) g_launched.push_back("orig");
  g_last_args = args;
  g_clock += g_orig.us;
  return cudaSuccess;
}

}  // namespace

// --- the simulated runtime ---------------------------------------------------------------------

extern "C" {
cudaError_t CUDARTAPI cudaGetLastError(void) {
  cudaError_t e = g_last;
  g_last = cudaSuccess;
  return e;
}
cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return g_last; }
const char* CUDARTAPI cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "simulated error";
}
cudaError_t CUDARTAPI cudaLaunchKernel(const void*, dim3, dim3, void** args, size_t shmem,
                                       cudaStream_t) {
  return run_original(args, shmem);
}
cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void*, dim3, dim3, void** args, size_t shmem,
                                            cudaStream_t) {
  return run_original(args, shmem);
}
cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void*, void** args) {
  return run_original(args, c->dynamicSmemBytes);
}
cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* c, const void*,
                                               void** args) {
  return run_original(args, c->dynamicSmemBytes);
}
cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* k, const void*) {
  if (!g_gpu) return fail(cudaErrorInsufficientDriver);
  *k = reinterpret_cast<cudaKernel_t>(&g_kernel_handle);
  return cudaSuccess;
}
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void** args, size_t shmem,
                                         cudaStream_t) {
  return run_original(args, shmem);
}
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t, dim3, dim3, void** args, size_t shmem,
                                              cudaStream_t) {
  return run_original(args, shmem);
}
cudaError_t CUDARTAPI cudaGetDevice(int* d) {
  ++g_other_calls;
  if (!g_gpu) return fail(cudaErrorInsufficientDriver);
  *d = 0;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  ++g_other_calls;
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->name, "Fake GPU");
  p->major = 9;
  p->minor = 0;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetFuncBySymbol(cudaFunction_t* f, const void* sym) {
  ++g_other_calls;
  if (sym == reinterpret_cast<const void*>(&plain_host)) {
    *f = reinterpret_cast<cudaFunction_t>(&g_plain);
    return cudaSuccess;
  }
  if (sym != reinterpret_cast<const void*>(&walk_host)) return fail(cudaErrorInvalidDeviceFunction);
  *f = reinterpret_cast<cudaFunction_t>(&g_orig);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  ++g_other_calls;
  *e = reinterpret_cast<cudaEvent_t>(new FakeEvent());
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<FakeEvent*>(e);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  ++g_other_calls;
  reinterpret_cast<FakeEvent*>(e)->t = g_clock;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = static_cast<float>((reinterpret_cast<FakeEvent*>(b)->t -
                            reinterpret_cast<FakeEvent*>(a)->t) /
                           1000.0);
  return cudaSuccess;
}
}  // extern "C"

// --- the simulated driver, reached through cudaGetDriverEntryPointByVersion ---------------------

namespace {
CUresult CUDAAPI fake_get_module(CUmodule* m, CUfunction) {
  *m = reinterpret_cast<CUmodule>(&g_module);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_get_name(const char** n, CUfunction f) {
  *n = reinterpret_cast<FakeFunc*>(f)->name;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_module_get_function(CUfunction* f, CUmodule, const char* name) {
  for (FakeFunc* v : {&g_v1, &g_v2}) {
    if (std::strcmp(name, v->name) == 0) {
      *f = reinterpret_cast<CUfunction>(v);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult CUDAAPI fake_get_attribute(int* v, CUfunction_attribute a, CUfunction f) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  ++g_attribute_calls;
  *v = 0;
  if (a == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) *v = ff->shared;
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) *v = ff->limit();
  if (a == CU_FUNC_ATTRIBUTE_NUM_REGS) *v = ff->registers;
  if (a == CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) *v = ff->local_bytes;
  return CUDA_SUCCESS;
}
// As the driver: the static size plus the dynamic limit must fit the device's opt-in maximum.
CUresult CUDAAPI fake_set_attribute(CUfunction f, CUfunction_attribute a, int value) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (value < 0 || ff->shared + value > kOptin) return CUDA_ERROR_INVALID_VALUE;
  ff->max_dynamic = value;
  ++ff->set_calls;
  return CUDA_SUCCESS;
}
// A launch above the function's dynamic-shared limit fails, as on a GPU.
CUresult CUDAAPI fake_launch(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned shmem, CUstream, void** args, void**) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  if (shmem > static_cast<unsigned>(ff->limit())) return CUDA_ERROR_INVALID_VALUE;
  if (g_record) g_launched.push_back(ff == &g_v1 ? "v1" : ff == &g_v2 ? "v2" : "?");
  g_last_args = args;
  g_clock += ff->us;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_is_capturing(CUstream s, CUstreamCaptureStatus* st) {
  *st = (s != nullptr && s == g_capturing) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                           : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
}  // namespace

extern "C" cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(
    const char* symbol, void** p, unsigned, unsigned long long,
    cudaDriverEntryPointQueryResult* status) {
  ++g_other_calls;
  if (g_missing && std::strcmp(symbol, g_missing) == 0) {
    *status = cudaDriverEntryPointVersionNotSufficent;
    return fail(cudaErrorSymbolNotFound);
  }
  struct {
    const char* name;
    void* fn;
  } table[] = {
      {"cuFuncGetModule", reinterpret_cast<void*>(&fake_get_module)},
      {"cuFuncGetName", reinterpret_cast<void*>(&fake_get_name)},
      {"cuModuleGetFunction", reinterpret_cast<void*>(&fake_module_get_function)},
      {"cuFuncGetAttribute", reinterpret_cast<void*>(&fake_get_attribute)},
      {"cuFuncSetAttribute", reinterpret_cast<void*>(&fake_set_attribute)},
      {"cuLaunchKernel", reinterpret_cast<void*>(&fake_launch)},
      {"cuStreamIsCapturing", reinterpret_cast<void*>(&fake_is_capturing)},
  };
  for (auto& t : table) {
    if (std::strcmp(symbol, t.name) == 0) {
      *p = t.fn;
      *status = cudaDriverEntryPointSuccess;
      return cudaSuccess;
    }
  }
  *status = cudaDriverEntryPointSymbolNotFound;
  return fail(cudaErrorSymbolNotFound);
}

// --- the scenarios ---------------------------------------------------------------------------

namespace {

int g_failed = 0;

void check(bool ok, const char* what) {
  if (ok) {
    std::printf("ok %s\n", what);
  } else {
    std::printf("FAILED %s\n", what);
    ++g_failed;
  }
}

float* g_p = nullptr;
int g_n = 1000;
void* g_args[] = {&g_p, &g_n};

cudaError_t launch(unsigned grid, size_t shmem = 0, cudaStream_t s = nullptr) {
  return orion_rt_v1_cudaLaunchKernel(reinterpret_cast<const void*>(&walk_host), dim3(grid),
                                      dim3(128), g_args, shmem, s);
}

std::vector<std::string> tail(size_t n) {
  return std::vector<std::string>(g_launched.end() - static_cast<long>(n), g_launched.end());
}

bool all(const std::vector<std::string>& v, const char* f) {
  for (const std::string& s : v)
    if (s != f) return false;
  return !v.empty();
}

void no_gpu() {
  g_gpu = false;
  for (int i = 0; i < 5; ++i) {
    cudaError_t e = launch(8);
    if (e != cudaErrorInsufficientDriver) check(false, "no_gpu_error");
  }
  cudaKernel_t h = nullptr;
  cudaError_t e = orion_rt_v1___cudaGetKernel(&h, reinterpret_cast<const void*>(&walk_host));
  check(e == cudaErrorInsufficientDriver && h == nullptr, "no_gpu_get_kernel");
  e = orion_rt_v1___cudaLaunchKernel(h, dim3(8), dim3(128), g_args, 0, nullptr);
  check(e == cudaErrorInsufficientDriver, "no_gpu_stub");
  check(g_other_calls == 0, "no_gpu_no_other_calls");
  check(cudaGetLastError() == cudaErrorInsufficientDriver, "no_gpu_last_error");
}

void adapt() {
  for (int i = 0; i < 60; ++i) launch(8);
  check(g_launched[0] == "orig" && g_launched[1] == "orig", "adapt_original_first");
  check(all(tail(20), "v1"), "adapt_locks_fastest_before_slowdown");
  check(g_last_args == g_args, "adapt_same_arguments");
  bool tried_v2 = false;
  for (const std::string& s : g_launched) tried_v2 |= s == "v2";
  check(tried_v2, "adapt_tried_next_step");

  // The <<<>>> stub path: the handle maps back to the host function, so the same key.
  cudaKernel_t h = nullptr;
  check(orion_rt_v1___cudaGetKernel(&h, reinterpret_cast<const void*>(&walk_host)) ==
            cudaSuccess,
        "stub_get_kernel");
  for (int i = 0; i < 3; ++i)
    orion_rt_v1___cudaLaunchKernel(h, dim3(8), dim3(128), g_args, 0, nullptr);
  check(all(tail(3), "v1"), "stub_uses_locked_variant");

  // Launch attributes: the original, always.
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(8);
  config.blockDim = dim3(128);
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  orion_rt_v1_cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(&walk_host), g_args);
  check(all(tail(1), "orig"), "attributes_get_original");
  config.numAttrs = 0;
  orion_rt_v1_cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(&walk_host), g_args);
  check(all(tail(1), "v1"), "ex_without_attributes_selected");

  // Capture: a locked key keeps its variant; a new key gets the original, untracked.
  int dummy_stream;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(&dummy_stream);
  g_capturing = s;
  launch(8, 0, s);
  check(all(tail(1), "v1"), "capture_locked_variant");
  for (int i = 0; i < 20; ++i) launch(16, 0, s);
  check(all(tail(20), "orig"), "capture_new_key_original");
  g_capturing = nullptr;

  // v1 has 16 KiB of static shared memory: with 40 KiB dynamic it does not fit in 48 KiB,
  // so no variant fits (they are a prefix) and the original runs, untracked.
  for (int i = 0; i < 20; ++i) launch(32, 40 * 1024);
  check(all(tail(20), "orig"), "shared_memory_does_not_fit");

  // A pending error of the user's: the original, and the error stays pending.
  g_last = cudaErrorInvalidValue;
  launch(8);
  check(all(tail(1), "orig") && cudaPeekAtLastError() == cudaErrorInvalidValue,
        "pending_error_kept");
  g_last = cudaSuccess;
}

void train() {
  for (int i = 0; i < 60; ++i) launch(8);
  std::vector<std::string> v = g_launched;
  check(v[0] == "orig" && v[1] == "orig" && v[2] == "orig" && v[3] == "v1" && v[4] == "v2" &&
            v[5] == "orig",
        "train_round_robin");
  check(all(tail(5), "orig"), "train_locks_original");
}

// A driver older than 12.3 (no cuFuncGetName): the selector turns itself off, every launch
// is the original, and the failed lookup leaves no runtime error behind.
void old_driver() {
  g_missing = "cuFuncGetName";
  for (int i = 0; i < 30; ++i) launch(8);
  check(all(tail(30), "orig"), "old_driver_original_only");
  check(cudaPeekAtLastError() == cudaSuccess, "old_driver_no_error_left");
}

// v1 and v3 present, v2 missing: both are found, in order, and keep their names.
void train_gap() {
  g_v2.name = "_Z4walkPfi__orion_v3";
  g_v2.us = 70;
  for (int i = 0; i < 60; ++i) launch(8);
  std::vector<std::string> v = g_launched;
  check(v[3] == "v1" && v[4] == "v2" && v[5] == "orig", "gap_round_robin_finds_v3");
}

// The user raises the original's dynamic-shared limit to 64 KiB after it was resolved (as
// cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) does). Here v1 has no
// static shared memory and v2 has 8 KiB: with 60 KiB dynamic, v1 fits the original's budget
// (64 KiB) and gets its limit raised once; v2 would need 68 KiB and stays excluded.
void shared_raise() {
  g_v1.shared = 0;
  g_v2.shared = 8 * 1024;
  launch(8);  // turns the selector on
  launch(8);  // resolves the kernel: the original's limit is the default 48 KiB
  g_orig.max_dynamic = 64 * 1024;
  for (int i = 0; i < 30; ++i) launch(4, 60 * 1024);
  check(g_v1.max_dynamic == 64 * 1024 && g_v1.set_calls == 1, "raise_variant_limit_once");
  check(all(tail(10), "v1"), "raise_selects_fitting_variant");
  bool v2 = false;
  for (const std::string& s : g_launched) v2 |= s == "v2";
  check(!v2 && g_v2.set_calls == 0 && g_v2.max_dynamic < 0, "raise_overflow_excluded");
  // Within the limits now known (this key locked, and another below 48 KiB): no driver
  // query on the way.
  int before = g_attribute_calls;
  for (int i = 0; i < 10; ++i) launch(4, 60 * 1024);
  bool locked = all(tail(10), "v1");
  for (int i = 0; i < 10; ++i) launch(16, 1024);
  check(locked && g_attribute_calls == before, "raise_no_driver_query_after");
}

// Nanoseconds per call of `f` over n calls.
template <class F>
double ns_per(long n, F f) {
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}

// The glue's dispatch cost (adapt, locked; and a kernel without variants) against the same
// launch straight to the simulated runtime, whose calls cost next to nothing: what the glue
// adds to a launch, less the real runtime and driver calls it makes (cudaPeekAtLastError,
// cudaGetDevice, cuStreamIsCapturing), which only a GPU machine can time.
void bench(long n) {
  for (int i = 0; i < 60; ++i) launch(8);
  bool locked = all(tail(20), "v1");
  for (int i = 0; i < 3; ++i)
    orion_rt_v1_cudaLaunchKernel(reinterpret_cast<const void*>(&plain_host), dim3(8), dim3(128),
                                 g_args, 0, nullptr);
  g_record = false;
  const void* plain = reinterpret_cast<const void*>(&plain_host);
  double direct = ns_per(n, [] {
    cudaLaunchKernel(reinterpret_cast<const void*>(&walk_host), dim3(8), dim3(128), g_args, 0,
                     nullptr);
  });
  double glue = ns_per(n, [] { launch(8); });
  double untuned = ns_per(n, [plain] {
    orion_rt_v1_cudaLaunchKernel(plain, dim3(8), dim3(128), g_args, 0, nullptr);
  });
  std::printf("locked %s\ndirect_ns %.1f\nglue_locked_ns %.1f\nglue_untuned_ns %.1f\n",
              locked ? "v1" : "no", direct, glue, untuned);
}

}  // namespace

int main(int argc, char** argv) {
  const char* scenario = argc > 1 ? argv[1] : "";
  if (std::strcmp(scenario, "no_gpu") == 0) no_gpu();
  else if (std::strcmp(scenario, "adapt") == 0) adapt();
  else if (std::strcmp(scenario, "train") == 0) train();
  else if (std::strcmp(scenario, "train_gap") == 0) train_gap();
  else if (std::strcmp(scenario, "old_driver") == 0) old_driver();
  else if (std::strcmp(scenario, "shared_raise") == 0) shared_raise();
  else if (std::strcmp(scenario, "bench") == 0) bench(argc > 2 ? std::atol(argv[2]) : 1000000);
  else check(false, "scenario");
  return g_failed ? 1 : 0;
}
