#!/usr/bin/env python3
"""spill2smem on the spill corpus, per kernel: bench/results/spill2smem.md.

For every file of tests/kernels/spill_corpus/manifest.json and each arch asked for (default
sm_86): plain `nvcc -cubin -arch=sm_XX <the file's limit flags>`, and the same command through
nvcc-orion with spill2smem offered and forced:
    --orion-transforms=spill2smem --orion-force=spill2smem --orion-block-size=128
(the block size only applies to kernels without launch bounds). Per kernel: registers and
static shared (`cuobjdump -res-usage`), local-memory instructions (STL/LDL in the kernel's
`nvdisasm` listing) before and after, what the rewrite did (from the report), and the predicted
cycles per warp of ptxas's own code and of the shipped candidate at the first block size the
tuner considered. Static numbers from the cubins; nothing runs on a GPU.

Run from the repository root after `eval "$(scripts/setup.sh)"` and a release build:
    python3 scripts/spill2smem-corpus.py [ARCH ...] > bench/results/spill2smem.md
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_tools import local_ops, res_usage, tool  # noqa: E402

ROOT = os.path.join("tests", "kernels", "spill_corpus")
ORION = os.path.join("target", "release", "nvcc-orion")
FLAGS = ["--orion-transforms=spill2smem", "--orion-force=spill2smem",
         "--orion-block-size=128"]








def build(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return r


def what(rec):
    """moved / partly moved / kept, and why, from the kernel's report record."""
    verdict = rec.get("verdict")
    if rec["chosen"] != 0:
        budget = rec["candidates"][rec["chosen"]].get("budget") or {}
        at = budget.get("regs", "?")
        partly = isinstance(verdict, dict) and "partly moved" in verdict.get("detail", "")
        return ("partly moved" if partly else "moved") + f" (budget {at})"
    if isinstance(verdict, dict) and verdict.get("proved") is False:
        return "refused: " + verdict.get("detail", "")
    return "kept: " + (rec.get("transform") or rec.get("reason") or "")


def cycles(c):
    v = c.get("cycles_per_warp") or []
    return f"{v[0]:.0f}" if v else "-"


def main():
    archs = [int(a) for a in sys.argv[1:]] or [86]
    manifest = json.load(open(os.path.join(ROOT, "manifest.json")))
    nvcc = tool("nvcc")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    release = re.search(r"release [^\n]*", version).group(0)
    env = dict(os.environ, NVCC_ORION_NVCC=nvcc, NVCC_ORION_CACHE="off")
    for k in ("NVCC_ORION", "NVCC_ORION_FORCE", "NVCC_ORION_REPORT"):
        env.pop(k, None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in manifest["files"]:
            src = os.path.join(ROOT, f["file"])
            for arch in archs:
                plain = os.path.join(tmp, f"plain.{f['file']}.{arch}.cubin")
                ours = os.path.join(tmp, f"orion.{f['file']}.{arch}.cubin")
                rep = os.path.join(tmp, f"{f['file']}.{arch}.jsonl")
                build([nvcc, "-cubin", f"-arch=sm_{arch}", *f["flags"], src, "-o", plain])
                build([ORION, "-cubin", f"-arch=sm_{arch}", *f["flags"], *FLAGS,
                       f"--orion-report={rep}", src, "-o", ours], env)
                pu, ou = res_usage(plain), res_usage(ours)
                pl, ol = local_ops(plain, True), local_ops(ours, True)
                recs = {r["kernel"]: r for r in map(json.loads, open(rep))}
                for k in sorted(f["kernels"]):
                    rec = recs[k]
                    (preg, _, psh), (oreg, _, osh) = pu[k], ou[k]
                    ship = rec["candidates"][rec["chosen"]]
                    rows.append((f["file"], k, f["kernels"][k], arch, preg, oreg, pl.get(k, 0),
                                 ol.get(k, 0), osh - psh, cycles(rec["candidates"][0]),
                                 cycles(ship), rec["block_sizes"][0],
                                 what(rec)))
    moved = sum(r[12].startswith("moved") for r in rows)
    partly = sum(r[12].startswith("partly") for r in rows)
    print("# spill2smem on the spill corpus\n")
    print("Produced by (repository root, after `eval \"$(scripts/setup.sh)\"` and "
          "`cargo build --release`):\n")
    print(f"```\npython3 scripts/spill2smem-corpus.py {' '.join(map(str, archs))} "
          "> bench/results/spill2smem.md\n```\n")
    print(f"with nvcc {release}, no GPU: static numbers from the cubins and the tuner's "
          "predictions, not timings. Each corpus file (`tests/kernels/spill_corpus`, limits "
          "in `manifest.json`: `-maxrregcount` 32/40/64, `__launch_bounds__`, `__maxnreg__`) "
          "is built by plain nvcc and by nvcc-orion with "
          f"`{' '.join(FLAGS)}`. *regs* are `cuobjdump -res-usage` (plain → ours, never above "
          "the limit); *local* counts STL/LDL in the kernel's `nvdisasm` listing (plain → "
          "ours); *smem +* is the static shared memory the spill area adds per block; "
          "*cycles* are the predicted cycles per warp of ptxas's own code and of what ships, "
          "at block size *at* (the first the tuner considered). Forcing ships the lowest "
          "proved spill2smem candidate, so cycles may rise where a lower budget was "
          "taken; unforced, the tuner keeps the candidate only past its margin.\n")
    print(f"{len(rows)} kernel builds: {moved} with every spill moved, {partly} partly moved "
          f"(the hottest words; the area for all of them would pass 48 KiB), "
          f"{len(rows) - moved - partly} kept.\n")
    print("| file | kernel | limit | arch | regs | spills | smem + | cycles ptxas → shipped | at "
          "| result |")
    print("|---|---|---:|---|---|---|---:|---|---:|---|")
    for (file, k, limit, arch, preg, oreg, pl, ol, add, pc, sc, at, res) in rows:
        res = res.replace("|", "\\|")
        print(f"| {file} | `{k}` | {limit} | sm_{arch} | {preg} → {oreg} | {pl} → {ol} | {add} | "
              f"{pc} → {sc} | {at} | {res} |")


if __name__ == "__main__":
    main()
