#!/usr/bin/env bash
# Whether two nvcc-orion binaries make the same outputs: a refactor must not change a byte.
#   scripts/same-outputs.sh OLD_BIN NEW_BIN [WORK_DIR]
# Compiles a set of example, test and bench kernels under the default, adapt and forced
# rewrite modes (cubins for sm_80/86/90, objects for sm_89) and each one's `explain --html`
# page with both binaries, and compares the outputs, reports and messages byte for byte
# after masking nvcc's random temporary names (`tmpxft_...`) and the work folder. Needs the
# toolkit (`eval "$(scripts/setup.sh)"`). Prints one DIFF line per difference and a count;
# exits 1 if anything differs.
set -uo pipefail
old=$(realpath "$1") new=$(realpath "$2") work=${3:-$(mktemp -d)}
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export NVCC_ORION_NVCC="${NVCC_ORION_NVCC:-$CUDA_HOME/bin/nvcc}" NVCC_ORION_CACHE=off
unset NVCC_ORION NVCC_ORION_REPORT NVCC_ORION_VERBOSE
rm -rf "$work/old" "$work/new"
files=(examples/kernels/walk.cu examples/kernels/nbody.cu examples/kernels/stencil2d.cu
  tests/kernels/assembly/banks.cu tests/kernels/tune/pressure.cu tests/kernels/spill2smem/spills.cu
  tests/kernels/explain/rewrite.cu tests/kernels/multi/taken.cu bench/gpu/chase.cu bench/gpu/oversize.cu)
configs=("tune:-cubin -arch=sm_80" "tune:-cubin -arch=sm_90" "adapt:-cubin -arch=sm_90"
  "tune:-c -arch=sm_89" "tune:-cubin -arch=sm_90 --orion-force=spill2smem"
  "tune:-cubin -arch=sm_86 --orion-force=regdem")
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
for f in "${files[@]}"; do
  n=$(basename "$f" .cu)
  for cfg in "${configs[@]}"; do
    mode=${cfg%%:*} args=${cfg#*:}
    tag=$(echo "$mode $args" | tr -c 'a-z0-9' _)
    for side in old new; do
      bin=$old
      [[ $side == new ]] && bin=$new
      d=$work/$side/$n
      mkdir -p "$d"
      # shellcheck disable=SC2086 # the configuration's options are words
      (cd "$d" && NVCC_ORION=$mode NVCC_ORION_REPORT=$d/$tag.jsonl "$bin" $args -I"$repo/bench/gpu" \
        "$repo/$f" -o "$tag.out" >"$tag.log" 2>&1; echo "exit $?" >>"$tag.log")
      mask "$d/$tag.jsonl" "$d/$tag.log"
    done
    for ext in out jsonl log; do compare "$n/$tag.$ext"; done
  done
  for side in old new; do
    bin=$old
    [[ $side == new ]] && bin=$new
    d=$work/$side/$n
    (cd "$d" && "$bin" explain --html "$n.html" "$repo/$f" -arch=sm_90 -I"$repo/bench/gpu" >"$n.explain" 2>&1)
    mask "$d/$n.html" "$d/$n.explain"
  done
  compare "$n/$n.html"
  compare "$n/$n.explain"
done
echo "same=$same differ=$differ (in $work)"
((differ == 0))
