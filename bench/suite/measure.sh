#!/usr/bin/env bash
# One timed run of the whole suite for bench/results/suite.md (issue 50): `measure.sh LABEL
# COMMIT [REPO]` clones REPO (default: this repository) at COMMIT into $WORK/LABEL (WORK
# defaults to /tmp/orion-suite) and runs `CI=true bash .ci/run` there, as CI would on a clean
# checkout, recording in that folder:
#   LABEL.log    the suite's output
#   LABEL.meta   rc, start and end (epoch seconds) and the machine's /proc/stat line at each end
#   LABEL.stat   the /proc/stat line every 5 s (how busy the cores were, when)
#   LABEL.probe  seconds of CPU for a fixed piece of toolkit work, before and after the run
#   LABEL.cpu    CPU seconds and process count per command name, from process accounting
#                (only where `accton` and `dump-acct` exist and we may use them)
# The probe is the machine's speed at each end: the same bytes through the real cicc, ptxas and
# nvdisasm (not the suite's memos) five times over. It is a snapshot of seconds, not the run's
# speed (suite.md, twenty-second pass: it can disagree with the tools' own CPU per process), so
# compare runs side by side (abba.sh). Leave the machine alone while it runs.
set -euo pipefail
# The whole script is one block, which bash reads before it runs any of it: an edit to this
# file while a measure runs (hours) must not change what the running copy does.
{
label=$1
commit=$2
repo=${3:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
work=${WORK:-/tmp/orion-suite}
dir=$work/$label
mkdir -p "$work"
rm -rf "$dir"
git clone -q "$repo" "$dir"
cd "$dir"
git checkout -q "$commit"
cargo fetch -q

# probe: CPU seconds (user + system, children included) of the fixed toolkit work.
eval "$(scripts/setup.sh)"
probe() {
    local t src
    t=$(mktemp -d)
    src=$t/probe.cu
    cat >"$src" <<'CU'
__device__ float f(float x, int i) { return x * 1.0001f + (float)i; }
__global__ void probe(float *a, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0;
    for (int k = 0; k < n; ++k) s = f(s + b[(i + k) % n], k);
    a[i] = s;
}
CU
    # shellcheck disable=SC2016 # the inner shell expands them
    /usr/bin/time -f '%U %S' -o "$t/time" bash -c '
        for i in 1 2 3 4 5; do
            "$CUDA_HOME/bin/nvcc" -cubin -arch=sm_80 "$1" -o "$2/p.cubin" &&
                "$CUDA_HOME/bin/nvdisasm" -json "$2/p.cubin" >/dev/null || exit 1
        done' probe "$src" "$t"
    awk '{ printf "%.2f\n", $1 + $2 }' "$t/time"
    rm -rf "$t"
}
echo "before $(probe)" >"$label.probe"

(while :; do
    echo "$(date +%s) $(head -1 /proc/stat)"
    sleep 5
done) >"$label.stat" &
sampler=$!
accounting=0
if command -v accton >/dev/null && command -v dump-acct >/dev/null; then
    : >"$label.pacct"
    accton "$label.pacct" 2>/dev/null && accounting=1
fi
{
    head -1 /proc/stat
    date +%s
} >"$label.meta"
rc=0
CI=true bash .ci/run >"$label.log" 2>&1 || rc=$?
{
    echo "rc $rc"
    date +%s
    head -1 /proc/stat
} >>"$label.meta"
((accounting)) && accton off
kill "$sampler"
echo "after $(probe)" >>"$label.probe"
if ((accounting)); then
    dump-acct "$label.pacct" |
        awk -F'|' '{ gsub(/ /, "", $1); n[$1]++; c[$1] += ($3 + $4) / 100 }
            END { for (k in n) print c[k], n[k], k }' | sort -rn >"$label.cpu"
fi
exit "$rc"
}
