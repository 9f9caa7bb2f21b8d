#!/usr/bin/env bash
# Find (or install from PyPI) a CUDA 13 toolkit plus cmake and ninja.
# Prints `export` lines on stdout, so use it as:   eval "$(scripts/setup.sh)"
# Progress goes to stderr. Safe to run repeatedly; a second run installs nothing.
set -euo pipefail

CUDA_PIN="13.5.*"
CUDA_PKGS=(nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-crt nvidia-cuda-cuobjdump
    nvidia-cuda-nvdisasm nvidia-nvvm)
CACHE="${NVCC_ORION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcc-orion}"
VENV="$CACHE/cuda-venv"
# cmake/ninja are linked here rather than putting the venv's bin (and its python) on PATH.
TOOLS_BIN="$CACHE/bin"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# True when $1 is a real CUDA 13 nvcc (not nvcc-orion or one of our shims, which would recurse).
usable_nvcc() {
    local c="$1" real ver
    [[ -n "$c" && -x "$c" && ! -d "$c" ]] || return 1
    real="$(readlink -f "$c")"
    case "$real" in
        "$REPO"/shims/* | */nvcc-orion) return 1 ;;
    esac
    ver="$(NVCC_ORION=off "$c" --version 2>/dev/null)" || return 1
    grep -q 'Cuda compiler driver' <<<"$ver" || return 1
    grep -Eq 'release 13\.' <<<"$ver"
}

venv_python() {
    if [[ ! -x "$VENV/bin/python" ]]; then
        local py
        py="$(command -v python3 || true)"
        [[ -n "$py" ]] || die "python3 not found; install python3 and python3-venv"
        log "creating venv $VENV"
        mkdir -p "$CACHE"
        "$py" -m venv "$VENV" >&2 || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    fi
    printf '%s\n' "$VENV/bin/python"
}

pip_install() {
    local py
    py="$(venv_python)"
    log "pip install $* (into $VENV)"
    "$py" -m pip install --disable-pip-version-check --no-input -q "$@" >&2 ||
        die "pip install $* failed"
}

venv_toolkit_root() {
    local purelib
    purelib="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    printf '%s\n' "$purelib/nvidia/cu13"
}

# --- 1. nvcc -------------------------------------------------------------------------------------
NVCC=""
for cand in "${NVCC_ORION_NVCC:-}" "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" \
    "${CUDA_PATH:+$CUDA_PATH/bin/nvcc}" "$(command -v nvcc 2>/dev/null || true)"; do
    if usable_nvcc "$cand"; then
        NVCC="$(readlink -f "$cand")"
        break
    elif [[ -n "$cand" ]]; then
        log "ignoring $cand (not a real CUDA 13 nvcc)"
    fi
done

if [[ -z "$NVCC" ]]; then
    if [[ -x "$VENV/bin/python" ]] && usable_nvcc "$(venv_toolkit_root)/bin/nvcc"; then
        log "reusing PyPI CUDA toolkit in $VENV"
    else
        pip_install "${CUDA_PKGS[@]/%/==$CUDA_PIN}"
    fi
    NVCC="$(venv_toolkit_root)/bin/nvcc"
    usable_nvcc "$NVCC" || die "$NVCC does not report CUDA release 13.x"
    # CCCL (cooperative_groups, CUB, Thrust, libcu++) is part of every real toolkit; on PyPI it is
    # versioned on its own, so take the newest 13.x rather than the compiler's pin.
    if [[ ! -f "$(venv_toolkit_root)/include/nv/target" ]]; then
        pip_install "nvidia-cuda-cccl>=13,<14"
    fi
fi
CUDA_ROOT="$(dirname "$(dirname "$NVCC")")"
for tool in ptxas cuobjdump nvdisasm fatbinary nvlink; do
    [[ -x "$CUDA_ROOT/bin/$tool" ]] || die "$CUDA_ROOT/bin/$tool missing (incomplete toolkit)"
done
log "nvcc: $NVCC ($("$NVCC" --version | grep -o 'release [0-9.]*, V[0-9.]*'))"

