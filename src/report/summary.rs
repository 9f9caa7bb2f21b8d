//! The terminal summary of a whole build (`explain --project`): one line of totals, the
//! kernels per limiter and per reason, the totals per file, the kernels that spill and those
//! retuned, the compiles passed to nvcc untuned, and with a second report what changed.

use std::io::Write;

use super::changes::{Change, percents};
use super::project::{Project, Totals};
use super::row::Row;

/// Lists longer than this show their first rows and a count (the page has them all).
const LIST: usize = 20;

pub fn render(
    p: &Project,
    changes: Option<(&str, &[Change])>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let t = p.totals();
    writeln!(
        out,
        "{} kernel(s) in {} file(s) ({}): {} retuned, {} spill, {} below 50% occupancy{}",
        t.kernels,
        p.files(),
        p.arches().join(", "),
        t.retuned,
        t.spilling,
        t.low_occupancy,
        if p.passed.is_empty() {
            String::new()
        } else {
            format!("; {} compile(s) passed to nvcc untuned", p.passed.len())
        }
    )?;
    writeln!(out)?;
    totals_table(out, "LIMITED BY", &p.per_limiter())?;
    writeln!(out)?;
    writeln!(out, "  {:<46} {:>7}", "WHY (WHAT SHIPS)", "KERNELS")?;
    for (why, n) in p.per_why() {
        writeln!(out, "  {why:<46} {n:>7}")?;
    }
    writeln!(out)?;
    totals_table(out, "FILE", &p.per_file())?;
    kernels(
        out,
        "kernels that spill",
        p.rows.iter().filter(|r| r.spills > 0),
    )?;
    kernels(out, "kernels retuned", p.rows.iter().filter(|r| r.retuned))?;
    if !p.passed.is_empty() {
        writeln!(out, "\npassed to nvcc untuned ({}):", p.passed.len())?;
        for x in &p.passed {
            writeln!(out, "  {}: {}", x.inputs, x.reason)?;
        }
    }
    if let Some((since, changes)) = changes {
        writeln!(out, "\nchanged since {since} ({}):", changes.len())?;
        for c in changes.iter().take(LIST) {
            writeln!(out, "  {} {}  {}: {}", c.arch, c.name, c.file, c.what)?;
        }
        more(out, changes.len())?;
    }
    Ok(())
}

fn totals_table(
    out: &mut impl Write,
    head: &str,
    rows: &[(String, Totals)],
) -> std::io::Result<()> {
    let w = rows
        .iter()
        .map(|(k, _)| k.len())
        .max()
        .unwrap_or(0)
        .max(head.len())
        .min(60);
    writeln!(
        out,
        "  {head:<w$} {:>7} {:>7} {:>7} {:>14}",
        "KERNELS", "RETUNED", "SPILL", "OCCUPANCY<50%"
    )?;
    for (k, t) in rows {
        writeln!(
            out,
            "  {k:<w$} {:>7} {:>7} {:>7} {:>14}",
            t.kernels, t.retuned, t.spilling, t.low_occupancy
        )?;
    }
    Ok(())
}

/// `kernels that spill (12):` and one line each: architecture, name, file, registers and spills
/// (ptxas's → shipped), occupancy, limiter, what ships and why.
fn kernels<'a>(
    out: &mut impl Write,
    what: &str,
    rows: impl Iterator<Item = &'a Row>,
) -> std::io::Result<()> {
    let rows: Vec<&Row> = rows.collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n{what}: {}", rows.len())?;
    for r in rows.iter().take(LIST) {
        writeln!(
            out,
            "  {} {}  {}: registers {} → {}, spills {} → {}, occupancy {} ({}), {}: {}",
            r.arch,
            r.name,
            r.file,
            r.ptxas_regs,
            r.regs,
            r.ptxas_spills,
            r.spills,
            percents(&r.occupancy),
            r.limiter,
            r.chose,
            r.reason
        )?;
    }
    more(out, rows.len())
}

fn more(out: &mut impl Write, n: usize) -> std::io::Result<()> {
    if n > LIST {
        writeln!(
            out,
            "  ... and {} more (the --html page lists them all)",
            n - LIST
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_of_a_small_build() {
        let r = |unit: &str, kernel: &str, chosen: usize| {
            json!({"arch": "sm_90", "kernel": kernel, "unit": unit, "block_sizes": [256], "block_from": "launch-bounds",
                "candidates": [
                    {"budget": null, "registers": 64, "spill_instructions": 0, "static_shared": 0, "warps_per_sm": [32]},
                    {"budget": {"regs": 32, "smem_spill": false}, "registers": 32, "spill_instructions": 6, "static_shared": 0, "warps_per_sm": [64]}],
                "pruned": [], "chosen": chosen,
                "reason": if chosen == 0 {"best candidate (32 registers) predicted +1.0%, below the 5% margin"} else {"predicted 20.0% faster than ptxas's choice (margin 5%)"}})
        };
        let p = Project::from_values(&[
            r("a.cu", "ka", 1),
            r("b.cu", "kb", 0),
            json!({"passed_through": "-G (device debug)", "inputs": ["dbg.cu"]}),
        ]);
        let mut out = Vec::new();
        render(&p, Some(("old.jsonl", &[])), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("2 kernel(s) in 2 file(s) (sm_90): 1 retuned, 1 spill, 0 below 50% occupancy; 1 compile(s) passed to nvcc untuned\n"),
            "{text}"
        );
        assert!(text.contains("\n  registers"), "{text}");
        assert!(text.contains("\n  tried: below the margin"), "{text}");
        assert!(
            text.contains(
                "\nkernels that spill: 1\n  sm_90 ka  a.cu: registers 64 → 32, spills 0 → 6"
            ),
            "{text}"
        );
        assert!(
            text.contains("\npassed to nvcc untuned (1):\n  dbg.cu: -G (device debug)\n"),
            "{text}"
        );
        assert!(text.contains("\nchanged since old.jsonl (0):\n"), "{text}");
    }
}
