// CUDA code in a .cpp file: only valid when compiled with `-x cu`.
__global__ void cpp_kernel(int *p) { p[threadIdx.x] = threadIdx.x * 2; }

void launch_cpp_kernel(int *p) { cpp_kernel<<<1, 32>>>(p); }
