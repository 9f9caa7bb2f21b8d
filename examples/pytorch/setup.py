# A CUDAExtension built through nvcc-orion: torch's ninja build runs the compiler that
# PYTORCH_NVCC names (docs/usage.md §PyTorch extensions). walk_bind.cpp (torch's binding,
# built by the host compiler) calls the kernel's launcher in walk_ext.cu (built by nvcc-orion).
#     TORCH_CUDA_ARCH_LIST=9.0 PYTORCH_NVCC=/path/to/nvcc-orion python setup.py build_ext --inplace
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="walk_ext",
    ext_modules=[
        CUDAExtension(
            "walk_ext",
            ["walk_bind.cpp", "walk_ext.cu"],
            extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O3"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
