//! Errors are typed inside (issue 50): at most 15 `Result<_, String>` in `src/`. A string
//! error cannot be matched by kind, so a caller, a report or a mutation test that needs to
//! know which failure it has ends up comparing text. The ones left are messages that only
//! ever reach a person (`explain`'s views, the report's pages). Counted in code only
//! (`common/rust_text.rs` blanks comments and literals).

use crate::rust_text;

use std::path::Path;

use rust_text::{blank, walk};

const MAX: usize = 15;

/// The lines of `text` (1-based) where a `Result<…>` names `String` as its error type.
fn string_errors(text: &str) -> Vec<usize> {
    let code = blank(text);
    let mut found = Vec::new();
    for (at, _) in code.match_indices("Result<") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `TuneResult<`, `io::Result<` is a path and is still `Result<`.
        }
        if error_type(&code[at + "Result<".len()..]) == Some("String") {
            found.push(code[..at].matches('\n').count() + 1);
        }
    }
    found
}

/// The second top-level argument of the generic list that `rest` opens (after its `<`), when
/// there are two (a trailing comma allowed).
fn error_type(rest: &str) -> Option<&str> {
    let (mut depth, mut start) = (1usize, 0);
    let mut args = Vec::new();
    for (i, c) in rest.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    args.push(rest[start..i].trim());
                    break;
                }
            }
            ',' if depth == 1 => {
                args.push(rest[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if args.last() == Some(&"") {
        args.pop();
    }
    (args.len() == 2).then(|| args[1])
}

#[test]
fn the_counter_counts() {
    let text = "fn a() -> Result<(u8, String), String> {}\n\
                fn b() -> Result<BTreeMap<String, String>, Error> {}\n\
                // Result<(), String>\n\
                fn c() -> io::Result<String> {}\n\
                fn d() -> Result<\n    Vec<u8>,\n    String,\n> {}\n\
                fn e() -> TuneResult<(), String> {}\n\
                static F: OnceLock<Result<Dir, String>> = OnceLock::new();\n";
    assert_eq!(string_errors(text), vec![1, 5, 10]);
}

#[test]
fn at_most_15_string_errors_in_src() {
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    files.sort();
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for line in string_errors(&text) {
            found.push(format!("{}:{line}", f.display()));
        }
    }
    assert!(files.len() > 50, "{} files", files.len());
    assert!(
        found.len() <= MAX,
        "{} `Result<_, String>` in src/, at most {MAX}: type the errors of\n{}",
        found.len(),
        found.join("\n")
    );
}
