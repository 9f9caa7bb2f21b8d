#!/usr/bin/env bash
# Wall-clock overhead of nvcc-orion against the real nvcc on examples/kernels/*.cu:
#   nvcc -c | NVCC_ORION=off nvcc-orion -c | NVCC_ORION=replay nvcc-orion -c
# Median of RUNS runs each, the three interleaved (a plain date +%s%N loop rather than
# hyperfine, which times one command after the other); targets are off <= 1.02x and
# replay <= 1.10x. Writes bench/results/overhead.md.
# Env: RUNS (default 7), WARMUP (default 1), BENCH_ARCH (default sm_90), BENCH_OUT.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
RUNS="${RUNS:-7}"
WARMUP="${WARMUP:-1}"
ARCH="${BENCH_ARCH:-sm_90}"
RESULT="${BENCH_OUT:-bench/results/overhead.md}"
((RUNS >= 5)) || { echo "RUNS must be >= 5" >&2; exit 1; }

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_setup

# The three compilers under test; `env` in all three so each pays the same extra exec.
compiler() {
    local c="$1"
    shift
    case "$c" in
        0) env "$NVCC" "$@" ;;
        1) env NVCC_ORION=off "$ORION" "$@" ;;
        2) env NVCC_ORION=replay "$ORION" "$@" ;;
    esac
}

rows=()
over=0
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
# First row: `--version`, i.e. the fixed start-up cost without compile-time noise.
for k in --version examples/kernels/*.cu; do
    if [[ $k == --version ]]; then
        name="(start-up: --version)"
        args=(--version)
        n=$((RUNS * 5))
    else
        name="$(basename "$k" .cu)"
        args=(-c "-arch=$ARCH" "$k" -o "$TMP/$name.o")
        n=$RUNS
    fi
    for ((w = 0; w < WARMUP; w++)); do
        for c in 0 1 2; do time_us compiler "$c" "${args[@]}" >/dev/null; done
    done
    measure_three "$n" "${args[@]}"
    # shellcheck disable=SC2086
    {
        read -r t_nvcc m_nvcc < <(stats_ms ${WALL[0]})
        read -r t_off m_off < <(stats_ms ${WALL[1]})
        read -r t_rep m_rep < <(stats_ms ${WALL[2]})
        read -r u_nvcc _ < <(stats_ms ${CPU[0]})
        read -r u_off _ < <(stats_ms ${CPU[1]})
        read -r u_rep _ < <(stats_ms ${CPU[2]})
    }
    r_off=$(ratio "$t_off" "$t_nvcc")
    r_rep=$(ratio "$t_rep" "$t_nvcc")
    if [[ $k == --version ]]; then
        # A fixed cost of one exec (bash `time` resolves 1 ms): the targets are for compiles.
        v_off="fixed cost"
        v_rep="fixed cost"
    else
        v_off=$(verdict "$r_off" 1.02)
        v_rep=$(verdict "$r_rep" 1.10)
        [[ $v_off == ok && $v_rep == ok ]] || over=$((over + 1))
    fi
    rows+=("| $name | $t_nvcc | $t_off | $r_off ($v_off) | $t_rep | $r_rep ($v_rep) | $(ratio "$m_off" "$m_nvcc") / $(ratio "$m_rep" "$m_nvcc") | $u_nvcc | $(ratio "$u_off" "$u_nvcc") / $(ratio "$u_rep" "$u_nvcc") |")
    echo "bench: $name nvcc ${t_nvcc} ms, off ${r_off}x, replay ${r_rep}x (cpu: off $(ratio "$u_off" "$u_nvcc")x, replay $(ratio "$u_rep" "$u_nvcc")x)" >&2
done
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"

cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
mkdir -p "$(dirname "$RESULT")"
{
    echo "# nvcc-orion compile-time overhead"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- machine: ${cpu:-unknown CPU}, $(nproc) cores, $(uname -srm)"
    echo "- toolkit: $("$NVCC" --version | grep -o 'release [0-9.]*, V[0-9.]*') ($NVCC)"
    echo "- nvcc-orion: $(git rev-parse --short HEAD 2>/dev/null || echo 'no commit'), $(git status --porcelain -- src 2>/dev/null | grep -q . && echo 'uncommitted src changes' || echo 'clean src')"
    echo "- timing: bash \`time\` around each run; median of $RUNS runs per command ($((RUNS * 5)) for --version) after $WARMUP warm-up;"
    echo "  the three commands interleaved, one process at a time"
    echo "- load average (1/5/15 min) before: $load_start, after: $load_end"
    echo "- command per kernel: \`<compiler> -c -arch=$ARCH examples/kernels/<k>.cu -o <tmp>.o\`"
    echo "  with compiler = \`nvcc\`, \`NVCC_ORION=off nvcc-orion\`, \`NVCC_ORION=replay nvcc-orion\`"
    echo "- targets: off <= 1.02x, replay <= 1.10x of nvcc, for compiles; the --version row is the"
    echo "  fixed cost of the extra exec, reported, not judged (bash \`time\` resolves 1 ms)"
    echo "- reproduce: \`scripts/bench-overhead.sh\` (env RUNS, WARMUP, BENCH_ARCH)"
    echo "- note: off mode adds only an exec, see the --version row for the fixed cost; when the load"
    echo "  average exceeds the core count, compile rows move by several percent between runs"
    echo "- cpu columns: median user+sys CPU time of the whole process tree (bash \`time\`), the"
    echo "  ratio least disturbed by other load on the machine"
    echo
    echo "| kernel | nvcc ms | off ms | off / nvcc | replay ms | replay / nvcc | min-based off / replay | nvcc cpu ms | cpu off / replay |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
} >"$RESULT"
cat "$RESULT"
if ((over)); then
    echo "bench: $over kernel(s) over target (check the load average; rerun with RUNS=15 on an idle machine)" >&2
fi
