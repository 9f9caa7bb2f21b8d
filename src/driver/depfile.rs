//! nvcc's `-- Filter Dependencies --` pseudo-step, done the way nvcc 13.5 does it.
//!
//! nvcc does not ask the host compiler for dependencies: it reads the line markers of the
//! preprocessed files it just produced (the per-arch `.cpp1.ii` files, then `.cpp4.ii`) and
//! writes every file named there in first-seen order, the source first. `-MMD` drops files
//! marked as system headers (flag 3). The format, checked byte for byte against nvcc 13.5:
//! `target : a \` / `    b \` / `    c` then, with `-MP`, `\nb:\n` for each header.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum DepfileError {
    #[error("cannot read preprocessed file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("no preprocessed file precedes the dependency step")]
    NoInput,
    #[error("file name {0:?} needs escaping nvcc-orion does not model")]
    Unescapable(String),
}

/// Options that shape the file.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    /// `-MMD`/`-MM`: leave out system headers.
    pub(crate) skip_system: bool,
    /// `-MP`: a phony target for every header.
    pub(crate) phony: bool,
}

/// The files named by the line markers of `preprocessed` (in order), first-seen order, each
/// with whether it was marked as a system header.
pub fn collect(preprocessed: &[&Path]) -> Result<Vec<(String, bool)>, DepfileError> {
    if preprocessed.is_empty() {
        return Err(DepfileError::NoInput);
    }
    let mut seen = std::collections::HashSet::new();
    let mut files = Vec::new();
    for path in preprocessed {
        let text = std::fs::read(path).map_err(|source| DepfileError::Read {
            path: path.display().to_string(),
            source,
        })?;
        for line in text.split(|&b| b == b'\n') {
            let Some((name, system)) = line_marker(line) else {
                continue;
            };
            if name.starts_with('<') && name.ends_with('>') {
                continue; // <built-in>, <command-line>
            }
            if seen.insert(name.clone()) {
                files.push((name, system));
            }
        }
    }
    Ok(files)
}

/// The source file of a preprocessed output: the first real file its markers name.
pub(crate) fn source_of(files: &[(String, bool)]) -> Option<&str> {
    files.first().map(|(n, _)| n.as_str())
}

/// Render the dependency file text.
pub fn render(
    target: &str,
    files: &[(String, bool)],
    style: Style,
) -> Result<String, DepfileError> {
    let deps: Vec<String> = files
        .iter()
        .enumerate()
        .filter(|(i, (_, system))| *i == 0 || !(style.skip_system && *system))
        .map(|(_, (n, _))| escape(n))
        .collect::<Result<_, _>>()?;
    let mut out = format!("{target} : ");
    out.push_str(&deps.join(" \\\n    "));
    out.push('\n');
    if style.phony {
        for d in deps.iter().skip(1) {
            out.push('\n');
            out.push_str(d);
            out.push_str(":\n");
        }
    }
    Ok(out)
}

fn escape(name: &str) -> Result<String, DepfileError> {
    // Only the escaping we have seen nvcc do (space → `\ `); refuse the rest rather than guess.
    if name.chars().any(|c| {
        matches!(
            c,
            '$' | '#' | '\\' | ':' | '\t' | '\n' | '"' | '\'' | '*' | '?' | '[' | ']'
        )
    }) {
        return Err(DepfileError::Unescapable(name.to_string()));
    }
    Ok(name.replace(' ', "\\ "))
}

/// Parse a GNU line marker `# <line> "<file>" <flags>...`.
fn line_marker(line: &[u8]) -> Option<(String, bool)> {
    let rest = line.strip_prefix(b"# ")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let rest = rest[digits..].strip_prefix(b" \"")?;
    let mut name = Vec::new();
    let mut i = 0;
    loop {
        match *rest.get(i)? {
            b'"' => break,
            b'\\' => {
                let n = *rest.get(i + 1)?;
                if (b'0'..=b'7').contains(&n) {
                    // Octal escape for unprintable bytes.
                    let oct: Vec<u8> = rest[i + 1..]
                        .iter()
                        .take(3)
                        .take_while(|b| (b'0'..=b'7').contains(b))
                        .copied()
                        .collect();
                    let v = oct
                        .iter()
                        .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                    name.push(u8::try_from(v).ok()?);
                    i += 1 + oct.len();
                    continue;
                }
                name.push(n);
                i += 2;
                continue;
            }
            b => name.push(b),
        }
        i += 1;
    }
    let flags = &rest[i + 1..];
    let system = flags.split(|&b| b == b' ').any(|f| f == b"3");
    Some((String::from_utf8(name).ok()?, system))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_markers_in_first_seen_order_and_renders_like_nvcc() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.ii");
        let b = dir.path().join("b.ii");
        std::fs::write(
            &a,
            "# 1 \"k.cu\"\n# 1 \"<built-in>\"\n# 1 \"/usr/include/stdc-predef.h\" 1 3 4\n# 1 \"inc/com mon.h\" 1\nint x;\n# 2 \"k.cu\" 2\n# 1 \"inc/dev.h\" 1\n",
        )
        .unwrap();
        std::fs::write(
            &b,
            "# 1 \"k.cu\"\n# 1 \"inc/host.h\" 1\n# 1 \"inc/com mon.h\" 1\n",
        )
        .unwrap();
        let files = collect(&[&a, &b]).unwrap();
        assert_eq!(source_of(&files), Some("k.cu"));
        let md = render("k.o", &files, Style::default()).unwrap();
        assert_eq!(
            md,
            "k.o : k.cu \\\n    /usr/include/stdc-predef.h \\\n    inc/com\\ mon.h \\\n    inc/dev.h \\\n    inc/host.h\n"
        );
        let mmd = render(
            "t.o",
            &files,
            Style {
                skip_system: true,
                phony: true,
            },
        )
        .unwrap();
        assert_eq!(
            mmd,
            "t.o : k.cu \\\n    inc/com\\ mon.h \\\n    inc/dev.h \\\n    inc/host.h\n\ninc/com\\ mon.h:\n\ninc/dev.h:\n\ninc/host.h:\n"
        );
    }

    #[test]
    fn marker_escapes() {
        assert_eq!(
            line_marker(br#"# 12 "a\"b\\c" 1 3"#),
            Some(("a\"b\\c".to_string(), true))
        );
        assert_eq!(
            line_marker(br#"# 1 "x\040y""#),
            Some(("x y".to_string(), false))
        );
        assert_eq!(line_marker(b"#pragma once"), None);
        assert!(render("t", &[("a$b".into(), false)], Style::default()).is_err());
    }
}
