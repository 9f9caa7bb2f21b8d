# Initial-cache script: use this checkout's nvcc-orion as the CUDA compiler of any CMake project.
#   cmake -C /path/to/nvcc-orion/cmake/nvcc-orion.cmake -G Ninja -S . -B build
# Only affects a fresh build directory (CMake never changes the compiler of a configured one).
get_filename_component(_orion_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
if(EXISTS "${_orion_root}/target/release/nvcc-orion")
  set(CMAKE_CUDA_COMPILER "${_orion_root}/target/release/nvcc-orion" CACHE FILEPATH "nvcc-orion")
elseif(EXISTS "${_orion_root}/target/debug/nvcc-orion")
  set(CMAKE_CUDA_COMPILER "${_orion_root}/target/debug/nvcc-orion" CACHE FILEPATH "nvcc-orion")
else()
  message(FATAL_ERROR "nvcc-orion is not built: run `cargo build --release` in ${_orion_root}")
endif()
