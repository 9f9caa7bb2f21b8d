// torch's side of the extension (walk_ext.cu holds the kernel): checks the tensors and calls
// the launcher on their data. The host compiler builds this file; nvcc-orion builds the .cu.
#include <torch/extension.h>

int walk_ext_features();
void walk_ext_launch(const int *successor, const float *feat, float *out, int nodes, int steps);

// successor: int32[nodes], feat: float32[FEATURES * nodes]; one score per node.
torch::Tensor features(torch::Tensor successor, torch::Tensor feat, int64_t steps) {
    TORCH_CHECK(successor.is_cuda() && feat.is_cuda(), "features: CUDA tensors expected");
    TORCH_CHECK(successor.scalar_type() == torch::kInt32 && feat.scalar_type() == torch::kFloat32,
                "features: int32 successors and float32 features expected");
    auto succ = successor.contiguous();
    auto f = feat.contiguous();
    const int nodes = static_cast<int>(succ.size(0));
    TORCH_CHECK(f.numel() == static_cast<int64_t>(walk_ext_features()) * nodes,
                "features: feat must hold ", walk_ext_features(), " values per node");
    auto out = torch::empty({nodes}, f.options());
    walk_ext_launch(succ.data_ptr<int>(), f.data_ptr<float>(), out.data_ptr<float>(), nodes,
                    static_cast<int>(steps));
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("features", &features, "walk_features on CUDA tensors (successor, feat, steps)");
}
