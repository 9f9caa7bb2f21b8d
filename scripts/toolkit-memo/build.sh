#!/usr/bin/env bash
# The test suite's toolkit: `build.sh NVCC DIR` prints the nvcc of a toolkit under DIR that is
# the real one of NVCC with ptxas, nvdisasm and the front end (cicc, cudafe++) behind memos of
# their clean results (the scripts `ptxas`, `nvdisasm` and `frontend` beside this one say what
# each keeps). scripts/test.sh hands it to every test process as NVCC_ORION_NVCC, so nvcc, the
# product under test, the library run inside a test and the tests' own references all reach
# the same memos.
#
# Everything else is the real toolkit: nvcc is the real binary (a hard link, else a copy: nvcc
# finds its nvcc.profile and the tools on its PATH beside the file it was started from), its
# nvcc.profile is the real one with `TOP` pointing at the real folder (so include paths, line
# tables and depfiles name the real toolkit as before) and `CICC_PATH` at this toolkit's
# `nvvm/bin`, and every other file is a link to the real one. Where NVCC does not look like
# that (no nvcc.profile with a `TOP` relative to `$(_HERE_)`, no ptxas or nvdisasm beside it),
# NVCC itself is printed.
set -euo pipefail
nvcc=$1
parent=$2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
bin=$(cd "$(dirname "$nvcc")" 2>/dev/null && pwd -P) || {
    echo "$nvcc"
    exit 0
}
profile="$bin/nvcc.profile"
# shellcheck disable=SC2016 # `$(_HERE_)` is nvcc.profile's own variable, matched as written
if [[ $(basename "$nvcc") != nvcc || ! -f "$profile" || ! -x "$bin/ptxas" || ! -x "$bin/nvdisasm" ]] ||
    ! grep -q '^TOP *=.*\$(_HERE_)' "$profile"; then
    echo "$nvcc"
    exit 0
fi
# Another toolkit or other memo scripts get another folder.
id=$({
    stat -L -c '%n %s %Y' "$bin/nvcc" "$bin/ptxas" "$bin/nvdisasm" "$profile"
    cat "$src/ptxas" "$src/nvdisasm" "$src/frontend"
} | sha256sum | cut -c1-16)
dir="$parent/toolkit-memo-$id"
# A path as sed's replacement text between `|`s.
quote() { printf '%s' "$1" | sed 's/[\\|&]/\\&/g'; }
if [[ ! -x "$dir/bin/nvcc" ]]; then
    mkdir -p "$parent"
    tmp=$(mktemp -d "$parent/.toolkit-memo.XXXXXX")
    chmod 755 "$tmp"
    mkdir -p "$tmp/bin/.real" "$tmp/memo"
    top=$(cd "$bin/.." && pwd -P)
    for e in "$top"/*; do
        name=${e##*/}
        [[ $name == bin || $name == nvvm ]] || ln -s "$e" "$tmp/$name"
    done
    # nvvm/ as the real one, but for cicc (nvcc.profile's `CICC_PATH` below points here).
    if [[ -d "$top/nvvm" ]]; then
        mkdir -p "$tmp/nvvm/bin/.real"
        for e in "$top/nvvm"/*; do
            [[ ${e##*/} == bin ]] || ln -s "$e" "$tmp/nvvm/${e##*/}"
        done
        for e in "$top/nvvm/bin"/*; do
            name=${e##*/}
            if [[ $name == cicc ]]; then
                ln -s "$e" "$tmp/nvvm/bin/.real/$name"
                cp "$src/frontend" "$tmp/nvvm/bin/$name"
                chmod 755 "$tmp/nvvm/bin/$name"
            else
                ln -s "$e" "$tmp/nvvm/bin/$name"
            fi
        done
    fi
    for e in "$bin"/*; do
        name=${e##*/}
        case $name in
        nvcc) ln "$e" "$tmp/bin/nvcc" 2>/dev/null || cp -p "$e" "$tmp/bin/nvcc" ;;
        nvcc.profile)
            # shellcheck disable=SC2016 # as above
            sed -e '/^TOP *=/s|\$(_HERE_)|'"$(quote "$bin")"'|' \
                -e '/^CICC_PATH *=/s|=.*|= '"$(quote "$dir/nvvm/bin")"'|' "$e" >"$tmp/bin/nvcc.profile"
            ;;
        ptxas | nvdisasm | cudafe++)
            ln -s "$e" "$tmp/bin/.real/$name"
            script=$name
            [[ $name == cudafe++ ]] && script=frontend
            cp "$src/$script" "$tmp/bin/$name"
            chmod 755 "$tmp/bin/$name"
            ;;
        *) ln -s "$e" "$tmp/bin/$name" ;;
        esac
    done
    # Another run that built the same folder first wins; this one is dropped.
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
fi
echo "$dir/bin/nvcc"
