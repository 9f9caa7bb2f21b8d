#!/usr/bin/env bash
# The tests a run skipped, printed at the end of the suite (issue 50): `report-skips.sh LOG`
# prints `== N skipped` and then each distinct line of LOG, the file tests/common's `skipped`
# appends a line to (ORION_TEST_SKIP_LOG), so a missing tool cannot hide behind a green run.
set -uo pipefail
n=$(LC_ALL=C sort -u "$1" | grep -c . || true)
printf '\n== %s skipped\n' "$n"
LC_ALL=C sort -u "$1"
