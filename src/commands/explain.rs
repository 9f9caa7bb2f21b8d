//! `nvcc-orion explain`: why each kernel got its variant, as a terminal table per kernel and
//! architecture: every candidate (budget, kind, registers, spills, frame, shared, warps per SM
//! and predicted cycles per warp at each block size considered), the chosen one marked, the
//! budgets pruned before building, and the reason in one line.
//!
//! - `nvcc-orion explain FILE.cu [nvcc args]`: compiles as nvcc would (tuning on, output in a
//!   temporary folder unless `-o` is given) and explains that build;
//! - `nvcc-orion explain REPORT.jsonl`: explains a report written through `NVCC_ORION_REPORT`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Run `explain` with its arguments (after the word `explain`); true on failure.
pub fn run(args: &[OsString], out: &mut impl Write) -> bool {
    let Some(first) = args.first() else {
        super::report_error("usage: nvcc-orion explain FILE.cu [nvcc args] | REPORT.jsonl");
        return true;
    };
    let path = PathBuf::from(first);
    let records = if is_report(&path) {
        read_report(&path)
    } else {
        compile_and_report(args)
    };
    match records {
        Ok(r) if r.is_empty() => {
            super::report_error(format_args!(
                "{}: no kernel was compiled for a GPU architecture (nothing to explain)",
                path.display()
            ));
            true
        }
        Ok(r) => render(&r, out).is_err_and(|e| e.kind() != std::io::ErrorKind::BrokenPipe),
        Err(e) => {
            super::report_error(e);
            true
        }
    }
}

fn is_report(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("json" | "jsonl")
    )
}

fn read_report(p: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| format!("{}: line {}: {e}", p.display(), i + 1))
        })
        .collect()
}

/// Compile through ourselves with a private report, then read it.
fn compile_and_report(args: &[OsString]) -> Result<Vec<Value>, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find nvcc-orion itself: {e}"))?;
    let tmp = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
    let report = tmp.path().join("report.jsonl");
    let mut cmd = Command::new(me);
    cmd.args(args);
    let has_output = args.iter().any(|a| {
        a.to_str()
            .is_some_and(|a| a == "-o" || a.starts_with("--output-file"))
    });
    let mode_given = args.iter().any(|a| {
        a.to_str().is_some_and(|a| {
            matches!(
                a,
                "-c" | "-cubin" | "-fatbin" | "-ptx" | "-dc" | "--compile"
            )
        })
    });
    if !mode_given {
        cmd.arg("-c");
    }
    if !has_output {
        cmd.arg("-o").arg(tmp.path().join("explain.o"));
    }
    cmd.env("NVCC_ORION_REPORT", &report)
        .env_remove("NVCC_ORION");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run nvcc-orion: {e}"))?;
    if !status.success() {
        return Err(format!("the compile failed ({status})"));
    }
    if !report.exists() {
        return Ok(Vec::new());
    }
    read_report(&report)
}

fn list(v: &Value) -> String {
    v.as_array().map_or_else(
        || "-".to_string(),
        |a| {
            a.iter()
                .map(|x| match x.as_f64() {
                    Some(f) if x.is_f64() => format!("{f:.0}"),
                    _ => x.to_string(),
                })
                .collect::<Vec<_>>()
                .join("/")
        },
    )
}

fn budget(c: &Value) -> (String, &'static str) {
    let b = &c["budget"];
    if b.is_null() {
        return ("ptxas".to_string(), "baseline");
    }
    let regs = b["regs"].as_u64().unwrap_or(0);
    if b["spill_to_shared"] == true {
        (format!("{regs}"), "spill → shared")
    } else if !b["regdem_from"].is_null() {
        (format!("{regs}"), "register demotion")
    } else if b["smem_spill"] == true {
        (format!("{regs}"), ".maxnreg+smem spill")
    } else {
        (format!("{regs}"), ".maxnreg")
    }
}

