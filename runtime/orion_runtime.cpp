// nvcc-orion launch-time selector: the CUDA glue around `orion_select.h` (issue 21).
//
// What it owns: the renamed runtime entry points (src/driver/glue.rs), finding a kernel's
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
// * What the program is told about the original must hold for what runs (issue 45): the
//   attributes it sets on the original are carried to the variants, a kernel whose occupancy
//   it asked about runs only variants with as many blocks per SM, and a device reset drops
//   every handle of the destroyed context.
//
// Every symbol this object defines outside an anonymous namespace starts with `orion_rt_v1_`
// (a user's `orion_launch` or `orion_select_v1::...` is theirs): the entry points are weak and
// hidden, every object built under adapt/train carries a copy, the linker keeps one per
// executable or shared library, and all state lives in that copy. The selector's template code
// is included into the anonymous namespace below, so it is local to this object.
// C++11, no exceptions, no RTTI, nothing from the C++ runtime library (libc only).

#include "orion_runtime.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

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

// The selector's code, local to this object: its standard headers are included above, so
// their guards keep them out of this namespace.
#include "orion_select.h"

namespace sel = orion_select_v1;

static const unsigned kMaxKernels = 256;  // (kernel, device, context) resolved per image
static const unsigned kMaxHandles = 256;  // stub handles (cudaKernel_t) mapped to host handles
static const unsigned kMaxFuncs = 256;    // kernels the program set attributes of or asked about
static const unsigned kMaxDevices = 16;
static const unsigned kMaxEvents = 64;    // timing event pairs in flight, all keys together
static const size_t kDefaultShared = 48 * 1024;  // dynamic + static without an opt-in

// The function attributes a program may set besides the dynamic-shared limit, which the
// variants must share with the original (CUfunction_attribute numbers, spelled out so that
// older cuda.h headers compile): the carveout, cluster size must be set, the required cluster
// width, height and depth, non-portable cluster sizes, the cluster scheduling policy and the
// shared memory mode.
static const int kCarried[] = {9, 10, 11, 12, 13, 14, 15, 17};
static const unsigned kNumCarried = sizeof kCarried / sizeof kCarried[0];
static const int kClusterWidth = 11;  // CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH

