#!/usr/bin/env bash
# Build the GPU harness (no GPU needed): every program of bench/gpu for sm_90, statically
# linked (-cudart static), with
#   nvcc        plain nvcc
#   default     nvcc-orion as it ships
#   budget-N    --orion-force=budget:N for every budget candidate of the program's kernels
#               (from the default build's report, built and pruned alike)
#   pragma      --orion-force=pragma (ptxas's enable_smem_spilling), where it was a candidate
#   spill2smem  --orion-force=spill2smem (our spill2smem rewrite, where proved)
#   regdem      --orion-force=regdem (regdem to the lowest proved budget)
#   adapt       NVCC_ORION=adapt: the ranked variants embedded (`<kernel>__orion_v<k>`) and the
#               launch-time selector in the object (Orion's runtime adaptation)
#   train       NVCC_ORION=train: the same variants, round-robin, a profile written at exit
# Programs whose kernels have no budget candidate get nvcc, default, adapt and train only (an
# adapt build of a kernel with no variants measures the selector's own overhead). A program's
# "// bench-orion-flags:" line adds nvcc-orion settings to all its nvcc-orion builds.
# The model's calibration (`nvcc-orion calibrate`, issue 32) ships beside them: tools/ holds
# the microbenchmark program (built here for sm_90) and nvcc-orion itself, which run.sh uses
# to calibrate on the GPU and to predict every variant before and after.
# Then packs bin/, tools/, manifest.csv, run.sh and harness.py into one archive:
#   $OUT/nvcc-orion-gpu-bench.tar.xz  (OUT: target/gpu-bench)
# manifest.csv: program,variant,flags,kernel,registers (cuobjdump -res-usage),applied,reason
# (adapt and train: applied when the kernel has variants, reason lists them: `v1=40 v2=64`).
#
# Usage: bench/gpu/build.sh [PROGRAM...]   (default: every bench/gpu/*.cu)
# Environment: NVCC_ORION_NVCC (the real nvcc; else $CUDA_HOME/bin/nvcc, else nvcc on PATH),
# NVCC_ORION_BIN (default target/release/nvcc-orion), OUT, JOBS (parallel builds, default 2),
# FORCED_PATH=driver (each forced variant through nvcc-orion -c, not on a shared front end).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${OUT:-$repo/target/gpu-bench}
orion=${NVCC_ORION_BIN:-$repo/target/release/nvcc-orion}
nvcc=${NVCC_ORION_NVCC:-}
[[ -z $nvcc && -n ${CUDA_HOME:-} ]] && nvcc=$CUDA_HOME/bin/nvcc
[[ -z $nvcc ]] && nvcc=$(command -v nvcc || true)
[[ -x $nvcc ]] || { echo "build.sh: no nvcc (set NVCC_ORION_NVCC or CUDA_HOME)" >&2; exit 2; }
[[ -x $orion ]] || { echo "build.sh: no nvcc-orion at $orion (cargo build --release)" >&2; exit 2; }
cuobjdump=$(dirname "$nvcc")/cuobjdump
jobs=${JOBS:-2}
arch=sm_90
flags=(-O3 -arch=$arch)

