//! No function in `src/` is over 150 lines (issue 34): a long function is a list of passes
//! that should be named steps. Braces are counted with strings, character literals and line
//! comments left out.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 150;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `line` without string and character literals and without its line comment.
fn code_of(line: &str) -> String {
    let b: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            '"' => {
                i += 1;
                while i < b.len() && b[i] != '"' {
                    i += if b[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            '\'' if b.get(i + 2) == Some(&'\'') || (b.get(i + 1) == Some(&'\\')) => {
                i += 1;
                while i < b.len() && b[i] != '\'' {
                    i += if b[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            '/' if b.get(i + 1) == Some(&'/') => break,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// (lines, name, first line) of every function of `text` with a body.
fn functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let code = code_of(l);
        let Some(at) = code.find("fn ") else { continue };
        let before = code[..at].trim();
        let prefix_ok = before.is_empty()
            || before
                .split_whitespace()
                .all(|w| w.starts_with("pub") || matches!(w, "const" | "async" | "unsafe"));
        if !prefix_ok || code.trim_end().ends_with(';') {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut started) = (0i64, false);
        for (j, l) in lines.iter().enumerate().skip(i) {
            for c in code_of(l).chars() {
                match c {
                    '{' => {
                        depth += 1;
                        started = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if started && depth <= 0 {
                found.push((j - i + 1, name.clone(), i + 1));
                break;
            }
        }
    }
    found
}

#[test]
fn the_counter_counts() {
    let text = "fn a() {\n    let s = \"{\";\n    let c = '}';\n    // {\n}\npub(crate) fn b(x: u8) -> u8 {\n    x\n}\n";
    let f = functions(text);
    assert_eq!(f, vec![(5, "a".into(), 1), (3, "b".into(), 6)]);
}

#[test]
fn no_function_in_src_is_over_150_lines() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    files.sort();
    let mut long = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, name, line) in functions(&text) {
            if n > MAX_LINES {
                long.push(format!("{}:{line} {name}: {n} lines", f.display()));
            }
        }
    }
    assert!(files.len() > 50, "{} files", files.len());
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}
