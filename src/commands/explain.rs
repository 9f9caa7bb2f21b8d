//! `nvcc-orion explain`: why each kernel got its variant, as a terminal table per kernel and
//! architecture ([`crate::report::table`]) and, with `--html OUT.html`, a self-contained page
//! ([`crate::report::html`]).
//!
//! - `nvcc-orion explain FILE.cu [nvcc args]`: compiles as nvcc would (tuning on, output in a
//!   temporary folder unless `-o` is given) and explains that build;
//! - `nvcc-orion explain FILE.o|FILE.cubin|FILE.fatbin`: the kernels a built file holds (one
//!   candidate each: there is no PTX to try budgets with);
//! - `nvcc-orion explain REPORT.jsonl`: explains a report written through `NVCC_ORION_REPORT`
//!   (the page's code views need the cubins, which a plain build does not keep);
//! - `nvcc-orion explain --project REPORT.jsonl|BUILD_DIR [--since OLD]`: a whole build at
//!   once ([`super::explain_project`]); a build folder implies `--project`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use nvcc_orion_schema::{Line, Record, Rewrite};

use crate::report::html::{self, Kernel};
use crate::report::view::{Decoder, KernelView, kernel_view};
use crate::report::{file, table};

const USAGE: &str = "usage: nvcc-orion explain [--html OUT.html] [--json] FILE.cu [nvcc args] | FILE.o | FILE.cubin | REPORT.jsonl\n       nvcc-orion explain --project [--since OLD.jsonl|OLD_BUILD_DIR] [--html OUT.html] REPORT.jsonl|BUILD_DIR";

/// Run `explain` with its arguments (after the word `explain`); true on failure.
pub fn run(args: &[OsString], out: &mut impl Write) -> bool {
    // `--json`: the records as JSON lines instead of the tables (what bench/gpu reads).
    let json = args.iter().any(|a| a == "--json");
    let args: Vec<OsString> = args.iter().filter(|a| *a != "--json").cloned().collect();
    let (html_out, args) = match split_html(&args) {
        Ok(x) => x,
        Err(e) => {
            super::report_error(e);
            return true;
        }
    };
    let (project, since, args) = match split_project(&args) {
        Ok(x) => x,
        Err(e) => {
            super::report_error(e);
            return true;
        }
    };
    let Some(first) = args.first() else {
        super::report_error(USAGE);
        return true;
    };
    let path = PathBuf::from(first);
    if project || since.is_some() || path.is_dir() {
        if args.len() > 1 {
            super::report_error(USAGE);
            return true;
        }
        let a = super::explain_project::ProjectArgs {
            report: path,
            since,
            html: html_out,
        };
        return super::explain_project::run(&a, out);
    }
    let scratch = match tempfile::Builder::new()
        .prefix("nvcc-orion-explain-")
        .tempdir()
    {
        Ok(t) => t,
        Err(e) => {
            super::report_error(format_args!("temporary folder: {e}"));
            return true;
        }
    };
    let records = if is_report(&path) {
        super::explain_project::read_report(&path)
    } else if is_built(&path) {
        // Priced as a build would be: with the calibration the environment names, if any.
        let env = |k: &str| std::env::var(k).ok();
        let (settings, _) = crate::settings::Settings::read(&env, &[], &[]);
        file::records(&path, scratch.path(), &settings)
    } else {
        let keep = html_out.as_ref().map(|_| scratch.path().join("cubins"));
        compile_and_report(&args, keep.as_deref())
    };
    let records = match records {
        Ok(r) if r.is_empty() => {
            super::report_error(format_args!(
                "{}: no kernel was compiled for a GPU architecture (nothing to explain)",
                path.display()
            ));
            return true;
        }
        Ok(r) => r,
        Err(e) => {
            super::report_error(e);
            return true;
        }
    };
    let shown = if json {
        // As a JSON value: its keys sorted, as this output has always had them.
        records.iter().try_for_each(|r| {
            let v = serde_json::to_value(r).map_err(std::io::Error::other)?;
            writeln!(out, "{v}")
        })
    } else {
        table::render(&records, out)
    };
    if let Err(e) = shown
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        super::report_error(e);
        return true;
    }
    if let Some(dest) = html_out {
        let page = page(&path.display().to_string(), &records);
        if let Err(e) = std::fs::write(&dest, page) {
            super::report_error(format_args!("{}: {e}", dest.display()));
            return true;
        }
    }
    false
}

/// `--html OUT` / `--html=OUT` (anywhere; nvcc has no such option), and the other arguments.
fn split_html(args: &[OsString]) -> Result<(Option<PathBuf>, Vec<OsString>), String> {
    let mut html = None;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--html") => {
                html = Some(PathBuf::from(
                    it.next()
                        .ok_or("--html needs a file name (--html OUT.html)")?,
                ));
            }
            Some(s) if s.starts_with("--html=") => html = Some(PathBuf::from(&s[7..])),
            _ => rest.push(a.clone()),
        }
    }
    Ok((html, rest))
}