typedef CUresult(CUDAAPI* FuncGetModule)(CUmodule*, CUfunction);
typedef CUresult(CUDAAPI* FuncGetName)(const char**, CUfunction);
typedef CUresult(CUDAAPI* ModuleGetFunction)(CUfunction*, CUmodule, const char*);
typedef CUresult(CUDAAPI* FuncGetAttribute)(int*, CUfunction_attribute, CUfunction);
typedef CUresult(CUDAAPI* FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
typedef CUresult(CUDAAPI* FuncSetCacheConfig)(CUfunction, CUfunc_cache);
typedef CUresult(CUDAAPI* LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**, void**);
typedef CUresult(CUDAAPI* StreamIsCapturing)(CUstream, CUstreamCaptureStatus*);
typedef CUresult(CUDAAPI* OccupancyBlocks)(int*, CUfunction, int, size_t);

struct Driver {
  FuncGetModule func_get_module;
  FuncGetName func_get_name;
  ModuleGetFunction module_get_function;
  FuncGetAttribute func_get_attribute;
  FuncSetAttribute func_set_attribute;
  LaunchKernel launch_kernel;
  StreamIsCapturing stream_is_capturing;
  // Optional: without them a cache configuration cannot be carried (the original alone runs)
  // and a kernel whose occupancy was asked about runs the original alone.
  FuncSetCacheConfig func_set_cache_config;
  OccupancyBlocks occupancy_blocks;
};

// One (kernel, device, context): the original and its variants. Written once under the lock,
// then published; read lock-free. A device reset starts a new context: its kernels are
// resolved into new slots, and the old ones are never matched again (`generation`).
struct Kernel {
  std::atomic<uint32_t> state{0u};  // 0 empty, 1 resolved (published with release)
  const void* func = nullptr;
  int device = 0;
  uint32_t generation = 0;  // the device's reset count when resolved
  uint32_t name_hash = 0;   // FNV-1a of the mangled name
  // The selector's kernel id: the name's hash for the first host function resolved under this
  // name, another for each further one (two `static` kernels of two files share a name), so
  // that their launches are keyed apart. The same for one host function on every device.
  uint32_t id = 0;
  unsigned ordinal = 0;   // 0 for the first host function of this name, 1.. for the others
  unsigned variants = 0;  // 1 + the variants found (1: the original only)
  // How many of them (a prefix) may run after the attributes set since: an attribute that
  // could not be carried to variant v leaves v..; 1: the original alone.
  std::atomic<unsigned> usable{0u};
  // The program asked about this kernel's occupancy or attributes: only variants with at
  // least the original's blocks per SM at the launch's block size and shared memory run.
  std::atomic<bool> pinned{false};
  // The last occupancy verdict: bit 63 valid, threads << 40, dynamic shared << 8, prefix.
  std::atomic<uint64_t> occupancy{0u};
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
  // The original's name and the variants', NUL-separated, copied (malloc'd once): the
  // driver's copy dies with its context, and the profile is written at exit.
  char* names = nullptr;
  size_t name_len = 0;  // the stride of `names`
  // Bit v: variant v has registers on the other side of the original's from variant 1's
  // (Orion's fail-safe searches that direction when the first step is slower).
  uint32_t other_side = 0;
};

struct Handle {
  std::atomic<const void*> kernel{nullptr};  // cudaKernel_t
  std::atomic<const void*> func{nullptr};
};

// What the program did to a kernel through the runtime, by host handle (under the lock):
// what a later resolution (another device, a new context) must honour.
struct Func {
  const void* func = nullptr;
  bool pinned = false;         // asked about its occupancy or attributes
  bool cluster_set = false;    // gave it cluster dimensions at run time (not compile time)
  bool uncarried = false;      // set an attribute the glue cannot carry: the original alone
  bool has_cache = false;      // set a cache configuration:
  bool cache_any = false;      // before the glue knew the device: for every device
  int cache_device = 0;        // else on this one
  int cache_config = 0;
};

struct Event {
  std::atomic<uint32_t> state{0u};  // 0 free, 1 in use (claimed by CAS: start runs unlocked)
  int device = 0;  // the device + 1 once created (0: none; all zero keeps the state in .bss)
  uint32_t generation = 0;  // the device's reset count when created
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
  const char* kernel(uint32_t kernel_id, int device) const override;
  const char* variant(uint32_t kernel_id, int device, unsigned variant) const override;
  unsigned number(uint32_t kernel_id, int device, unsigned variant) const override;
  int registers(uint32_t kernel_id, int device, unsigned variant) const override;
  int local_bytes(uint32_t kernel_id, int device, unsigned variant) const override;
  const char* arch(int device) const override;
  const char* device(int device) const override;
};

// All state, constant-initialised and zeroed (.bss): no global constructor, and a kernel
// launched from another static destructor at exit still finds it valid.
struct State {
  std::atomic<int> phase{0};  // 0 not configured, 1 configuring, 2 on, 3 off
  Driver driver = Driver();
  sel::detail::SpinLock lock;  // the resolve path and the program's attribute calls (rare)
  Kernel kernels[kMaxKernels];
  Handle handles[kMaxHandles];
  Func funcs[kMaxFuncs];
  bool funcs_full = false;  // a kernel's settings found no room: later ones run the original
  std::atomic<uint32_t> generation[kMaxDevices] = {};  // device resets seen, per device
  Event events[kMaxEvents];
  DeviceInfo devices[kMaxDevices];
  std::atomic<bool> said[4] = {};  // NVCC_ORION_VERBOSE messages, once each
  const char* profile_out = nullptr;
  pid_t pid = 0;            // the process that trains (a forked child writes nothing)
  struct timespec started = {0, 0};  // when: a profile written since is another process's
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

uint32_t fnv(const char* s, uint32_t h = 2166136261u) {
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

// The device's reset count (devices beyond the table share a count: a reset of one makes the
// others resolve again too, which costs time only).
uint32_t generation_of(int device) {
  if (device < 0) return 0;
  return g_state.generation[static_cast<unsigned>(device) % kMaxDevices].load(
      std::memory_order_acquire);
}

// The current device for the glue's bookkeeping around a call of the program's; -1 when the
// runtime cannot say. A pending error of the program's stays as it was.
int current_device() {
  bool pending = cudaPeekAtLastError() != cudaSuccess;
  int device = -1;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) {
    if (!pending) clear_error(e);
    return -1;
  }
  return device;
}

// --- the train profile ---------------------------------------------------------------------

// Growable text, malloc'd (no C++ runtime): the profile's path, lines, the merged file.
struct Text {
  char* data = nullptr;
  size_t size = 0;
  size_t cap = 0;
  bool failed = false;
  ~Text() { std::free(data); }
  void add(const char* s, size_t n) {
    if (failed) return;
    if (size + n + 1 > cap) {
      size_t want = (size + n + 1) * 2;
      char* grown = static_cast<char*>(std::realloc(data, want));
      if (!grown) {
        failed = true;
        return;
      }
      data = grown;
      cap = want;
    }
    std::memcpy(data + size, s, n);
    size += n;
    data[size] = '\0';
  }
  void add(const char* s) { add(s, std::strlen(s)); }
};

// NVCC_ORION_PROFILE_OUT with each `%p` replaced by the process id: one file per process,
// for jobs whose ranks share the setting.
void expand_path(const char* pattern, Text* out) {
  char pid[24];
  std::snprintf(pid, sizeof pid, "%ld", static_cast<long>(getpid()));
  for (const char* c = pattern; *c; ++c) {
    if (c[0] == '%' && c[1] == 'p') {
      out->add(pid);
      ++c;
    } else {
      out->add(c, 1);
    }
  }
}

const char kProfileHead[] =
    "{\n  \"format\": \"nvcc-orion-profile\",\n  \"version\": 1,\n  \"entries\": [";

// The entry lines of a profile this writer wrote (each entry is one line, `    {...}`), split
// in place, with their separating commas dropped; none when `text` is not such a profile.
unsigned entry_lines(char* text, char** lines, unsigned max) {
  if (std::strncmp(text, kProfileHead, sizeof kProfileHead - 1) != 0) return 0;
  unsigned n = 0;
  for (char* line = text; line && *line;) {
    char* end = std::strchr(line, '\n');
    if (end) *end = '\0';
    size_t len = std::strlen(line);
    if (len > 5 && std::strncmp(line, "    {", 5) == 0) {
      if (line[len - 1] == ',') line[len - 1] = '\0';
      if (n < max) lines[n++] = line;
    }
    line = end ? end + 1 : nullptr;
  }
  return n;
}

// What makes an entry the same measurement to the reader: everything before its variant name
// (kernel, arch, device, key, variant).
size_t identity_length(const char* line) {
  const char* at = std::strstr(line, ", \"variant_name\"");
  return at ? static_cast<size_t>(at - line) : std::strlen(line);
}

int compare_lines(const void* a, const void* b) {
  return std::strcmp(*static_cast<char* const*>(a), *static_cast<char* const*>(b));
}

// Reads `path` whole (null when it cannot be read).
char* read_all(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return nullptr;
  Text t;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) t.add(buf, n);
  std::fclose(f);
  if (t.failed || !t.data) return nullptr;
  char* out = t.data;
  t.data = nullptr;
  return out;
}

// Whether `path` was written after this process started training: by another process of the
// same job (an MPI rank, a parent or child), whose entries must be kept. An older file is an
// earlier run's, which this run replaces.
bool written_since_start(const char* path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const struct timespec& t = g_state.started;
  return st.st_mtim.tv_sec > t.tv_sec ||
         (st.st_mtim.tv_sec == t.tv_sec && st.st_mtim.tv_nsec >= t.tv_nsec);
}

// This process's profile merged with the one another process wrote at `path` since: every
// entry of both, sorted (the same file whichever process writes last); where both measured
// the same (kernel, arch, device, key, variant), this process's entry.
void merge_profiles(char* theirs, char* ours, Text* out) {
  unsigned max = 2;
  for (const char* c = theirs; *c; ++c) max += *c == '\n';
  for (const char* c = ours; *c; ++c) max += *c == '\n';
  char** lines = static_cast<char**>(std::malloc(sizeof(char*) * max));
  if (!lines) {
    out->failed = true;
    return;
  }
  unsigned a = entry_lines(ours, lines, max);
  unsigned b = entry_lines(theirs, lines + a, max - a);
  unsigned kept = a;
  for (unsigned i = a; i < a + b; ++i) {  // theirs, unless ours has the same measurement
    size_t len = identity_length(lines[i]);
    bool dup = false;
    for (unsigned j = 0; j < a && !dup; ++j)
      dup = identity_length(lines[j]) == len && std::strncmp(lines[i], lines[j], len) == 0;
    if (!dup) lines[kept++] = lines[i];
  }
  std::qsort(lines, kept, sizeof(char*), compare_lines);
  out->add(kProfileHead);
  for (unsigned i = 0; i < kept; ++i) {
    out->add(i == 0 ? "\n" : ",\n");
    out->add(lines[i]);
  }
  out->add(kept == 0 ? "]\n}\n" : "\n  ]\n}\n");
  std::free(lines);
}

// Holds an advisory lock on the profile's folder while the file is read, merged and renamed
// into place, so that two processes writing at once do not lose each other's entries.
struct FolderLock {
  int fd = -1;
  explicit FolderLock(const char* path) {
    Text dir;
    const char* slash = std::strrchr(path, '/');
    if (slash == path) dir.add("/");
    else if (slash) dir.add(path, static_cast<size_t>(slash - path));
    else dir.add(".");
    if (dir.failed) return;
    fd = open(dir.data, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
      close(fd);
      fd = -1;
    }
  }
  ~FolderLock() {
    if (fd >= 0) close(fd);  // releases the lock
  }
};

// Writes `text` to `path` as it is (a device such as /dev/null, a pipe, a symbolic link:
// never replaced).
bool write_in_place(const char* path, const Text& text) {
  std::FILE* f = std::fopen(path, "wb");
  if (!f) return false;
  bool ok = std::fwrite(text.data, 1, text.size, f) == text.size;
  return std::fclose(f) == 0 && ok;
}

// Writes `text` to a temporary beside `path`, then renames it over `path`: a reader sees the
// old file or the new one, never a part. False (errno set) on failure, nothing left behind.
bool replace_file(const char* path, const Text& text) {
  struct stat st;
  if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) return write_in_place(path, text);
  Text tmp;
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".tmp-%ld", static_cast<long>(getpid()));
  tmp.add(path);
  tmp.add(suffix);
  if (tmp.failed) return false;
  std::FILE* f = std::fopen(tmp.data, "wb");
  if (!f) return false;
  bool ok = std::fwrite(text.data, 1, text.size, f) == text.size;
  ok = std::fflush(f) == 0 && ok;
  ok = fsync(fileno(f)) == 0 && ok;
  ok = std::fclose(f) == 0 && ok;
  if (ok && std::rename(tmp.data, path) == 0) return true;
  int saved = errno;
  std::remove(tmp.data);
  errno = saved;
  return false;
}

