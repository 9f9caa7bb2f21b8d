// Deliberately broken: a missing semicolon and an undeclared identifier.
__global__ void broken(float *p) {
    float x = p[threadIdx.x]
    p[threadIdx.x] = x + undeclared_value;
}
