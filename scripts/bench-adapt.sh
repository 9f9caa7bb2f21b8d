#!/usr/bin/env bash
# Adapt's cold build against nvcc (issue 45: within 1.5x in time, 2x in object size, on
# template-heavy files), in paired runs: for each file, RUNS pairs of
#   nvcc -c -O3 -gencode sm_80 -gencode sm_90 FILE   and   NVCC_ORION=adapt NVCC_ORION_CACHE=off nvcc-orion (same)
# back to back, which one goes first alternating; the ratio is the median of the per-pair
# ratios (load drift on a shared machine hits both sides of a pair alike), in wall time and in
# CPU time (user + system of the whole tree, which a loaded machine disturbs far less). Also: how many
# kernel records (kernel x arch) ship at least one `__orion_v` variant, how many budgets were
# built only to be measured (the report's `measured_only`), and how many ranked variants the
# object-size cap left out (`left_out: object-size`).
# Env: RUNS (default 3), ORION_BIN (another binary), BENCH_FILES (default instances.cu and
# measured.cu of bench/build). Prints a markdown table.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
RUNS="${RUNS:-3}"
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_setup
ARCHS=(-gencode "arch=compute_80,code=sm_80" -gencode "arch=compute_90,code=sm_90")
read -r -a FILES <<<"${BENCH_FILES:-bench/build/instances.cu bench/build/measured.cu}"

median() {
    sort -g | awk '{a[NR]=$1} END {printf "%.3f\n", NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'
}

echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| file | kernels (per arch) | with variants | measured-only budgets | left out by the cap | nvcc s (median) | adapt / nvcc time | adapt / nvcc CPU | adapt / nvcc object |"
echo "|---|---|---|---|---|---|---|---|---|"
for k in "${FILES[@]}"; do
    name="$(basename "$k" .cu)"
    args=(-c -O3 "${ARCHS[@]}" "$k")
    ratios=() cpus=() nvs=()
    for ((i = 0; i < RUNS; i++)); do
        run_nvcc() { read -r tn cn < <(time_us "$NVCC" "${args[@]}" -o "$TMP/$name.nvcc.o"); }
        run_adapt() {
            read -r ta ca < <(time_us env NVCC_ORION=adapt NVCC_ORION_CACHE=off \
                NVCC_ORION_REPORT="$TMP/$name.jsonl" "$ORION" "${args[@]}" -o "$TMP/$name.adapt.o")
        }
        rm -f "$TMP/$name.jsonl"
        if ((i % 2)); then run_adapt; run_nvcc; else run_nvcc; run_adapt; fi
        ratios+=("$(ratio "$ta" "$tn")")
        cpus+=("$(ratio "$ca" "$cn")")
        nvs+=("$(awk -v t="$tn" 'BEGIN {printf "%.2f", t / 1e6}')")
    done
    size="$(ratio "$(stat -c %s "$TMP/$name.adapt.o")" "$(stat -c %s "$TMP/$name.nvcc.o")")"
    read -r nk nv nm nl < <(python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
recs = [r for r in recs if "kernel" in r]
shipped = lambda r: [v for v in r.get("variants", []) if "dropped" not in v]
print(len(recs), sum(len(shipped(r)) > 1 for r in recs),
      sum(c.get("measured_only", False) for r in recs for c in r["candidates"]),
      sum(v.get("left_out") == "object-size" for r in recs for v in r.get("variants", [])))
' "$TMP/$name.jsonl")
    echo "| $name | $nk | $nv | $nm | $nl | $(printf '%s\n' "${nvs[@]}" | median) | $(printf '%s\n' "${ratios[@]}" | median) (${ratios[*]}) | $(printf '%s\n' "${cpus[@]}" | median) (${cpus[*]}) | $size |"
done
echo
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
