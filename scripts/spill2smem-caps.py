#!/usr/bin/env python3
"""Spill → shared coverage under one user cap for every file: how many spilling kernels ship
with every spill moved to shared memory, partly moved, or not at all (issue 46).

Each file (the spill corpus `tests/kernels/spill_corpus/*.cu` and
`tests/kernels/rewrite_audit/helpers.cu`, whose kernels call the sqrt and double-division slow
paths) is built for one arch at each cap asked for, by plain nvcc (`-cubin -arch=sm_XX
-maxrregcount=CAP`, the files' `__launch_bounds__`/`__maxnreg__` kept) and by nvcc-orion with
    --orion-transforms=spill2smem --orion-force=spill2smem --orion-block-size=128
A kernel spills when plain nvcc's listing has `STL/LDL` nvdisasm marks SpillRefill; it is
*fully moved* when ours has none left, *partly* when some are left but the kernel gained
static shared memory, else *not moved*. Also counted: builds whose stderr names the assembly
check, and kernels above the cap (registers, `cuobjdump -res-usage`).

Run from the repository root after a release build (the binary: `ORION_BIN`, default
target/release/nvcc-orion):
    python3 scripts/spill2smem-caps.py ARCH CAP [CAP ...]
"""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_tools import local_ops, res_usage, tool  # noqa: E402

FILES = sorted(glob.glob(os.path.join("tests", "kernels", "spill_corpus", "*.cu"))) + [
    os.path.join("tests", "kernels", "rewrite_audit", "helpers.cu")]
ORION = os.environ.get("ORION_BIN", os.path.join("target", "release", "nvcc-orion"))
FLAGS = ["--orion-transforms=spill2smem", "--orion-force=spill2smem",
         "--orion-block-size=128"]


def main():
    arch, caps = int(sys.argv[1]), [int(c) for c in sys.argv[2:]]
    nvcc = tool("nvcc")
    env = dict(os.environ, NVCC_ORION_NVCC=nvcc, NVCC_ORION_CACHE="off", NVCC_ORION_VERBOSE="1")
    for k in ("NVCC_ORION", "NVCC_ORION_FORCE", "NVCC_ORION_REPORT"):
        env.pop(k, None)
    with tempfile.TemporaryDirectory() as tmp:
        for cap in caps:
            full = part = none = above = audit = 0
            rows = []
            for src in FILES:
                name = os.path.basename(src)
                plain = os.path.join(tmp, f"plain.{name}.{cap}.cubin")
                ours = os.path.join(tmp, f"ours.{name}.{cap}.cubin")
                limit = [f"-arch=sm_{arch}", f"-maxrregcount={cap}"]
                subprocess.run([nvcc, "-cubin", *limit, src, "-o", plain], check=True,
                               capture_output=True)
                run = subprocess.run([ORION, "-cubin", *limit, *FLAGS, src, "-o", ours],
                                     env=env, capture_output=True, text=True, check=True)
                audit += "assembly check" in run.stderr
                pl, ol = local_ops(plain, True), local_ops(ours, True)
                pu, ou = res_usage(plain), res_usage(ours)
                for k in sorted(pl):
                    if pl[k] == 0:
                        continue
                    above += ou[k][0] > cap
                    if ol.get(k, 0) == 0:
                        full += 1
                        what = "fully moved"
                    elif ou[k][2] > pu[k][2]:
                        part += 1
                        what = "partly"
                    else:
                        none += 1
                        what = "not moved"
                    rows.append(f"| {name} | `{k}` | {pl[k]} → {ol.get(k, 0)} | {what} |")
            total = full + part + none
            print(f"## sm_{arch}, -maxrregcount={cap}\n")
            print(f"{total} spilling kernels: **{full} fully moved**, {part} partly, {none} not "
                  f"moved; {above} above the cap; {audit} builds naming the assembly check.\n")
            print("| file | kernel | spill STL/LDL plain → ours | result |")
            print("|---|---|---|---|")
            print("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
