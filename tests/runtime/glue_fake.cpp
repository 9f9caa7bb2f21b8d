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
//
// Issue 45's scenarios: the program defines its own `orion_launch`; it asks about occupancy
// (the driver's calculator here counts blocks per SM from registers, threads and shared
// memory) before or after launching; walk has a twin (a `static` kernel of another file with
// the same mangled name, in a module of its own, with slower variants); `cudaDeviceReset`
// destroys the context (its functions, modules and events fail from then on, their names are
// scribbled over) and the next one has new handles; the program sets function attributes and
// the cache configuration, which every variant launch must share with its original (the
// launch counts those that do not); and the train profile is written by a forked child and by
// ranks sharing one path. A second device (sm_80) has contexts of its own (`devices`).
// Graphs (`graphs`): a stream captured into a graph records each launch as a node instead of
// running it (a runtime launch names its host function, the glue's `cuLaunchKernel` names
// the variant it chose); a graph built node by node holds what `cudaGraphAddKernelNode` and
// the two `SetParams` calls give it; a node copies its arguments when it is given them, as
// CUDA does; launching an instantiated graph runs its nodes. Every function computes the
// same: `p[0] += n` where its `float* p` is not null, so a result shows which launches ran
// with which arguments whatever variant ran them.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

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
std::atomic<int> g_other_calls{0};  // calls other than launches and error queries
// Several host threads launch at once (`train_threads`): the simulation's launch state (the
// clock, what ran, the functions' counts) changes under this lock.
std::mutex g_fake_lock;
std::vector<std::string> g_launched;  // which function ran: its tag ("orig", "v1", ...)
bool g_record = true;                 // false (bench): launches are not recorded
const char* g_missing = nullptr;      // a driver entry point this "driver" lacks (old_driver)
void** g_last_args = nullptr;
CUstream g_last_stream = nullptr;  // the stream of the last variant launch
CUstream g_capturing = nullptr;
int g_uncarried = 0;  // variant launches whose function attributes differ from the original's

const int kOptin = 227 * 1024;  // the device's opt-in maximum of shared memory per block
const int kSharedPerSm = 228 * 1024;

// The attributes a user may set besides the dynamic-shared limit, as CUfunction_attribute
// numbers: carveout, cluster must be set, cluster width/height/depth, non-portable cluster
// size, cluster scheduling policy, shared memory mode.
const int kCarried[] = {9, 10, 11, 12, 13, 14, 15, 17};

struct FakeFunc {
  char name[48];
  const char* tag;  // what g_launched records
  double us;
  int shared;
  int registers;
  int local_bytes;
  int max_dynamic;  // -1: the default, 48 KiB less the static size
  int set_calls;    // cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) that changed it
  int attrs[18];    // by CUfunction_attribute, those in kCarried
  int cache;        // cuFuncSetCacheConfig
  bool refuses_policy;  // the driver refuses CLUSTER_SCHEDULING_POLICY_PREFERENCE on it
  int ctx;          // the context it lives in (cudaDeviceReset destroys it)
  int module;       // 0: walk's and plain's module, 1: the twin's (a static kernel of its own)
  int launches;
  int limit() const { return max_dynamic < 0 ? 48 * 1024 - shared : max_dynamic; }
};

// Per context: walk, its v1 and v2, plain (no variants), and walk's twin: a static kernel of
// another file with the same mangled name, in a module of its own, with variants of its own.
enum { kOrig, kV1, kV2, kPlain, kTwin, kT1, kT2, kFuncs };
// Two devices (0: sm_90, 1: sm_80), each with its primary context and the one a reset starts:
// contexts 2d and 2d + 1 are device d's.
const int kDevices = 2;
const int kContexts = 2 * kDevices;
FakeFunc g_funcs[kContexts][kFuncs];
int g_device = 0;              // the current device (cudaSetDevice)
int g_live[kDevices] = {0, 2};  // each device's context (cudaDeviceReset starts the next)
int g_modules[kContexts][2];   // their addresses are the modules

// The current device's context.
int live() { return g_live[g_device]; }
// Whether context `c` still exists.
bool alive(int c) { return g_live[c / 2] == c; }

FakeFunc& g_orig = g_funcs[0][kOrig];
FakeFunc& g_v1 = g_funcs[0][kV1];
FakeFunc& g_v2 = g_funcs[0][kV2];
std::atomic<int> g_attribute_calls{0};  // cuFuncGetAttribute
int g_kernel_handle;

// One kernel node: the function it runs (a host handle of the runtime's, resolved when the
// graph runs, or a driver function) and its arguments, copied.
struct FakeNode {
  const void* host;
  void* driver;
  float* p;
  int n;
};
struct FakeGraph {
  std::vector<FakeNode> nodes;
};
FakeGraph* g_capture_graph = nullptr;  // the graph a stream being captured records into

