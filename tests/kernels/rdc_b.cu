// Relocatable device code, part B: the device function used by rdc_a.cu.
__device__ float rdc_helper(float x) { return x * x + 1.0f; }