// The profile: this process's measurements, merged with another process's written since it
// started, written whole or not at all. False (errno set) when it could not be written.
bool write_profile_file(const char* path) {
  char* ours = nullptr;
  size_t size = 0;
  std::FILE* mem = open_memstream(&ours, &size);
  if (!mem) return false;
  Names names;
  bool ok = g_state.selector.write_profile(mem, names);
  ok = std::fclose(mem) == 0 && ok && ours;
  if (!ok) {
    std::free(ours);
    errno = ENOMEM;
    return false;
  }
  FolderLock lock(path);
  Text out;
  char* theirs = written_since_start(path) ? read_all(path) : nullptr;
  if (theirs && std::strncmp(theirs, kProfileHead, sizeof kProfileHead - 1) == 0) {
    merge_profiles(theirs, ours, &out);
  } else {
    out.add(ours, size);
  }
  std::free(theirs);
  std::free(ours);
  if (out.failed) {
    errno = ENOMEM;
    return false;
  }
  return replace_file(path, out);
}

void write_profile_at_exit() {
  State& s = g_state;
  if (s.phase.load(std::memory_order_acquire) != 2 || !s.profile_out) return;
  // A forked child inherits this handler and its parent's measurements: only the process
  // that measured writes them (and a child must not touch the parent's CUDA context).
  if (getpid() != s.pid) return;
  s.selector.flush(true);
  Text path;
  expand_path(s.profile_out, &path);
  if (path.failed || !write_profile_file(path.data)) {
    // Always said: a training run whose profile is lost must not look like a success.
    std::fprintf(stderr, "nvcc-orion: warning: cannot write the train profile %s (%s)\n",
                 path.data ? path.data : s.profile_out, std::strerror(errno));
  }
}

