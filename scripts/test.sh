#!/usr/bin/env bash
# The whole test suite: toolkit setup, formatting, then all tests (release build) with clippy beside them.
# With CI set, tests that need nvcc/cmake fail instead of skipping when the toolkit is missing.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
START=$(date +%s)

step() { printf '\n== [%ss] %s\n' "$(($(date +%s) - START))" "$*" >&2; }

step "scripts/setup.sh"
eval "$(scripts/setup.sh)"
# Tests find the toolkit through these; make the choice explicit for every test process.
export NVCC_ORION_NVCC="${NVCC_ORION_NVCC:-$CUDA_HOME/bin/nvcc}"
# ... behind the suite's memos of the clean results of ptxas, nvdisasm, cicc and cudafe++,
# which every test process, nvcc and the product under test share: the real tools' own output
# for the same bytes and arguments, computed once (scripts/toolkit-memo/;
# ORION_TEST_TOOLKIT_MEMO=0: none).
if [[ "${ORION_TEST_TOOLKIT_MEMO:-1}" != 0 ]]; then
    NVCC_ORION_NVCC=$(scripts/toolkit-memo/build.sh "$NVCC_ORION_NVCC" "${CARGO_TARGET_DIR:-$REPO/target}/tmp")
fi
# The test binaries (eleven, tests/<theme>/main.rs) are built without link-time optimisation: thin LTO redoes the
# whole crate graph's optimisation at each one's link, most of a cold CI run's build time. The
# code is the same (LTO changes no behaviour); `cargo build --release` still ships it with LTO.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
# Settings from the caller's shell would change what nvcc-orion does under test.
unset NVCC_ORION NVCC_ORION_REPORT NVCC_ORION_VERBOSE
[[ -n "${CI:-}" ]] && echo "CI=$CI: toolkit-dependent tests must run, not skip" >&2
# A test that cannot run here (a tool missing) passes with one `SKIP <test>: <why>` line
# (tests/common: `skipped`), also appended to this file; they are counted and listed at the
# end, even when a test failed, so a missing tool cannot hide behind a green run.
ORION_TEST_SKIP_LOG="$(mktemp "${TMPDIR:-/tmp}/orion-skips.XXXXXX")"
export ORION_TEST_SKIP_LOG
TESTS_RAN=""
report_skips() {
    if [[ -n "$TESTS_RAN" ]]; then
        local n
        n=$(sort -u "$ORION_TEST_SKIP_LOG" | grep -c . || true)
        printf '\n== %s skipped\n' "$n" >&2
        sort -u "$ORION_TEST_SKIP_LOG" >&2
    fi
    rm -f "$ORION_TEST_SKIP_LOG"
    if [[ -n "${CLIPPY_PID:-}" ]]; then kill "$CLIPPY_PID" 2>/dev/null || true; fi
    rm -f "${CLIPPY_LOG:-}"
}
trap report_skips EXIT

if command -v shellcheck >/dev/null; then
    step "shellcheck"
    shellcheck -x scripts/*.sh scripts/toolkit-memo/* .ci/run
fi

step "cargo fmt --check"
cargo fmt --all -- --check

# clippy runs beside the tests, at low priority, in a target folder of its own (its check
# artifacts share nothing with the release build's): on 2 cores it fills the time the tests'
# build and run leave idle, a single-threaded front end or a test waiting on a tool
# (bench/results/suite.md, seventeenth pass). Its verdict is printed and counted at the end.
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
CLIPPY_LOG="$(mktemp "${TMPDIR:-/tmp}/orion-clippy.XXXXXX")"
step "cargo clippy --workspace --all-targets -- -D warnings (beside the tests, in $TARGET/clippy)"
CARGO_TARGET_DIR="$TARGET/clippy" nice -n 10 \
    cargo clippy --workspace --all-targets -- -D warnings >"$CLIPPY_LOG" 2>&1 &
CLIPPY_PID=$!
clippy_verdict() {
    local rc=0
    wait "$CLIPPY_PID" || rc=$?
    CLIPPY_PID=""
    step "cargo clippy: exit $rc"
    if [[ $rc != 0 ]]; then cat "$CLIPPY_LOG" >&2; fi
    return "$rc"
}

TESTS_RAN=1
if cargo nextest --version >/dev/null 2>&1; then
    # The libraries' unit tests first, nvcc-orion's at opt-level 0: at 3 its test harness is a
    # second full optimised compile of the crate (about 105 s of CPU cold, 19 s at 0) for 360
    # tests that run in about 3 s either way; the binary and every integration test still use
    # the crate at the release profile's level (bench/results/suite.md, tenth pass).
    failed=0
    step "cargo nextest run --workspace --release --lib (nvcc-orion's at opt-level 0)"
    cargo nextest run --workspace --release --lib --no-fail-fast \
        --config 'profile.release.package.nvcc-orion.opt-level=0' || failed=1
    # One test more than cores: a test often waits, on a tool's files or on a shared
    # fixture another test is building, and on 2 cores that left a core idle (seventeenth pass).
    step "cargo nextest run --workspace --release --bins --test '*'"
    NEXTEST_TEST_THREADS="${NEXTEST_TEST_THREADS:-$(($(nproc) + 1))}" \
        cargo nextest run --workspace --release --bins --test '*' --no-fail-fast || failed=1
    clippy_verdict || failed=1
    [[ $failed == 0 ]]
    # nextest does not run doctests.
    step "cargo test --workspace --release --doc"
    cargo test --workspace --release --doc
else
    step "cargo test --workspace --release"
    failed=0
    cargo test --workspace --release --no-fail-fast || failed=1
    clippy_verdict || failed=1
    [[ $failed == 0 ]]
fi

step "all checks passed"
