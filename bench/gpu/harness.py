#!/usr/bin/env python3
"""Helpers of the GPU harness (Python 3 standard library only).

  harness.py budgets REPORT.jsonl     the forced variants a program gets, one per line:
                                      budget:N for every plain budget candidate (built or
                                      pruned) of any kernel, then pragma where ptxas's
                                      shared-memory spilling was a candidate
  harness.py applied REPORT.jsonl     per kernel: KERNEL<TAB>yes|no<TAB>the tuner's reason
                                      (yes: the forced choice took effect)
  harness.py summary RESULTS.csv [--color=auto|always|never]
                                      the summary of a run (run.sh's CSV): geomean speedup of
                                      the default choice over nvcc, the best variant per
                                      kernel against the chosen one, the rewrites' speed,
                                      the launch-time selector (adapt's locked variant against
                                      the exhaustive best, its overhead on kernels without
                                      variants), every output mismatch (red on a terminal).
                                      Exit status 1 when there is a mismatch.
"""

import csv
import json
import math
import sys

# Checks that are passes: the output matched, or an oversized launch was refused where the
# kernel's own limit says it must be (bench/gpu/oversize.cu).
PASSES = {"ok", "launch-refused"}
# Variants made by a SASS rewrite or ptxas's shared-memory spilling.
REWRITES = ("pragma", "spill2smem", "regdem")
# Two timings within this ratio are the same (CUDA-event medians of 21 runs).
NOISE = 0.02
# Builds with the launch-time selector (docs/selector.md): not candidates of their own.
SELECTED = ("adapt", "train")


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def budgets(path):
    plain, pragma = set(), False
    for r in records(path):
        options = [c["budget"] for c in r.get("candidates", [])[1:]]
        options += [p["budget"] for p in r.get("pruned", [])]
        for b in options:
            if not b:
                continue
            if b.get("smem_spill"):
                pragma = True
            elif not b.get("spill_to_shared") and b.get("regdem_from") is None:
                plain.add(b["regs"])
    out = [f"budget:{n}" for n in sorted(plain, reverse=True)]
    return out + (["pragma"] if pragma else [])


def applied(path):
    return [
        (r["kernel"], "yes" if r["reason"].startswith("forced:") else "no", r["reason"])
        for r in records(path)
    ]


def read_results(path):
    """Comment lines (# key: value) and rows of run.sh's CSV."""
    meta, lines = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                meta[key.strip()] = value.strip()
            elif line.strip():
                lines.append(line)
    return meta, list(csv.DictReader(lines))


def ms(row):
    try:
        v = float(row["median_ms"])
    except (KeyError, ValueError):
        return None
    return v if v > 0 and row["check"] == "ok" else None


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def exhaustive(variants):
    """The timed candidates of one kernel: every build but the selector's, less the forced
    variants that did not take effect (the default's code again, not a candidate)."""
    return {
        v: ms(r)
        for v, r in variants.items()
        if v not in SELECTED and ms(r) is not None and r.get("applied", "yes") == "yes"
    }


def selection(kernels):
    """The launch-time selector's lines: adapt's locked variant (timed after the untimed
    launches it measured in) against the exhaustive best, and its cost where a kernel has no
    variants (adapt's timing over the default build's)."""
    out, ratios, overhead = [], [], []
    for (program, kernel), variants in sorted(kernels.items()):
        adapt, default = variants.get("adapt"), variants.get("default")
        if not adapt or ms(adapt) is None:
            continue
        if adapt.get("applied", "yes") != "yes":
            if default and ms(default):
                overhead.append(ms(adapt) / ms(default))
                out.append(f"  {program}/{kernel}: no variants; adapt/default {overhead[-1]:.3f}")
            continue
        timed = exhaustive(variants)
        if not timed:
            continue
        best = min(timed, key=lambda v: (timed[v], v != "default", v))
        ratio = ms(adapt) / timed[best]
        ratios.append(ratio)
        out.append(
            f"  {program}/{kernel}: adapt {ms(adapt):.4f} ms, {ratio:.3f}x the best ({best})"
            + ("" if ratio <= 1 + NOISE else f"; more than {NOISE:.0%} slower")
        )
    head = ["launch-time selector (NVCC_ORION=adapt):"]
    if ratios:
        hits = sum(1 for r in ratios if r <= 1 + NOISE)
        head.append(
            f"  adapt within {NOISE:.0%} of the exhaustive best: {hits}/{len(ratios)} kernels; "
            f"geomean adapt/best {geomean(ratios):.3f}"
        )
    if overhead:
        head.append(
            f"  overhead on kernels without variants: geomean adapt/default {geomean(overhead):.3f} "
            f"over {len(overhead)} kernels"
        )
    if not ratios and not overhead:
        head.append("  no adapt build timed")
    return head + out


