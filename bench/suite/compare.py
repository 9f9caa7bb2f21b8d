#!/usr/bin/env python3
"""Runs of bench/suite/measure.sh side by side: `compare.py LABEL...` (WORK as measure.sh).

Per run: exit status, wall and busy CPU seconds (from the /proc/stat delta), the speed probe
before and after, and the CPU of the toolkit's tools and of the Rust builds (rustc's last
thread is sometimes named `ctrl-c` in the accounting; suite.md, twenty-first pass). With
runs labelled m* and b*, it prints how much less time and CPU the m runs took than the b runs
in all. The probe is printed, not used: it samples the machine for seconds at each end of a
run, and in the twenty-second pass it called the baseline run the faster one while every
tool's CPU per process said it was the slower (suite.md).
"""
import os
import sys

WORK = os.environ.get("WORK", "/tmp/orion-suite")
TOOLS = ["nvdisasm", "cc1plus", "cicc", "ptxas", "cudafe++", "nvcc-orion"]
# The Rust builds: the compilers, the linker, cargo, build scripts and the C they compile.
RUST = ["rustc", "ctrl-c", "clippy-driver", "rustdoc", "rust-lld", "cargo", "build-script-b",
        "cargo-nextest", "cc", "cc1"]


def read(label, ext):
    with open(os.path.join(WORK, label, f"{label}.{ext}")) as f:
        return f.read().split("\n")


def meta(label):
    lines = read(label, "meta")
    start = list(map(int, lines[0].split()[1:]))
    end = list(map(int, lines[4].split()[1:]))
    d = [b - a for a, b in zip(start, end)]
    busy = (sum(d) - d[3] - d[4]) / 100
    return lines[2].split()[1], int(lines[3]) - int(lines[1]), busy


def probe(label):
    try:
        lines = read(label, "probe")
    except FileNotFoundError:
        return None, []
    vals = [float(line.split()[1]) for line in lines if line.strip()]
    return sum(vals) / len(vals), vals


def cpu(label):
    try:
        lines = read(label, "cpu")
    except FileNotFoundError:
        return {}
    out = {}
    for line in lines:
        if line.strip():
            c, n, name = line.split()
            out[name] = (float(c), int(n))
    return out


def main(labels):
    runs = {}
    for label in labels:
        rc, wall, busy = meta(label)
        p, vals = probe(label)
        c = cpu(label)
        runs[label] = (wall, busy, p)
        tools = " ".join(f"{t} {c[t][0]:.0f}/{c[t][1]}" for t in TOOLS if t in c)
        rust = sum(c[t][0] for t in RUST if t in c)
        probes = "/".join(f"{v:.2f}" for v in vals) or "none"
        print(f"{label}: rc {rc}, wall {wall} s, busy {busy:.0f} s, probe {probes}; "
              f"{tools}; Rust {rust:.0f} s")
    m = [r for k, r in runs.items() if k.startswith("m")]
    b = [r for k, r in runs.items() if k.startswith("b")]
    if m and b:
        def less(i):
            mine = sum(r[i] for r in m) / len(m)
            base = sum(r[i] for r in b) / len(b)
            return 100 * (1 - mine / base), base / mine
        t, speed = less(0)
        c, _ = less(1)
        print(f"m against b: {t:.1f} % less time ({speed:.2f}x), {c:.1f} % less CPU")


if __name__ == "__main__":
    main(sys.argv[1:] or ["m1", "b1", "b2", "m2"])
