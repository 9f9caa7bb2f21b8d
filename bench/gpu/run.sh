#!/usr/bin/env bash
# Run the GPU harness on a machine with a GPU and its driver (nothing else needed: the
# programs are statically linked). Either inside the unpacked archive:
#   tar xf nvcc-orion-gpu-bench.tar.xz && nvcc-orion-gpu-bench/run.sh
# or given the archive (unpacked next to it):
#   run.sh nvcc-orion-gpu-bench.tar.xz
# Writes results.csv (in the unpacked folder, or RESULTS=path): the device, driver and date
# as "# key: value" lines, then
#   program,kernel,variant,registers,occupancy,median_ms,speedup_vs_nvcc,check,applied
# and prints the summary (harness.py, when python3 is there). Before the programs run,
# `tools/nvcc-orion calibrate` measures the model's parameters on the GPU (calibration.json,
# its raw measurements in calibration.txt), and every variant is predicted with the
# published parameters and with the calibrated ones (predicted-before.csv,
# predicted-after.csv): the summary ends with each program's rank correlation between
# predicted and measured variant times, before and after calibration. The adapt and train builds run
# with BENCH_WARMUP_RUNS=64 (the selector measures during the untimed launches, so adapt's
# timing is its locked variant's) and NVCC_ORION_VERBOSE=1 (their stderr goes to
# selector.log); train writes its profile to profiles/PROGRAM.json, which a build takes back
# with NVCC_ORION_PROFILE. Exit status: 0 when every output check passed, 1 on a mismatch, 3
# when there is no usable GPU.
set -euo pipefail
if (($#)) && [[ -f $1 ]]; then
  dest=$(cd "$(dirname "$1")" && pwd)
  tar -C "$dest" -xf "$1"
  exec "$dest/nvcc-orion-gpu-bench/run.sh"
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ! -f $here/manifest.csv ]]; then
  echo "run.sh: no manifest.csv in $here: give the archive (run.sh nvcc-orion-gpu-bench.tar.xz) or run the run.sh inside it" >&2
  exit 2
fi
results=${RESULTS:-$here/results.csv}
# A hung variant must not hold up the rest: each run gets PER_RUN_TIMEOUT seconds (a run takes
# a few), the whole set TOTAL_SECONDS (the rows left are marked NOT-RUN).
per_run=${PER_RUN_TIMEOUT:-30}
total=${TOTAL_SECONDS:-540}
raw=$(mktemp)
trap 'rm -f "$raw" "$raw.err"' EXIT

