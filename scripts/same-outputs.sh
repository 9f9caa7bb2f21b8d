#!/usr/bin/env bash
# Whether two nvcc-orion binaries make the same outputs: a refactor must not change a byte.
#   scripts/same-outputs.sh OLD_BIN NEW_BIN [WORK_DIR]
# Compiles the example, test and bench kernels and every bench/build file in every mode: the
# default (cubins for sm_80/90, objects for sm_89 and for sm_80 + sm_90 together), adapt (a cubin, and an object with its
# launch-time glue), train, a profile-guided build (a profile naming walk.cu's variant 1 the
# fastest) and each rewrite forced (spill2smem, regdem). For each compile it compares the
# output, the report and the messages, then what `explain` makes of that report (the tables,
# `--json` and the page); per source file, `explain --html` of the source; and at the end
# `explain --project` of all the reports together (the summary and the overview page). Both
# binaries' outputs are compared byte for byte after masking nvcc's random temporary names
# (`tmpxft_...`) and the work folder. Needs the toolkit (`eval "$(scripts/setup.sh)"`).
# `SAME_OUTPUTS_FILES="a.cu b.cu"` limits the sources (paths from the repository root).
# Prints one DIFF line per difference and a count; exits 1 if anything differs.
set -uo pipefail
old=$(realpath "$1") new=$(realpath "$2") work=$(realpath -m "${3:-$(mktemp -d)}")
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export NVCC_ORION_NVCC="${NVCC_ORION_NVCC:-$CUDA_HOME/bin/nvcc}" NVCC_ORION_CACHE=off
unset NVCC_ORION NVCC_ORION_REPORT NVCC_ORION_VERBOSE NVCC_ORION_PROFILE NVCC_ORION_KEEP_CUBINS
rm -rf "$work/old" "$work/new"
mkdir -p "$work"
if [[ -n ${SAME_OUTPUTS_FILES:-} ]]; then
  read -r -a files <<<"$SAME_OUTPUTS_FILES"
else
  files=(examples/kernels/walk.cu examples/kernels/nbody.cu examples/kernels/stencil2d.cu
    tests/kernels/assembly/banks.cu tests/kernels/tune/pressure.cu tests/kernels/spill2smem/spills.cu
    tests/kernels/explain/rewrite.cu tests/kernels/multi/taken.cu bench/gpu/chase.cu bench/gpu/oversize.cu)
  for f in "$repo"/bench/build/*.cu; do files+=("bench/build/$(basename "$f")"); done
fi
# A profile as a training run on an H100 writes it: walk.cu's variant 1 measured fastest.
profile=$work/run.json
walk=_Z13walk_featuresPKiPKfPfii
entry() {
  printf '{"kernel": "%s", "arch": "sm_90", "device": "NVIDIA H100 80GB HBM3", "key": {"kernel_id": 2166136261, "device": 0, "grid": [528, 1, 1], "block": [256, 1, 1], "shared": 0}, "variant": %s, "variant_name": "%s", "launches": 11, "samples": 10, "median_us": %s, "spread": 0.0100}' \
    "$walk" "$1" "$2" "$3"
}
printf '{"format": "nvcc-orion-profile", "version": 1, "entries": [\n%s,\n%s\n]}\n' \
  "$(entry 0 "$walk" 120.500)" "$(entry 1 "${walk}__orion_v1" 100.250)" >"$profile"
configs=("tune:-cubin -arch=sm_80" "tune:-cubin -arch=sm_90" "tune:-c -arch=sm_89"
  "adapt:-cubin -arch=sm_90" "adapt:-c -arch=sm_80" "train:-c -arch=sm_90"
  "tune:-c -arch=sm_90 --orion-profile=$profile"
  "tune:-cubin -arch=sm_90 --orion-force=spill2smem" "tune:-cubin -arch=sm_86 --orion-force=regdem"
  "tune:-c -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90")
mask() { sed -i -E "s#$work/(old|new)#W#g; s#tmpxft_[0-9a-f_]+#tmpxft#g; s#/tmp/[^\" <]*#TMP#g" "$@"; }
same=0 differ=0
compare() {
  if cmp -s <(LC_ALL=C sed -E 's/tmpxft_[0-9a-f_]+/tmpxft/g' "$work/old/$1") \
    <(LC_ALL=C sed -E 's/tmpxft_[0-9a-f_]+/tmpxft/g' "$work/new/$1"); then
    same=$((same + 1))
  else
    differ=$((differ + 1))
    echo "DIFF $1"
  fi
}
bin_of() { if [[ $1 == new ]]; then echo "$new"; else echo "$old"; fi; }
for f in "${files[@]}"; do
  n=$(basename "$f" .cu)
  for cfg in "${configs[@]}"; do
    mode=${cfg%%:*} args=${cfg#*:}
    tag=$(echo "$mode ${args//$work\//}" | tr -c 'a-z0-9' _)
    for side in old new; do
      bin=$(bin_of $side)
      d=$work/$side/$n
      mkdir -p "$d"
      # shellcheck disable=SC2086 # the configuration's options are words
      (cd "$d" && NVCC_ORION=$mode NVCC_ORION_REPORT=$d/$tag.jsonl "$bin" $args -I"$repo/bench/gpu" \
        "$repo/$f" -o "$tag.out" >"$tag.log" 2>&1; echo "exit $?" >>"$tag.log")
      touch "$d/$tag.jsonl"
      mask "$d/$tag.jsonl" "$d/$tag.log"
      # What `explain` reads back from the report: the tables, the JSON lines, the page.
      (cd "$d" && "$bin" explain --html "$tag.report.html" "$tag.jsonl" >"$tag.report.txt" 2>&1
        echo "exit $?" >>"$tag.report.txt"
        "$bin" explain --json "$tag.jsonl" >"$tag.report.json" 2>&1; echo "exit $?" >>"$tag.report.json")
      touch "$d/$tag.report.html"
      mask "$d/$tag.report.html" "$d/$tag.report.txt" "$d/$tag.report.json"
    done
    for ext in out jsonl log report.txt report.json report.html; do compare "$n/$tag.$ext"; done
  done
  for side in old new; do
    bin=$(bin_of $side)
    d=$work/$side/$n
    (cd "$d" && "$bin" explain --html "$n.html" "$repo/$f" -arch=sm_90 -I"$repo/bench/gpu" >"$n.explain" 2>&1)
    touch "$d/$n.html"
    mask "$d/$n.html" "$d/$n.explain"
  done
  compare "$n/$n.html"
  compare "$n/$n.explain"
done
# The whole build at once: every report of the run, as `explain --project` reads a build's.
for side in old new; do
  bin=$(bin_of $side)
  d=$work/$side
  find "$d" -name '*.jsonl' ! -name project.jsonl | LC_ALL=C sort | xargs cat >"$d/project.jsonl"
  (cd "$d" && "$bin" explain --project --html project.html project.jsonl >project.explain 2>&1
    echo "exit $?" >>project.explain)
  touch "$d/project.html"
  mask "$d/project.html" "$d/project.explain"
done
compare project.explain
compare project.html
echo "same=$same differ=$differ (in $work)"
((differ == 0))
