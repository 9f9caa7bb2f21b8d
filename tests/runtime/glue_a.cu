// The runtime glue's test program (tests/runtime_glue.rs), translation unit A: a kernel with
// two hand-made variants under the selector's deterministic names, launched through every
// path the glue redirects: <<<>>>, cudaLaunchKernel (C and C++), cudaLaunchKernelEx (with and
// without attributes); its attributes set and its occupancy asked about (the C functions and
// the runtime's C++ templates), a graph built node by node (the runtime's own calls, which
// the glue leaves alone), and the device reset at the end. Every result is printed, so
// a build with the glue can be compared with the plain nvcc build line by line.
#include <cstdio>

__global__ void walk(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 0.5f + 1.0f;
}

// Variants: the same body under `<mangled original>__orion_v<k>` (extern "C" keeps the name
// exactly). The tuner will emit these from register budgets; here they are written by hand.
extern "C" __global__ void _Z4walkPfi__orion_v1(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 0.5f + 1.0f;
}
extern "C" __global__ void _Z4walkPfi__orion_v2(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 0.5f + 1.0f;
}

int run_b(float* p, int n);  // glue_b.cu

static int report(const char* what, cudaError_t e) {
  std::printf("%s: %d %s\n", what, static_cast<int>(e), cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}

// walk as a node of a graph built by hand, instantiated, launched, and given new arguments
// on the instantiated graph.
static int run_graph(float* p, int n) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaGraphNode_t node = nullptr;
  int failures = report("graph create", cudaGraphCreate(&graph, 0));
  void* args[] = {&p, &n};
  cudaKernelNodeParams params = {};
  params.func = reinterpret_cast<void*>(&walk);
  params.gridDim = dim3((n + 127) / 128);
  params.blockDim = dim3(128);
  params.kernelParams = args;
  failures += report("graph kernel node", cudaGraphAddKernelNode(&node, graph, nullptr, 0, &params));
  failures += report("graph instantiate", cudaGraphInstantiate(&exec, graph, 0));
  failures += report("graph launch", cudaGraphLaunch(exec, nullptr));
  failures += report("graph exec set params", cudaGraphExecKernelNodeSetParams(exec, node, &params));
  failures += report("graph node set params", cudaGraphKernelNodeSetParams(node, &params));
  failures += report("graph launch again", cudaGraphLaunch(exec, nullptr));
  if (exec) (void)cudaGraphExecDestroy(exec);
  if (graph) (void)cudaGraphDestroy(graph);
  return failures;
}

int main() {
  const int n = 1000;
  float* p = nullptr;
  int failures = report("malloc", cudaMalloc(&p, n * sizeof(float)));
  failures += report("carveout",
                     cudaFuncSetAttribute(walk, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
  failures += report("cache config", cudaFuncSetCacheConfig(walk, cudaFuncCachePreferL1));
  cudaFuncAttributes attributes;
  failures += report("attributes", cudaFuncGetAttributes(&attributes, walk));
  int blocks = 0;
  failures += report("occupancy",
                     cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, walk, 128, 0));
  int min_grid = 0, block_size = 0;
  failures += report("potential block size",
                     cudaOccupancyMaxPotentialBlockSize(&min_grid, &block_size, walk));
  for (int round = 0; round < 3; ++round) {
    walk<<<(n + 127) / 128, 128>>>(p, n);
    failures += report("stub", cudaGetLastError());
    int nn = n;
    void* args[] = {&p, &nn};
    failures += report("cudaLaunchKernel",
                       cudaLaunchKernel(reinterpret_cast<const void*>(&walk), dim3(8), dim3(128),
                                        args, 0, nullptr));
    failures += report("cudaLaunchKernel<T>", cudaLaunchKernel(walk, dim3(8), dim3(128), args));
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(8);
    config.blockDim = dim3(128);
    failures += report("cudaLaunchKernelEx", cudaLaunchKernelEx(&config, walk, p, nn));
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    config.attrs = attr;
    config.numAttrs = 1;
    failures += report("cudaLaunchKernelEx cooperative", cudaLaunchKernelEx(&config, walk, p, nn));
    failures += run_b(p, n);
  }
  failures += run_graph(p, n);
  failures += report("synchronize", cudaDeviceSynchronize());
  failures += report("last", cudaGetLastError());
  failures += report("reset", cudaDeviceReset());
  std::printf("failures %d\n", failures);
  return failures > 100 ? 100 : failures;
}
