#!/usr/bin/env bash
# The whole test suite: toolkit setup, formatting, clippy, then all tests (release build).
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
        scripts/report-skips.sh "$ORION_TEST_SKIP_LOG" >&2
    fi
    rm -f "$ORION_TEST_SKIP_LOG"
}
trap report_skips EXIT

if command -v shellcheck >/dev/null; then
    step "shellcheck"
    shellcheck -x scripts/*.sh scripts/toolkit-memo/* bench/suite/*.sh .ci/run
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

TESTS_RAN=1
# The integration tests' own crates at opt-level 0, the rest as the profile says (why:
# scripts/suite-rustc.sh). Set for every build from here on, so that the steps below share
# the libraries they build (cargo keys a workspace crate by its wrapper too).
export RUSTC_WORKSPACE_WRAPPER="$REPO/scripts/suite-rustc.sh"
if cargo nextest --version >/dev/null 2>&1; then
    # The libraries' unit tests first, nvcc-orion's at opt-level 0: at 3 its test harness is a
    # second full optimised compile of the crate (about 105 s of CPU cold, 19 s at 0) for 360
    # tests that run in about 3 s either way; the binary and every integration test still use
    # the crate at the release profile's level (bench/results/suite.md, tenth pass).
    failed=0
    step "cargo nextest run --workspace --release --lib (nvcc-orion's at opt-level 0)"
    cargo nextest run --workspace --release --lib --no-fail-fast \
        --config 'profile.release.package.nvcc-orion.opt-level=0' || failed=1
    step "cargo nextest run --workspace --release --bins --test '*'"
    cargo nextest run --workspace --release --bins --test '*' --no-fail-fast || failed=1
    [[ $failed == 0 ]]
    # nextest does not run doctests.
    step "cargo test --workspace --release --doc"
    cargo test --workspace --release --doc
else
    step "cargo test --workspace --release"
    cargo test --workspace --release --no-fail-fast
fi

step "all checks passed"