void init_context(int c) {
  struct {
    const char* name;
    const char* tag;
    double us;
    int shared, registers, local_bytes, module;
  } d[kFuncs] = {
      {"_Z4walkPfi", "orig", 100, 0, 32, 224, 0},
      {"_Z4walkPfi__orion_v1", "v1", 80, 16384, 40, 96, 0},
      {"_Z4walkPfi__orion_v2", "v2", 90, 0, 64, 0, 0},
      {"_Z5plainPf", "plain", 50, 0, 16, 0, 0},
      {"_Z4walkPfi", "torig", 100, 0, 32, 224, 1},
      {"_Z4walkPfi__orion_v1", "t1", 120, 0, 40, 96, 1},
      {"_Z4walkPfi__orion_v2", "t2", 130, 0, 64, 0, 1},
  };
  for (int i = 0; i < kFuncs; ++i) {
    FakeFunc& f = g_funcs[c][i];
    std::memset(&f, 0, sizeof f);
    std::snprintf(f.name, sizeof f.name, "%s", d[i].name);
    f.tag = d[i].tag;
    f.us = d[i].us;
    f.shared = d[i].shared;
    f.registers = d[i].registers;
    f.local_bytes = d[i].local_bytes;
    f.module = d[i].module;
    f.max_dynamic = -1;
    f.ctx = c;
  }
}

FakeFunc& current(int i) { return g_funcs[live()][i]; }

FakeFunc* original_of(const FakeFunc* f) {
  return &g_funcs[f->ctx][f->module == 1 ? kTwin : (f == &g_funcs[f->ctx][kPlain] ? kPlain : kOrig)];
}

struct FakeEvent {
  double t;
  int ctx;
};

void walk_host() {}   // the "host stub": its address is the kernel's handle
void plain_host() {}  // the same for plain
void twin_host() {}   // the same for walk's twin

cudaError_t fail(cudaError_t e) {
  g_last = e;
  return e;
}

// The current context's function of a host handle; null for an unknown one.
FakeFunc* func_of(const void* sym) {
  if (sym == reinterpret_cast<const void*>(&walk_host)) return &current(kOrig);
  if (sym == reinterpret_cast<const void*>(&plain_host)) return &current(kPlain);
  if (sym == reinterpret_cast<const void*>(&twin_host)) return &current(kTwin);
  return nullptr;
}

void ran(FakeFunc* f, void** args) {
  if (g_record) g_launched.push_back(f->tag);
  ++f->launches;
  g_last_args = args;
  g_clock += f->us;
  float* p = args ? *static_cast<float**>(args[0]) : nullptr;
  if (p) p[0] += static_cast<float>(*static_cast<int*>(args[1]));
}

// A launch on the stream being captured: a node of the graph, with its arguments copied.
bool captured(cudaStream_t stream, const void* host, void* driver, void** args) {
  if (!g_capture_graph || stream == nullptr || stream != g_capturing) return false;
  g_capture_graph->nodes.push_back(
      FakeNode{host, driver, *static_cast<float**>(args[0]), *static_cast<int*>(args[1])});
  return true;
}

cudaError_t run_original(const void* func, void** args, size_t shmem,
                         cudaStream_t stream = nullptr) {
  if (!g_gpu) return fail(cudaErrorInsufficientDriver);
  std::lock_guard<std::mutex> hold(g_fake_lock);
  FakeFunc* f = func_of(func);
  if (!f) return fail(cudaErrorInvalidDeviceFunction);
  if (shmem > static_cast<size_t>(f->limit())) return fail(cudaErrorInvalidValue);
  if (captured(stream, func, nullptr, args)) return cudaSuccess;
  ran(f, args);
  return cudaSuccess;
}

// Blocks per SM of `f` at `threads` per block with `dynamic` bytes: the thread, register and
// shared-memory limits of a Hopper SM (64 Ki registers, 2048 threads, 32 blocks).
int blocks_per_sm(const FakeFunc* f, int threads, size_t dynamic) {
  if (threads <= 0) return 0;
  int n = 2048 / threads;
  int by_regs = 65536 / (f->registers * threads);
  if (by_regs < n) n = by_regs;
  size_t smem = static_cast<size_t>(f->shared) + dynamic;
  if (smem > 0 && static_cast<int>(kSharedPerSm / smem) < n) n = static_cast<int>(kSharedPerSm / smem);
  return n < 32 ? n : 32;
}

}  // namespace