/// `--project` and `--since OLD` / `--since=OLD` (anywhere), and the other arguments.
fn split_project(args: &[OsString]) -> Result<(bool, Option<PathBuf>, Vec<OsString>), String> {
    let mut project = false;
    let mut since = None;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--project") => project = true,
            Some("--since") => {
                since = Some(PathBuf::from(
                    it.next()
                        .ok_or("--since needs the earlier build's report or build folder")?,
                ));
            }
            Some(s) if s.starts_with("--since=") => since = Some(PathBuf::from(&s[8..])),
            _ => rest.push(a.clone()),
        }
    }
    Ok((project, since, rest))
}

/// A built file (object, cubin, fatbin, archive, executable) rather than a source: its
/// first bytes say so.
fn is_built(p: &Path) -> bool {
    let source = matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("cu" | "cpp" | "cc" | "cxx" | "c" | "ptx" | "i" | "ii")
    );
    !source
        && std::fs::read(p)
            .ok()
            .is_some_and(|b| crate::container::sniff(&b).is_some())
}

/// The page, with each kernel's code views decoded from the kept cubins (one nvdisasm run
/// per cubin); a kernel whose code cannot be shown gets its table and a line saying why.
pub fn page(what: &str, records: &[Line]) -> String {
    let mut decoder = crate::toolkit::find_tool("nvdisasm").map(Decoder::new);
    // Kernels whose code changed first: they are what a reader opens the page for.
    let mut order: Vec<&Record> = records.iter().filter_map(Line::kernel).collect();
    order.sort_by_key(|r| r.chosen == 0);
    let kernels: Vec<Kernel<'_>> = order
        .into_iter()
        .map(|r| Kernel {
            record: r,
            view: view_of(decoder.as_mut(), r),
        })
        .collect();
    html::page(what, &kernels)
}

fn view_of(decoder: Option<&mut Decoder>, r: &Record) -> Result<KernelView, String> {
    let decoder = decoder.ok_or("the CUDA toolkit's nvdisasm was not found to decode the SASS")?;
    let Some(cubins) = &r.cubins else {
        return Err(
            "the report does not name the cubins (explain the .cu or the built file)".into(),
        );
    };
    let name = r.kernel.as_str();
    let chosen = r.chosen;
    let path_of = |v: Option<&String>| {
        v.filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| "a cubin was not kept".to_string())
    };
    let c = r
        .candidates
        .get(chosen)
        .ok_or("the record's chosen candidate is missing")?;
    let regs = c.registers;
    let after = decoder.function(&path_of(cubins.candidates.get(chosen))?, name)?;
    let budget = c.budget.unwrap_or_default();
    let rewritten =
        budget.rewrite() == Some(Rewrite::Spill2Smem) && cubins.before_rewrite.is_some();
    let (before, before_label, after_label) = if rewritten {
        let b = decoder.function(&path_of(cubins.before_rewrite.as_ref())?, name)?;
        (
            Some(b),
            format!(
                "before the rewrite (ptxas at {} registers, spills in local memory)",
                budget.regs.saturating_sub(1)
            ),
            format!("after spill2smem ({regs} registers)"),
        )
    } else if chosen != 0 {
        let b = decoder.function(&path_of(cubins.candidates.first())?, name)?;
        (
            Some(b),
            format!(
                "ptxas's own choice ({} registers)",
                r.baseline().map_or(0, |c| c.registers)
            ),
            format!("chosen ({regs} registers)"),
        )
    } else if r.is_built_file() {
        (None, String::new(), format!("as built ({regs} registers)"))
    } else {
        (
            None,
            String::new(),
            format!("chosen: ptxas's own ({regs} registers)"),
        )
    };
    Ok(kernel_view(
        &after,
        &after_label,
        before.as_ref().map(|b| (b, before_label.as_str())),
        rewritten,
    ))
}

fn is_report(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("json" | "jsonl")
    )
}

/// Compile through ourselves with a private report, then read it.
/// With `keep`, the tuner keeps every candidate's cubin there for the page.
fn compile_and_report(args: &[OsString], keep: Option<&Path>) -> Result<Vec<Line>, String> {
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
    match keep {
        Some(k) => cmd.env("NVCC_ORION_KEEP_CUBINS", k),
        None => cmd.env_remove("NVCC_ORION_KEEP_CUBINS"),
    };
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run nvcc-orion: {e}"))?;
    if !status.success() {
        return Err(format!("the compile failed ({status})"));
    }
    if !report.exists() {
        return Ok(Vec::new());
    }
    super::explain_project::read_report(&report)
}
