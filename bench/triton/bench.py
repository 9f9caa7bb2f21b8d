"""What the ptxas step of a JIT costs through nvcc-orion: each PTX file that Triton made
(`kernels.py`) compiled with Triton's own ptxas command line (`-lineinfo -v
--regAllocOptLevel=2 --gpu-name=sm_XX`, sm_90a for sm_90) by plain ptxas and by nvcc-orion (`--shim`:
a link named ptxas to it, or shims/ptxas),
interleaved, one process at a time, with the variant cache off (a JIT's first call).

    python bench.py --ptx DIR --ptxas PTXAS --shim SHIM [--runs N]

Prints a Markdown table: per kernel the median wall and CPU (user+sys of the process tree)
seconds of each, their ratios, and whether the shim's cubin differs from ptxas's (retuned).
The target (issue 49): with nothing retuned, at most 1.10x plain ptxas.
"""

import argparse
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time


def arch_of(ptx_text):
    sm = re.search(r"^\.target\s+(sm_\d+)", ptx_text, re.M).group(1)
    return "sm_90a" if sm == "sm_90" else sm


def timed(cmd, env):
    """(wall seconds, cpu seconds) of one run; the run must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptx", required=True)
    ap.add_argument("--ptxas", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    env = dict(os.environ, NVCC_ORION_CACHE="off", NVCC_ORION_PTXAS=args.ptxas)
    env.pop("NVCC_ORION", None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(f for f in os.listdir(args.ptx) if f.endswith(".ptx")):
            ptx = os.path.join(args.ptx, name)
            with open(ptx) as f:
                arch = arch_of(f.read())
            outs = {k: os.path.join(tmp, f"{k}.cubin") for k in ("plain", "shim")}
            cmds = {k: [prog, "-lineinfo", "-v", "--regAllocOptLevel=2", f"--gpu-name={arch}", ptx,
                        "-o", outs[k]] for k, prog in (("plain", args.ptxas), ("shim", args.shim))}
            times = {"plain": [], "shim": []}
            for i in range(args.runs + 1):
                for k in (("plain", "shim") if i % 2 else ("shim", "plain")):
                    w = timed(cmds[k], env)
                    if i > 0:  # the first round warms the page cache
                        times[k].append(w)
            with open(outs["plain"], "rb") as a, open(outs["shim"], "rb") as b:
                retuned = a.read() != b.read()
            med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                   for k, v in times.items()}
            rows.append((name[:-4], arch, med, retuned))
    print("| kernel | arch | ptxas wall s | shim wall s | wall ratio | ptxas cpu s | shim cpu s | cpu ratio | retuned |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, arch, m, retuned in rows:
        (pw, pc), (sw, sc) = m["plain"], m["shim"]
        print(f"| {name} | {arch} | {pw:.3f} | {sw:.3f} | {sw / pw:.2f} | {pc:.3f} | {sc:.3f} | "
              f"{sc / pc:.2f} | {'yes' if retuned else 'no'} |")
    for i, what in ((0, "wall"), (1, "cpu")):
        plain = [m["plain"][i] for _, _, m, r in rows if not r]
        shim = [m["shim"][i] for _, _, m, r in rows if not r]
        if plain:
            ratios = [s / p for s, p in zip(shim, plain)]
            print(f"\nNothing retuned ({len(plain)} kernels), {what}: total {sum(shim):.3f} s vs "
                  f"{sum(plain):.3f} s ({sum(shim) / sum(plain):.3f}x); median per kernel "
                  f"{statistics.median(ratios):.3f}x, worst {max(ratios):.3f}x")


if __name__ == "__main__":
    main()
