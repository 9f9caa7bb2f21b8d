// The runtime glue's test program, translation unit B: a kernel without variants, launched
// from its own object (which carries its own copy of the glue).
#include <cstdio>

__global__ void scale(float* p, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= s;
}

int run_b(float* p, int n) {
  scale<<<(n + 255) / 256, 256, 1024>>>(p, n, 2.0f);
  cudaError_t e = cudaGetLastError();
  std::printf("stub b: %d %s\n", static_cast<int>(e), cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
