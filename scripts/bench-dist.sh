#!/usr/bin/env bash
# examples/cmake built with nvcc-orion three ways, in one run: cold and local (no launcher, an
# empty variant cache), cold through sccache-dist on loopback (a scheduler and one build server
# on 127.0.0.1 with two job slots, empty sccache and variant caches; cicc, cudafe++ and the host
# compiler kept local as docs/usage.md §Compile farms configures it), and again through sccache
# with its cache warm (a new build folder: every step a hit). Prints a markdown table.
# Needs root (overlay build server), bubblewrap and sccache 0.19 with its dist features
# (NVCC_ORION_SETUP_SCCACHE_DIST=1 scripts/setup.sh). Usage:
#   eval "$(NVCC_ORION_SETUP_SCCACHE_DIST=1 scripts/setup.sh)" && scripts/bench-dist.sh
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORION="$REPO/target/release/nvcc-orion"
BIN="${NVCC_ORION_SCCACHE_DIST:?run scripts/setup.sh with NVCC_ORION_SETUP_SCCACHE_DIST=1}"
NVCC_ORION_NVCC="${NVCC_ORION_NVCC:-$CUDA_HOME/bin/nvcc}"
export NVCC_ORION_NVCC
unset NVCC_ORION NVCC_ORION_REPORT CUDAARCHS CUDACXX RUSTC_WRAPPER
W="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$W"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SP="$(port)" BP="$(port)" CP="$(port)"

# The configuration names the ptxas shim under NVCC_ORION_CACHE: the farm builds use the same.
export NVCC_ORION_CACHE="$W/orion-cache-dist"
config="$("$ORION" toolchain --sccache-dist "$W/orion.tar.gz" 2>/dev/null)"
cat >"$W/scheduler.toml" <<EOF
public_addr = "127.0.0.1:$SP"
[client_auth]
type = "token"
token = "c"
[server_auth]
type = "token"
token = "s"
EOF
cat >"$W/server.toml" <<EOF
cache_dir = "$W/server-cache"
public_addr = "127.0.0.1:$BP"
scheduler_url = "http://127.0.0.1:$SP"
[builder]
type = "overlay"
build_dir = "$W/server-build"
bwrap_path = "$(command -v bwrap)"
[scheduler_auth]
type = "token"
token = "s"
EOF
cat >"$W/client.toml" <<EOF
[dist]
scheduler_url = "http://127.0.0.1:$SP"
cache_dir = "$W/client-toolchains"
[dist.auth]
type = "token"
token = "c"

$config

[[dist.toolchains]]
type = "no_dist"
compiler_executable = "$(command -v gcc)"
EOF
SCCACHE_NO_DAEMON=1 "$BIN/sccache-dist" scheduler --config "$W/scheduler.toml" >"$W/scheduler.log" 2>&1 &
pids+=($!)
SCCACHE_NO_DAEMON=1 "$BIN/sccache-dist" server --config "$W/server.toml" >"$W/server.log" 2>&1 &
pids+=($!)

export SCCACHE_CONF="$W/client.toml" SCCACHE_DIR="$W/sccache" SCCACHE_SERVER_PORT="$CP" SCCACHE_IDLE_TIMEOUT=600
for _ in $(seq 120); do
    "$BIN/sccache" --dist-status 2>/dev/null | grep -q '"num_cpus":[1-9]' && break
    sleep 0.5
done
"$BIN/sccache" --dist-status | grep -q '"num_cpus":[1-9]' || { cat "$W/server.log" >&2; exit 1; }

now() { date +%s.%N; }
build() { # name launcher
    local dir="$W/$1" launch=()
    [[ -n "$2" ]] && launch=("-DCMAKE_CUDA_COMPILER_LAUNCHER=$2")
    cmake -G Ninja -DCMAKE_CUDA_COMPILER="$ORION" "${launch[@]}" \
        -S "$REPO/examples/cmake" -B "$dir" >/dev/null
    local t0
    t0="$(now)"
    cmake --build "$dir" >/dev/null
    python3 -c "print(f'{$(now) - $t0:.2f}')"
}
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
export NVCC_ORION_CACHE="$W/orion-cache-local"
local_s="$(build local "")"
export NVCC_ORION_CACHE="$W/orion-cache-dist"
rm -rf "$NVCC_ORION_CACHE/variants"
dist_s="$(build dist "$BIN/sccache")"
dist_stats="$("$BIN/sccache" --show-stats --stats-format=json)"
hit_s="$(build hit "$BIN/sccache")"
hit_stats="$("$BIN/sccache" --show-stats --stats-format=json)"
"$BIN/sccache" --stop-server >/dev/null 2>&1 || true
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

remote="$(python3 -c 'import json,sys; print(sum(json.loads(sys.argv[1])["stats"]["dist_compiles"].values()))' "$dist_stats")"
errors="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["stats"]["dist_errors"])' "$dist_stats")"
hits="$(python3 -c 'import json,sys; s=json.loads(sys.argv[1])["stats"]["cache_hits"]["counts"]; print(sum(s.values()))' "$hit_stats")"
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
cat <<EOF
- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: $(nproc) cores, $(uname -srm)
- toolkit: $("$NVCC_ORION_NVCC" --version | grep -o 'release [0-9.]*, V[0-9.]*')
- sccache: $("$BIN/sccache" --version)
- load average (1/5/15 min) before: $load_before, after: $load_after

| build | seconds | / local cold |
|---|---:|---:|
| local, cold (nvcc-orion, no launcher) | $local_s | 1.00 |
| sccache-dist on loopback, cold ($remote ptxas steps on the build server; $errors steps kept local by no_dist) | $dist_s | $(ratio "$dist_s" "$local_s") |
| sccache, warm cache (new build folder; $hits hits) | $hit_s | $(ratio "$hit_s" "$local_s") |
EOF
