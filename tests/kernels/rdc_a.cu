// Relocatable device code, part A: calls a device function defined in rdc_b.cu.
extern __device__ float rdc_helper(float x);

__global__ void rdc_kernel(float *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = rdc_helper(p[i]);
}

void launch_rdc(float *p, int n) { rdc_kernel<<<(n + 127) / 128, 128>>>(p, n); }

int main() { return 0; }
