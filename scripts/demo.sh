#!/usr/bin/env bash
# Build nvcc-orion and compile every examples/kernels/*.cu through it, once with the real nvcc
# for comparison. Per-kernel output of nvcc-orion (NVCC_ORION_VERBOSE=1) goes to the terminal;
# a summary table with registers per kernel (from cuobjdump) comes last.
# Usage: scripts/demo.sh [extra nvcc flags...]   (default arch: DEMO_ARCH=sm_90)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
ARCH="${DEMO_ARCH:-sm_90}"
MODE="${NVCC_ORION:-tune}"

eval "$(scripts/setup.sh)"
echo "== cargo build --release" >&2
cargo build --release
# shellcheck source=scripts/target-dir.sh
source scripts/target-dir.sh
ORION="$TARGET_DIR/release/nvcc-orion"
NVCC="$CUDA_HOME/bin/nvcc"

OUT="$(mktemp -d "${TMPDIR:-/tmp}/nvcc-orion-demo.XXXXXX")"
shopt -s nullglob
kernels=(examples/kernels/*.cu)
((${#kernels[@]})) || { echo "no kernels in examples/kernels" >&2; exit 1; }

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# "mangled REG" per function, from cuobjdump's resource usage of an object file.
regs_of() {
    "$CUDA_HOME/bin/cuobjdump" -res-usage "$1" 2>/dev/null |
        awk '/^ Function /{f=$2; sub(/:$/, "", f)} /REG:/{for(i=1;i<=NF;i++) if($i ~ /^REG:/){sub(/REG:/,"",$i); print f, $i}}'
}

summary=()
failed=0
for k in "${kernels[@]}"; do
    name="$(basename "$k" .cu)"
    flags=(-c "-arch=$ARCH" -Xptxas -v "$@")
    echo >&2
    echo "== $name: NVCC_ORION=$MODE nvcc-orion ${flags[*]} $k" >&2
    t0=$(date +%s%N)
    if NVCC_ORION="$MODE" NVCC_ORION_VERBOSE=1 NVCC_ORION_REPORT="$OUT/$name.report.json" \
        "$ORION" "${flags[@]}" "$k" -o "$OUT/$name.orion.o"; then
        t_orion=$(ms_since "$t0")
        status=ok
    else
        t_orion=-
        status=FAILED
        failed=$((failed + 1))
    fi
    # Baseline with the real nvcc, quietly, to compare register counts.
    t0=$(date +%s%N)
    if "$NVCC" -c "-arch=$ARCH" "$@" "$k" -o "$OUT/$name.nvcc.o" 2>"$OUT/$name.nvcc.err"; then
        t_nvcc=$(ms_since "$t0")
    else
        t_nvcc=-
        cat "$OUT/$name.nvcc.err" >&2
    fi
    [[ -f "$OUT/$name.report.json" ]] && echo "   report: $OUT/$name.report.json" >&2
    if [[ $status == ok ]]; then
        declare -A base=()
        while read -r fn r; do base[$fn]=$r; done < <(regs_of "$OUT/$name.nvcc.o")
        while read -r fn r; do
            demangled="$(c++filt "$fn" 2>/dev/null || echo "$fn")"
            summary+=("$(printf '%-12s %-8s %-44.44s %8s %8s %9s %9s' "$name" "$status" \
                "${demangled%%(*}" "${base[$fn]:--}" "$r" "$t_nvcc" "$t_orion")")
        done < <(regs_of "$OUT/$name.orion.o")
        unset base
    else
        summary+=("$(printf '%-12s %-8s' "$name" "$status")")
    fi
done

echo
echo "== Summary: ${#kernels[@]} example files, arch $ARCH, NVCC_ORION=$MODE ($(grep -o 'release [0-9.]*' <<<"$("$NVCC" --version)"))"
printf '%-12s %-8s %-44s %8s %8s %9s %9s\n' file status kernel "nvcc reg" "orion reg" "nvcc ms" "orion ms"
printf '%s\n' "${summary[@]}"
echo "(objects and reports in $OUT)"
if ((failed)); then
    echo "FAILED: $failed of ${#kernels[@]} files did not compile through nvcc-orion" >&2
    exit 1
fi
echo "OK: all ${#kernels[@]} files compiled through nvcc-orion"