if (($#)); then programs=("$@"); else
  programs=()
  for f in "$here"/*.cu; do programs+=("$(basename "$f" .cu)"); done
fi
stage=$out/nvcc-orion-gpu-bench
rm -rf "$stage" "$out/obj"
mkdir -p "$stage/bin" "$out/obj"
export NVCC_ORION_NVCC=$nvcc
unset NVCC_ORION NVCC_ORION_REPORT NVCC_ORION_FORCE NVCC_ORION_TRANSFORMS NVCC_ORION_BLOCK_SIZE
start=$SECONDS

# build PROGRAM VARIANT [nvcc-orion flags...]: object through nvcc (variant nvcc) or
# nvcc-orion (its report in obj/), linked by plain nvcc with the static runtime.
build() {
  local p=$1 v=$2
  shift 2
  local o=$out/obj/$p.$v
  # (set -e does not reach inside a function called from ||: every step checks itself.)
  if [[ $v == nvcc ]]; then
    "$nvcc" -c "${flags[@]}" "$here/$p.cu" -o "$o.o" || return 1
  else
    rm -f "$o.jsonl"
    "$orion" -c "${flags[@]}" "$@" --orion-report="$o.jsonl" "$here/$p.cu" -o "$o.o" || return 1
  fi
  "$nvcc" -arch=$arch -cudart static "$o.o" -o "$stage/bin/$p.$v" || return 1
  printf '%s\n' "${flags[*]} $*" >"$o.flags"
}

# The forced variants differ from the default build only in their ptxas step, so they share
# one front end per program (host and device preprocessing, cudafe++, cicc: about 60 % of a
# build's CPU; issue 50, bench/results/suite.md). frontend PROGRAM runs the steps of nvcc's
# own dry-run listing up to cicc once, in obj/PROGRAM.fe; forced PROGRAM VARIANT FLAGS... runs
# the rest of that listing on a copy of its files: the ptxas step as `nvcc-orion --ptxas`
# with the variant's settings (the tuning hook the driver sends that step through), then
# fatbinary and the host compile, as nvcc-orion -c replays them. The binary is the one
# `build` makes but for the temporary files' names (nvcc's process number in `tmpxft_*`,
# which differs from one nvcc-orion -c to the next as well); tests/builds/gpu_harness.rs
# compares the two.
frontend() {
  local p=$1 d=$out/obj/$1.fe
  rm -rf "$d" && mkdir -p "$d" || return 1
  TMPDIR=$d "$nvcc" -dryrun -c "${flags[@]}" "$here/$p.cu" -o "$d/$p.o" 2>"$d/listing" || return 1
  # nvcc's variable lines (NAME=the rest of the line, taken as is) become exports; its
  # command lines are shell words.
  local line
  sed -n 's/^#\$ //p' "$d/listing" | while IFS= read -r line; do
    if [[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
      printf 'export %s=%q\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
    else
      printf '%s\n' "$line"
    fi
  done >"$d/steps"
  # (nvcc's `rm` is its own pseudo-step: a file that is not there is no error.)
  sed -i 's/^rm /rm -f /' "$d/steps"
  # One ptxas step (one architecture): the listing splits there.
  [[ $(grep -c '^ptxas ' "$d/steps") == 1 ]] || { echo "build.sh: $p: not one ptxas step" >&2; return 1; }
  local at
  at=$(grep -n '^ptxas ' "$d/steps" | cut -d: -f1)
  head -n $((at - 1)) "$d/steps" >"$d/front.sh"
  # The back end: the listing's variable lines (PATH, the toolkit's folders), then ptxas on.
  { grep '^export ' "$d/front.sh"; tail -n +"$at" "$d/steps"; } >"$d/back.sh"
  (cd "$d" && bash -e ./front.sh) || return 1
}
forced() {
  local p=$1 v=$2
  shift 2
  local d=$out/obj/$p.fe o=$out/obj/$p.$v
  local w=$o.d
  rm -rf "$w" "$o.jsonl" && mkdir -p "$w" && cp -p "$d"/tmpxft_* "$w"/ || return 1
  # The variant's copy of the back end: its own folder, its ptxas step nvcc-orion's.
  {
    printf 'orion_ptxas() { %q --ptxas' "$orion"
    printf ' %q' "$@" "--orion-report=$o.jsonl"
    printf ' "$@"; }\n'
    sed -e "s|$d/|$w/|g" -e 's|^ptxas |orion_ptxas |' "$d/back.sh"
  } >"$w/back.sh"
  (cd "$w" && bash -e ./back.sh) || return 1
  mv "$w/$p.o" "$o.o" && rm -rf "$w" || return 1
  "$nvcc" -arch=$arch -cudart static "$o.o" -o "$stage/bin/$p.$v" || return 1
  printf '%s\n' "${flags[*]} $*" >"$o.flags"
}
export -f build frontend forced
export nvcc orion out here stage arch
export flags_s="${flags[*]}"

# Step 1: nvcc and default for every program (the default's report names the candidates).
list=$out/obj/list
: >"$list"
for p in "${programs[@]}"; do
  [[ -f $here/$p.cu ]] || { echo "build.sh: no bench/gpu/$p.cu" >&2; exit 2; }
  extra=$(sed -n 's|^// bench-orion-flags: ||p' "$here/$p.cu")
  printf '%s nvcc\n%s default %s\n' "$p" "$p" "$extra" >>"$list"
  printf '%s %s %s --orion-mode=%s\n' "$p" adapt "$extra" adapt "$p" train "$extra" train >>"$list"
done
run_list() {
  # Each line: PROGRAM VARIANT [FLAGS...]; JOBS at a time; any failure fails the build.
  # (xargs -L joins a line ending in a blank with the next: none may end so.)
  # step: the function that builds a line (build, frontend, forced). An empty list builds
  # nothing (-r: GNU xargs would otherwise run the step once with no arguments, a front end
  # of no program when none of those given has forced variants).
  sed 's/ *$//' "$1" | step=${step:-build} xargs -r -P "$jobs" -L 1 bash -c 'flags=($flags_s); $step "$@" || { echo "build.sh: $1 $2 failed" >&2; exit 255; }' _
}
run_list "$list"

# Step 2: the forced variants, on one front end per program (FORCED_PATH=driver: each
# through nvcc-orion -c, as step 1 builds).
: >"$list"
fronts=$out/obj/fronts
: >"$fronts"
for p in "${programs[@]}"; do
  extra=$(sed -n 's|^// bench-orion-flags: ||p' "$here/$p.cu")
  forced=$(python3 "$here/harness.py" budgets "$out/obj/$p.default.jsonl")
  [[ -z $forced ]] && continue
  printf '%s front\n' "$p" >>"$fronts"
  for f in $forced spill2smem regdem; do
    printf '%s %s %s --orion-force=%s\n' "$p" "${f/:/-}" "$extra" "$f" >>"$list"
  done
done
if [[ ${FORCED_PATH:-shared} == driver ]]; then
  run_list "$list"
else
  step=frontend run_list "$fronts"
  step=forced run_list "$list"
fi

# The manifest: one row per program, variant and kernel.
manifest=$stage/manifest.csv
echo "program,variant,flags,kernel,registers,applied,reason" >"$manifest"
# Every report's forced outcomes in one Python run: a start per binary cost about 12 s of CPU
# in all (issue 50, bench/results/suite.md). Each line: REPORT<TAB>KERNEL<TAB>yes|no<TAB>reason.
applied=$out/obj/applied.tsv
python3 "$here/harness.py" applied-each "$out"/obj/*.jsonl >"$applied"
for exe in $(cd "$stage/bin" && ls | sort); do
  p=${exe%%.*} v=${exe#*.}
  o=$out/obj/$p.$v
  declare -A ok=() why=()
  while IFS=$'\t' read -r k yes reason; do ok[$k]=$yes why[$k]=$reason; done \
    < <(f="$o.jsonl" awk 'index($0, ENVIRON["f"] "\t") == 1 { print substr($0, length(ENVIRON["f"]) + 2) }' "$applied")
  "$cuobjdump" -res-usage "$stage/bin/$exe" |
    awk '$1 == "Function" { k = $2; sub(/:$/, "", k) }
         k != "" && match($0, /REG:[0-9]+/) { print k, substr($0, RSTART + 4, RLENGTH - 4); k = "" }' \
      >"$o.regs"
  while read -r k regs; do
    [[ $k == *__orion_v* ]] && continue
    reason=${why[$k]:-}
    case $v in
      nvcc | default) yes=yes ;;
      adapt | train)
        # The selector's variants of k: `v1=40 v2=64` (none: the original alone runs).
        reason=$(awk -v b="${k}__orion_v" 'index($1, b) == 1 { r[substr($1, length(b) + 1)] = $2 }
          END { for (v = 1; v <= 4; v++) if (v in r) { printf "%sv%d=%s", s, v, r[v]; s = " " } }' "$o.regs")
        yes=$([[ -n $reason ]] && echo yes || echo no) ;;
      *) yes=${ok[$k]:-no} ;;
    esac
    printf '%s,%s,"%s",%s,%s,%s,"%s"\n' "$p" "$v" "$(cat "$o.flags")" "$k" "$regs" "$yes" "${reason//\"/\'}"
  done <"$o.regs" >>"$manifest"
  unset ok why
done

# The calibration's microbenchmarks and the predictor (run.sh, on the GPU machine).
mkdir -p "$stage/tools"
"$orion" calibrate --build-only "$stage/tools" --arch $arch >/dev/null
cp "$orion" "$stage/tools/nvcc-orion"

cp "$here/run.sh" "$here/harness.py" "$stage/"
{
  echo "nvcc-orion $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)"
  "$nvcc" --version | tail -n 2
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in $((SECONDS - start)) s"
} >"$stage/build-info.txt"
archive=$out/nvcc-orion-gpu-bench.tar.xz
# xz's fastest preset with a dictionary larger than one binary: the static runtime repeated in
# every binary is found again, so the archive is smaller than -6's (4.6 against 4.9 MiB) for a
# sixth of its CPU time (7 s against 42 s; issue 50, bench/results/suite.md). Unpacked by
# any xz (33 MiB of memory).
tar -C "$out" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
  -cf - nvcc-orion-gpu-bench | xz -T1 --lzma2=preset=1,dict=32MiB >"$archive"
size=$(stat -c %s "$archive")
((size < 64 * 1024 * 1024)) || { echo "build.sh: $archive is $size bytes (limit 64 MiB)" >&2; exit 1; }
echo "build.sh: $(ls "$stage/bin" | wc -l) binaries, $((size / 1024)) KiB: $archive ($((SECONDS - start)) s)"
