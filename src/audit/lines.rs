//! Line tables (`-lineinfo`, issue 48): what `nvdisasm -g -gp` says each instruction of a
//! code section came from, read from its text. `-g` reads `.debug_line` (source file and
//! line), `-gp` reads `.nv_debug_line_sass` (a line of the PTX that ptxas embeds in
//! `.nv_debug_ptx_txt`, one NUL-terminated string per line, a comment's left empty).
//! Nsight Compute's source view, compute-sanitizer and cuda-gdb read these tables, so a
//! shipped function's must say what its origin's say.
//!
//! A PTX line is compared by its text, not its number: a variant's copy of an entry, or a
//! kernel given a `.maxnreg`, sits at other line numbers in another build's PTX than the same
//! code in its origin's, and means the same line.

use std::collections::BTreeMap;

use super::dump::Dump;

/// The sections a line table lives in: a cubin with either is compared.
const LINE_SECTIONS: &[&str] = &[".debug_line", ".nv_debug_line_sass"];

/// The section nvdisasm names for `-gp`'s lines, and where their text is.
const PTX_TEXT: &str = ".nv_debug_ptx_txt";

/// Whether `d` has a line table.
pub(crate) fn present(d: &Dump) -> bool {
    d.sections
        .iter()
        .any(|s| LINE_SECTIONS.contains(&s.name.as_str()))
}

/// Per code section (`.text.<f>`), its rows in order: each instruction's offset
/// (`/*0040*/`) and each line annotation before it (`File "a.cu", line 12`, a PTX line as
/// `PTX: <its text>`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Lines {
    pub(crate) sections: BTreeMap<String, Vec<String>>,
}

/// The listing could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nvdisasm -g -gp, line {line}: {what}")]
pub(crate) struct LinesError {
    line: usize,
    what: Unreadable,
}

/// What in a listing's line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unreadable {
    /// A `-gp` row names a PTX line the embedded PTX text does not have.
    #[error("PTX line {0} is not in {PTX_TEXT}", PTX_TEXT = PTX_TEXT)]
    NoPtxLine(usize),
    /// A `.byte` row of the PTX text holds what is not a hexadecimal byte.
    #[error("byte `{0}`")]
    Byte(String),
}

/// How a shipped function's line table differs from its origin's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineTableDifference {
    /// The first row that differs, after the instruction `after` (`/*0040*/`; `None`: before
    /// the first).
    #[error(
        "its line table differs from its origin's after {}: `{shipped}` where the origin has `{origin}`",
        after.as_deref().unwrap_or("the start")
    )]
    Row {
        after: Option<String>,
        shipped: String,
        origin: String,
    },
    /// One table is the other's start: the counts of their line rows.
    #[error("its line table has {shipped} line rows where its origin's has {origin}")]
    RowCount { shipped: usize, origin: usize },
}

/// Read `nvdisasm -g -gp`'s full listing (code and data sections).
pub(crate) fn parse(text: &str) -> Result<Lines, LinesError> {
    let mut rows: BTreeMap<String, Vec<(usize, Row)>> = BTreeMap::new();
    let mut ptx_bytes = Vec::new();
    let mut section = String::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        // `.section NAME,...`, not `.sectionflags` or `.sectioninfo`.
        if let Some(rest) = t
            .strip_prefix(".section")
            .filter(|r| r.starts_with(char::is_whitespace))
        {
            section = rest.trim().split(',').next().unwrap_or("").to_string();
            continue;
        }
        if section == PTX_TEXT {
            bytes_row(t, &mut ptx_bytes).map_err(|what| LinesError { line: n + 1, what })?;
        } else if section.starts_with(".text.")
            && let Some(row) = Row::of(t)
        {
            rows.entry(section.clone()).or_default().push((n + 1, row));
        }
    }
    // One NUL-terminated string per PTX line (a comment's line left empty), so line N of
    // `-gp` is the Nth.
    let ptx_owned: Vec<String> = ptx_bytes
        .split(|&b| b == 0)
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    let ptx_lines: Vec<&str> = ptx_owned.iter().map(String::as_str).collect();
    let mut out = Lines::default();
    for (name, section_rows) in rows {
        let mut v = Vec::with_capacity(section_rows.len());
        for (n, row) in section_rows {
            v.push(
                row.text(&ptx_lines)
                    .map_err(|what| LinesError { line: n, what })?,
            );
        }
        out.sections.insert(name, v);
    }
    Ok(out)
}

/// One row of a code section that matters here.
enum Row {
    /// `/*0040*/` of an instruction.
    Offset(String),
    /// `//## File "NAME", line N` (with anything nvdisasm adds after it).
    Line {
        file: String,
        number: usize,
        rest: String,
    },
}

