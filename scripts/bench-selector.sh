#!/usr/bin/env bash
# The launch-time selector's own per-launch cost on the host (runtime/orion_select.h, issue
# 21; goal under 1 µs once a key is locked): builds bench/selector/bench.cpp with the system
# C++ compiler and writes bench/results/selector.md. No GPU involved: begin + end around a
# launch that is not made; then the whole glue path (runtime/orion_runtime.cpp, as nvcc-orion
# builds it into objects) against tests/runtime/glue_fake.cpp's simulated runtime, whose calls
# cost next to nothing, so what is measured is the glue's own dispatch.
# Env: LAUNCHES (per row, default 20000000), CXX (default g++), BENCH_OUT.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
LAUNCHES="${LAUNCHES:-20000000}"
CXX="${CXX:-g++}"
RESULT="${BENCH_OUT:-bench/results/selector.md}"
BIN="$(mktemp -d)/selector-bench"
trap 'rm -rf "$(dirname "$BIN")"' EXIT
if [[ -z ${CUDA_HOME:-} ]]; then eval "$(scripts/setup.sh)"; fi

"$CXX" -std=c++11 -O2 -pthread -Iruntime bench/selector/bench.cpp -o "$BIN"
# The glue object with nvcc-orion's flags (src/driver/glue.rs), adapt by default.
"$CXX" -std=c++11 -O1 -fPIC -fno-exceptions -fno-rtti -DORION_RT_DEFAULT_MODE=1 \
  -I"$CUDA_HOME/include" -Iruntime -c runtime/orion_runtime.cpp -o "$BIN-glue.o"
"$CXX" -std=c++11 -O2 -I"$CUDA_HOME/include" -Iruntime tests/runtime/glue_fake.cpp \
  "$BIN-glue.o" -o "$BIN-glue"
GLUE_LAUNCHES=$((LAUNCHES / 4))
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
table="$("$BIN" "$LAUNCHES")"
glue="$(NVCC_ORION=adapt "$BIN-glue" bench "$GLUE_LAUNCHES")"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

cat >"$RESULT" <<MD
# nvcc-orion launch-time selector: per-launch cost on the host

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: ${cpu}, $(nproc) cores, $(uname -sr) $(uname -m)
- compiler: $("$CXX" --version | head -1), \`-std=c++11 -O2\` (the glue \`-O1\`, as nvcc-orion builds it)
- nvcc-orion: $(git rev-parse --short HEAD)$(git diff --quiet -- runtime bench/selector tests/runtime || echo ', runtime/, bench/selector/ or tests/runtime/ modified')
- what: \`Selector::begin\` + \`Selector::end\` around a launch that is not made (the selector's
  own cost; no CUDA call happens once a key is locked), ${LAUNCHES} launches per row (a tenth for
  the untracked row, a quarter per thread); every key locked first with a timer that completes
  at once
- goal: under 1000 ns per launch once locked
- load average (1/5/15 min) before: ${load_before}, after: ${load_after}
- reproduce: \`scripts/bench-selector.sh\` (env LAUNCHES, CXX)

${table}

The whole glue path, \`orion_rt_v1_cudaLaunchKernel\` (what a redirected launch calls) to the
simulated runtime's launch, ${GLUE_LAUNCHES} launches per row; the simulated CUDA calls cost next
to nothing, so a real launch adds the runtime's \`cudaPeekAtLastError\` and \`cudaGetDevice\`
and the driver's \`cuStreamIsCapturing\` to these (not measured here: no GPU; bench/gpu's
adapt runs measure the whole cost on a GPU):

| case | ns per launch |
|---|---:|
| the simulated launch alone (\`cudaLaunchKernel\`, no glue) | $(sed -n 's/^direct_ns //p' <<<"$glue") |
| a locked key (adapt locked $(sed -n 's/^locked //p' <<<"$glue")): the variant through \`cuLaunchKernel\` | $(sed -n 's/^glue_locked_ns //p' <<<"$glue") |
| a kernel without variants: the original | $(sed -n 's/^glue_untuned_ns //p' <<<"$glue") |
MD
cat "$RESULT"
