#!/usr/bin/env bash
# rustc for the test suite's build: the suite (test.sh) sets this as RUSTC_WORKSPACE_WRAPPER, so
# cargo runs every workspace crate's compile through it as `suite-rustc.sh RUSTC ARGS...`.
#
# The integration tests' own crates (`tests/<theme>/main.rs`, `tests/*.rs`, built with
# `--test` from this repository's root) are compiled at opt-level 0; everything else exactly
# as cargo asks. A test binary spends its time waiting on the toolkit and on nvcc-orion, which
# stay at the release profile's level, while optimising the eleven test crates at level 3 cost
# 152 s of CPU in a cold build against 29 s at 0 (bench/results/suite.md, eighteenth pass).
# Debug assertions and overflow checks stay off, as the release profile has them (rustc
# would turn both on at opt-level 0), so a test's code means what it meant before.
#
# Cargo cannot set a profile per target, only per package, and the tests must stay in
# nvcc-orion's package to reach its binary (`CARGO_BIN_EXE_nvcc-orion`). A cargo run inside a
# test (another working folder) gets every compile unchanged.
set -eu
rustc=$1
shift
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
test_crate=0
if [[ $(pwd -P) == "$repo" ]]; then
    is_test=0
    source_in_tests=0
    for a in "$@"; do
        [[ $a == --test ]] && is_test=1
        [[ $a == tests/*.rs ]] && source_in_tests=1
    done
    ((is_test && source_in_tests)) && test_crate=1
fi
if ((test_crate)); then
    exec "$rustc" "$@" -C opt-level=0 -C debug-assertions=off -C overflow-checks=off
fi
exec "$rustc" "$@"
