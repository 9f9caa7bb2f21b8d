//! Runs with nvcc options that make ptxas say more or write more (issue 48): under
//! `-Xptxas -warn-spills`, `-Werror` or `-v` what ptxas printed for the shipped cubin must be
//! what it printed for the reference (whole-module ptxas at the shipped budgets), and under
//! `-lineinfo` every kernel's instructions must carry the reference's source lines
//! (`nvdisasm -c -g`, which reads `.debug_line`). Read with the toolkit alone.

use std::collections::BTreeMap;
use std::path::Path;

use crate::compare::Diff;
use crate::tools::{Tools, run};

/// Whether `flags` ask for line tables.
pub fn line_tables(flags: &[String]) -> bool {
    flags
        .iter()
        .any(|f| matches!(f.as_str(), "-lineinfo" | "--generate-line-info"))
}

/// ptxas's lines of a build's stderr (nvcc's front end may print warnings of its own): its
/// `ptxas ...` lines and, under `-v`, the indented lines that continue them. `-v`'s compile
/// times are the clock's.
fn ptxas_lines(stderr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_ptxas = false;
    for l in stderr.lines() {
        if l.starts_with("ptxas") {
            in_ptxas = true;
        } else if !(in_ptxas && l.starts_with("    ")) {
            in_ptxas = false;
            continue;
        }
        let timed = l.find("Compile time = ").map(|i| &l[..i]);
        out.push(timed.unwrap_or(l).to_string());
    }
    out
}

/// nvcc-orion's stderr (`got`) against the reference ptxas run's (`want`): the same ptxas
/// lines, in order.
pub fn messages(got: &str, want: &str) -> Option<Diff> {
    let (a, b) = (ptxas_lines(got), ptxas_lines(want));
    if a == b {
        return None;
    }
    let i = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    Some(Diff {
        kind: "ptxas messages".into(),
        detail: format!(
            "line {}: shipped `{}` / reference `{}`",
            i + 1,
            a.get(i).map_or("(none)", String::as_str),
            b.get(i).map_or("(none)", String::as_str)
        ),
    })
}

/// `nvdisasm -c -g`'s rows per code section: each instruction's offset and each source line
/// annotation before it.
fn rows(listing: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut section = String::new();
    for l in listing.lines().map(str::trim) {
        if let Some(rest) = l
            .strip_prefix(".section")
            .filter(|r| r.starts_with(char::is_whitespace))
        {
            section = rest.trim().split(',').next().unwrap_or("").to_string();
        } else if let Some(line) = l.strip_prefix("//## ") {
            out.entry(section.clone())
                .or_default()
                .push(line.to_string());
        } else if let Some(offset) = l.strip_prefix("/*").and_then(|r| r.split_once("*/")) {
            out.entry(section.clone())
                .or_default()
                .push(offset.0.to_string());
        }
    }
    out
}

/// `nvdisasm -c -g` listings of one program on one architecture, kept by the cubin's bytes: a
/// mode that ships ptxas's own build ships the reference's bytes, and the references of the
/// modes are often one build, so the same bytes were listed up to four times (issue 50). The
/// listing does not depend on the file's path (nvcc-orion's `process::listings` relies on the
/// same), so the same bytes list the same lines.
#[derive(Debug, Default)]
pub struct LineListings(BTreeMap<Vec<u8>, String>);

impl LineListings {
    /// The listing of `cubin`: nvdisasm's once per distinct content.
    fn of(&mut self, tools: &Tools, cubin: &Path) -> Result<String, String> {
        let bytes = std::fs::read(cubin).map_err(|e| format!("{}: {e}", cubin.display()))?;
        if let Some(l) = self.0.get(&bytes) {
            return Ok(l.clone());
        }
        let l = listing(tools, cubin)?;
        self.0.insert(bytes, l.clone());
        Ok(l)
    }
}

fn listing(tools: &Tools, cubin: &Path) -> Result<String, String> {
    let dir = cubin.parent().unwrap_or(Path::new("."));
    let arg = cubin.to_string_lossy();
    let r = run(dir, &tools.nvdisasm, &["-c", "-g", &arg], &[]);
    match r.ok {
        true => Ok(r.stdout),
        false => Err(format!("nvdisasm -c -g {arg}: {}", r.stderr)),
    }
}

