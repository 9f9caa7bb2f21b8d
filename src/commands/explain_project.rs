//! `nvcc-orion explain --project REPORT.jsonl|BUILD_DIR [--since OLD] [--html OUT.html]`: a
//! whole build's report as a terminal summary and, with `--html`, one overview page
//! ([`crate::report::project_html`]). A CMake build folder names its report in
//! `CMakeCache.txt` (`NVCC_ORION_REPORT`, the module's cache option); `--since` takes the
//! report (or build folder) of an earlier build and adds what changed.

use std::io::Write;
use std::path::{Path, PathBuf};

use nvcc_orion_schema::Line;

use crate::report::changes::{self, Change};
use crate::report::project::Project;
use crate::report::{project_html, summary};

/// Where a report comes from, as given on the command line.
#[derive(Debug)]
pub(crate) struct ProjectArgs {
    pub(crate) report: PathBuf,
    pub(crate) since: Option<PathBuf>,
    pub(crate) html: Option<PathBuf>,
}

/// Run it; true on failure (one error line already printed).
pub(crate) fn run(a: &ProjectArgs, out: &mut impl Write) -> bool {
    match render(a, out) {
        Ok(()) => false,
        Err(e) => {
            super::report_error(e);
            true
        }
    }
}

fn render(a: &ProjectArgs, out: &mut impl Write) -> Result<(), String> {
    let (name, records) = load(&a.report)?;
    let project = Project::from_records(&records);
    if project.rows.is_empty() && project.passed.is_empty() {
        return Err(format!("{name}: no kernel records (nothing to explain)"));
    }
    let before = match &a.since {
        Some(p) => {
            let (n, r) = load(p)?;
            Some((n, Project::from_records(&r)))
        }
        None => None,
    };
    let changes: Option<(String, Vec<Change>)> = before
        .as_ref()
        .map(|(n, b)| (n.clone(), changes::between(b, &project)));
    let since = changes.as_ref().map(|(n, c)| (n.as_str(), c.as_slice()));
    if let Err(e) = summary::render(&project, since, out)
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.to_string());
    }
    if let Some(dest) = &a.html {
        let page = project_html::page(&name, &project, since);
        std::fs::write(dest, page).map_err(|e| format!("{}: {e}", dest.display()))?;
    }
    Ok(())
}

/// The records of a report file, or of the report a CMake build folder names; with the name
/// to show for it.
fn load(p: &Path) -> Result<(String, Vec<Line>), String> {
    let file = if p.is_dir() {
        report_of_build(p)?
    } else {
        p.to_path_buf()
    };
    let records = read_report(&file)?;
    Ok((file.display().to_string(), records))
}

/// The records of a report file, one JSON object a line (the report's schema; a line that
/// does not read is an error naming it).
pub(crate) fn read_report(p: &Path) -> Result<Vec<Line>, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| Line::parse(l).map_err(|e| format!("{}: line {}: {e}", p.display(), i + 1)))
        .collect()
}

/// The report a CMake build folder was configured with (`NVCC_ORION_REPORT` in its cache).
fn report_of_build(dir: &Path) -> Result<PathBuf, String> {
    let cache = dir.join("CMakeCache.txt");
    let text = std::fs::read_to_string(&cache).map_err(|e| {
        format!(
            "{}: not a report and not a CMake build folder ({}: {e})",
            dir.display(),
            cache.display()
        )
    })?;
    let value = text
        .lines()
        .filter_map(|l| l.strip_prefix("NVCC_ORION_REPORT:"))
        .find_map(|l| l.split_once('=').map(|(_, v)| v.trim().to_string()))
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            format!(
                "{}: the build folder asks for no report (configure it with -DNVCC_ORION_REPORT=report.jsonl and cmake/NvccOrion.cmake)",
                dir.display()
            )
        })?;
    // The module makes the path absolute against the build folder; a hand-set one may not be.
    let path = dir.join(value);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{}: no report yet (build the project first)",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_folder_names_its_report() {
        let d = tempfile::tempdir().unwrap();
        let err = report_of_build(d.path()).unwrap_err();
        assert!(
            err.contains("not a report and not a CMake build folder"),
            "{err}"
        );
        std::fs::write(d.path().join("CMakeCache.txt"), "NVCC_ORION:BOOL=ON\n").unwrap();
        let err = report_of_build(d.path()).unwrap_err();
        assert!(err.contains("asks for no report"), "{err}");
        std::fs::write(
            d.path().join("CMakeCache.txt"),
            "NVCC_ORION_REPORT:STRING=r.jsonl\n",
        )
        .unwrap();
        assert!(
            report_of_build(d.path())
                .unwrap_err()
                .contains("no report yet")
        );
        std::fs::write(d.path().join("r.jsonl"), "").unwrap();
        assert_eq!(report_of_build(d.path()).unwrap(), d.path().join("r.jsonl"));
    }
}
