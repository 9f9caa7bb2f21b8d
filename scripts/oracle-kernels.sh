#!/usr/bin/env bash
# Compile every tests/kernels/oracle/*.cu for each oracle architecture into
# OUTDIR/<stem>_sm<arch>.cubin (the coverage kernels of the instruction-semantics oracle, issue 18).
#
#   scripts/oracle-kernels.sh OUTDIR      build (two nvcc at a time; ORACLE_JOBS=N to change)
#   scripts/oracle-kernels.sh --archs     print the architecture list, one per line
#
# nvcc: $NVCC_ORION_NVCC, else $CUDA_HOME/bin/nvcc, else nvcc on PATH. sm_90a is in the list
# because ptxas accepts wgmma only for the architecture-specific target (wgmma.cu guards it by
# __CUDA_ARCH_FEAT_SM90_ALL); every file builds for every entry.
set -euo pipefail

ARCHS=(75 80 86 89 90 90a)

if [[ "${1:-}" == "--archs" ]]; then
    printf '%s\n' "${ARCHS[@]}"
    exit 0
fi
out="${1:?usage: scripts/oracle-kernels.sh OUTDIR | --archs}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nvcc="${NVCC_ORION_NVCC:-}"
if [[ -z "$nvcc" && -n "${CUDA_HOME:-}" ]]; then
    nvcc="$CUDA_HOME/bin/nvcc"
fi
nvcc="${nvcc:-nvcc}"
mkdir -p "$out"

jobs=()
for src in "$root"/tests/kernels/oracle/*.cu; do
    for a in "${ARCHS[@]}"; do
        jobs+=("$a" "$src")
    done
done
# One nvcc per (arch, source); xargs exits non-zero when any fails (nvcc's message is above).
# shellcheck disable=SC2016 # the script's `$1`..`$3` are sh's own, expanded there
printf '%s\n' "${jobs[@]}" | xargs -n 2 -P "${ORACLE_JOBS:-2}" sh -c '
    out="$1/$(basename "$3" .cu)_sm$2.cubin"
    rm -f "$out"
    exec "$0" -cubin -arch="sm_$2" -o "$out" "$3"
' "$nvcc" "$out"