// --- configuration ---------------------------------------------------------------------

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

int mode_from_environment() {
  const char* env = std::getenv("NVCC_ORION");
  int mode = ORION_RT_DEFAULT_MODE;
  if (env && std::strcmp(env, "adapt") == 0) mode = sel::kAdapt;
  if (env && std::strcmp(env, "train") == 0) mode = sel::kTrain;
  if (env && (std::strcmp(env, "off") == 0 || std::strcmp(env, "0") == 0)) {
    say(kSaidOff, "selector off (NVCC_ORION=%s): original kernels run", env);
    mode = sel::kOff;
  }
  return mode;
}

bool find_driver(Driver* d) {
  bool ok = entry("cuFuncGetModule", 12000, &d->func_get_module) &&
            entry("cuFuncGetName", 12030, &d->func_get_name) &&
            entry("cuModuleGetFunction", 12000, &d->module_get_function) &&
            entry("cuFuncGetAttribute", 12000, &d->func_get_attribute) &&
            entry("cuFuncSetAttribute", 12000, &d->func_set_attribute) &&
            entry("cuLaunchKernel", 12000, &d->launch_kernel) &&
            entry("cuStreamIsCapturing", 12000, &d->stream_is_capturing);
  if (!ok) return false;
  if (!entry("cuFuncSetCacheConfig", 12000, &d->func_set_cache_config))
    d->func_set_cache_config = nullptr;
  if (!entry("cuOccupancyMaxActiveBlocksPerMultiprocessor", 12000, &d->occupancy_blocks))
    d->occupancy_blocks = nullptr;
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
  int mode = mode_from_environment();
  if (mode == sel::kOff) {
    s.phase.store(3, std::memory_order_release);
    return false;
  }
  Driver d = Driver();
  if (!find_driver(&d)) {
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
  if (s.profile_out) {
    s.pid = getpid();
#ifdef CLOCK_REALTIME_COARSE
    // The clock file systems stamp files with: a file written after this moment is not older.
    clock_gettime(CLOCK_REALTIME_COARSE, &s.started);
#else
    clock_gettime(CLOCK_REALTIME, &s.started);
#endif
    std::atexit(write_profile_at_exit);
  }
  s.phase.store(2, std::memory_order_release);
  return true;
}

// --- what the program did to its kernels ---------------------------------------------------

// The record of `func` (under the lock), created when `create`; null when absent, or when
// the table is full (then `funcs_full` makes every kernel resolved later run the original).
Func* func_record(const void* func, bool create) {
  size_t h = hash_ptr(func, 0);
  for (unsigned i = 0; i < kMaxFuncs; ++i) {
    Func& f = g_state.funcs[(h + i) % kMaxFuncs];
    if (f.func == func) return &f;
    if (!f.func) {
      if (!create) return nullptr;
      f.func = func;
      return &f;
    }
  }
  if (create) g_state.funcs_full = true;
  return nullptr;
}

// --- finding the variants --------------------------------------------------------------

Kernel* find_kernel(const void* func, int device, uint32_t generation) {
  size_t h = hash_ptr(func, device);
  for (unsigned i = 0; i < kMaxKernels; ++i) {
    Kernel& k = g_state.kernels[(h + i) % kMaxKernels];
    if (!k.state.load(std::memory_order_acquire)) return nullptr;
    if (k.func == func && k.device == device && k.generation == generation) return &k;
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

// The selector's id of `k` (under the lock): that of the same host function resolved before
// (another device, an earlier context); else the name's hash for the first host function of
// this name, and the hash of `<name>#<ordinal>` for each further one, in resolution order.
void assign_id(Kernel& k) {
  unsigned ordinal = 0;
  for (unsigned i = 0; i < kMaxKernels; ++i) {
    const Kernel& o = g_state.kernels[i];
    if (&o == &k || !o.state.load(std::memory_order_relaxed) || !o.names ||
        o.name_hash != k.name_hash)
      continue;
    if (o.func == k.func) {
      k.id = o.id;
      k.ordinal = o.ordinal;
      return;
    }
    if (o.ordinal + 1 > ordinal) ordinal = o.ordinal + 1;
  }
  k.ordinal = ordinal;
  k.id = k.name_hash;
  if (ordinal == 0) return;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "#%u", ordinal);
  k.id = fnv(suffix, k.name_hash);
}

// Gives `variant` every attribute the program gave the original (the carried ones, as the
// driver reports them on the original, and the cache configuration it set on this device);
// false when the driver refuses one: the variant is then not used.
bool carry_attributes(const Kernel& k, CUfunction variant, const Func* record) {
  const Driver& d = g_state.driver;
  for (unsigned i = 0; i < kNumCarried; ++i) {
    CUfunction_attribute a = static_cast<CUfunction_attribute>(kCarried[i]);
    int want = 0;
    int has = 0;
    if (d.func_get_attribute(&want, a, k.fn[0]) != CUDA_SUCCESS) continue;  // not this driver's
    if (d.func_get_attribute(&has, a, variant) == CUDA_SUCCESS && has == want) continue;
    if (d.func_set_attribute(variant, a, want) != CUDA_SUCCESS) return false;
  }
  if (record && record->has_cache && (record->cache_any || record->cache_device == k.device)) {
    CUfunc_cache config = static_cast<CUfunc_cache>(record->cache_config);
    if (!d.func_set_cache_config || d.func_set_cache_config(variant, config) != CUDA_SUCCESS)
      return false;
  }
  return true;
}

// The original's name and attributes (under the lock); false when it cannot be inspected.
bool resolve_original(Kernel& k, CUfunction f, CUmodule* m) {
  const Driver& d = g_state.driver;
  const char* name = nullptr;
  if (d.func_get_module(m, f) != CUDA_SUCCESS || d.func_get_name(&name, f) != CUDA_SUCCESS ||
      !name)
    return false;
  k.name_len = std::strlen(name) + 16;
  k.names = static_cast<char*>(std::calloc(sel::kMaxVariants, k.name_len));
  if (!k.names) return false;
  std::memcpy(k.names, name, k.name_len - 16);
  k.fn[0] = f;
  k.name_hash = fnv(name);
  assign_id(k);
  (void)d.func_get_attribute(&k.static_shared[0], CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
  int limit = 0;
  (void)d.func_get_attribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f);
  k.max_dynamic[0].store(limit, std::memory_order_relaxed);
  resources(k, 0, f);
  return true;
}

// Fills `k` from the original's handle (under the lock). Any failure leaves the original
// alone (1 variant).
void resolve(Kernel& k, const void* func) {
  const Driver& d = g_state.driver;
  k.variants = 1;
  k.usable.store(1, std::memory_order_relaxed);
  const Func* record = func_record(func, false);
  k.pinned.store(record && record->pinned, std::memory_order_relaxed);
  cudaFunction_t f = nullptr;
  cudaError_t e = cudaGetFuncBySymbol(&f, func);
  clear_error(e);
  CUmodule m = nullptr;
  if (e != cudaSuccess || !f || !resolve_original(k, f, &m)) {
    say(kSaidError, "selector: cannot inspect a kernel (%s); it runs unchanged", "driver error");
    return;
  }
  int cluster = 0;
  (void)d.func_get_attribute(&cluster, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f);
  // Compile-time cluster dimensions (not set by the program): the original only. So does
  // an attribute the glue cannot carry, or a full table of what the program set.
  if ((cluster > 0 && !(record && record->cluster_set)) || (record && record->uncarried) ||
      g_state.funcs_full)
    return;
  // Every k: the tuner drops a variant whose registers differ from its standalone build and
  // keeps the others' numbers, so a missing k is no end. The present ones keep their order.
  unsigned n = 1;
  for (unsigned number = 1; number < sel::kMaxVariants; ++number) {
    char* v = k.names + n * k.name_len;
    std::memcpy(v, k.names, k.name_len - 16);
    std::snprintf(v + k.name_len - 16, 16, "__orion_v%u", number);
    CUfunction vf = nullptr;
    int limit = 0;
    if (d.module_get_function(&vf, m, v) != CUDA_SUCCESS || !vf ||
        d.func_get_attribute(&k.static_shared[n], CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, vf) !=
            CUDA_SUCCESS ||
        d.func_get_attribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, vf) !=
            CUDA_SUCCESS ||
        !carry_attributes(k, vf, record)) {
      v[0] = '\0';
      continue;
    }
    k.max_dynamic[n].store(limit, std::memory_order_relaxed);
    resources(k, n, vf);
    k.fn[n] = vf;
    k.number[n] = static_cast<unsigned char>(number);
    ++n;
  }
  k.variants = n;
  k.usable.store(n, std::memory_order_relaxed);
  k.other_side = other_side_of(k);
}

const Kernel* kernel_for(const void* func, int device, uint32_t generation) {
  const Kernel* found = find_kernel(func, device, generation);
  if (found) return found;
  sel::detail::Guard g(g_state.lock);
  size_t h = hash_ptr(func, device);
  for (unsigned i = 0; i < kMaxKernels; ++i) {
    Kernel& k = g_state.kernels[(h + i) % kMaxKernels];
    if (k.state.load(std::memory_order_relaxed)) {
      if (k.func == func && k.device == device && k.generation == generation) return &k;
      continue;
    }
    k.func = func;
    k.device = device;
    k.generation = generation;
    resolve(k, func);
    k.state.store(1, std::memory_order_release);
    return &k;
  }
  return nullptr;  // table full: the original
}

// --- attributes and occupancy the program set or asked about --------------------------------

// The driver's number of a runtime function attribute the variants must share; 8 for the
// dynamic-shared limit (`refit` follows that one at launch); -1 for one the glue does not
// know, which it cannot carry.
int driver_attribute(int runtime_attribute) {
  if (runtime_attribute >= 8 && runtime_attribute <= 15) return runtime_attribute;
  if (runtime_attribute == 16) return 17;  // cudaFuncAttributeSharedMemoryMode
  return -1;
}

// Under the lock: the resolved kernels of `func` on `device` (every device for -1) in its
// current context.
template <typename F>
void each_kernel_of(const void* func, int device, F f) {
  for (unsigned i = 0; i < kMaxKernels; ++i) {
    Kernel& k = g_state.kernels[i];
    if (!k.state.load(std::memory_order_acquire) || k.func != func) continue;
    if (device >= 0 && k.device != device) continue;
    if (k.generation != generation_of(k.device)) continue;
    f(k);
  }
}

// The program set attribute `a` (the driver's number; -1: the cache configuration) of `func`
// to `value` on `device`: the same on each variant there that may run; a variant the driver
// refuses it, and those after it, no longer run.
void apply_to_variants(const void* func, int device, int a, int value) {
  const Driver& d = g_state.driver;
  each_kernel_of(func, device, [&](Kernel& k) {
    unsigned usable = k.usable.load(std::memory_order_relaxed);
    for (unsigned v = 1; v < usable; ++v) {
      CUresult r = CUDA_ERROR_NOT_SUPPORTED;
      if (a >= 0) {
        r = d.func_set_attribute(k.fn[v], static_cast<CUfunction_attribute>(a), value);
      } else if (d.func_set_cache_config) {
        r = d.func_set_cache_config(k.fn[v], static_cast<CUfunc_cache>(value));
      }
      if (r != CUDA_SUCCESS) usable = v;
    }
    k.usable.store(usable, std::memory_order_release);
    k.occupancy.store(0, std::memory_order_release);  // a carveout changes blocks per SM
  });
}

// After the program's cudaFuncSetAttribute(func, attribute, value) succeeded.
void attribute_set(const void* func, int attribute, int value) {
  int a = driver_attribute(attribute);
  if (a == 8) return;
  bool on = g_state.phase.load(std::memory_order_acquire) == 2;
  int device = on ? current_device() : -1;
  sel::detail::Guard g(g_state.lock);
  Func* record = func_record(func, true);
  if (a < 0 || (on && device < 0)) {
    // Nothing to carry it with, or no device to carry it on: the original alone.
    if (record) record->uncarried = a < 0 || record->uncarried;
    each_kernel_of(func, -1, [](Kernel& k) { k.usable.store(1, std::memory_order_release); });
    return;
  }
  if (record && a >= kClusterWidth && a <= kClusterWidth + 2) record->cluster_set = true;
  if (on) apply_to_variants(func, device, a, value);
}

// After the program's cudaFuncSetCacheConfig(func, config) succeeded.
void cache_config_set(const void* func, int config) {
  bool on = g_state.phase.load(std::memory_order_acquire) == 2;
  int device = on ? current_device() : -1;
  sel::detail::Guard g(g_state.lock);
  Func* record = func_record(func, true);
  if (record) {
    record->has_cache = true;
    record->cache_any = device < 0;
    record->cache_device = device;
    record->cache_config = config;
  }
  if (!on) return;
  if (device < 0) {
    each_kernel_of(func, -1, [](Kernel& k) { k.usable.store(1, std::memory_order_release); });
    return;
  }
  apply_to_variants(func, device, -1, config);
}

// The program asks about `func`'s occupancy or attributes: from now on its launches run only
// variants with at least the original's blocks per SM (no CUDA call: it may come first).
void pin(const void* func) {
  sel::detail::Guard g(g_state.lock);
  Func* record = func_record(func, true);
  if (record) record->pinned = true;
  each_kernel_of(func, -1, [](Kernel& k) { k.pinned.store(true, std::memory_order_release); });
}

// How many variants (a prefix) have at least the original's blocks per SM at `threads` per
// block and `shmem` dynamic bytes, by the driver's occupancy calculator; 1 when it cannot say.
unsigned blocks_prefix(const Kernel& k, unsigned usable, int threads, size_t shmem) {
  OccupancyBlocks q = g_state.driver.occupancy_blocks;
  int original = 0;
  if (!q || q(&original, k.fn[0], threads, shmem) != CUDA_SUCCESS) return 1;
  for (unsigned v = 1; v < usable; ++v) {
    int blocks = 0;
    if (q(&blocks, k.fn[v], threads, shmem) != CUDA_SUCCESS || blocks < original) return v;
  }
  return usable;
}

// `blocks_prefix` for a pinned kernel, remembered for the last launch shape (a persistent
// kernel launches with one), so a repeated launch costs one atomic load.
unsigned occupancy_prefix(Kernel& k, unsigned usable, dim3 block, size_t shmem) {
  uint64_t threads = static_cast<uint64_t>(block.x) * block.y * block.z;
  if (threads > 0xFFFFu || shmem > 0xFFFFFFFFu) return 1;
  uint64_t tag = (1ull << 63) | (threads << 40) | (static_cast<uint64_t>(shmem) << 8) |
                 (static_cast<uint64_t>(usable) << 4);
  uint64_t seen = k.occupancy.load(std::memory_order_acquire);
  if ((seen & ~0xFull) == tag) return static_cast<unsigned>(seen & 0xF);
  unsigned n = blocks_prefix(k, usable, static_cast<int>(threads), shmem);
  k.occupancy.store(tag | n, std::memory_order_release);
  return n;
}

// After cudaDeviceReset on `device` (-1: unknown, so every device): its context is gone, with
// every function, module and event of it. Kernels resolve again in the new one.
void device_was_reset(int device) {
  for (unsigned d = 0; d < kMaxDevices; ++d) {
    if (device < 0 || static_cast<unsigned>(device) % kMaxDevices == d)
      g_state.generation[d].fetch_add(1, std::memory_order_acq_rel);
  }
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

// How many variants (a prefix) may run this launch: those whose shared memory fits, whose
// attributes the program's settings left usable, and, for a kernel whose occupancy the
// program asked about, those with at least the original's blocks per SM.
unsigned runnable(Kernel& k, dim3 block, size_t shmem) {
  unsigned usable = k.usable.load(std::memory_order_acquire);
  if (usable <= 1) return 1;
  unsigned n = fitting(k, shmem);
  if (n > usable) n = usable;
  if (n > 1 && k.pinned.load(std::memory_order_acquire)) {
    unsigned same_blocks = occupancy_prefix(k, usable, block, shmem);
    if (n > same_blocks) n = same_blocks;
  }
  return n;
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
  uint32_t generation = generation_of(device);
  Kernel* k = find_kernel(o.func, device, generation);
  if (!k) {
    // Resolved after this kernel's original launch on this device (and context) succeeded.
    e = launch_original(o, grid, block, args, shmem, stream);
    if (e == cudaSuccess) (void)kernel_for(o.func, device, generation);
    return e;
  }
  unsigned n = runnable(*k, block, shmem);
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
    uint32_t generation = generation_of(device);
    if (ev.start && ev.generation != generation) {
      ev.start = ev.stop = nullptr;  // destroyed with its context by a device reset
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
      ev.generation = generation;
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
  if (ev.generation != generation_of(ev.device - 1)) {
    ev.state.store(0, std::memory_order_release);
    return -2;  // its context was reset: the timing is lost, through no fault of the launch
  }
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

// The kernel `id` as resolved on `device`, in its latest context: each device has its own
// build of a kernel (its architecture's registers and variant numbering), and a reset leaves
// the older context's entry behind.
const Kernel* by_id(uint32_t id, int device) {
  const Kernel* found = nullptr;
  for (unsigned i = 0; i < kMaxKernels; ++i) {
    const Kernel& k = g_state.kernels[i];
    if (!k.state.load(std::memory_order_acquire) || !k.names || k.id != id || k.device != device)
      continue;
    if (!found || k.generation > found->generation) found = &k;
  }
  return found;
}

const char* Names::kernel(uint32_t kernel_id, int device) const {
  const Kernel* k = by_id(kernel_id, device);
  return k ? k->names : nullptr;
}

const char* Names::variant(uint32_t kernel_id, int device, unsigned variant) const {
  const Kernel* k = by_id(kernel_id, device);
  if (!k || variant >= k->variants) return nullptr;
  return k->names + variant * k->name_len;
}

unsigned Names::number(uint32_t kernel_id, int device, unsigned variant) const {
  const Kernel* k = by_id(kernel_id, device);
  return k && variant < k->variants ? k->number[variant] : variant;
}

int Names::registers(uint32_t kernel_id, int device, unsigned variant) const {
  const Kernel* k = by_id(kernel_id, device);
  return k && variant < k->variants ? k->registers[variant] : -1;
}

int Names::local_bytes(uint32_t kernel_id, int device, unsigned variant) const {
  const Kernel* k = by_id(kernel_id, device);
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

ORION_RT_API cudaError_t orion_rt_v1_cudaLaunchKernel(const void* func, dim3 grid, dim3 block,
                                                      void** args, size_t shmem,
                                                      cudaStream_t stream) {
  Original o = {orion_rt_v1::kPlain, func, nullptr};
  return orion_rt_v1::dispatch(o, grid, block, args, shmem, stream);
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

// The attributes the program sets on a kernel: set on the original as asked, then carried to
// its variants (or, where they cannot be, the original alone runs).
ORION_RT_API cudaError_t orion_rt_v1_cudaFuncSetAttribute(const void* func,
                                                          cudaFuncAttribute attr, int value) {
  cudaError_t e = cudaFuncSetAttribute(func, attr, value);
  if (e == cudaSuccess) orion_rt_v1::attribute_set(func, static_cast<int>(attr), value);
  return e;
}

ORION_RT_API cudaError_t orion_rt_v1_cudaFuncSetCacheConfig(const void* func,
                                                            cudaFuncCache config) {
  cudaError_t e = cudaFuncSetCacheConfig(func, config);
  if (e == cudaSuccess) orion_rt_v1::cache_config_set(func, static_cast<int>(config));
  return e;
}

// What the program asks about a kernel's resources and occupancy answers for the original;
// from then on that kernel runs only variants that keep the answer true (`pin`). The runtime's
// C++ templates (cudaOccupancyMaxPotentialBlockSize and the like) are inline and call these.
ORION_RT_API cudaError_t orion_rt_v1_cudaFuncGetAttributes(cudaFuncAttributes* attr,
                                                           const void* func) {
  orion_rt_v1::pin(func);
  return cudaFuncGetAttributes(attr, func);
}

ORION_RT_API cudaError_t orion_rt_v1_cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    int* blocks, const void* func, int threads, size_t shmem) {
  orion_rt_v1::pin(func);
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, func, threads, shmem);
}

ORION_RT_API cudaError_t orion_rt_v1_cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, const void* func, int threads, size_t shmem, unsigned flags) {
  orion_rt_v1::pin(func);
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, threads, shmem,
                                                               flags);
}

ORION_RT_API cudaError_t orion_rt_v1_cudaOccupancyAvailableDynamicSMemPerBlock(
    size_t* bytes, const void* func, int blocks, int threads) {
  orion_rt_v1::pin(func);
  return cudaOccupancyAvailableDynamicSMemPerBlock(bytes, func, blocks, threads);
}

ORION_RT_API cudaError_t orion_rt_v1_cudaOccupancyMaxPotentialClusterSize(
    int* size, const void* func, const cudaLaunchConfig_t* config) {
  orion_rt_v1::pin(func);
  return cudaOccupancyMaxPotentialClusterSize(size, func, config);
}

ORION_RT_API cudaError_t orion_rt_v1_cudaOccupancyMaxActiveClusters(
    int* clusters, const void* func, const cudaLaunchConfig_t* config) {
  orion_rt_v1::pin(func);
  return cudaOccupancyMaxActiveClusters(clusters, func, config);
}

// A reset destroys the device's primary context: every function, module and event the glue
// holds of it. The kernels resolve again in the next one.
ORION_RT_API cudaError_t orion_rt_v1_cudaDeviceReset(void) {
  bool on = orion_rt_v1::g_state.phase.load(std::memory_order_acquire) == 2;
  int device = on ? orion_rt_v1::current_device() : -1;
  cudaError_t e = cudaDeviceReset();
  if (e == cudaSuccess && on) orion_rt_v1::device_was_reset(device);
  return e;
}
