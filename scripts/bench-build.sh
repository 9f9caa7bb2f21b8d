#!/usr/bin/env bash
# Build time of tuning against the real nvcc, on examples/kernels/*.cu and the tuning test
# kernels (tests/kernels/tune/pressure.cu):
#   nvcc -c | nvcc-orion -c, cold (an empty variant cache each run) | nvcc-orion -c, cached
# Median of RUNS runs each, the three interleaved. Targets (issue 4): cold <= 1.5x with at
# most 5 variants per kernel on 2 cores, cached <= 1.05x. Writes bench/results/build.md.
# Env: RUNS (default 5), BENCH_ARCH (default sm_90), BENCH_OUT.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
RUNS="${RUNS:-5}"
ARCH="${BENCH_ARCH:-sm_90}"
RESULT="${BENCH_OUT:-bench/results/build.md}"
((RUNS >= 3)) || { echo "RUNS must be >= 3" >&2; exit 1; }

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_setup

# Cold runs get a new cache folder each (time_us runs us in a subshell, so no counter).
compiler() {
    local c="$1"
    shift
    case "$c" in
        0) env "$NVCC" "$@" ;;
        1) env NVCC_ORION_CACHE="$(mktemp -d -p "$TMP" cold.XXXXXX)" "$ORION" "$@" ;;
        2) env NVCC_ORION_CACHE="$TMP/warm" "$ORION" "$@" ;;
    esac
}

rows=()
over=0
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
for k in examples/kernels/*.cu tests/kernels/tune/pressure.cu; do
    name="$(basename "$k" .cu)"
    args=(-c "-arch=$ARCH" "$k" -o "$TMP/$name.o")
    # Warm the cache, and count what tuning does for this file.
    rep="$TMP/$name.report.jsonl"
    env NVCC_ORION_CACHE="$TMP/warm" NVCC_ORION_REPORT="$rep" "$ORION" "${args[@]}" >/dev/null 2>&1
    read -r nk nvar ntuned < <(python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])] if __import__("os").path.exists(sys.argv[1]) else []
print(len(recs), max((len(r["candidates"]) for r in recs), default=1), sum(r["chosen"] != 0 for r in recs))
' "$rep")
    measure_three "$RUNS" "${args[@]}"
    # shellcheck disable=SC2086
    {
        read -r t_nvcc _ < <(stats_ms ${WALL[0]})
        read -r t_cold _ < <(stats_ms ${WALL[1]})
        read -r t_warm _ < <(stats_ms ${WALL[2]})
    }
    r_cold=$(ratio "$t_cold" "$t_nvcc")
    r_warm=$(ratio "$t_warm" "$t_nvcc")
    v_cold=$(verdict "$r_cold" 1.5)
    v_warm=$(verdict "$r_warm" 1.05)
    [[ $v_cold == ok && $v_warm == ok ]] || over=$((over + 1))
    rows+=("| $name | $nk | $nvar | $ntuned | $t_nvcc | $t_cold | $r_cold ($v_cold) | $t_warm | $r_warm ($v_warm) |")
    echo "bench: $name nvcc ${t_nvcc} ms, cold ${r_cold}x, cached ${r_warm}x ($nk kernels, up to $nvar variants, $ntuned tuned)" >&2
done
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"

cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
mkdir -p "$(dirname "$RESULT")"
{
    echo "# nvcc-orion build time with tuning"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- machine: ${cpu:-unknown CPU}, $(nproc) cores, $(uname -srm)"
    echo "- toolkit: $("$NVCC" --version | grep -o 'release [0-9.]*, V[0-9.]*')"
    echo "- nvcc-orion: $(git rev-parse --short HEAD 2>/dev/null || echo 'no commit'), $(git status --porcelain -- src 2>/dev/null | grep -q . && echo 'uncommitted src changes' || echo 'clean src')"
    echo "- timing: bash \`time\`, median of $RUNS runs per command, the three interleaved"
    echo "- load average (1/5/15 min) before: $load_start, after: $load_end"
    echo "- command: \`<compiler> -c -arch=$ARCH <file>.cu -o <tmp>.o\`; cold = a new, empty"
    echo "  \`NVCC_ORION_CACHE\` per run; cached = a cache warmed by one earlier run"
    echo "- variants = the most candidates any kernel had, the baseline included (at most 5)"
    echo "- targets: cold <= 1.5x, cached <= 1.05x of nvcc"
    echo "- reproduce: \`scripts/bench-build.sh\` (env RUNS, BENCH_ARCH)"
    echo
    echo "| file | kernels | variants | tuned | nvcc ms | cold ms | cold / nvcc | cached ms | cached / nvcc |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} >"$RESULT"
cat "$RESULT"
if ((over)); then
    echo "bench: $over file(s) over target" >&2
fi
