#!/usr/bin/env bash
# The launch-time selector's own per-launch cost on the host (runtime/orion_select.h, issue
# 21; goal under 1 µs once a key is locked): builds bench/selector/bench.cpp with the system
# C++ compiler and writes bench/results/selector.md. No GPU involved: begin + end around a
# launch that is not made.
# Env: LAUNCHES (per row, default 20000000), CXX (default g++), BENCH_OUT.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
LAUNCHES="${LAUNCHES:-20000000}"
CXX="${CXX:-g++}"
RESULT="${BENCH_OUT:-bench/results/selector.md}"
BIN="$(mktemp -d)/selector-bench"
trap 'rm -rf "$(dirname "$BIN")"' EXIT

"$CXX" -std=c++11 -O2 -pthread -Iruntime bench/selector/bench.cpp -o "$BIN"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
table="$("$BIN" "$LAUNCHES")"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

cat >"$RESULT" <<MD
# nvcc-orion launch-time selector: per-launch cost on the host

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: ${cpu}, $(nproc) cores, $(uname -sr) $(uname -m)
- compiler: $("$CXX" --version | head -1), \`-std=c++11 -O2\`
- nvcc-orion: $(git rev-parse --short HEAD)$(git diff --quiet -- runtime bench/selector || echo ', runtime/ or bench/selector/ modified')
- what: \`Selector::begin\` + \`Selector::end\` around a launch that is not made (the selector's
  own cost; no CUDA call happens once a key is locked), ${LAUNCHES} launches per row (a tenth for
  the untracked row, a quarter per thread); every key locked first with a timer that completes
  at once
- goal: under 1000 ns per launch once locked
- load average (1/5/15 min) before: ${load_before}, after: ${load_after}
- reproduce: \`scripts/bench-selector.sh\` (env LAUNCHES, CXX)

${table}
MD
cat "$RESULT"
