#!/usr/bin/env bash
# Build time and peak memory of tuning against the real nvcc, on the multi-kernel benchmark
# files bench/build/*.cu (10-40 kernels each, float and double templates, tunable and
# untunable kernels), each built for two architectures:
#   nvcc -c -O3 -gencode sm_80 -gencode sm_90   against   nvcc-orion -c (same arguments)
# in four settings: cold (NVCC_ORION_CACHE=off), cached (a variant cache warmed by one
# earlier run), no tuning (NVCC_ORION=replay) and adapt (NVCC_ORION=adapt, cold: the variants
# embedded and the selector merged; its object size is compared too). Each setting is measured in paired runs
# (nvcc and nvcc-orion back to back, which one goes first alternating), and the ratio is the
# median of the per-pair ratios, so load drift on a shared machine hits both sides of a pair
# alike. Peak memory is the largest resident set of any process of the build (GNU time's
# maximum RSS of the waited-for tree), as a median ratio too.
# Targets (issues 24, 31, 35): cold <= 1.3x, cached <= 1.05x, peak memory <= 1.2x, adapt
# <= 1.3x cold with an object <= 1.5x nvcc's; for the files where tuning acts on most kernels
# (issue 47, `retuned_*.cu`) adapt <= 1.5x with an object <= 2x.
# Per file it also says how many kernels were retuned (default mode) and embed variants
# (adapt), and where one cold build's time went in each mode (NVCC_ORION_TIMINGS: front end,
# plain ptxas, variant rounds, final assembly, assembly check, adapt's multi-variant cubin;
# seconds summed over the threads of the build, so steps that overlap add up to more than
# the wall time).
# Env: RUNS (pairs per setting, default 5), ORION_BIN (another nvcc-orion binary to measure,
# e.g. an older build), BENCH_LABEL (the section's title), BENCH_OUT (default bench/results/build.md), BENCH_FILES.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
RUNS="${RUNS:-5}"
RESULT="${BENCH_OUT:-bench/results/build.md}"
((RUNS >= 3)) || { echo "RUNS must be >= 3" >&2; exit 1; }

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
bench_setup
ARCHS=(-gencode "arch=compute_80,code=sm_80" -gencode "arch=compute_90,code=sm_90")
read -r -a FILES <<<"${BENCH_FILES:-$(echo bench/build/*.cu)}"

# One run: "wall_s max_rss_kb cpu_s" (GNU time; CPU is user + system of the process and its
# waited-for children; output discarded, a failure ends the script).
sample() {
    local out="$TMP/time.txt"
    /usr/bin/time -f '%e %M %U %S' -o "$out" "$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }
    tail -1 "$out" | awk '{printf "%s %s %.2f\n", $1, $2, $3 + $4}'
}

# The median of numbers on stdin.
median() {
    sort -g | awk '{a[NR]=$1} END {printf "%.3f\n", NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'
}

# The nvcc-orion command of a setting, into the array ORION_CMD.
orion_cmd() {
    case "$1" in
        cold) ORION_CMD=(env NVCC_ORION_CACHE=off "$ORION") ;;
        cached) ORION_CMD=(env NVCC_ORION_CACHE="$TMP/warm" "$ORION") ;;
        replay) ORION_CMD=(env NVCC_ORION=replay "$ORION") ;;
        adapt) ORION_CMD=(env NVCC_ORION=adapt NVCC_ORION_CACHE=off "$ORION") ;;
    esac
}