// A user's own function named `orion_launch` (issue 45): the glue must neither call it nor
// take its name.
int g_user_orion_launch = 0;
extern "C" int orion_launch(int code) {
  ++g_user_orion_launch;
  return code;
}

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
cudaError_t CUDARTAPI cudaLaunchKernel(const void* f, dim3, dim3, void** args, size_t shmem,
                                       cudaStream_t stream) {
  return run_original(f, args, shmem, stream);
}
cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void* f, dim3, dim3, void** args, size_t shmem,
                                            cudaStream_t) {
  return run_original(f, args, shmem);
}
cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* f,
                                          void** args) {
  return run_original(f, args, c->dynamicSmemBytes);
}
cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* c, const void* f,
                                               void** args) {
  return run_original(f, args, c->dynamicSmemBytes);
}
cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* k, const void*) {
  if (!g_gpu) return fail(cudaErrorInsufficientDriver);
  *k = reinterpret_cast<cudaKernel_t>(&g_kernel_handle);
  return cudaSuccess;
}
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void** args, size_t shmem,
                                         cudaStream_t) {
  return run_original(reinterpret_cast<const void*>(&walk_host), args, shmem);
}
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t, dim3, dim3, void** args, size_t shmem,
                                              cudaStream_t) {
  return run_original(reinterpret_cast<const void*>(&walk_host), args, shmem);
}
cudaError_t CUDARTAPI cudaGetDevice(int* d) {
  ++g_other_calls;
  if (!g_gpu) return fail(cudaErrorInsufficientDriver);
  *d = g_device;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaSetDevice(int d) {
  if (d < 0 || d >= kDevices) return fail(cudaErrorInvalidDevice);
  g_device = d;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  ++g_other_calls;
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->name, d == 0 ? "Fake GPU" : "Fake GPU B");
  p->major = d == 0 ? 9 : 8;
  p->minor = 0;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGetFuncBySymbol(cudaFunction_t* f, const void* sym) {
  ++g_other_calls;
  FakeFunc* ff = func_of(sym);
  if (!ff) return fail(cudaErrorInvalidDeviceFunction);
  *f = reinterpret_cast<cudaFunction_t>(ff);
  return cudaSuccess;
}
// Destroys the context: its functions, modules and events are gone (their names scribbled
// over, as freed memory may be), and the next call starts a fresh one.
cudaError_t CUDARTAPI cudaDeviceReset(void) {
  ++g_other_calls;
  if (live() % 2 == 1) return fail(cudaErrorNotSupported);  // one reset per device here
  for (FakeFunc& f : g_funcs[live()]) std::snprintf(f.name, sizeof f.name, "destroyed");
  init_context(++g_live[g_device]);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  ++g_other_calls;
  *e = reinterpret_cast<cudaEvent_t>(new FakeEvent{0, live()});
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<FakeEvent*>(e);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  ++g_other_calls;
  FakeEvent* ev = reinterpret_cast<FakeEvent*>(e);
  if (ev->ctx != live()) return fail(cudaErrorContextIsDestroyed);
  std::lock_guard<std::mutex> hold(g_fake_lock);
  ev->t = g_clock;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t e) {
  return !alive(reinterpret_cast<FakeEvent*>(e)->ctx) ? fail(cudaErrorContextIsDestroyed)
                                                      : cudaSuccess;
}
cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t e) { return cudaEventQuery(e); }
cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = static_cast<float>((reinterpret_cast<FakeEvent*>(b)->t -
                            reinterpret_cast<FakeEvent*>(a)->t) /
                           1000.0);
  return cudaSuccess;
}
// The queries a persistent kernel sizes its grid with: they answer for the original.
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n,
                                                                             const void* func,
                                                                             int threads,
                                                                             size_t dynamic,
                                                                             unsigned) {
  FakeFunc* f = func_of(func);
  if (!f) return fail(cudaErrorInvalidDeviceFunction);
  *n = blocks_per_sm(f, threads, dynamic);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* func,
                                                                    int threads,
                                                                    size_t dynamic) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, func, threads, dynamic, 0);
}
cudaError_t CUDARTAPI cudaOccupancyAvailableDynamicSMemPerBlock(size_t* bytes, const void* func,
                                                                int, int) {
  if (!func_of(func)) return fail(cudaErrorInvalidDeviceFunction);
  *bytes = 48 * 1024;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaOccupancyMaxPotentialClusterSize(int* n, const void* func,
                                                           const cudaLaunchConfig_t*) {
  if (!func_of(func)) return fail(cudaErrorInvalidDeviceFunction);
  *n = 8;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaOccupancyMaxActiveClusters(int* n, const void* func,
                                                     const cudaLaunchConfig_t*) {
  if (!func_of(func)) return fail(cudaErrorInvalidDeviceFunction);
  *n = 16;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaFuncGetAttributes(cudaFuncAttributes* a, const void* func) {
  FakeFunc* f = func_of(func);
  if (!f) return fail(cudaErrorInvalidDeviceFunction);
  std::memset(a, 0, sizeof *a);
  a->numRegs = f->registers;
  a->sharedSizeBytes = static_cast<size_t>(f->shared);
  a->localSizeBytes = static_cast<size_t>(f->local_bytes);
  a->maxThreadsPerBlock = 1024;
  a->maxDynamicSharedSizeBytes = f->limit();
  return cudaSuccess;
}
}  // extern "C"

// Graphs: capture, nodes added by hand, their parameters set, instantiation and launch. An
// instantiated graph is a copy of its graph's nodes (a later cudaGraphKernelNodeSetParams
// does not reach it); its nodes keep their handles' order.
namespace {
FakeNode node_of(const cudaKernelNodeParams* p) {
  return FakeNode{p->func, nullptr, *static_cast<float**>(p->kernelParams[0]),
                  *static_cast<int*>(p->kernelParams[1])};
}
FakeNode* find_node(FakeGraph* g, cudaGraphNode_t node) {
  size_t i = reinterpret_cast<size_t>(node) - 1;
  return i < g->nodes.size() ? &g->nodes[i] : nullptr;
}
FakeGraph* g_node_graph = nullptr;  // the graph the scenario's hand-made nodes belong to
}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  g_capturing = s;
  g_capture_graph = new FakeGraph;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t, cudaGraph_t* g) {
  *g = reinterpret_cast<cudaGraph_t>(g_capture_graph);
  g_capture_graph = nullptr;
  g_capturing = nullptr;
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t* g, unsigned) {
  *g = reinterpret_cast<cudaGraph_t>(new FakeGraph);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGraphAddKernelNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                             const cudaGraphNode_t*, size_t,
                                             const cudaKernelNodeParams* p) {
  if (!func_of(p->func)) return fail(cudaErrorInvalidDeviceFunction);
  FakeGraph* g = reinterpret_cast<FakeGraph*>(graph);
  g->nodes.push_back(node_of(p));
  g_node_graph = g;
  *node = reinterpret_cast<cudaGraphNode_t>(g->nodes.size());
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGraphKernelNodeSetParams(cudaGraphNode_t node,
                                                   const cudaKernelNodeParams* p) {
  FakeNode* n = find_node(g_node_graph, node);
  if (!n || !func_of(p->func)) return fail(cudaErrorInvalidValue);
  *n = node_of(p);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                           unsigned long long) {
  *exec = reinterpret_cast<cudaGraphExec_t>(new FakeGraph(*reinterpret_cast<FakeGraph*>(graph)));
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                       const cudaKernelNodeParams* p) {
  FakeNode* n = find_node(reinterpret_cast<FakeGraph*>(exec), node);
  if (!n || !func_of(p->func)) return fail(cudaErrorInvalidValue);
  *n = node_of(p);
  return cudaSuccess;
}
// Each node runs: a host handle is the current context's function of it, as the runtime
// resolves it (the original: nothing the glue does reaches a graph's nodes).
cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
  std::lock_guard<std::mutex> hold(g_fake_lock);
  for (FakeNode& n : reinterpret_cast<FakeGraph*>(exec)->nodes) {
    FakeFunc* f = n.host ? func_of(n.host) : static_cast<FakeFunc*>(n.driver);
    if (!f || f->ctx != live()) return fail(cudaErrorInvalidResourceHandle);
    void* args[] = {&n.p, &n.n};
    ran(f, args);
  }
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<FakeGraph*>(exec);
  return cudaSuccess;
}
cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<FakeGraph*>(graph);
  return cudaSuccess;
}
}  // extern "C"

