#!/usr/bin/env bash
# The suite's time against a baseline, in one sitting (bench/results/suite.md, issue 50):
# `abba.sh MAIN BASE` runs measure.sh for MAIN, BASE, BASE, MAIN (labels m1 b1 b2 m2), one
# after the other, removing each clone's target/ after its run (the disk holds about two),
# then prints compare.py's table. The ABBA order puts a slow hour on both sides. About 2.3 h
# on 2 cores. WORK as measure.sh.
set -uo pipefail
# The whole script is one block, which bash reads before it runs any of it: an edit to this
# file while a measure runs (hours) must not change what the running copy does.
{
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${WORK:-/tmp/orion-suite}
main=$1
base=$2
for spec in "m1:$main" "b1:$base" "b2:$base" "m2:$main"; do
    label=${spec%%:*}
    echo "$(date -u +%FT%TZ) start $label ${spec#*:}"
    "$here/measure.sh" "$label" "${spec#*:}" || echo "$label: the suite failed (rc $?)"
    rm -rf "${work:?}/$label/target"
    echo "$(date -u +%FT%TZ) end $label"
done
python3 "$here/compare.py" m1 b1 b2 m2
exit
}
