# shellcheck shell=bash
# Set-up and timing helpers shared by the bench scripts (sourced from the repository root).

# The toolkit (scripts/setup.sh), a release build, and for the caller: ORION (our binary),
# NVCC (the real one, also exported as NVCC_ORION_NVCC so every run uses the same toolkit)
# and TMP (a scratch folder removed on exit). nvcc-orion settings from the caller's shell are
# cleared.
# shellcheck disable=SC2034 # ORION and TMP are for the sourcing script
bench_setup() {
    eval "$(scripts/setup.sh)"
    if [[ -n ${ORION_BIN:-} ]]; then
        ORION="$ORION_BIN"
    else
        cargo build --release >&2
        # shellcheck source=scripts/target-dir.sh
        source scripts/target-dir.sh
        ORION="$TARGET_DIR/release/nvcc-orion"
    fi
    NVCC="$CUDA_HOME/bin/nvcc"
    unset NVCC_ORION NVCC_ORION_REPORT NVCC_ORION_VERBOSE NVCC_ORION_FORCE
    export NVCC_ORION_NVCC="$NVCC"
    TMP="$(mktemp -d)"
    trap 'rm -rf "$TMP"' EXIT
}

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

# Run the caller's `compiler 0|1|2 ARGS...` N times each, interleaved in a rotating order so
# load drift on a shared machine hits all three alike instead of whichever ran during a busy
# stretch. Wall and CPU microseconds go to the global arrays WALL[0..2] and CPU[0..2], each a
# space-separated list. A failed run ends the script.
measure_three() {
    local n="$1" i j c t u
    shift
    WALL=("" "" "")
    CPU=("" "" "")
    for ((i = 0; i < n; i++)); do
        for j in 0 1 2; do
            c=$(((i + j) % 3))
            read -r t u < <(time_us compiler "$c" "$@")
            WALL[c]+=" $t"
            CPU[c]+=" $u"
        done
    done
}
