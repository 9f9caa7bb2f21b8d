#!/usr/bin/env python3
"""Helpers of the GPU harness (Python 3 standard library only).

  harness.py budgets REPORT.jsonl     the forced variants a program gets, one per line:
                                      budget:N for every plain budget candidate (built or
                                      pruned) of any kernel, then pragma where ptxas's
                                      shared-memory spilling was a candidate
  harness.py applied REPORT.jsonl     per kernel: KERNEL<TAB>yes|no<TAB>the tuner's reason
                                      (yes: the forced choice took effect)
  harness.py applied-each REPORT.jsonl...
                                      the same for every report, each line led by its
                                      REPORT<TAB> (build.sh: one Python start, not one per
                                      binary)
  harness.py summary RESULTS.csv [--color=auto|always|never]
                                      the summary of a run (run.sh's CSV): geomean speedup of
                                      the default choice over nvcc, the best variant per
                                      kernel against the chosen one, the rewrites' speed,
                                      the launch-time selector (adapt's locked variant against
                                      the exhaustive best, its overhead on kernels without
                                      variants), every output mismatch (red on a terminal).
                                      Exit status 1 when there is a mismatch.
  harness.py predictions PROGRAM VARIANT < EXPLAIN.jsonl
                                      the model's prediction per kernel of one built variant
                                      (`nvcc-orion explain --json BINARY`): lines
                                      PROGRAM,VARIANT,KERNEL,CYCLES (cycles per warp, the mean
                                      over the kernel's block sizes)
  harness.py fidelity RESULTS.csv BEFORE.csv AFTER.csv
                                      per program, the rank correlation (Spearman) between
                                      predicted and measured times of each kernel's variants,
                                      with the published parameters (BEFORE) and after
                                      `nvcc-orion calibrate` (AFTER)
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
            # The second field: the first's name in reports before issue 50.
            elif not (b.get("spill2smem") or b.get("spill_to_shared")) and b.get("regdem_from") is None:
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


def predictions(program, variant, lines):
    out = []
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)
        cycles = [c for c in r["candidates"][0].get("cycles_per_warp", []) if c is not None]
        if cycles:
            out.append(f"{program},{variant},{r['kernel']},{sum(cycles) / len(cycles):.4f}")
    return out


def ranks(xs):
    """Ranks from 1, ties sharing their mean rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(xs, ys):
    """Spearman's rank correlation; None with fewer than 2 points or a constant side."""
    if len(xs) < 2:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def read_predictions(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) == 4:
                out[(parts[0], parts[1], parts[2])] = float(parts[3])
    return out


def fidelity(results, before, after):
    """Per program: the mean over its kernels of the rank correlation between predicted cycles
    and measured times of the kernel's timed variants (the selector's builds left out)."""
    _, rows = read_results(results)
    kernels = {}
    for r in rows:
        kernels.setdefault((r["program"], r["kernel"]), {})[r["variant"]] = r
    lines = ["predictor fidelity per program (Spearman rank correlation of predicted against measured variant times, mean over kernels):"]
    by_program = {}
    for (program, kernel), variants in sorted(kernels.items()):
        timed = exhaustive(variants)
        for label, pred in (("before", before), ("after", after)):
            pts = [(pred[(program, v, kernel)], t) for v, t in sorted(timed.items())
                   if (program, v, kernel) in pred]
            rho = spearman([p for p, _ in pts], [t for _, t in pts])
            if rho is not None:
                by_program.setdefault(program, {}).setdefault(label, []).append(rho)
    for program in sorted(by_program):
        cells = []
        for label in ("before", "after"):
            xs = by_program[program].get(label, [])
            cells.append(f"{label} {sum(xs) / len(xs):+.3f} ({len(xs)} kernels)" if xs else f"{label} n/a")
        lines.append(f"  {program}: " + ", ".join(cells))
    if not by_program:
        lines.append("  no kernel with two timed and predicted variants")
    return lines


def main(argv):
    if len(argv) >= 3 and argv[1] == "budgets":
        print("\n".join(budgets(argv[2])))
        return 0
    if len(argv) >= 3 and argv[1] == "applied":
        for k, yes, why in applied(argv[2]):
            print(f"{k}\t{yes}\t{why}")
        return 0
    if len(argv) >= 2 and argv[1] == "applied-each":
        for path in argv[2:]:
            for k, yes, why in applied(path):
                print(f"{path}\t{k}\t{yes}\t{why}")
        return 0
    if len(argv) >= 4 and argv[1] == "predictions":
        print("\n".join(predictions(argv[2], argv[3], sys.stdin)))
        return 0
    if len(argv) >= 5 and argv[1] == "fidelity":
        print("\n".join(fidelity(argv[2], read_predictions(argv[3]), read_predictions(argv[4]))))
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