# --- 2. cmake + ninja ----------------------------------------------------------------------------
# CMake learnt CUDA 13 toolkits late; older ones mis-detect it, so require a recent one.
cmake_ok() {
    local v
    v="$("$1" --version 2>/dev/null | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')" || return 1
    # shellcheck disable=SC2086
    set -- $v
    [[ $# -eq 2 ]] && { (($1 > 3)) || (($1 == 3 && $2 >= 24)); }
}
# Prefer cmake/ninja already on PATH (outside $TOOLS_BIN); else link the venv's copies there.
mkdir -p "$TOOLS_BIN"
path_wo_tools="${PATH//"$TOOLS_BIN":/}"
sys_cmake="$(PATH="$path_wo_tools" command -v cmake 2>/dev/null || true)"
sys_ninja="$(PATH="$path_wo_tools" command -v ninja 2>/dev/null || true)"
need=()
if [[ -n "$sys_cmake" ]] && cmake_ok "$sys_cmake"; then
    rm -f "$TOOLS_BIN/cmake" "$TOOLS_BIN/ctest"
    sys_cmake=yes
else
    sys_cmake=""
    [[ -x "$VENV/bin/cmake" ]] && cmake_ok "$VENV/bin/cmake" || need+=(cmake)
fi
if [[ -n "$sys_ninja" ]]; then
    rm -f "$TOOLS_BIN/ninja"
else
    [[ -x "$VENV/bin/ninja" ]] || need+=(ninja)
fi
((${#need[@]} == 0)) || pip_install "${need[@]}"
[[ -n "$sys_cmake" ]] || ln -sfn "$VENV/bin/cmake" "$TOOLS_BIN/cmake"
[[ -n "$sys_cmake" ]] || ln -sfn "$VENV/bin/ctest" "$TOOLS_BIN/ctest"
[[ -n "$sys_ninja" ]] || ln -sfn "$VENV/bin/ninja" "$TOOLS_BIN/ninja"

# --- 2b. Debian packages some tests need (opt-in; CI sets the variables). Each test fails
# under CI without its tool rather than skipping.
# opt_in_package VAR COMMAND PACKAGE: install PACKAGE when VAR=1 and COMMAND is missing.
opt_in_package() {
    [[ "${!1:-}" == 1 ]] && ! command -v "$2" >/dev/null || return 0
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        log "apt-get install $3"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$3" >&2 ||
            { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$3" >&2; } ||
            log "could not install $3"
    else
        log "$2 is not installed and cannot be (not root, or no apt-get)"
    fi
}
# ccache and sccache: the launcher tests, with the distribution's packages as users have them.
opt_in_package NVCC_ORION_SETUP_CCACHE ccache ccache
opt_in_package NVCC_ORION_SETUP_CCACHE sccache sccache
# Chromium (headless, /usr/bin/chromium): the explain page's browser test (tests/cli/explain.rs).
opt_in_package NVCC_ORION_SETUP_CHROMIUM chromium chromium
# clang++: the selector glue must link and run when clang++ does the final link (issue 21;
# tests/selector/runtime_glue.rs, tests/selector/runtime_select.rs).
opt_in_package NVCC_ORION_SETUP_CLANG clang++ clang

# --- 2d. sccache with its dist features, for the compile-farm tests (opt-in: CI sets
# NVCC_ORION_SETUP_SCCACHE_DIST=1). The distribution's sccache (0.4) has no dist server and
# runs nvcc whole; 0.19 splits nvcc with --dryrun and distributes the ptxas steps. Built once
# from crates.io into the cache, like the toolkit (31 minutes on 2 cores shared by six builds;
# later runs reuse it), and bubblewrap (Debian's package) for the build server's sandbox.
SCCACHE_DIST_VERSION=0.19.0
SCCACHE_DIST_BIN="$CACHE/sccache-dist/bin"
sccache_dist_ok() {
    [[ -x "$SCCACHE_DIST_BIN/sccache-dist" ]] &&
        "$SCCACHE_DIST_BIN/sccache" --version 2>/dev/null | grep -qF "$SCCACHE_DIST_VERSION"
}
if [[ "${NVCC_ORION_SETUP_SCCACHE_DIST:-}" == 1 ]]; then
    if ! sccache_dist_ok; then
        log "cargo install sccache $SCCACHE_DIST_VERSION with dist-client,dist-server into $CACHE/sccache-dist (once; slow)"
        cargo install sccache --version "$SCCACHE_DIST_VERSION" --locked --no-default-features \
            --features dist-client,dist-server --root "$CACHE/sccache-dist" >&2 ||
            log "could not build sccache with its dist features"
    fi
    if ! command -v bwrap >/dev/null; then
        if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
            log "apt-get install bubblewrap"
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >&2 ||
                { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >&2; } ||
                log "could not install bubblewrap"
        else
            log "bubblewrap is not installed and cannot be (not root, or no apt-get)"
        fi
    fi
fi

# --- 2e. PyTorch, for the CUDAExtension test (opt-in: CI sets NVCC_ORION_SETUP_TORCH=1). Its
# PyPI wheel is built with CUDA 13 and imports the CUDA libraries it names (about 2.5 GB with
# them, in a venv of its own: its CUDA runtime pin differs from the toolkit's). Installed once
# into the cache (8 minutes here on 2 cores), a stamp saying it is complete.
TORCH_PIN=2.15.0
TORCH_VENV="$CACHE/torch-venv"
if [[ "${NVCC_ORION_SETUP_TORCH:-}" == 1 && ! -f "$TORCH_VENV/torch-$TORCH_PIN.ok" ]]; then
    log "pip install torch==$TORCH_PIN ninja into $TORCH_VENV (once; slow)"
    if python3 -m venv "$TORCH_VENV" >&2 &&
        "$TORCH_VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q \
            "torch==$TORCH_PIN" ninja >&2; then
        touch "$TORCH_VENV/torch-$TORCH_PIN.ok"
    else
        log "could not install torch"
    fi
fi

# --- 2f. Triton, for the ptxas shim's Triton test (opt-in: CI sets NVCC_ORION_SETUP_TRITON=1).
# Its PyPI wheel needs no GPU to compile kernels ahead of time and brings its own ptxas; no
# dependencies (a 286 MB download, 393 MB installed; under a minute here). A venv of its own.
TRITON_PIN=3.9.0
TRITON_VENV="$CACHE/triton-venv"
if [[ "${NVCC_ORION_SETUP_TRITON:-}" == 1 && ! -f "$TRITON_VENV/triton-$TRITON_PIN.ok" ]]; then
    log "pip install triton==$TRITON_PIN into $TRITON_VENV (once)"
    if python3 -m venv "$TRITON_VENV" >&2 &&
        "$TRITON_VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q \
            "triton==$TRITON_PIN" >&2; then
        touch "$TRITON_VENV/triton-$TRITON_PIN.ok"
    else
        log "could not install triton"
    fi
fi

# --- 3. PATH, then a one-off host-link check (cached per toolkit) --------------------------------
new_path="$PATH"
for d in "$TOOLS_BIN" "$CUDA_ROOT/bin"; do
    case ":$new_path:" in
        *":$d:"*) ;;
        *) new_path="$d:$new_path" ;;
    esac
done
PATH="$new_path"
command -v cmake >/dev/null || die "cmake not available"
command -v ninja >/dev/null || die "ninja not available"

extra_lib=""
stamp="$CACHE/link-ok.$(printf '%s' "$NVCC" | cksum | cut -d' ' -f1)"
if [[ -f "$stamp" ]]; then
    extra_lib="$(cat "$stamp")"
else
    log "checking that nvcc can compile and link a host executable"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    cat >"$tmp/k.cu" <<'EOF'
#include <cstdio>
__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }
int main() {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    std::printf("%s, %d device(s)\n", cudaGetErrorName(e), n);
    return 0;
}
EOF
    if "$NVCC" "$tmp/k.cu" -o "$tmp/app" 2>"$tmp/err" && "$tmp/app" >/dev/null; then
        :
    elif LIBRARY_PATH="$CUDA_ROOT/lib${LIBRARY_PATH:+:$LIBRARY_PATH}" \
        "$NVCC" "$tmp/k.cu" -o "$tmp/app" 2>>"$tmp/err"; then
        extra_lib="$CUDA_ROOT/lib"
    else
        cat "$tmp/err" >&2
        die "nvcc cannot link a host executable (see above)"
    fi
    printf '%s' "$extra_lib" >"$stamp"
fi

# --- 4. the environment --------------------------------------------------------------------------
printf 'export CUDA_HOME=%q\n' "$CUDA_ROOT"
printf 'export PATH=%q\n' "$PATH"
# A stale NVCC_ORION_NVCC would win over CUDA_HOME inside nvcc-orion: replace it.
if [[ -n "${NVCC_ORION_NVCC:-}" && "$(readlink -f "$NVCC_ORION_NVCC" 2>/dev/null)" != "$NVCC" ]]; then
    printf 'export NVCC_ORION_NVCC=%q\n' "$NVCC"
fi
if [[ -n "$extra_lib" ]]; then
    case ":${LIBRARY_PATH:-}:" in
        *":$extra_lib:"*) ;;
        *) printf 'export LIBRARY_PATH=%q\n' "$extra_lib${LIBRARY_PATH:+:$LIBRARY_PATH}" ;;
    esac
fi
if [[ -f "$TORCH_VENV/torch-$TORCH_PIN.ok" ]]; then
    printf 'export NVCC_ORION_TORCH_PYTHON=%q\n' "$TORCH_VENV/bin/python"
fi
if [[ -f "$TRITON_VENV/triton-$TRITON_PIN.ok" ]]; then
    printf 'export NVCC_ORION_TRITON_PYTHON=%q\n' "$TRITON_VENV/bin/python"
fi
# Not on PATH: the launcher tests want the distribution's sccache there.
if sccache_dist_ok; then
    printf 'export NVCC_ORION_SCCACHE_DIST=%q\n' "$SCCACHE_DIST_BIN"
fi
log "ready: CUDA_HOME=$CUDA_ROOT, cmake=$(command -v cmake), ninja=$(command -v ninja)"
