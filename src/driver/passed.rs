//! The report's record of a compile passed to nvcc untuned although it builds device code
//! (`-G`, a one-call build with `-MD`, an option nvcc-orion cannot vouch for): without it a
//! project's report would just lack those kernels, and `explain --project` could not say why.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::Invocation;
use crate::settings::{Mode, Settings};

/// Record `inv` in the report when it asks for one and compiles sources to SASS untuned;
/// the warning line to print when the report cannot be written.
pub fn note(inv: &Invocation, settings: &Settings) -> Option<String> {
    if settings.mode == Mode::Off {
        return None;
    }
    let (report, reason) = (settings.report.as_ref()?, inv.untuned_sass()?);
    record(report, &inv.facts.inputs, &reason.to_string())
        .err()
        .map(|e| {
            format!(
                "nvcc-orion: warning: cannot write the report {}: {e}",
                report.display()
            )
        })
}

/// Append `{"passed_through": reason, "inputs": [...]}` to the report at `path`, under the
/// same lock as the tuner's records.
fn record(path: &Path, inputs: &[PathBuf], reason: &str) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(&nvcc_orion_schema::PassedThrough {
        inputs: inputs.iter().map(|p| p.display().to_string()).collect(),
        passed_through: reason.to_string(),
    })?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.lock()?;
    f.write_all(&line)?;
    f.unlock()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_compile() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().join("r.jsonl");
        record(&r, &[PathBuf::from("a.cu")], "-G (device debug)").unwrap();
        record(&r, &[PathBuf::from("b.cu")], "x").unwrap();
        let text = std::fs::read_to_string(&r).unwrap();
        assert_eq!(
            text,
            "{\"inputs\":[\"a.cu\"],\"passed_through\":\"-G (device debug)\"}\n{\"inputs\":[\"b.cu\"],\"passed_through\":\"x\"}\n"
        );
    }
}