rows=()
splits=()
over=0
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
for k in "${FILES[@]}"; do
    name="$(basename "$k" .cu)"
    args=(-c -O3 "${ARCHS[@]}" "$k" -o "$TMP/$name.o")
    # Warm the cache, and count what tuning does for this file.
    rep="$TMP/$name.report.jsonl"
    env NVCC_ORION_CACHE="$TMP/warm" NVCC_ORION_REPORT="$rep" "$ORION" "${args[@]}" >/dev/null 2>&1
    read -r nk nbuilt npruned ntuned < <(python3 -c '
import json, os, sys
p = sys.argv[1]
recs = [json.loads(l) for l in open(p)] if os.path.exists(p) else []
print(len({r["kernel"] for r in recs}), sum(len(r["candidates"]) - 1 for r in recs),
      sum(len(r["pruned"]) for r in recs), sum(r["chosen"] != 0 for r in recs))
' "$rep")
    # One cold build per mode with its time split, and what adapt embeds.
    tdef="$TMP/$name.timings.default" tad="$TMP/$name.timings.adapt" rad="$TMP/$name.adapt.jsonl"
    rm -f "$tdef" "$tad" "$rad"
    env NVCC_ORION_CACHE=off NVCC_ORION_TIMINGS="$tdef" "$ORION" "${args[@]}" >/dev/null 2>&1
    env NVCC_ORION=adapt NVCC_ORION_CACHE=off NVCC_ORION_TIMINGS="$tad" NVCC_ORION_REPORT="$rad" \
        "$ORION" "${args[@]}" >/dev/null 2>&1
    nembed=$(python3 -c '
import json, os, sys
p = sys.argv[1]
recs = [json.loads(l) for l in open(p)] if os.path.exists(p) else []
print(sum(len(r.get("variants") or []) > 1 for r in recs))
' "$rad")
    split_row() {
        python3 -c '
import json, sys
t = json.loads(open(sys.argv[1]).readline())
keys = ["front_end_s", "ptxas_s", "variants_s", "assembly_s", "check_s", "selector_s", "total_s"]
cells = ["%.2f" % t[k] for k in keys]
cells[2] += " / %.2f" % t["variant_batches_s"]
print(" | ".join(cells))
' "$1"
    }
    splits+=("| $name | default | $ntuned | $(split_row "$tdef") |")
    splits+=("| $name | adapt | $nembed | $(split_row "$tad") |")
    declare -A ratios=() mems=() nv=() cpus=()
    size_nvcc=0 size_adapt=0
    for mode in cold cached replay adapt; do
        orion_cmd "$mode"
        for ((i = 0; i < RUNS; i++)); do
            if (((i + ${#mode}) % 2)); then
                read -r tn mn cn < <(sample "$NVCC" "${args[@]}")
                size_nvcc=$(stat -c %s "$TMP/$name.o")
                read -r to mo co < <(sample "${ORION_CMD[@]}" "${args[@]}")
                [[ $mode != adapt ]] || size_adapt=$(stat -c %s "$TMP/$name.o")
            else
                read -r to mo co < <(sample "${ORION_CMD[@]}" "${args[@]}")
                [[ $mode != adapt ]] || size_adapt=$(stat -c %s "$TMP/$name.o")
                read -r tn mn cn < <(sample "$NVCC" "${args[@]}")
                size_nvcc=$(stat -c %s "$TMP/$name.o")
            fi
            cpus[$mode]+="$(ratio "$co" "$cn") "
            ratios[$mode]+="$(ratio "$to" "$tn") "
            mems[$mode]+="$(ratio "$mo" "$mn") "
            nv[$mode]+="$tn "
        done
    done
    med() { tr ' ' '\n' <<<"$1" | grep . | median; }
    t_nvcc=$(med "${nv[cold]} ${nv[cached]} ${nv[replay]} ${nv[adapt]}")
    r_cold=$(med "${ratios[cold]}")
    r_warm=$(med "${ratios[cached]}")
    r_replay=$(med "${ratios[replay]}")
    m_cold=$(med "${mems[cold]}")
    m_warm=$(med "${mems[cached]}")
    c_cold=$(med "${cpus[cold]}")
    c_warm=$(med "${cpus[cached]}")
    r_adapt=$(med "${ratios[adapt]}")
    s_adapt=$(ratio "$size_adapt" "$size_nvcc")
    v_cold=$(verdict "$r_cold" 1.3)
    v_warm=$(verdict "$r_warm" 1.05)
    v_mem=$(verdict "$m_cold" 1.2)
    t_adapt=1.3 t_size=1.5
    [[ $name != retuned_* ]] || t_adapt=1.5 t_size=2.0
    v_adapt=$(verdict "$r_adapt" "$t_adapt")
    v_size=$(verdict "$s_adapt" "$t_size")
    [[ $v_cold == ok && $v_warm == ok && $v_mem == ok && $v_adapt == ok && $v_size == ok ]] || over=$((over + 1))
    rows+=("| $name | $nk | $nbuilt | $npruned | $ntuned | $t_nvcc | $r_cold ($v_cold) | $r_warm ($v_warm) | $r_replay | $m_cold ($v_mem) / $m_warm | $c_cold / $c_warm | $r_adapt ($v_adapt) / $s_adapt ($v_size) |")
    echo "bench: $name nvcc ${t_nvcc} s, cold ${r_cold}x, cached ${r_warm}x, no tuning ${r_replay}x, peak memory ${m_cold}x, adapt ${r_adapt}x (object ${s_adapt}x)" >&2
    unset ratios mems nv cpus
done
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"

cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
mkdir -p "$(dirname "$RESULT")"
{
    echo "## $(date -u '+%Y-%m-%d %H:%M UTC'): ${BENCH_LABEL:-$ORION}"
    echo
    echo "- machine: ${cpu:-unknown CPU}, $(nproc) cores, $(uname -srm)"
    echo "- toolkit: $("$NVCC" --version | grep -o 'release [0-9.]*, V[0-9.]*')"
    echo "- nvcc-orion: $ORION at $(git rev-parse --short HEAD 2>/dev/null || echo 'no commit'), $(git status --porcelain -- src 2>/dev/null | grep -q . && echo 'uncommitted src changes' || echo 'clean src')"
    echo "- load average (1/5/15 min) before: $load_start, after: $load_end"
    echo "- command: \`<compiler> -c -O3 ${ARCHS[*]} <file>.cu -o <tmp>.o\`"
    echo "- $RUNS pairs per setting; ratio = median over pairs of nvcc-orion / nvcc (wall time,"
    echo "  GNU time \`%e\`); memory = median of the ratio of peak RSS (\`%M\`), cold / cached;"
    echo "  CPU = median of the ratio of user + system time (\`%U + %S\`, less disturbed by load)"
    echo "- kernels = distinct kernels; built = variant candidates compiled over both arches;"
    echo "  pruned = budgets not built (occupancy bound, or left by the descent); tuned = kernel-arch pairs not at ptxas's choice"
    echo "- adapt = NVCC_ORION=adapt, cold: wall time / nvcc's (median), object size / nvcc's"
    echo "- targets: cold <= 1.3x, cached <= 1.05x, peak memory <= 1.2x, adapt <= 1.3x with an object <= 1.5x of nvcc"
    echo "  (\`retuned_*\` files, issue 47: adapt <= 1.5x with an object <= 2x)"
    echo "- reproduce: \`scripts/bench-build.sh\` (env RUNS, ORION_BIN, BENCH_FILES)"
    echo
    echo "| file | kernels | built | pruned | tuned | nvcc s | cold / nvcc | cached / nvcc | no tuning / nvcc | peak RSS cold / cached | CPU cold / cached | adapt / nvcc: time / object |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Where one cold build's time went (\`NVCC_ORION_TIMINGS\`, seconds; a step's time is summed over"
    echo "the threads it ran on, so overlapping steps add up to more than the total). retuned: kernel-arch"
    echo "pairs not at ptxas's choice (default) or with variants embedded (adapt). Variant rounds: the"
    echo "ptxas runs' own time / the wall time of the steps' batches (less when rounds ran side by side)."
    echo
    echo "| file | mode | retuned | front end | plain ptxas | variant rounds: runs / batches | final assembly | check | multi-variant | total |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${splits[@]}"
    echo
} >"$TMP/section.md"
cat "$TMP/section.md"
cat "$TMP/section.md" >>"$RESULT"
if ((over)); then
    echo "bench: $over file(s) over target" >&2
fi