/// The tables, one per kernel and architecture, in report order.
pub fn render(records: &[Value], out: &mut impl Write) -> std::io::Result<()> {
    for r in records {
        let blocks = list(&r["block_sizes"]);
        writeln!(
            out,
            "{} {}  (block size {blocks}, {})",
            r["arch"].as_str().unwrap_or("?"),
            r["kernel"].as_str().unwrap_or("?"),
            r["block_from"].as_str().unwrap_or("?")
        )?;
        writeln!(
            out,
            "    {:<7} {:<20} {:>4} {:>6} {:>6} {:>7} {:>14} {:>20}",
            "budget", "kind", "REG", "SPILLS", "FRAME", "SHARED", "WARPS/SM", "CYCLES/WARP"
        )?;
        let chosen = r["chosen"].as_u64().unwrap_or(0) as usize;
        for (i, c) in r["candidates"].as_array().into_iter().flatten().enumerate() {
            let (b, kind) = budget(c);
            writeln!(
                out,
                "  {} {:<7} {:<20} {:>4} {:>6} {:>6} {:>7} {:>14} {:>20}",
                if i == chosen { "*" } else { " " },
                b,
                kind,
                c["registers"].to_string(),
                c["spill_instructions"].to_string(),
                c["frame_bytes"].to_string(),
                c["static_shared"].to_string(),
                list(&c["warps_per_sm"]),
                list(&c["cycles_per_warp"]),
            )?;
        }
        let pruned: Vec<String> = r["pruned"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let (b, kind) = budget(&json_budget(p));
                let smem = if kind.contains("smem") {
                    "+smem"
                } else if kind.contains("shared") {
                    "+spill2smem"
                } else if kind.contains("demotion") {
                    "+regdem"
                } else {
                    ""
                };
                format!(
                    "{b}{smem} (at best {:+.1}%)",
                    p["bound_percent"].as_f64().unwrap_or(0.0)
                )
            })
            .collect();
        if !pruned.is_empty() {
            writeln!(out, "    not built: {}", pruned.join(", "))?;
        }
        writeln!(
            out,
            "    chose {} registers: {}",
            r["chosen_registers"],
            r["reason"].as_str().unwrap_or("")
        )?;
        // The SASS transform tried, with the checker's verdict or why it was not applied.
        if let Some(t) = r["transform"].as_str() {
            writeln!(out, "    {t}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn json_budget(p: &Value) -> Value {
    serde_json::json!({ "budget": p["budget"] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_from_a_record() {
        let r: Value = serde_json::from_str(
            r#"{"arch":"sm_90","kernel":"k","output":"x","block_sizes":[256],"block_from":"launch-bounds",
            "candidates":[
              {"budget":null,"registers":64,"spill_instructions":0,"frame_bytes":0,"static_shared":0,"warps_per_sm":[32],"cycles_per_warp":[5828.4],"latency":1,"issue":1,"local_accesses":0},
              {"budget":{"regs":32,"smem_spill":false},"registers":32,"spill_instructions":9,"frame_bytes":40,"static_shared":0,"warps_per_sm":[64],"cycles_per_warp":[4033.0],"latency":1,"issue":1,"local_accesses":9}],
            "pruned":[{"budget":{"regs":56,"smem_spill":false},"bound_percent":2.5},
                      {"budget":{"regs":40,"smem_spill":false,"spill_to_shared":true},"bound_percent":1.0},
                      {"budget":{"regs":48,"smem_spill":false,"regdem_from":64},"bound_percent":0.5}],
            "chosen":1,"chosen_registers":32,"gain_percent":44.5,"reason":"predicted 44.5% faster",
            "transform":"spill → shared at 40: not applied: no spills"}"#,
        )
        .unwrap();
        let mut out = Vec::new();
        render(&[r], &mut out).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.starts_with("sm_90 k  (block size 256, launch-bounds)\n"),
            "{t}"
        );
        assert!(t.contains("\n  * 32      .maxnreg"), "{t}");
        assert!(t.contains("\n    ptxas   baseline"), "{t}");
        assert!(t.contains("5828"), "{t}");
        assert!(
            t.contains(
                "not built: 56 (at best +2.5%), 40+spill2smem (at best +1.0%), 48+regdem (at best +0.5%)"
            ),
            "{t}"
        );
        assert!(
            t.contains("\n    spill → shared at 40: not applied: no spills\n"),
            "{t}"
        );
        assert!(
            t.contains("chose 32 registers: predicted 44.5% faster"),
            "{t}"
        );
    }
}
