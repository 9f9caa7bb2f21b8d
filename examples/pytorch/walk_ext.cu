// A PyTorch C++/CUDA extension built through nvcc-orion (docs/usage.md §PyTorch extensions):
// walk.cu's register-hungry kernel behind a function Python calls on CUDA tensors.
#include <torch/extension.h>

#include "../kernels/walk.cu"

// successor: int32[nodes], feat: float32[FEATURES * nodes]; one score per node.
torch::Tensor features(torch::Tensor successor, torch::Tensor feat, int64_t steps) {
    TORCH_CHECK(successor.is_cuda() && feat.is_cuda(), "features: CUDA tensors expected");
    TORCH_CHECK(successor.scalar_type() == torch::kInt32 && feat.scalar_type() == torch::kFloat32,
                "features: int32 successors and float32 features expected");
    auto succ = successor.contiguous();
    auto f = feat.contiguous();
    const int nodes = static_cast<int>(succ.size(0));
    TORCH_CHECK(f.numel() == static_cast<int64_t>(FEATURES) * nodes, "features: feat must hold ",
                FEATURES, " values per node");
    auto out = torch::empty({nodes}, f.options());
    const int threads = 128;
    walk_features<<<(nodes + threads - 1) / threads, threads>>>(
        succ.data_ptr<int>(), f.data_ptr<float>(), out.data_ptr<float>(), nodes,
        static_cast<int>(steps));
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("features", &features, "walk_features on CUDA tensors (successor, feat, steps)");
}
