#!/usr/bin/env python3
"""Adapt's descent against its full search (issue 47), from reports and objects.

Usage: scripts/adapt-search-counts.py BEFORE AFTER
BEFORE and AFTER hold, per source NAME, NAME.jsonl (NVCC_ORION_REPORT of a cold
NVCC_ORION=adapt build), NAME.o (its object) and NAME.time (GNU time `-f "%U %S %e %M"`).
Prints a markdown table per file: kernel-arch pairs, budget compiles, kernels whose embedded
variants differ (by the report: each variant's budget, and whether the object-size cap left it
out), whether `cuobjdump -res-usage` lists the same functions with the same registers, stack,
shared and constant memory, whether
the objects are the same bytes but for nvcc's tmpxft names, and CPU (user+sys) seconds."""
import json, os, re, subprocess, sys, glob, collections
before, after = sys.argv[1], sys.argv[2]
cuda = os.environ.get("CUDA_HOME", "")
cuobjdump = os.path.join(cuda, "bin", "cuobjdump") if cuda else "cuobjdump"
def recs(path):
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else None
def budget(c):
    b = c.get("budget")
    return None if b is None else (b["regs"], b.get("smem_spill", False))
def variants(r):
    c = r["candidates"]
    return [(budget(c[v["candidate"]]), v.get("left_out")) for v in r.get("variants", [])]
def res_usage(obj):
    out = subprocess.run([cuobjdump, "-res-usage", obj], capture_output=True, text=True).stdout
    got, fn, arch = {}, None, None
    for line in out.splitlines():
        m = re.search(r"arch = (sm_\d+)", line)
        if m: arch = m.group(1)
        m = re.match(r"\s*Function (\S+):", line)
        if m: fn = m.group(1)
        if fn and "REG:" in line: got[(arch, fn)] = line.split(); fn = None
    return got
def masked(obj):
    return re.sub(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}", b"tmpxft", open(obj, "rb").read())
def cpu(d, n):
    u, s, *_ = open(f"{d}/{n}.time").read().split()[-4:]
    return float(u) + float(s)
tot = collections.Counter(); diffs = []
print("| file | kernel-arch pairs | budget compiles before -> after | kernels with other variants | cuobjdump -res-usage same | object same bytes | CPU s before -> after (1 run) |")
print("|---|---:|---:|---:|---|---|---:|")
for f in sorted(glob.glob(f"{before}/*.jsonl")):
    n = os.path.basename(f)[:-len(".jsonl")]
    b, a = recs(f), recs(f"{after}/{n}.jsonl")
    if not b or not a:
        print(f"| {n} | no report |"); continue
    bk = {(r["arch"], r["kernel"]): r for r in b}
    ak = {(r["arch"], r["kernel"]): r for r in a}
    assert bk.keys() == ak.keys(), n
    cb = sum(len(r["candidates"]) - 1 for r in b); ca = sum(len(r["candidates"]) - 1 for r in a)
    other = [k for k in bk if variants(bk[k]) != variants(ak[k])]
    diffs += [(n, k, variants(bk[k]), variants(ak[k])) for k in other]
    same_regs = res_usage(f"{before}/{n}.o") == res_usage(f"{after}/{n}.o")
    same_bytes = masked(f"{before}/{n}.o") == masked(f"{after}/{n}.o")
    tot.update(pairs=len(bk), cb=cb, ca=ca, other=len(other), regs=int(not same_regs), bytes=int(not same_bytes),
               cpub=cpu(before, n), cpua=cpu(after, n))
    print(f"| {n} | {len(bk)} | {cb} -> {ca} | {len(other)} | {'yes' if same_regs else 'NO'} | {'yes' if same_bytes else 'NO'} | {cpu(before, n):.2f} -> {cpu(after, n):.2f} |")
print(f"| **all** | {tot['pairs']} | {tot['cb']} -> {tot['ca']} ({100 * (tot['ca'] - tot['cb']) / max(tot['cb'], 1):+.0f} %) | {tot['other']} | {tot['regs']} differ | {tot['bytes']} differ | {tot['cpub']:.1f} -> {tot['cpua']:.1f} |")
for d in diffs:
    print("- other variants:", d)
