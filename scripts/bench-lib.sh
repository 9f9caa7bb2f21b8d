# shellcheck shell=bash
# Timing helpers shared by the bench scripts (sourced).

# One sample: "wall_us cpu_us" of running "$@" (output discarded). CPU is user+sys of the
# whole process tree (bash's `time`), which a busy machine disturbs far less than wall time.
time_us() {
    local TIMEFORMAT='%3R %3U %3S' out
    out=$({ time "$@" >/dev/null 2>&1; } 2>&1) || { echo "bench: failed: $*" >&2; exit 1; }
    awk '{printf "%d %d\n", $1 * 1e6, ($2 + $3) * 1e6}' <<<"$out"
}

# "median min" in ms of a list of microsecond samples.
stats_ms() {
    printf '%s\n' "$@" | sort -n |
        awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.1f %.1f\n", m / 1000, a[1] / 1000}'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN {print (r <= t ? "ok" : "OVER")}'; }
