//! The terminal table: per kernel and architecture, every candidate (budget, kind, registers,
//! spills, frame, shared, warps per SM and predicted cycles per warp at each block size
//! considered, the checker's verdict), the chosen one marked, the budgets pruned before
//! building, and the reason in one line.

use std::io::Write;

use nvcc_orion_schema::{Line, Record};

use super::{budget, checker, cycles, list, rejected};

/// The tables, one per kernel and architecture, in report order.
pub fn render(lines: &[Line], out: &mut impl Write) -> std::io::Result<()> {
    for line in lines {
        match line {
            // A compile nvcc-orion passed to nvcc untuned: one line, no table.
            Line::Passed(p) => writeln!(
                out,
                "passed to nvcc untuned: {}: {}\n",
                p.inputs.join(" "),
                p.passed_through
            )?,
            Line::Kernel(r) => kernel(r, out)?,
        }
    }
    let records: Vec<&Record> = lines.iter().filter_map(Line::kernel).collect();
    if let Some(line) = super::spills::summary(&records) {
        writeln!(out, "{line}")?;
    }
    if let Some(line) = super::assembly::summary(&records) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// One kernel's table and the lines under it.
fn kernel(r: &Record, out: &mut impl Write) -> std::io::Result<()> {
    let blocks = list(&r.block_sizes);
    // An architecture without an occupancy table is not tuned for any block size.
    let shape = if blocks.is_empty() {
        "not tuned".to_string()
    } else {
        format!("block size {blocks}, {}", r.block_from.name())
    };
    writeln!(out, "{} {}  ({shape})", r.arch, r.kernel)?;
    writeln!(
        out,
        "    {:<7} {:<20} {:>4} {:>6} {:>6} {:>7} {:>14} {:>20}  CHECKER",
        "budget", "kind", "REG", "SPILLS", "FRAME", "SHARED", "WARPS/SM", "CYCLES/WARP"
    )?;
    for (i, c) in r.candidates.iter().enumerate() {
        let (b, kind) = budget(r, c.budget.as_ref());
        writeln!(
            out,
            "  {} {:<7} {:<20} {:>4} {:>6} {:>6} {:>7} {:>14} {:>20}  {}",
            if i == r.chosen { "*" } else { " " },
            b,
            kind,
            c.registers.to_string(),
            c.spill_instructions.to_string(),
            c.frame_bytes.to_string(),
            c.static_shared.to_string(),
            list(&c.warps_per_sm),
            cycles(&c.cycles_per_warp),
            checker(r, c),
        )?;
    }
    if let Some((regs, why)) = rejected(r) {
        writeln!(
            out,
            "    {:<7} {:<20} {:>4} {:>6} {:>6} {:>7} {:>14} {:>20}  rejected: {why}",
            regs, "spill2smem", "-", "-", "-", "-", "-", "-"
        )?;
    }
    let pruned: Vec<String> = r
        .pruned
        .iter()
        .map(|p| {
            let (b, _) = budget(r, Some(&p.budget));
            format!(
                "{b}{} {}",
                super::budget_tag(&p.budget),
                super::pruned::at_best(p)
            )
        })
        .collect();
    if !pruned.is_empty() {
        writeln!(out, "    not built: {}", pruned.join(", "))?;
    }
    writeln!(
        out,
        "    chose {} registers: {}",
        r.chosen_registers, r.reason
    )?;
    if let Some(line) = super::pruned::kept_line(r) {
        writeln!(out, "    why ptxas's budget stays: {line}")?;
    }
    // The SASS transform tried, with the checker's verdict or why it was not applied.
    if let Some(t) = &r.transform {
        writeln!(out, "    {t}")?;
    }
    if let Some(line) = super::assembly::line(r) {
        writeln!(out, "{line}")?;
    }
    for line in super::memory::lines(r)
        .into_iter()
        .chain(super::measured::lines(r))
        .chain(super::variants::lines(r))
    {
        writeln!(out, "{line}")?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn record(extra: &str) -> Value {
        serde_json::from_str(&format!(
            r#"{{"arch":"sm_90","kernel":"k","output":"x","block_sizes":[256],"block_from":"launch-bounds",
            "candidates":[
              {{"budget":null,"registers":64,"spill_instructions":0,"frame_bytes":0,"static_shared":0,"warps_per_sm":[32],"cycles_per_warp":[5828.4],"latency":1,"issue":1,"local_accesses":0}},
              {{"budget":{{"regs":32,"smem_spill":false}},"registers":32,"spill_instructions":9,"frame_bytes":40,"static_shared":0,"warps_per_sm":[64],"cycles_per_warp":[4033.0],"latency":1,"issue":1,"local_accesses":9}}],
            "pruned":[{{"budget":{{"regs":56,"smem_spill":false}},"bound_percent":2.5}},
                      {{"budget":{{"regs":40,"smem_spill":false,"spill2smem":true}},"bound_percent":1.0}}],
            "chosen":1,"chosen_registers":32,"gain_percent":44.5,"reason":"predicted 44.5% faster"{extra}}}"#
        ))
        .unwrap()
    }

    fn text(r: Value) -> String {
        let mut out = Vec::new();
        render(&[Line::from_value(r).unwrap()], &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn an_untuned_architecture_says_so() {
        let r: Value = serde_json::from_str(
            r#"{"arch":"sm_110","kernel":"k","output":"x","block_sizes":[],"block_from":"assumed",
            "candidates":[{"budget":null,"registers":64,"spill_instructions":0,"frame_bytes":0,"static_shared":0,"warps_per_sm":[],"cycles_per_warp":[],"latency":0,"issue":0,"local_accesses":0}],
            "pruned":[],"chosen":0,"chosen_registers":64,"gain_percent":0.0,"reason":"not tuned: no occupancy table for sm_110"}"#,
        )
        .unwrap();
        let t = text(r);
        assert!(t.starts_with("sm_110 k  (not tuned)\n"), "{t}");
        assert!(t.contains("  * ptxas   baseline"), "{t}");
        assert!(t.contains("chose 64 registers: not tuned"), "{t}");
    }

    #[test]
    fn table_from_a_record() {
        let t = text(record(
            r#","transform":"spill2smem at 40: not applied: no spills""#,
        ));
        assert!(
            t.starts_with("sm_90 k  (block size 256, launch-bounds)\n"),
            "{t}"
        );
        assert!(t.contains("\n  * 32      .maxnreg"), "{t}");
        assert!(t.contains("\n    ptxas   baseline"), "{t}");
        assert!(t.contains("5828"), "{t}");
        assert!(t.contains("4033  n/a\n"), "{t}");
        assert!(
            t.contains("not built: 56 (at best +2.5%), 40+spill2smem (at best +1.0%)"),
            "{t}"
        );
        assert!(
            t.contains("\n    spill2smem at 40: not applied: no spills\n"),
            "{t}"
        );
        assert!(
            t.contains("chose 32 registers: predicted 44.5% faster"),
            "{t}"
        );
    }

    #[test]
    fn a_passed_through_compile_is_one_line() {
        let r = serde_json::json!({"passed_through": "-G (device debug)", "inputs": ["a.cu"]});
        assert_eq!(
            text(r),
            "passed to nvcc untuned: a.cu: -G (device debug)\n\n"
        );
    }

    #[test]
    fn checker_column() {
        // A refused rewrite is a row of its own with the reason.
        let t = text(record(
            r#","verdict":{"budget":40,"proved":false,"detail":"a frame address escapes"}"#,
        ));
        assert!(
            t.contains("\n    40      spill2smem")
                && t.contains("-  rejected: a frame address escapes\n"),
            "{t}"
        );
        // A proved one is a candidate like the others.
        let mut r = record(r#","verdict":{"budget":32,"proved":true,"detail":"ok"}"#);
        r["candidates"][1]["budget"]["spill2smem"] = true.into();
        let t = text(r);
        assert!(t.contains("\n  * 32      spill2smem"), "{t}");
        assert!(t.contains("4033  proved\n"), "{t}");
        assert!(!t.contains("rejected"), "{t}");
    }
}
