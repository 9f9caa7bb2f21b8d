#!/usr/bin/env python3
"""spill2smem coverage under one user cap for every file: how many spilling kernels ship
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
    python3 scripts/spill2smem-caps.py ARCH CAP [CAP ...] [-- FILE ...]
Files after `--` replace the default set, e.g. `bench/heavy/*.cu`: register-heavy files of
our own that call helper subroutines and device functions, standing in for the issue's
held-out set.

    python3 scripts/spill2smem-caps.py --regdem ARCH [-- FILE ...]
measures regdem instead (issue 46: "lowered with no new local spills"): each file
built without a cap by plain nvcc and by nvcc-orion with
    --orion-transforms=regdem --orion-force=regdem --orion-block-size=128
A kernel is *heavy* when plain nvcc gives it at least 64 registers; it is *lowered* when ours
has fewer registers and no more STL/LDL in its section than plain nvcc's.
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


def arguments(argv):
    """(regdem?, arch, caps, files) from the command line."""
    files = FILES
    if "--" in argv:
        at = argv.index("--")
        argv, files = argv[:at], argv[at + 1:]
    regdem = argv[:1] == ["--regdem"]
    if regdem:
        argv = argv[1:]
    return regdem, int(argv[0]), [int(c) for c in argv[1:]], files


def orion_env(nvcc):
    env = dict(os.environ, NVCC_ORION_NVCC=nvcc, NVCC_ORION_CACHE="off", NVCC_ORION_VERBOSE="1")
    for k in ("NVCC_ORION", "NVCC_ORION_FORCE", "NVCC_ORION_REPORT", "NVCC_ORION_TRANSFORMS"):
        env.pop(k, None)
    return env


HEAVY = 64
REGDEM_FLAGS = ["--orion-transforms=regdem", "--orion-force=regdem", "--orion-block-size=128"]


def regdem(arch, files):
    """regdem's coverage of the heavy kernels of `files` (see the docstring)."""
    nvcc = tool("nvcc")
    env = orion_env(nvcc)
    heavy = lowered = audit = 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in files:
            name = os.path.basename(src)
            plain = os.path.join(tmp, f"plain.{name}.cubin")
            ours = os.path.join(tmp, f"ours.{name}.cubin")
            subprocess.run([nvcc, "-cubin", f"-arch=sm_{arch}", src, "-o", plain], check=True,
                           capture_output=True)
            run = subprocess.run([ORION, "-cubin", f"-arch=sm_{arch}", *REGDEM_FLAGS, src, "-o",
                                  ours], env=env, capture_output=True, text=True, check=True)
            audit += "assembly check" in run.stderr
            pl, ol = local_ops(plain), local_ops(ours)
            pu, ou = res_usage(plain), res_usage(ours)
            for k in sorted(pu):
                if k not in pl or pu[k][0] < HEAVY:
                    continue
                heavy += 1
                down = ou[k][0] < pu[k][0] and ol.get(k, 0) <= pl.get(k, 0)
                lowered += down
                what = "lowered" if down else "kept"
                rows.append(f"| {name} | `{k}` | {pu[k][0]} → {ou[k][0]} | "
                            f"{pl.get(k, 0)} → {ol.get(k, 0)} | {what} |")
    print(f"## sm_{arch}, regdem forced\n")
    print(f"{heavy} heavy kernels (at least {HEAVY} registers): **{lowered} lowered with no new "
          f"local spills**; {audit} builds naming the assembly check.\n")
    print("| file | kernel | registers plain → ours | STL/LDL plain → ours | result |")
    print("|---|---|---|---|---|")
    print("\n".join(rows) + "\n")


def main():
    is_regdem, arch, caps, files = arguments(sys.argv[1:])
    if is_regdem:
        regdem(arch, files)
        return
    nvcc = tool("nvcc")
    env = orion_env(nvcc)
    with tempfile.TemporaryDirectory() as tmp:
        for cap in caps:
            full = part = none = above = audit = 0
            rows = []
            for src in files:
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
