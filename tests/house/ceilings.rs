//! Ceilings the house keeps (issue 50), each counted where it could creep back:
//! - errors are typed inside: at most 15 `Result<_, String>` in `src/`. A string error cannot be
//!   matched by kind, so a caller, a report or a mutation test that needs to know which failure
//!   it has ends up comparing text; the ones left are messages that only ever reach a person;
//! - the report is read through the schema's types: at most 15 string-keyed lookups
//!   (`v["key"]`, `.get("key")`) in `src/report`'s code outside its tests;
//! - the suite links the crate into at most 15 integration-test binaries.
//!
//! Counted in code only (`common/rust_text.rs` blanks comments and literals; a lookup's key is
//! a literal, so lookups are counted in the text with only comments and test modules left out).

use crate::rust_text;

use std::path::Path;

use rust_text::{blank, walk};

/// The ceiling for each count.
const MAX: usize = 15;

/// The lines of `text` (1-based) where a `Result<…>` names `String` as its error type.
fn string_errors(text: &str) -> Vec<usize> {
    let code = blank(text);
    let mut found = Vec::new();
    for (at, _) in code.match_indices("Result<") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // Another type ending in `Result` (`TuneResult<`); `io::Result<` still counts.
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
    let found = places("src", 50, string_errors);
    assert!(
        found.len() <= MAX,
        "{} `Result<_, String>` in src/, at most {MAX}: type the errors of\n{}",
        found.len(),
        found.join("\n")
    );
}

/// `file:line` of each place `scan` finds in the `.rs` files below `dir` (of the
/// repository), which holds more than `at_least` of them.
fn places(dir: &str, at_least: usize, scan: fn(&str) -> Vec<usize>) -> Vec<String> {
    let mut files = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), &mut files);
    files.sort();
    assert!(files.len() > at_least, "{dir}: {} files", files.len());
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for line in scan(&text) {
            found.push(format!("{}:{line}", f.display()));
        }
    }
    found
}

/// The string-keyed lookups into a JSON value in `text` (`["key"]`, `.get("key")`), by line,
/// outside its `#[cfg(test)]` module and comments.
fn keyed_lookups(text: &str) -> Vec<usize> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or("");
        let count = line.matches("[\"").count() + line.matches(".get(\"").count();
        found.extend(std::iter::repeat_n(n + 1, count));
    }
    found
}

#[test]
fn the_lookup_counter_counts() {
    let text = "let a = v[\"kernel\"];\nlet b = v.get(\"regs\").and_then(|r| r[\"n\"]);\n\
                // v[\"comment\"]\nlet c = v[0];\n#[cfg(test)]\nmod tests { fn t() { v[\"x\"]; } }\n";
    assert_eq!(keyed_lookups(text), vec![1, 2, 2]);
}

#[test]
fn at_most_15_keyed_lookups_in_src_report() {
    let found = places("src/report", 10, keyed_lookups);
    assert!(
        found.len() <= MAX,
        "{} string-keyed lookups in src/report, at most {MAX}: read the schema's types at\n{}",
        found.len(),
        found.join("\n")
    );
}

/// Cargo's integration-test targets of the workspace: `tests/*.rs` and `tests/*/main.rs` of
/// each package, found as cargo finds them (a manifest declaring one by hand fails the test).
#[test]
fn at_most_15_test_binaries() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut packages = vec![root.to_path_buf()];
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        packages.push(e.unwrap().path());
    }
    let mut binaries = Vec::new();
    for p in &packages {
        let Ok(entries) = std::fs::read_dir(p.join("tests")) else {
            continue;
        };
        for e in entries {
            let path = e.unwrap().path();
            let single = path.extension().is_some_and(|x| x == "rs");
            if single || path.join("main.rs").is_file() {
                binaries.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
        let manifest = std::fs::read_to_string(p.join("Cargo.toml")).unwrap();
        assert!(
            !manifest.contains("[[test]]"),
            "{}: a test target declared by hand is not counted here",
            p.display()
        );
    }
    binaries.sort();
    assert!(binaries.len() >= 10, "{binaries:?}");
    assert!(
        binaries.len() <= MAX,
        "{} integration-test binaries, at most {MAX}: add a module to a themed binary\n{}",
        binaries.len(),
        binaries.join("\n")
    );
}
