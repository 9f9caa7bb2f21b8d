#!/usr/bin/env bash
# Issue 47, adapt's glue slot: adapt cold builds of two binaries against nvcc, paired, and the
# cubins of their objects compared.
#
#   BEFORE=<nvcc-orion> AFTER=<nvcc-orion> RUNS=3 bench/results/adapt-glue-measure.sh OUT_DIR file.cu...
#
# Per file, RUNS rounds of three builds, nvcc / before / after, the order reversed every other
# round; each under GNU time ("wall user sys"), with the 1-minute load before it. Each build:
#   <compiler> -c -O3 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 F -o O
# with NVCC_ORION=adapt NVCC_ORION_CACHE=off for the two nvcc-orion binaries. Then every cubin
# of the before and after objects (`cuobjdump -xelf all`) compared byte for byte, and the
# whole objects but for nvcc's `tmpxft_` temporary names.
set -euo pipefail
out=$1; shift
mkdir -p "$out"
runs=${RUNS:-3}
args=(-c -O3 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90)
build() { # who file object
    local who=$1 f=$2 o=$3 load
    load=$(cut -d' ' -f1 /proc/loadavg)
    case $who in
        nvcc) /usr/bin/time -f "%e %U %S" -o "$out/t" "$NVCC_ORION_NVCC" "${args[@]}" "$f" -o "$o" ;;
        before) NVCC_ORION=adapt NVCC_ORION_CACHE=off /usr/bin/time -f "%e %U %S" -o "$out/t" "$BEFORE" "${args[@]}" "$f" -o "$o" ;;
        after) NVCC_ORION=adapt NVCC_ORION_CACHE=off /usr/bin/time -f "%e %U %S" -o "$out/t" "$AFTER" "${args[@]}" "$f" -o "$o" ;;
    esac
    echo "$(basename "$f" .cu) $who $(tail -1 "$out/t") load=$load"
}
for f in "$@"; do
    name=$(basename "$f" .cu)
    for r in $(seq 1 "$runs"); do
        order=(nvcc before after)
        (( r % 2 == 0 )) && order=(after before nvcc)
        for who in "${order[@]}"; do
            build "$who" "$f" "$out/$name.$who.o"
        done
    done
    for who in before after; do
        # Extracted under the object's name: the same name for both, in a folder of each.
        rm -rf "$out/$name.$who.x" && mkdir "$out/$name.$who.x"
        cp "$out/$name.$who.o" "$out/$name.$who.x/$name.o"
        (cd "$out/$name.$who.x" && "$(dirname "$NVCC_ORION_NVCC")/cuobjdump" -xelf all "$name.o" >/dev/null && rm "$name.o")
    done
    if diff -r "$out/$name.before.x" "$out/$name.after.x" >/dev/null; then
        echo -n "$name cubins=same ($(ls "$out/$name.after.x" | wc -l) cubins)"
    else
        echo -n "$name cubins=DIFFER"
    fi
    # The whole objects, host code and glue included, but for nvcc's tmpxft_ temporary names.
    python3 -c 'import re,sys
m=lambda p: re.sub(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}", b"tmpxft", open(p,"rb").read())
print(" objects=" + ("same" if m(sys.argv[1]) == m(sys.argv[2]) else "DIFFER"))' \
        "$out/$name.before.o" "$out/$name.after.o"
done
