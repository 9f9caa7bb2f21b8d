#!/usr/bin/env bash
# Where a build's CPU time goes, per program (issue 35): `perf record` samples plain nvcc,
# nvcc-orion's default mode and adapt on one file (cold, no variant cache) and prints, per
# mode, the CPU seconds of each program of the build (ptxas, cicc, cc1plus, cuobjdump, nvdisasm,
# nvcc-orion itself, ...) and how many times the toolkit's tools ran (strace), as a Markdown
# table. CPU time, not wall time: the share of each step, which load on a shared machine
# disturbs less than it disturbs the wall clock.
# Usage: scripts/build-breakdown.sh [FILE.cu] (default bench/build/instances.cu); needs perf
# and strace. Env: ORION_BIN (default target/release/nvcc-orion), FREQ (samples/s, 499).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_setup
FILE="${1:-bench/build/instances.cu}"
FREQ="${FREQ:-499}"
ARGS=(-c -O3 -gencode "arch=compute_80,code=sm_80" -gencode "arch=compute_90,code=sm_90" "$FILE" -o "$TMP/x.o")
declare -A CMDS=(
    [nvcc]="$NVCC"
    [default]="env NVCC_ORION_CACHE=off $ORION"
    [adapt]="env NVCC_ORION=adapt NVCC_ORION_CACHE=off $ORION"
)
for mode in nvcc default adapt; do
    read -r -a cmd <<<"${CMDS[$mode]}"
    perf record -q -F "$FREQ" -o "$TMP/$mode.perf" -- "${cmd[@]}" "${ARGS[@]}" >/dev/null 2>&1
    perf report -i "$TMP/$mode.perf" --sort comm --stdio -F sample,comm 2>/dev/null |
        awk -v f="$FREQ" '!/^#/ && NF == 2 {printf "%s %.2f\n", $2, $1 / f}' >"$TMP/$mode.cpu"
    strace -f -qq -e trace=execve -e signal=none -o "$TMP/$mode.strace" "${cmd[@]}" "${ARGS[@]}" >/dev/null 2>&1
    grep -E 'execve\(.* = 0$' "$TMP/$mode.strace" | grep -o 'execve("[^"]*"' | sed 's/.*\///; s/"$//' |
        sort | uniq -c | awk '{print $2, $1}' >"$TMP/$mode.runs"
done
progs=$(cat "$TMP"/*.cpu | awk '{print $1}' | sort -u)
echo "| program | nvcc: CPU s (runs) | default: CPU s (runs) | adapt: CPU s (runs) |"
echo "|---|---:|---:|---:|"
for p in $progs; do
    row="| $p"
    for mode in nvcc default adapt; do
        c=$(awk -v p="$p" '$1 == p {print $2}' "$TMP/$mode.cpu")
        n=$(awk -v p="$p" '$1 == p {print $2}' "$TMP/$mode.runs")
        row+=" | ${c:-0} (${n:-0})"
    done
    echo "$row |"
done
for mode in nvcc default adapt; do
    printf '%s ' "total $mode:"; awk '{s += $2} END {printf "%.2f s CPU\n", s}' "$TMP/$mode.cpu"
done