# The binaries in manifest order (one row per kernel there: each binary once).
mapfile -t runs < <(tail -n +2 "$here/manifest.csv" | cut -d, -f1,2 | awk '!seen[$0]++')
device="" driver=""
if command -v nvidia-smi >/dev/null; then
  line=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || true)
  device=${line%%,*} driver=${line#*, }
fi
profiles=$(dirname "$results")/profiles
# Calibrate first (issue 32): a GPU that cannot be calibrated runs nothing else.
calibration=$(dirname "$results")/calibration.json
rm -f "$calibration"
set +e
"$here/tools/nvcc-orion" calibrate --bench "$here/tools/orion-calibrate" --output "$calibration" \
  --save-measurements "$(dirname "$results")/calibration.txt" >&2
rc=$?
set -e
if ((rc == 3)); then
  echo "run.sh: no usable GPU (calibrate)" >&2
  exit 3
fi
((rc == 0)) || echo "run.sh: calibrate failed (exit $rc): predictions after calibration are the published ones" >&2
# Every variant's prediction, with the published parameters and with the calibrated ones.
for label in before after; do
  : >"$(dirname "$results")/predicted-$label.csv"
done
for pv in "${runs[@]}"; do
  p=${pv%%,*} v=${pv#*,}
  NVCC_ORION_CALIBRATION= "$here/tools/nvcc-orion" explain --json "$here/bin/$p.$v" 2>/dev/null |
    python3 "$here/harness.py" predictions "$p" "$v" >>"$(dirname "$results")/predicted-before.csv" || true
  if [[ -f $calibration ]]; then
    NVCC_ORION_CALIBRATION=$calibration "$here/tools/nvcc-orion" explain --json "$here/bin/$p.$v" 2>/dev/null |
      python3 "$here/harness.py" predictions "$p" "$v" >>"$(dirname "$results")/predicted-after.csv" || true
  fi
done
selector_log=$(dirname "$results")/selector.log
rm -rf "$profiles"
: >"$selector_log"
start=$SECONDS
for pv in "${runs[@]}"; do
  p=${pv%%,*} v=${pv#*,}
  if ((SECONDS - start > total)); then
    grep "^$p,$v," "$here/manifest.csv" | cut -d, -f4,5 | while IFS=, read -r k regs; do
      echo "$p,$k,$v,$regs,,,NOT-RUN-time-limit"
    done >>"$raw"
    continue
  fi
  env=()
  case $v in
    adapt) env=(BENCH_WARMUP_RUNS=64 NVCC_ORION_VERBOSE=1) ;;
    train)
      mkdir -p "$profiles"
      env=(BENCH_WARMUP_RUNS=64 NVCC_ORION_VERBOSE=1 "NVCC_ORION_PROFILE_OUT=$profiles/$p.json")
      ;;
  esac
  set +e
  outp=$(env "${env[@]}" timeout "$per_run" "$here/bin/$p.$v" 2>"$raw.err")
  rc=$?
  set -e
  if ((${#env[@]})); then
    { echo "== $p $v: exit $rc"; cat "$raw.err"; } >>"$selector_log"
  fi
  if ((rc == 3)); then
    echo "run.sh: no usable GPU: $outp" >&2
    exit 3
  fi
  [[ -z $device ]] && device=$(sed -n 's/^DEVICE,\(.*\),.*/\1/p' <<<"$outp" | head -n 1)
  [[ -z $driver ]] && driver="CUDA driver API $(sed -n 's/^DEVICE,.*,//p' <<<"$outp" | head -n 1)"
  got=$(grep '^RESULT,' <<<"$outp" || true)
  if [[ -z $got ]]; then
    # No result line: a crash or a timeout; one row per kernel of the manifest.
    grep "^$p,$v," "$here/manifest.csv" | cut -d, -f4,5 | while IFS=, read -r k regs; do
      echo "$p,$k,$v,$regs,,,CRASH-rc$rc"
    done >>"$raw"
  else
    cut -d, -f2- <<<"$got" | awk -F, -v v="$v" '{print $1","$2","v","$3","$4","$5","$6}' >>"$raw"
  fi
  echo "run.sh: $p $v: exit $rc" >&2
done

{
  echo "# device: ${device:-unknown}"
  echo "# driver: ${driver:-unknown}"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# runs: ${#runs[@]} binaries in $((SECONDS - start)) s"
  echo "program,kernel,variant,registers,occupancy,median_ms,speedup_vs_nvcc,check,applied"
  # Speedup against the nvcc build's median for the same kernel; applied from the manifest.
  awk -F, '
    FNR == NR { if (FNR > 1) applied[$1 "," $2 "," $4] = $6; next }
    { rows[++n] = $0; if ($3 == "nvcc" && $7 == "ok" && $6 > 0) base[$1 "," $2] = $6 }
    END {
      for (i = 1; i <= n; i++) {
        split(rows[i], f, ",")
        key = f[1] "," f[2]
        s = (key in base && f[7] == "ok" && f[6] > 0) ? sprintf("%.4f", base[key] / f[6]) : ""
        a = applied[f[1] "," f[3] "," f[2]]
        print f[1] "," f[2] "," f[3] "," f[4] "," f[5] "," f[6] "," s "," f[7] "," (a == "" ? "no" : a)
      }
    }' "$here/manifest.csv" "$raw"
} >"$results"
echo "run.sh: wrote $results" >&2
if command -v python3 >/dev/null; then
  status=0
  python3 "$here/harness.py" summary "$results" || status=$?
  python3 "$here/harness.py" fidelity "$results" "$(dirname "$results")/predicted-before.csv" \
    "$(dirname "$results")/predicted-after.csv"
  exit $status
else
  echo "run.sh: no python3 here; summarise elsewhere with: python3 harness.py summary results.csv" >&2
  ! grep -q -v -E ',(ok|launch-refused),[a-z]*$|^#|^program,' "$results"
fi