impl Row {
    fn of(t: &str) -> Option<Row> {
        if let Some(rest) = t.strip_prefix("//## File \"") {
            let (file, after) = rest.split_once("\", line ")?;
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            return Some(Row::Line {
                file: file.to_string(),
                number: after[..digits].parse().ok()?,
                rest: after[digits..].trim().to_string(),
            });
        }
        let offset = t.strip_prefix("/*")?.split_once("*/")?.0;
        offset
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
            .then(|| Row::Offset(format!("/*{offset}*/")))
    }

    /// As compared: a PTX line by its text.
    fn text(self, ptx: &[&str]) -> Result<String, Unreadable> {
        match self {
            Row::Offset(o) => Ok(o),
            Row::Line { file, number, rest } if file == PTX_TEXT => {
                let at = number.checked_sub(1).and_then(|i| ptx.get(i));
                let at = at.ok_or(Unreadable::NoPtxLine(number))?;
                Ok(format!("PTX: {} {rest}", at.trim()).trim_end().to_string())
            }
            Row::Line { file, number, rest } => {
                Ok(format!("File \"{file}\", line {number} {rest}")
                    .trim_end()
                    .to_string())
            }
        }
    }
}

/// The bytes of a `.byte 0x2e, 0x76, ...` row, appended to `out` (other rows: none).
fn bytes_row(t: &str, out: &mut Vec<u8>) -> Result<(), Unreadable> {
    let Some(list) = t.split_once(".byte").map(|(_, l)| l) else {
        return Ok(());
    };
    for b in list.split(',') {
        let b = b.trim();
        let byte = b
            .strip_prefix("0x")
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        out.push(byte.ok_or_else(|| Unreadable::Byte(b.to_string()))?);
    }
    Ok(())
}

/// The code section of `shipped` function `ks` against that of `origin`'s `kr`: the same
/// rows, or the first that differs.
pub(crate) fn compare(
    shipped: &Lines,
    ks: &str,
    origin: &Lines,
    kr: &str,
) -> Result<(), LineTableDifference> {
    let empty = Vec::new();
    let a = shipped
        .sections
        .get(&format!(".text.{ks}"))
        .unwrap_or(&empty);
    let b = origin
        .sections
        .get(&format!(".text.{kr}"))
        .unwrap_or(&empty);
    let lines = |v: &[String]| v.iter().filter(|r| !r.starts_with("/*")).count();
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x != y {
            let at = a[..i].iter().rev().find(|r| r.starts_with("/*"));
            return Err(LineTableDifference::Row {
                after: at.cloned(),
                shipped: x.clone(),
                origin: y.clone(),
            });
        }
    }
    if a.len() != b.len() {
        return Err(LineTableDifference::RowCount {
            shipped: lines(a),
            origin: lines(b),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "\t.section\t.text._Z1kPf,\"ax\",@progbits
\t.sectionflags\t@\"\"
_Z1kPf:
\t//## File \"/src/a.cu\", line 7
\t//## File \".nv_debug_ptx_txt\", line 2
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_3:
        /*0010*/                   EXIT ;
//--------------------- .nv_debug_ptx_txt --------------------------
\t.section\t.nv_debug_ptx_txt,\"\",@progbits
.nv_debug_ptx_txt:
        /*0000*/ \t.byte\t0x2e, 0x76, 0x00, 0x09, 0x6d, 0x6f, 0x76, 0x3b, 0x00
";

    #[test]
    fn rows_are_offsets_and_lines_with_ptx_lines_by_text() {
        let l = parse(LISTING).unwrap();
        assert_eq!(
            l.sections[".text._Z1kPf"],
            [
                "File \"/src/a.cu\", line 7",
                "PTX: mov;",
                "/*0000*/",
                "/*0010*/"
            ]
        );
    }

    #[test]
    fn a_moved_line_is_named_with_the_instruction_before_it() {
        let a = parse(LISTING).unwrap();
        let b = parse(&LISTING.replace("line 7", "line 9")).unwrap();
        assert_eq!(compare(&a, "_Z1kPf", &a, "_Z1kPf"), Ok(()));
        let e = compare(&a, "_Z1kPf", &b, "_Z1kPf").unwrap_err();
        assert!(
            matches!(&e, LineTableDifference::Row { after: None, origin, .. } if origin.contains("line 9")),
            "{e:?}"
        );
        assert!(e.to_string().contains("after the start"), "{e}");
        let none = Lines::default();
        assert_eq!(
            compare(&a, "_Z1kPf", &none, "_Z1kPf"),
            Err(LineTableDifference::RowCount {
                shipped: 2,
                origin: 0
            })
        );
    }

    #[test]
    fn a_ptx_line_outside_the_text_is_an_error() {
        let e = parse(&LISTING.replace("line 2", "line 40")).unwrap_err();
        assert_eq!(e.what, Unreadable::NoPtxLine(40));
        assert_eq!(
            e.to_string(),
            "nvdisasm -g -gp, line 5: PTX line 40 is not in .nv_debug_ptx_txt"
        );
        let e = parse(&LISTING.replace("0x6d,", "6d,")).unwrap_err();
        assert_eq!(e.what, Unreadable::Byte("6d".to_string()));
    }
}