/// Each kernel of `kernels` not in `skip`: its rows in the shipped cubin against the
/// reference's. A kernel that differs is named; an unreadable cubin is the module's finding.
/// Listings come from `listings` (the program's, on this architecture).
pub fn lines(
    tools: &Tools,
    listings: &mut LineListings,
    shipped: &Path,
    reference: &Path,
    kernels: &[String],
    skip: &[String],
) -> Vec<(Option<String>, Diff)> {
    let unreadable = |e| {
        vec![(
            None,
            Diff {
                kind: "line table".into(),
                detail: e,
            },
        )]
    };
    let (a, b) = match (listings.of(tools, shipped), listings.of(tools, reference)) {
        (Ok(a), Ok(b)) => (rows(&a), rows(&b)),
        (Err(e), _) | (_, Err(e)) => return unreadable(e),
    };
    let mut out = Vec::new();
    for k in kernels.iter().filter(|k| !skip.contains(k)) {
        let s = format!(".text.{k}");
        let (x, y) = (a.get(&s), b.get(&s));
        if x != y {
            let (x, y) = (
                x.cloned().unwrap_or_default(),
                y.cloned().unwrap_or_default(),
            );
            let i = x.iter().zip(&y).take_while(|(p, q)| p == q).count();
            out.push((
                Some(k.clone()),
                Diff {
                    kind: "line table".into(),
                    detail: format!(
                        "row {}: shipped `{}` / reference `{}`",
                        i + 1,
                        x.get(i).map_or("(none)", String::as_str),
                        y.get(i).map_or("(none)", String::as_str)
                    ),
                },
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_lines_keep_continuations_and_drop_the_clock_and_the_front_end() {
        let s = "a.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n\
                 ptxas info    : Function properties for k\n    8 bytes stack frame\n\
                 ptxas info    : Compile time = 1.5 ms\n    other\n";
        assert_eq!(
            ptxas_lines(s),
            [
                "ptxas info    : Function properties for k",
                "    8 bytes stack frame",
                "ptxas info    : ",
                "    other"
            ]
        );
        assert!(messages(s, s).is_none());
        let d = messages(s, "ptxas info    : Function properties for k\n").unwrap();
        assert!(d.detail.starts_with("line 2:"), "{}", d.detail);
    }

    /// A stand-in nvdisasm that appends each input's name to `log` and prints its content.
    fn counting_tools(dir: &Path) -> Tools {
        let nvdisasm = dir.join("nvdisasm");
        let log = dir.join("log");
        std::fs::write(
            &nvdisasm,
            format!("#!/bin/sh\necho \"$3\" >>'{}'\ncat \"$3\"\n", log.display()),
        )
        .unwrap();
        let mut perm = std::fs::metadata(&nvdisasm).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&nvdisasm, perm).unwrap();
        let none = dir.join("none");
        Tools {
            nvcc: none.clone(),
            ptxas: none.clone(),
            cuobjdump: none.clone(),
            nvdisasm,
            orion: none,
        }
    }

    #[test]
    fn the_same_bytes_are_listed_once_whatever_their_path() {
        let dir = tempfile::tempdir().unwrap();
        let tools = counting_tools(dir.path());
        let (a, b, c) = (
            dir.path().join("a.cubin"),
            dir.path().join("b.cubin"),
            dir.path().join("c.cubin"),
        );
        std::fs::write(&a, "one\n").unwrap();
        std::fs::write(&b, "one\n").unwrap();
        std::fs::write(&c, "two\n").unwrap();
        let mut listings = LineListings::default();
        assert_eq!(listings.of(&tools, &a).unwrap(), "one\n");
        assert_eq!(listings.of(&tools, &b).unwrap(), "one\n");
        assert_eq!(listings.of(&tools, &c).unwrap(), "two\n");
        assert_eq!(listings.of(&tools, &a).unwrap(), "one\n");
        let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
        assert_eq!(log.lines().count(), 2, "{log}");
        // A file that is not there is the reader's error, not a listing.
        assert!(listings.of(&tools, &dir.path().join("gone")).is_err());
    }

    #[test]
    fn rows_are_per_section_offsets_and_lines() {
        let l = "\t.section\t.text.k,\"ax\",@progbits\n\t.sectionflags\t@\"\"\n\
                 \t//## File \"a.cu\", line 4\n        /*0000*/                   EXIT ;\n";
        let r = rows(l);
        assert_eq!(r[".text.k"], ["File \"a.cu\", line 4", "0000"]);
    }
}
