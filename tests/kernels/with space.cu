// A source file whose name contains a space.
__global__ void spaced(int *p) { p[threadIdx.x] += 1; }
