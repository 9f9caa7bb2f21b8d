// A PyTorch C++/CUDA extension built through nvcc-orion (docs/usage.md §PyTorch extensions):
// walk.cu's register-hungry kernel and a plain C++ launcher, which walk_bind.cpp (torch's side,
// compiled by the host compiler) calls on CUDA tensors' data. This file includes no torch
// header: nvcc-orion gets torch's whole nvcc command line, while nvcc only reads walk.cu.
#include "../kernels/walk.cu"

// Values per node in `feat` (walk.cu's FEATURES), for the binding's size check.
int walk_ext_features() { return FEATURES; }

// One score per node into `out` (device pointers: successor int32[nodes], feat
// float32[FEATURES * nodes]), on the default stream as the kernel launch did before.
void walk_ext_launch(const int *successor, const float *feat, float *out, int nodes, int steps)
{
    const int threads = 128;
    walk_features<<<(nodes + threads - 1) / threads, threads>>>(successor, feat, out, nodes,
                                                                steps);
}
