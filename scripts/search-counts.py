#!/usr/bin/env python3
"""The default mode's descent against the full search (issue 47), from reports.

Usage: scripts/search-counts.py DIR
DIR holds, per source NAME, NAME.descent.jsonl and NAME.full.jsonl (NVCC_ORION_REPORT of a build
with NVCC_ORION_SEARCH=descent and =full) and NAME.descent.time / NAME.full.time (GNU time
`-f "%U %S %e %M"`). Prints a markdown table per file: kernel-arch pairs, kernels retuned by the
full search, kernel-budget compiles, variant ptxas runs per step (the rounds, read from the
candidates: a full search's plain rounds plus one for the pragma; a descent's stages plus one
per stage where a kernel reached its lowest budget; plus a final whole-module run where a record
says so), choices that differ, CPU (user+sys) and wall seconds; then each changed choice with
the full search's candidates and their predicted gains."""
import json, sys, glob, os, collections
d = sys.argv[1]
def recs(path):
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else None
def budget(c):
    b = c.get("budget")
    return None if b is None else (b["regs"], b.get("smem_spill", False))
def gain(base, c):
    g = None
    for b, v in zip(base["cycles_per_warp"], c["cycles_per_warp"]):
        if b is None: x = 0.0
        elif v is None or v <= 0: return None
        else: x = 100.0 * (b / v - 1.0)
        g = x if g is None else min(g, x)
    return g
def steps(rs):
    by = collections.defaultdict(list)
    for r in rs: by[(r["arch"], r["output"])].append(r)
    return by
def runs(rs, mode):
    """ptxas runs per step beyond the baseline: variant rounds + a final whole-module run."""
    n = 0
    for key, rr in steps(rs).items():
        plain = [sum(1 for c in r["candidates"][1:] if not budget(c)[1]) for r in rr]
        smem = [r for r in rr if any(budget(c)[1] for c in r["candidates"][1:])]
        if mode == "full":
            n += max(plain, default=0) + (1 if smem else 0)
        else:
            n += max(plain, default=0) + len({sum(1 for c in r["candidates"][1:] if not budget(c)[1]) for r in smem})
        n += 1 if any(r.get("assembly") == "whole-module" for r in rr) else 0
    return n
tot = collections.Counter(); changes = []; rows = []
for f in sorted(glob.glob(f"{d}/*.descent.jsonl")):
    n = os.path.basename(f)[: -len(".descent.jsonl")]
    de, fu = recs(f), recs(f"{d}/{n}.full.jsonl")
    if not de or not fu: 
        rows.append((n, "no report")); continue
    t = lambda m: open(f"{d}/{n}.{m}.time").read().split()
    (du, ds, dw, dm), (fu_, fs, fw, fm) = t("descent")[-4:], t("full")[-4:]
    bd = sum(len(r["candidates"]) - 1 for r in de); bf = sum(len(r["candidates"]) - 1 for r in fu)
    rd, rf = runs(de, "descent"), runs(fu, "full")
    retuned = sum(1 for r in fu if r["chosen"] != 0)
    fk = {(r["arch"], r["kernel"]): r for r in fu}
    ch = 0
    for r in de:
        q = fk[(r["arch"], r["kernel"])]
        a = budget(r["candidates"][r["chosen"]]); b = budget(q["candidates"][q["chosen"]])
        if a != b:
            ch += 1
            changes.append((n, r["arch"], r["kernel"], b, round(q["gain_percent"], 1), a, round(r["gain_percent"], 1),
                            [(budget(c), None if gain(q["candidates"][0], c) is None else round(gain(q["candidates"][0], c), 1)) for c in q["candidates"][1:]]))
    tot.update(kernels=len(fu), retuned=retuned, bf=bf, bd=bd, rf=rf, rd=rd, ch=ch,
               cpu_f=float(fu_) + float(fs), cpu_d=float(du) + float(ds))
    rows.append((n, len(fu), retuned, bf, bd, rf, rd, ch, "%.2f" % (float(fu_) + float(fs)), "%.2f" % (float(du) + float(ds)), fw, dw))
print("| file | kernel-arch pairs | retuned (full) | budget compiles full -> descent | variant ptxas runs (+final whole-module) full -> descent | choices changed | CPU s full -> descent (1 run) | wall s full -> descent |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    if len(r) == 2: print(f"| {r[0]} | {r[1]} |"); continue
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} -> {r[4]} | {r[5]} -> {r[6]} | {r[7]} | {r[8]} -> {r[9]} | {r[10]} -> {r[11]} |")
print(f"| **all** | {tot['kernels']} | {tot['retuned']} | {tot['bf']} -> {tot['bd']} ({100*(tot['bd']-tot['bf'])/max(tot['bf'],1):+.0f} %) | {tot['rf']} -> {tot['rd']} | {tot['ch']} | {tot['cpu_f']:.1f} -> {tot['cpu_d']:.1f} | |")
print()
print("Choices that changed (full: budget, shipped gain -> descent: budget, shipped gain; full's candidates with their gains):")
for c in changes:
    print("-", c)
