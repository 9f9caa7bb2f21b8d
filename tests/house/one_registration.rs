//! A new rewrite is one module under `src/transform/` plus one line in `transform::REGISTERED`
//! (docs/adding-a-rewrite.md): the settings (`--orion-transforms`, `--orion-force`, the cache
//! key), the tuner's plan, evaluation, selection and assembly, the driver and
//! `nvcc-orion rewrite` reach rewrites only through the registry, never by name. This test
//! reads those files and fails on any registered key written into their code (comments and
//! unit tests aside), so a third rewrite cannot again need edits there.

use std::fs;
use std::path::{Path, PathBuf};

/// The files that used to name each rewrite, and the folders whose files may not either.
const FILES: &[&str] = &[
    "settings.rs",
    "main.rs",
    "commands/rewrite.rs",
    "commands/cache_key.rs",
    "tune/mod.rs",
    "tune/plan.rs",
    "tune/evaluate.rs",
    "tune/select.rs",
    "tune/assemble.rs",
];
const FOLDERS: &[&str] = &["driver"];

/// `nvcc-orion rewrite`'s flags that predate `--transform` (tests and docs/usage.md use them):
/// the one place a key may stand, as the alias's constant or in a clap attribute naming the
/// alias flag (each flag's id is its key), on the attribute's line or, where rustfmt splits
/// it, on a `conflicts_with` line of its own.
fn is_alias(file: &str, line: &str) -> bool {
    let l = line.trim_start();
    file == "commands/rewrite.rs"
        && (l.starts_with("const ") || l.starts_with("#[arg(") || l.starts_with("conflicts_with"))
}

fn code(text: &str) -> String {
    // Unit tests sit at the end of a file, after `#[cfg(test)]`; they may name rewrites (a
    // tests module may be `pub(crate)` to lend its constructors to a sibling's tests).
    let end = [
        "#[cfg(test)]\nmod tests",
        "#[cfg(test)]\npub(crate) mod tests",
    ]
    .iter()
    .filter_map(|m| text.find(m))
    .min()
    .unwrap_or(text.len());
    let body = &text[..end];
    body.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn only_the_registry_names_a_rewrite() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<(String, PathBuf)> =
        FILES.iter().map(|f| (f.to_string(), src.join(f))).collect();
    for folder in FOLDERS {
        for e in fs::read_dir(src.join(folder)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "rs") {
                let name = p.strip_prefix(&src).unwrap().display().to_string();
                files.push((name, p));
            }
        }
    }
    files.sort();
    let keys = nvcc_orion::transform::keys();
    assert!(keys.len() >= 2, "{keys:?}");
    let mut found = Vec::new();
    for (name, path) in &files {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (i, line) in code(&text).lines().enumerate() {
            for key in &keys {
                if line.contains(&format!("\"{key}\"")) && !is_alias(name, line) {
                    found.push(format!("{name}: {key}: {}", line.trim()));
                }
            }
            let _ = i;
        }
    }
    assert!(
        found.is_empty(),
        "rewrite names outside the registry:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_a_name() {
    // The scanner itself: a literal in code is seen, one in a comment or a unit test is not.
    let text =
        "fn f() { let _ = \"regdem\"; }\n// \"regdem\"\n#[cfg(test)]\nmod tests { \"regdem\" }";
    let c = code(text);
    assert_eq!(c.matches("\"regdem\"").count(), 1, "{c}");
    let lent = "fn f() {}\n#[cfg(test)]\npub(crate) mod tests { \"regdem\" }";
    assert!(!code(lent).contains("regdem"));
    assert!(is_alias(
        "commands/rewrite.rs",
        "const REGDEM: &str = \"regdem\";"
    ));
    assert!(!is_alias("settings.rs", "const REGDEM: &str = \"regdem\";"));
    assert!(is_alias(
        "commands/rewrite.rs",
        "        conflicts_with = \"spill2smem\""
    ));
    assert!(!is_alias(
        "commands/rewrite.rs",
        "    let k = \"spill2smem\";"
    ));
}
