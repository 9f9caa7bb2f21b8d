//! No function in `src/` is over 150 lines (issue 34): a long function is a list of passes
//! that should be named steps. Braces are counted with comments, strings and character
//! literals blanked (`common/rust_text.rs`, shared with `tests/house/layers.rs`).

use crate::rust_text;

use std::path::Path;

use rust_text::{blank, walk};

const MAX_LINES: usize = 150;

/// (lines, name, first line) of every function of `text` with a body.
fn functions(text: &str) -> Vec<(usize, String, usize)> {
    let code = blank(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let code = *l;
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
            for c in l.chars() {
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
    // Braces in a string over two lines and in a block comment do not count either.
    let more = "fn c() {\n    let s = \"}\n}\";\n    /* } */\n}\n";
    assert_eq!(functions(more), vec![(5, "c".into(), 1)]);
    let f = functions(text);
    assert_eq!(f, vec![(5, "a".into(), 1), (3, "b".into(), 6)]);
}

#[test]
fn no_function_in_src_is_over_150_lines() {
    let mut files = Vec::new();
    walk(
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
