#!/usr/bin/env python3
"""Table of the spill corpus (tests/kernels/spill_corpus) as plain nvcc builds it.

For every file of manifest.json and every arch (sm_75, 80, 86, 89, 90): `nvcc -cubin
-arch=sm_XX <the file's limit flags> -Xptxas -v`, then per kernel the registers, static shared
and stack frame from `cuobjdump -res-usage`, the spill bytes from `ptxas -v`, and the STL/LDL
count in the kernel's own `nvdisasm` listing. Prints a Markdown table; exits non-zero when a
kernel does not spill, exceeds its limit, or is missing from the manifest (or the reverse).

Run from the repository root after `eval "$(scripts/setup.sh)"`:
    python3 scripts/spill-corpus.py > bench/results/spill-corpus.md
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_tools import local_ops, res_usage, tool  # noqa: E402

ARCHS = [75, 80, 86, 89, 90]
ROOT = os.path.join("tests", "kernels", "spill_corpus")




def ptxas_stats(log):
    """function -> (spill stores, spill loads) from ptxas -v ("Function properties for F"
    precedes F's spill line, for kernels and device functions alike)."""
    out, cur = {}, None
    for line in log.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            cur = m.group(1)
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            out[cur] = (int(m.group(1)), int(m.group(2)))
            cur = None
    return out






def main():
    manifest = json.load(open(os.path.join(ROOT, "manifest.json")))
    nvcc = tool("nvcc")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    release = re.search(r"release [^\n]*", version).group(0)
    rows, bad = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for f in manifest["files"]:
            for arch in ARCHS:
                cubin = os.path.join(tmp, f"{f['file']}.sm{arch}.cubin")
                cmd = [nvcc, "-cubin", f"-arch=sm_{arch}", *f["flags"], "-Xptxas", "-v",
                       os.path.join(ROOT, f["file"]), "-o", cubin]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
                spills, usage, ops = ptxas_stats(r.stderr), res_usage(cubin), local_ops(cubin)
                for k in sorted(f["kernels"]):
                    if k not in usage:
                        bad.append(f"{k} sm_{arch}: missing")
                        continue
                    limit = f["kernels"][k]
                    reg, stack, shared = usage[k]
                    st, ld = spills.get(k, (0, 0))
                    n = ops.get(k, 0)
                    if st == 0 or n == 0:
                        bad.append(f"{k} sm_{arch}: does not spill")
                    if reg > limit:
                        bad.append(f"{k} sm_{arch}: {reg} registers above {limit}")
                    rows.append((f["file"], k, f["limit"], limit, arch, reg, st, ld, n, stack,
                                 shared))
    print("# The spill corpus under plain nvcc\n")
    print("Produced by (repository root, after `eval \"$(scripts/setup.sh)\"`):\n")
    print("```\npython3 scripts/spill-corpus.py > bench/results/spill-corpus.md\n```\n")
    print(f"with nvcc {release}, no GPU (static numbers from the cubins). Kernels: "
          "`tests/kernels/spill_corpus/*.cu`, each file built once per arch with "
          "`nvcc -cubin -arch=sm_XX <flags> -Xptxas -v` (flags and per-kernel limits in "
          "`manifest.json`). *regs*, *stack* (frame bytes per thread) and *smem* (static "
          "shared bytes) are `cuobjdump -res-usage`; *st*/*ld* are ptxas's \"bytes spill "
          "stores/loads\"; *STL+LDL* counts the local-memory instructions in the kernel's "
          "`nvdisasm` listing (device functions it calls are listed separately by nvdisasm "
          "and not counted). What nvcc-orion does with these kernels today: "
          "`spill-corpus-orion.md`.\n")
    print(f"{len({r[1] for r in rows})} kernels, {len(rows)} (kernel, arch) builds; "
          f"every one spills and stays within its limit: "
          f"{'yes' if not bad else 'NO'}.\n")
    print("| file | kernel | limit | arch | regs | spill st | spill ld | STL+LDL | stack | smem |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for (file, k, kind, limit, arch, reg, st, ld, n, stack, shared) in rows:
        print(f"| {file} | `{k}` | {kind} | sm_{arch} | {reg} | {st} | {ld} | {n} | {stack} | "
              f"{shared} |")
    if bad:
        print("\n".join(bad), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
