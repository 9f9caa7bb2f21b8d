#!/usr/bin/env python3
"""The default build's choices on every test kernel, the examples and bench/build (issue 32).

Compiles each source with an nvcc-orion binary in its default mode (tuning, no selector, the
variant cache off) for sm_80 and sm_90, and writes one JSON object per line:
  {"file", "arch", "kernel", "chosen_budget" (null: ptxas's own), "chosen_registers",
   "baseline_registers", "gain_percent",
   "reason", "candidates": [[registers, spills, frame, [cycles per block size]], ...]}
Sources nvcc cannot compile with plain `-c` (error cases, host-only files, separable pieces
that need -rdc) are listed as skipped. The walk example's candidates are in its records.

Usage: scripts/model-choices.py NVCC_ORION_BINARY OUT.jsonl [SOURCE...]
       scripts/model-choices.py --choices-json OUT.jsonl   bench/build's choices in
                                                            bench/build/choices.json's form
"""
import glob, json, os, subprocess, sys, tempfile

ARCHS = ["sm_80", "sm_90"]


def sources(repo):
    found = sorted(glob.glob(f"{repo}/tests/kernels/**/*.cu", recursive=True))
    found += sorted(glob.glob(f"{repo}/examples/kernels/*.cu"))
    found += sorted(glob.glob(f"{repo}/bench/build/*.cu"))
    return [os.path.relpath(p, repo) for p in found]


def choices_json(path):
    """{file: {arch: {kernel: chosen budget or null}}} for bench/build, as choices.json."""
    out = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("skipped") or not r["file"].startswith("bench/build/"):
            continue
        name = os.path.basename(r["file"])[: -len(".cu")]
        out.setdefault(name, {}).setdefault(r["arch"], {})[r["kernel"]] = r["chosen_budget"]
    return json.dumps(out, indent=1, sort_keys=True)


def main(argv):
    if argv[1] == "--choices-json":
        print(choices_json(argv[2]))
        return 0
    binary, out = os.path.abspath(argv[1]), argv[2]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = argv[3:] or sources(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVCC_ORION")}
    env["NVCC_ORION_CACHE"] = "off"
    rows, skipped = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            report = os.path.join(tmp, "r.jsonl")
            if os.path.exists(report):
                os.remove(report)
            cmd = [binary, "-c", "-O3"]
            for a in ARCHS:
                cmd += ["-gencode", f"arch=compute_{a[3:]},code={a}"]
            cmd += [os.path.join(repo, f), "-o", os.path.join(tmp, "x.o")]
            r = subprocess.run(cmd, env=dict(env, NVCC_ORION_REPORT=report),
                               capture_output=True, text=True, cwd=tmp)
            if r.returncode != 0 or not os.path.exists(report):
                skipped.append(f)
                continue
            for line in open(report):
                rec = json.loads(line)
                cands = rec["candidates"]
                rows.append({
                    "file": f,
                    "arch": rec["arch"],
                    "kernel": rec["kernel"],
                    "chosen_budget": (cands[rec["chosen"]]["budget"] or {}).get("regs"),
                    "chosen_registers": rec["chosen_registers"],
                    "baseline_registers": cands[0]["registers"],
                    "gain_percent": round(rec["gain_percent"], 1),
                    "reason": rec["reason"],
                    "candidates": [[c["registers"], c["spill_instructions"], c["frame_bytes"],
                                    [None if x is None else round(x, 1) for x in c["cycles_per_warp"]]]
                                   for c in cands],
                })
            print(f"{f}: {sum(1 for x in rows if x['file'] == f)} kernels", file=sys.stderr)
    with open(out, "w") as o:
        for row in sorted(rows, key=lambda x: (x["file"], x["arch"], x["kernel"])):
            o.write(json.dumps(row, sort_keys=True) + "\n")
        for f in skipped:
            o.write(json.dumps({"file": f, "skipped": True}) + "\n")
    print(f"{len(rows)} kernel records, {len(skipped)} sources skipped", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
