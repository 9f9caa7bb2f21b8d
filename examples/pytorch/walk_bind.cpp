// torch's side of the extension (walk_ext.cu holds the kernel): checks the tensors and calls
// the launcher on their data. The host compiler builds this file; nvcc-orion builds the .cu.
// The headers are the three the binding uses (tensors, at::empty, pybind11's tensor casters):
// torch/extension.h, all of libtorch's C++ API, takes about three times the CPU to compile
// (53 against 19 s with torch's -g -O2; bench/results/suite.md, seventh pass).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/csrc/utils/pybind.h>

int walk_ext_features();
void walk_ext_launch(const int *successor, const float *feat, float *out, int nodes, int steps);

// successor: int32[nodes], feat: float32[FEATURES * nodes]; one score per node.
at::Tensor features(at::Tensor successor, at::Tensor feat, int64_t steps) {
    TORCH_CHECK(successor.is_cuda() && feat.is_cuda(), "features: CUDA tensors expected");
    TORCH_CHECK(successor.scalar_type() == at::kInt && feat.scalar_type() == at::kFloat,
                "features: int32 successors and float32 features expected");
    auto succ = successor.contiguous();
    auto f = feat.contiguous();
    const int nodes = static_cast<int>(succ.size(0));
    TORCH_CHECK(f.numel() == static_cast<int64_t>(walk_ext_features()) * nodes,
                "features: feat must hold ", walk_ext_features(), " values per node");
    auto out = at::empty({nodes}, f.options());
    walk_ext_launch(succ.data_ptr<int>(), f.data_ptr<float>(), out.data_ptr<float>(), nodes,
                    static_cast<int>(steps));
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("features", &features, "walk_features on CUDA tensors (successor, feat, steps)");
}
