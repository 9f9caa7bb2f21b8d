# nvcc-orion for a CMake project. Either, before project():
#     include(/path/to/nvcc-orion/cmake/NvccOrion.cmake)
# or on the command line, as a toolchain file:
#     cmake -DCMAKE_TOOLCHAIN_FILE=/path/to/nvcc-orion/cmake/NvccOrion.cmake -S . -B build
# It makes nvcc-orion the CUDA compiler of the CUDA language (CMAKE_CUDA_COMPILER) and of the
# legacy FindCUDA module (CUDA_NVCC_EXECUTABLE). CMake runs nvcc-orion exactly as it would run
# nvcc; nvcc-orion finds the real toolkit (NVCC_ORION_NVCC, CUDA_HOME/CUDA_PATH, or PATH).
#
# Cache options (-D on the first configure; CMake never changes the compiler of a configured
# build folder):
#   NVCC_ORION             ON (default) or OFF: OFF leaves the project on the real nvcc.
#   NVCC_ORION_EXECUTABLE  nvcc-orion to use (default: this checkout's build, else PATH).
#   NVCC_ORION_BLOCK_SIZE  threads per block to tune for: N, or kernel:N,... (see docs/usage.md §Block sizes).
#   NVCC_ORION_REPORT      file to append the per-kernel JSON report to.
#   NVCC_ORION_MARGIN      predicted gain in percent a lower budget must show (default 5).
#   NVCC_ORION_TRANSFORMS  rewrites the tuner may offer: spill2smem, regdem (see docs/usage.md §Transforms).
#   NVCC_ORION_SEARCH      how the default mode searches budgets: descent (default) or full.
# The options travel as --orion-* flags in CMAKE_CUDA_FLAGS / CUDA_NVCC_FLAGS; nvcc-orion
# removes them before anything reaches nvcc. On the command line, a compiler cache used as
# CMAKE_CUDA_COMPILER_LAUNCHER (ccache, sccache) hashes them: a changed option is a miss.
# ccache as that launcher (-D or the environment variable of that name, given before the
# first configure) also gets CCACHE_COMPILERCHECK='%compiler% cache-key', through
# `cmake -E env` (every ccache version reads it), so it hashes what `nvcc-orion cache-key`
# prints too: the NVCC_ORION_* variables of the build's environment, this nvcc-orion and the
# real nvcc. With ccache's defaults alone it would hash none of them.
include_guard(GLOBAL)

option(NVCC_ORION "Compile CUDA through nvcc-orion" ON)
if(NOT NVCC_ORION)
  return()
endif()

if(NOT NVCC_ORION_EXECUTABLE)
  get_filename_component(_nvcc_orion_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
  find_program(NVCC_ORION_EXECUTABLE nvcc-orion
    HINTS "${_nvcc_orion_root}/target/release" "${_nvcc_orion_root}/target/debug"
    DOC "nvcc-orion")
endif()
if(NOT NVCC_ORION_EXECUTABLE)
  # A missing tuner must not stop a build the real nvcc can do.
  message(WARNING "nvcc-orion not found (build it with cargo build --release, or set NVCC_ORION_EXECUTABLE): using plain nvcc")
  return()
endif()

# The CUDA language.
if(NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER "${NVCC_ORION_EXECUTABLE}" CACHE FILEPATH "CUDA compiler (nvcc-orion)")
endif()
# Legacy FindCUDA reads the environment variable after it may have reset the cache entry.
set(ENV{CUDA_NVCC_EXECUTABLE} "${NVCC_ORION_EXECUTABLE}")
set(CUDA_NVCC_EXECUTABLE "${NVCC_ORION_EXECUTABLE}" CACHE FILEPATH "nvcc (nvcc-orion)")

set(_nvcc_orion_flags "")
foreach(_opt BLOCK_SIZE REPORT MARGIN TRANSFORMS SEARCH)
  if(DEFINED NVCC_ORION_${_opt} AND NOT NVCC_ORION_${_opt} STREQUAL "")
    string(TOLOWER "${_opt}" _name)
    string(REPLACE "_" "-" _name "${_name}")
    set(_value "${NVCC_ORION_${_opt}}")
    if(_opt STREQUAL "REPORT")
      get_filename_component(_value "${_value}" ABSOLUTE BASE_DIR "${CMAKE_BINARY_DIR}")
    endif()
    list(APPEND _nvcc_orion_flags "--orion-${_name}=${_value}")
  endif()
endforeach()
if(_nvcc_orion_flags)
  list(JOIN _nvcc_orion_flags " " _joined)
  # Initialises CMAKE_CUDA_FLAGS when the CUDA language is enabled (toolchain or include form).
  string(APPEND CMAKE_CUDA_FLAGS_INIT " ${_joined}")
  list(APPEND CUDA_NVCC_FLAGS ${_nvcc_orion_flags})
endif()

# ccache as the CUDA launcher: let it hash `nvcc-orion cache-key` (once; a reconfigure finds
# the launcher already wrapped).
if(NOT DEFINED CMAKE_CUDA_COMPILER_LAUNCHER AND DEFINED ENV{CMAKE_CUDA_COMPILER_LAUNCHER})
  set(CMAKE_CUDA_COMPILER_LAUNCHER "$ENV{CMAKE_CUDA_COMPILER_LAUNCHER}" CACHE STRING "CUDA compiler launcher")
endif()
if(CMAKE_CUDA_COMPILER_LAUNCHER)
  list(GET CMAKE_CUDA_COMPILER_LAUNCHER 0 _nvcc_orion_launcher)
  get_filename_component(_nvcc_orion_launcher "${_nvcc_orion_launcher}" NAME_WE)
  if(_nvcc_orion_launcher STREQUAL "ccache")
    set(CMAKE_CUDA_COMPILER_LAUNCHER
      "${CMAKE_COMMAND};-E;env;CCACHE_COMPILERCHECK=%compiler% cache-key;${CMAKE_CUDA_COMPILER_LAUNCHER}"
      CACHE STRING "CUDA compiler launcher (ccache hashing `nvcc-orion cache-key`)" FORCE)
  endif()
endif()