def summary(path, color):
    meta, rows = read_results(path)
    red = (lambda s: f"\033[31m{s}\033[0m") if color else (lambda s: s)
    out = []
    for key in ("device", "driver", "date", "data"):
        if key in meta:
            out.append(f"{key}: {meta[key]}")
    kernels = {}
    for r in rows:
        kernels.setdefault((r["program"], r["kernel"]), {})[r["variant"]] = r

    speedups = []
    fidelity, lines = [], []
    for (program, kernel), variants in sorted(kernels.items()):
        base, chosen = variants.get("nvcc"), variants.get("default")
        if not base or not chosen or ms(base) is None or ms(chosen) is None:
            continue
        speedups.append(ms(base) / ms(chosen))
        # A forced variant that did not take effect is the default's code again: not a
        # candidate of its own.
        timed = exhaustive(variants)
        best = min(timed, key=lambda v: (timed[v], v != "default", v))
        ratio = timed[best] / timed["default"]
        good = ratio >= 1 - NOISE
        fidelity.append((good, ratio))
        lines.append(
            f"  {program}/{kernel}: chosen {chosen['registers']} registers "
            f"{ms(base) / timed['default']:.3f}x; best {best} ({variants[best]['registers']} "
            f"registers) {ms(base) / timed[best]:.3f}x"
            + ("" if good else f"; the choice runs at {ratio:.1%} of the best")
        )
    g = geomean(speedups)
    out.append(
        f"geomean speedup of the default choice over nvcc: {g:.3f}x over {len(speedups)} kernels"
        if g
        else "geomean speedup of the default choice over nvcc: no kernel timed in both"
    )
    hits = sum(1 for good, _ in fidelity if good)
    out.append(
        f"predictor fidelity: {hits}/{len(fidelity)} kernels chose their best variant "
        f"(within {NOISE:.0%}); geomean of chosen/best speed "
        f"{geomean([r for _, r in fidelity]) or 0:.3f}"
    )
    out.extend(lines)
    out.append("rewrites (speedup over nvcc, where the forced rewrite was applied):")
    any_rewrite = False
    for kind in REWRITES:
        xs = []
        for (program, kernel), variants in sorted(kernels.items()):
            r, base = variants.get(kind), variants.get("nvcc")
            if r and base and r.get("applied", "yes") == "yes" and ms(r) and ms(base):
                xs.append(ms(base) / ms(r))
                out.append(f"  {kind} {program}/{kernel}: {ms(base) / ms(r):.3f}x")
        if xs:
            any_rewrite = True
            out.append(f"  {kind}: geomean {geomean(xs):.3f}x over {len(xs)} kernels")
    if not any_rewrite:
        out.append("  none applied")
    out.extend(selection(kernels))
    bad = [r for r in rows if r["check"] not in PASSES]
    for r in bad:
        out.append(
            red(f"MISMATCH {r['program']}/{r['kernel']} variant {r['variant']}: {r['check']}")
        )
    out.append(
        red(f"{len(bad)} output mismatches") if bad else "no output mismatches"
    )
    print("\n".join(out))
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "budgets":
        print("\n".join(budgets(argv[2])))
        return 0
    if len(argv) >= 3 and argv[1] == "applied":
        for k, yes, why in applied(argv[2]):
            print(f"{k}\t{yes}\t{why}")
        return 0
    if len(argv) >= 3 and argv[1] == "summary":
        mode = "auto"
        for a in argv[3:]:
            if a.startswith("--color="):
                mode = a.split("=", 1)[1]
        color = mode == "always" or (mode == "auto" and sys.stdout.isatty())
        return summary(argv[2], color)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