// --- the simulated driver, reached through cudaGetDriverEntryPointByVersion ---------------------

namespace {
CUresult CUDAAPI fake_get_module(CUmodule* m, CUfunction f) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  if (!alive(ff->ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *m = reinterpret_cast<CUmodule>(&g_modules[ff->ctx][ff->module]);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_get_name(const char** n, CUfunction f) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  if (!alive(ff->ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *n = ff->name;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_module_get_function(CUfunction* f, CUmodule m, const char* name) {
  for (int c = 0; c < kContexts; ++c) {
    for (int i = 0; i < kFuncs; ++i) {
      FakeFunc& v = g_funcs[c][i];
      if (reinterpret_cast<CUmodule>(&g_modules[c][v.module]) != m) continue;
      if (!alive(c)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
      if (std::strcmp(name, v.name) == 0) {
        *f = reinterpret_cast<CUfunction>(&v);
        return CUDA_SUCCESS;
      }
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult CUDAAPI fake_get_attribute(int* v, CUfunction_attribute a, CUfunction f) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  ++g_attribute_calls;
  if (!alive(ff->ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *v = 0;
  if (a == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) *v = ff->shared;
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) *v = ff->limit();
  if (a == CU_FUNC_ATTRIBUTE_NUM_REGS) *v = ff->registers;
  if (a == CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) *v = ff->local_bytes;
  for (int c : kCarried)
    if (a == c) *v = ff->attrs[c];
  return CUDA_SUCCESS;
}
// As the driver: the static size plus the dynamic limit must fit the device's opt-in maximum.
CUresult CUDAAPI fake_set_attribute(CUfunction f, CUfunction_attribute a, int value) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  if (!alive(ff->ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || ff->shared + value > kOptin) return CUDA_ERROR_INVALID_VALUE;
    ff->max_dynamic = value;
    ++ff->set_calls;
    return CUDA_SUCCESS;
  }
  if (a == CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE && ff->refuses_policy)
    return CUDA_ERROR_NOT_SUPPORTED;
  for (int c : kCarried) {
    if (a == c) {
      ff->attrs[c] = value;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI fake_set_cache_config(CUfunction f, CUfunc_cache config) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  if (!alive(ff->ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  ff->cache = static_cast<int>(config);
  return CUDA_SUCCESS;
}
// A launch above the function's dynamic-shared limit fails, as on a GPU; one of a destroyed
// context too. A variant that runs with other attributes than its original is counted.
CUresult CUDAAPI fake_launch(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned shmem, CUstream stream, void** args, void**) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  std::lock_guard<std::mutex> hold(g_fake_lock);
  if (ff->ctx != live()) {  // destroyed, or another device's
    if (g_record) g_launched.push_back("stale");
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  }
  if (shmem > static_cast<unsigned>(ff->limit())) return CUDA_ERROR_INVALID_VALUE;
  g_last_stream = stream;
  if (captured(reinterpret_cast<cudaStream_t>(stream), nullptr, ff, args)) return CUDA_SUCCESS;
  const FakeFunc* o = original_of(ff);
  bool same = ff->cache == o->cache;
  for (int c : kCarried) same = same && ff->attrs[c] == o->attrs[c];
  if (!same) ++g_uncarried;
  ran(ff, args);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_is_capturing(CUstream s, CUstreamCaptureStatus* st) {
  *st = (s != nullptr && s == g_capturing) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                           : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fake_occupancy(int* n, CUfunction f, int threads, size_t dynamic) {
  FakeFunc* ff = reinterpret_cast<FakeFunc*>(f);
  if (!alive(ff->ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *n = blocks_per_sm(ff, threads, dynamic);
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
      {"cuFuncSetCacheConfig", reinterpret_cast<void*>(&fake_set_cache_config)},
      {"cuLaunchKernel", reinterpret_cast<void*>(&fake_launch)},
      {"cuStreamIsCapturing", reinterpret_cast<void*>(&fake_is_capturing)},
      {"cuOccupancyMaxActiveBlocksPerMultiprocessor", reinterpret_cast<void*>(&fake_occupancy)},
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

// The user's setters, on the current context's original (cudaFuncAttribute numbers are the
// driver's but for the shared memory mode).
extern "C" cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, cudaFuncAttribute a,
                                                      int value) {
  FakeFunc* f = func_of(func);
  if (!f) return fail(cudaErrorInvalidDeviceFunction);
  int driver = a == cudaFuncAttributeSharedMemoryMode ? 17 : static_cast<int>(a);
  if (fake_set_attribute(reinterpret_cast<CUfunction>(f),
                         static_cast<CUfunction_attribute>(driver), value) != CUDA_SUCCESS)
    return fail(cudaErrorInvalidValue);
  return cudaSuccess;
}
extern "C" cudaError_t CUDARTAPI cudaFuncSetCacheConfig(const void* func, cudaFuncCache c) {
  FakeFunc* f = func_of(func);
  if (!f) return fail(cudaErrorInvalidDeviceFunction);
  f->cache = static_cast<int>(c);
  return cudaSuccess;
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

cudaError_t launch(unsigned grid, size_t shmem = 0, cudaStream_t s = nullptr,
                   void (*host)() = &walk_host) {
  return orion_rt_v1_cudaLaunchKernel(reinterpret_cast<const void*>(host), dim3(grid),
                                      dim3(128), g_args, shmem, s);
}

const void* const kWalk = reinterpret_cast<const void*>(&walk_host);

bool ran_any(const char* tag) {
  for (const std::string& s : g_launched)
    if (s == tag) return true;
  return false;
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
  check(g_user_orion_launch == 0, "user_orion_launch_untouched");

  // The <<<>>> stub path: the handle maps back to the host function, so the same key.
  cudaKernel_t h = nullptr;
  check(orion_rt_v1___cudaGetKernel(&h, reinterpret_cast<const void*>(&walk_host)) ==
            cudaSuccess,
        "stub_get_kernel");
  for (int i = 0; i < 3; ++i)
    orion_rt_v1___cudaLaunchKernel(h, dim3(8), dim3(128), g_args, 0, nullptr);
  check(all(tail(3), "v1"), "stub_uses_locked_variant");
  // --default-stream per-thread: the default stream of a variant launch is the thread's.
  orion_rt_v1_cudaLaunchKernel_ptsz(kWalk, dim3(8), dim3(128), g_args, 0, nullptr);
  bool plain = all(tail(1), "v1") && g_last_stream == CU_STREAM_PER_THREAD;
  orion_rt_v1___cudaLaunchKernel_ptsz(h, dim3(8), dim3(128), g_args, 0, nullptr);
  check(plain && all(tail(1), "v1") && g_last_stream == CU_STREAM_PER_THREAD,
        "ptsz_null_stream_is_per_thread");

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
  std::snprintf(g_v2.name, sizeof g_v2.name, "_Z4walkPfi__orion_v3");
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

// Train (which runs every variant it may) after the program asked about walk's occupancy
// (`api`: 0 the plain query, 1 with flags, 2 cudaFuncGetAttributes) before launching it, as a
// persistent kernel sizes its grid. v1 has fewer registers than the original (at least as
// many blocks per SM at 128 threads), v2 more (fewer blocks): v2 must never run, v1 may.
void occupancy(int api) {
  g_v1.registers = 24;
  g_v1.shared = 0;
  int blocks = 0;
  cudaError_t e = cudaErrorUnknown;
  cudaFuncAttributes attributes;
  if (api == 0) e = orion_rt_v1_cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kWalk, 128, 0);
  if (api == 1)
    e = orion_rt_v1_cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, kWalk, 128, 0,
                                                                          0);
  if (api == 2) {
    e = orion_rt_v1_cudaFuncGetAttributes(&attributes, kWalk);
    blocks = e == cudaSuccess && attributes.numRegs == 32 ? 16 : 0;
  }
  check(e == cudaSuccess && blocks == 16, "occupancy_answers_for_the_original");
  for (int i = 0; i < 60; ++i) launch(8);
  check(!ran_any("v2"), "occupancy_never_fewer_blocks");
  check(ran_any("v1"), "occupancy_keeps_a_variant_with_as_many_blocks");
  // Cooperative launches: the original, always.
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(8);
  config.blockDim = dim3(128);
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  orion_rt_v1_cudaLaunchKernelExC(&config, kWalk, g_args);
  check(all(tail(1), "orig"), "cooperative_original");
}

// The question comes after adapt locked v1 (40 registers, 16 KiB static: fewer blocks per SM
// than the original): from then on the original runs.
void occupancy_late() {
  for (int i = 0; i < 60; ++i) launch(8);
  bool locked = all(tail(20), "v1");
  int blocks = 0;
  orion_rt_v1_cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kWalk, 128, 0);
  for (int i = 0; i < 10; ++i) launch(8);
  check(locked && all(tail(10), "orig"), "occupancy_late_original");
}

// Walk and its twin (a static kernel of another file with the same mangled name, in its own
// module): the twin's variants are slower, walk's v1 faster. Each is measured on its own.
void twins() {
  for (int i = 0; i < 60; ++i) launch(8);
  bool walk_locked = all(tail(20), "v1");
  size_t first = g_launched.size();
  for (int i = 0; i < 60; ++i) launch(8, 0, nullptr, &twin_host);
  check(walk_locked && g_launched[first] == "torig" && g_launched[first + 1] == "torig",
        "twin_measured_apart");
  check(ran_any("t1") && all(tail(20), "torig"), "twin_keeps_its_original");
  for (int i = 0; i < 5; ++i) launch(8);
  check(all(tail(5), "v1"), "walk_keeps_its_variant");
}

void train_twins() {
  for (int i = 0; i < 60; ++i) launch(8);
  for (int i = 0; i < 60; ++i) launch(8, 0, nullptr, &twin_host);
  check(ran_any("t1") && ran_any("t2") && ran_any("v1"), "twins_trained");
}

// cudaDeviceReset destroys the context: walk's functions, its module and the timing events.
// Later launches resolve the variants again, in the new context.
void reset() {
  for (int i = 0; i < 60; ++i) launch(8);
  bool locked = all(tail(20), "v1");
  check(orion_rt_v1_cudaDeviceReset() == cudaSuccess && locked, "reset_after_lock");
  for (int i = 0; i < 20; ++i) launch(8);
  check(!ran_any("stale"), "reset_no_stale_handle");
  check(all(tail(10), "v1") && g_funcs[1][kV1].launches >= 10,
        "reset_variants_from_new_context");
  for (int i = 0; i < 40; ++i) launch(16);
  check(ran_any("v2") && !ran_any("stale"), "reset_new_key_explores");
}

// Train across a reset: the profile at exit names the kernel (not the destroyed name).
void train_reset() {
  for (int i = 0; i < 60; ++i) launch(8);
  orion_rt_v1_cudaDeviceReset();
  for (int i = 0; i < 60; ++i) launch(16);
  check(!ran_any("stale") && g_funcs[1][kV2].launches > 0, "train_reset_new_context");
}

// Attributes the user sets on the original: carried to every variant that runs, before and
// after the kernel was resolved.
void attributes() {
  check(orion_rt_v1_cudaFuncSetAttribute(kWalk, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         50) == cudaSuccess &&
            orion_rt_v1_cudaFuncSetCacheConfig(kWalk, cudaFuncCachePreferShared) == cudaSuccess,
        "set_before_first_launch");
  for (int i = 0; i < 60; ++i) launch(8);
  check(g_uncarried == 0 && all(tail(20), "v1"), "carveout_and_cache_carried");
  // A distributed-shared-memory kernel given its cluster shape at run time.
  orion_rt_v1_cudaFuncSetAttribute(kWalk, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  orion_rt_v1_cudaFuncSetAttribute(kWalk, cudaFuncAttributeRequiredClusterWidth, 2);
  orion_rt_v1_cudaFuncSetCacheConfig(kWalk, cudaFuncCachePreferL1);
  for (int i = 0; i < 10; ++i) launch(8);
  check(g_uncarried == 0 && all(tail(10), "v1"), "cluster_width_carried");
  // An attribute the driver will not set on the variants: the original alone.
  g_v1.refuses_policy = true;
  g_v2.refuses_policy = true;
  orion_rt_v1_cudaFuncSetAttribute(kWalk, cudaFuncAttributeClusterSchedulingPolicyPreference, 1);
  for (int i = 0; i < 10; ++i) launch(8);
  check(g_uncarried == 0 && all(tail(10), "orig"), "uncarried_runs_original");
}

// Graphs (adapt, walk locked to v1 at grid 8). Captured: each launch on the capturing stream
// becomes a node as the glue made it (a locked key's variant, a new key's original), replayed
// as captured. Built node by node: cudaGraphAddKernelNode and both SetParams calls go to the
// runtime, not the glue, so the node runs the original (the static winner) with the
// arguments last given to it, even at a key the selector would launch v1 at; the glue makes
// no call meanwhile, and launches through it still get v1.
void graphs() {
  for (int i = 0; i < 60; ++i) launch(8);
  bool locked = all(tail(20), "v1");
  float out[1] = {0};
  float* p = out;
  int n = 1000;
  void* args[] = {&p, &n};
  int dummy_stream;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(&dummy_stream);
  cudaGraph_t captured_graph = nullptr;
  size_t before = g_launched.size();
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  orion_rt_v1_cudaLaunchKernel(kWalk, dim3(8), dim3(128), args, 0, s);
  orion_rt_v1_cudaLaunchKernel(kWalk, dim3(16), dim3(128), args, 0, s);
  cudaStreamEndCapture(s, &captured_graph);
  bool nothing_ran = g_launched.size() == before && out[0] == 0;
  n = 1;  // a node holds the arguments as they were at capture
  cudaGraphExec_t exec = nullptr;
  cudaGraphInstantiate(&exec, captured_graph, 0);
  for (int i = 0; i < 2; ++i) cudaGraphLaunch(exec, s);
  std::vector<std::string> replay = {"v1", "orig", "v1", "orig"};
  check(locked && nothing_ran && tail(4) == replay && out[0] == 4000 && g_uncarried == 0,
        "graph_captured_replays_the_choice");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(captured_graph);

  // By hand.
  out[0] = 0;
  n = 3;
  int calls = g_other_calls.load();
  cudaGraph_t graph = nullptr;
  cudaGraphCreate(&graph, 0);
  cudaKernelNodeParams params = {};
  params.func = const_cast<void*>(kWalk);
  params.gridDim = dim3(8);
  params.blockDim = dim3(128);
  params.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  bool added = cudaGraphAddKernelNode(&node, graph, nullptr, 0, &params) == cudaSuccess;
  cudaGraphInstantiate(&exec, graph, 0);
  for (int i = 0; i < 2; ++i) cudaGraphLaunch(exec, s);
  check(added && all(tail(2), "orig") && out[0] == 6, "graph_node_runs_the_original");
  n = 5;
  bool set = cudaGraphExecKernelNodeSetParams(exec, node, &params) == cudaSuccess;
  cudaGraphLaunch(exec, s);
  check(set && all(tail(1), "orig") && out[0] == 11, "graph_exec_set_params_original");
  // The graph's node changes; the instantiated copy does not, until instantiated again.
  n = 7;
  set = cudaGraphKernelNodeSetParams(node, &params) == cudaSuccess;
  cudaGraphLaunch(exec, s);
  bool kept = out[0] == 16;
  cudaGraphExecDestroy(exec);
  cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphLaunch(exec, s);
  check(set && kept && all(tail(2), "orig") && out[0] == 23, "graph_node_set_params_original");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  bool untouched = g_other_calls.load() == calls;
  launch(8);
  check(untouched && all(tail(1), "v1") && g_uncarried == 0, "graph_leaves_the_selector_alone");
}

// Train, then fork: the child's exit must not write the profile (its parent's measurements).
void train_fork(const char* path) {
  for (int i = 0; i < 60; ++i) launch(8);
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    for (int i = 0; i < 5; ++i) launch(32);
    std::exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  check(child > 0 && WIFEXITED(status) && access(path, F_OK) != 0, "fork_child_writes_nothing");
}

// One rank of a job sharing the profile path: train at `grid`; with `wait`, hold until stdin
// closes (so another rank writes in between).
void train_rank(unsigned grid, bool wait) {
  for (int i = 0; i < 60; ++i) launch(grid);
  check(all(tail(5), "orig"), "rank_trained");
  std::fflush(stdout);
  if (wait)
    while (std::getchar() != EOF) {
    }
}

// Two devices of different architectures: each resolves its own functions (from its own
// context) and is keyed apart; an attribute set on one device's original reaches that
// device's variants only; a reset of one leaves the other's handles and choice alone.
void devices() {
  for (int i = 0; i < 60; ++i) launch(8);
  bool locked0 = all(tail(20), "v1");
  cudaSetDevice(1);
  g_funcs[2][kV1].us = 120;  // on the sm_80 device v1 is slower: it keeps the original
  size_t first = g_launched.size();
  for (int i = 0; i < 60; ++i) launch(8);
  check(locked0 && g_launched[first] == "orig" && g_launched[first + 1] == "orig" &&
            g_funcs[2][kV1].launches > 0 && !ran_any("stale"),
        "devices_keyed_apart");
  check(all(tail(20), "orig"), "device_1_keeps_its_original");
  orion_rt_v1_cudaFuncSetAttribute(kWalk, cudaFuncAttributePreferredSharedMemoryCarveout, 25);
  cudaSetDevice(0);
  for (int i = 0; i < 10; ++i) launch(8);
  check(g_funcs[2][kV1].attrs[9] == 25 && g_funcs[2][kV2].attrs[9] == 25 &&
            g_funcs[0][kV1].attrs[9] == 0 && g_uncarried == 0 && all(tail(10), "v1"),
        "attribute_reaches_its_device_only");
  cudaSetDevice(1);
  orion_rt_v1_cudaDeviceReset();
  cudaSetDevice(0);
  int before = g_funcs[0][kV1].launches;
  for (int i = 0; i < 10; ++i) launch(8);
  check(all(tail(10), "v1") && g_funcs[0][kV1].launches == before + 10,
        "reset_leaves_other_device_alone");
  cudaSetDevice(1);
  for (int i = 0; i < 40; ++i) launch(16);
  check(!ran_any("stale") && g_funcs[3][kV1].launches > 0, "reset_device_resolves_anew");
}

void train_devices() {
  for (int i = 0; i < 60; ++i) launch(8);
  // The sm_80 device runs its own build: other registers, and no v2 (dropped there), so its
  // entries must name its own variants, not device 0's.
  g_funcs[2][kOrig].registers = 30;
  g_funcs[2][kV1].registers = 48;
  g_funcs[2][kV2].name[0] = '\0';
  cudaSetDevice(1);
  for (int i = 0; i < 60; ++i) launch(8);
  check(g_funcs[0][kV2].launches > 0 && g_funcs[2][kV1].launches > 0 &&
            g_funcs[2][kV2].launches == 0,
        "devices_trained");
}

// Four host threads train walk at once, from its first launch on (they race to configure the
// selector and resolve the kernel), after the program asked about its occupancy: every launch
// succeeds, and the variant with fewer blocks per SM never runs on any thread.
void train_threads() {
  g_v1.registers = 24;
  g_v1.shared = 0;
  int blocks = 0;
  orion_rt_v1_cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kWalk, 128, 0);
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failed] {
      for (int i = 0; i < 100; ++i) {
        if (launch(8 + t % 2) != cudaSuccess) ++failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  check(failed == 0 && g_launched.size() == 400 && !ran_any("stale"), "threads_all_launched");
  check(ran_any("v1") && !ran_any("v2"), "threads_never_fewer_blocks");
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
  for (int c = 0; c < kContexts; ++c) init_context(c);
  const char* scenario = argc > 1 ? argv[1] : "";
  if (std::strcmp(scenario, "no_gpu") == 0) no_gpu();
  else if (std::strcmp(scenario, "adapt") == 0) adapt();
  else if (std::strcmp(scenario, "train") == 0) train();
  else if (std::strcmp(scenario, "train_gap") == 0) train_gap();
  else if (std::strcmp(scenario, "old_driver") == 0) old_driver();
  else if (std::strcmp(scenario, "shared_raise") == 0) shared_raise();
  else if (std::strcmp(scenario, "train_occupancy") == 0) occupancy(0);
  else if (std::strcmp(scenario, "train_occupancy_flags") == 0) occupancy(1);
  else if (std::strcmp(scenario, "train_func_attributes") == 0) occupancy(2);
  else if (std::strcmp(scenario, "occupancy_late") == 0) occupancy_late();
  else if (std::strcmp(scenario, "twins") == 0) twins();
  else if (std::strcmp(scenario, "train_twins") == 0) train_twins();
  else if (std::strcmp(scenario, "reset") == 0) reset();
  else if (std::strcmp(scenario, "train_reset") == 0) train_reset();
  else if (std::strcmp(scenario, "attributes") == 0) attributes();
  else if (std::strcmp(scenario, "devices") == 0) devices();
  else if (std::strcmp(scenario, "graphs") == 0) graphs();
  else if (std::strcmp(scenario, "train_threads") == 0) train_threads();
  else if (std::strcmp(scenario, "train_devices") == 0) train_devices();
  else if (std::strcmp(scenario, "train_fork") == 0) train_fork(std::getenv("NVCC_ORION_PROFILE_OUT"));
  else if (std::strcmp(scenario, "train_rank") == 0)
    train_rank(argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1, argc > 3);
  else if (std::strcmp(scenario, "bench") == 0) bench(argc > 2 ? std::atol(argv[2]) : 1000000);
  else check(false, "scenario");
  return g_failed ? 1 : 0;
}
