//! One spelling per rewrite (issue 50, docs/DESIGN.md §Rewrites): a rewrite is named by its key,
//! the name users type (`--orion-transforms=spill2smem`), in code, docs, reports and messages:
//! `spill2smem` / `Spill2Smem`, `regdem` / `Regdem`. This test reads the code, the docs, the
//! scripts and the recorded messages (`tests/snapshots/`) and fails on any spelling the rewrites
//! had before, except in the few places that keep an old spelling on purpose so that users'
//! command lines and older reports still work ([`ALLOWED`]).

use std::fs;
use std::path::{Path, PathBuf};

/// What is read: every text file under these paths (from the repository root).
const ROOTS: &[&str] = &[
    "src",
    "crates/nvcc-orion-build/src",
    "crates/nvcc-orion-gen/src",
    "crates/nvcc-orion-schema/src",
    "docs",
    "README.md",
    "scripts",
    "cmake",
    "shims",
    "bench/gpu",
    "tests/snapshots",
];

/// The old spellings, matched without regard to case (so `SpillToShared`, `Spill → shared`
/// and `RegisterDemotion` are caught too), after removing `_`, `-` and spaces from both sides.
/// `RegDem` stays allowed: it is the paper's name (docs/papers.md §RegDem), cited as such.
const FORBIDDEN: &[&str] = &[
    "spill to shared",
    "spill → shared",
    "spill demotion",
    "register demotion",
];

/// Spellings forbidden exactly as written: a Rust case of a key other than its own.
const FORBIDDEN_CASE: &[&str] = &["Spill2smem"];

/// `(file, fragment)`: a line of `file` holding an old spelling is allowed where it also holds
/// `fragment`. Each must still be needed (a stale exception fails too).
const ALLOWED: &[(&str, &str)] = &[
    // `nvcc-orion rewrite --spill-to-shared`, accepted before the flag took the key's name.
    (
        "src/commands/rewrite.rs",
        "visible_alias = \"spill-to-shared\"",
    ),
    ("docs/usage.md", "`--spill-to-shared` is an alias"),
    // Reports written before issue 50 still read: the budget's field and the notes' name.
    (
        "crates/nvcc-orion-schema/src/lib.rs",
        "alias = \"spill_to_shared\"",
    ),
    (
        "crates/nvcc-orion-schema/src/lib.rs",
        "(\"spill2smem\", \"spill → shared\")",
    ),
    (
        "crates/nvcc-orion-schema/src/lib.rs",
        "(\"regdem\", \"register demotion\")",
    ),
    ("bench/gpu/harness.py", "b.get(\"spill_to_shared\")"),
    // The decision itself names what it replaced.
    ("docs/DESIGN.md", "keep working as aliases:"),
];

/// Lowercase, without `_`, `-` and spaces: the form both sides are compared in.
fn squeeze(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The old spellings on `line`, as [`FORBIDDEN`] and [`FORBIDDEN_CASE`] write them.
fn old_spellings(line: &str) -> Vec<&'static str> {
    let squeezed = squeeze(line);
    FORBIDDEN
        .iter()
        .filter(|f| squeezed.contains(&squeeze(f)))
        .chain(FORBIDDEN_CASE.iter().filter(|f| line.contains(*f)))
        .copied()
        .collect()
}

/// Every file at or below `p`.
fn walk(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        for e in fs::read_dir(p).unwrap() {
            walk(&e.unwrap().path(), out);
        }
    } else {
        out.push(p.to_path_buf());
    }
}

/// Every file under [`ROOTS`], as `(path from the root, path)`, sorted.
fn files(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for r in ROOTS {
        walk(&root.join(r), &mut out);
    }
    let mut named: Vec<(String, PathBuf)> = out
        .into_iter()
        .map(|p| (p.strip_prefix(root).unwrap().display().to_string(), p))
        .collect();
    named.sort();
    named
}

#[test]
fn one_spelling_per_rewrite() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    let all = files(root);
    assert!(all.len() > 100, "{} files read", all.len());
    for (name, path) in &all {
        // Binary files (none are expected) hold no spelling of ours.
        let Ok(text) = fs::read_to_string(path) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            let old = old_spellings(line);
            if old.is_empty() {
                continue;
            }
            match ALLOWED
                .iter()
                .position(|(f, frag)| f == name && line.contains(frag))
            {
                Some(a) => used[a] = true,
                None => found.push(format!("{name}:{}: {old:?}: {}", i + 1, line.trim())),
            }
        }
    }
    assert!(
        found.is_empty(),
        "old spellings of a rewrite (use its key: spill2smem, regdem):\n{}",
        found.join("\n")
    );
    let stale: Vec<_> = ALLOWED
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(a, _)| format!("{a:?}"))
        .collect();
    assert!(stale.is_empty(), "exceptions no longer needed: {stale:?}");
}

#[test]
fn the_scan_sees_every_old_spelling() {
    // The matcher itself: each way the rewrites were written is seen, the keys and the
    // paper's name are not.
    for old in [
        "spill → shared at 40",
        "Spill → shared",
        "spill_to_shared",
        "SpillToShared",
        "--spill-to-shared",
        "### Spill to shared",
        "register demotion",
        "Register demotion at 48",
        "RegisterDemotion { from }",
        "register-demotion candidate",
        "compared_with_ptxas_pragma_and_spill_demotion",
        "Mode::Spill2smem",
    ] {
        assert!(!old_spellings(old).is_empty(), "{old}");
    }
    for new in [
        "spill2smem at 40",
        "Spill2Smem",
        "Rewrite::Regdem { from }",
        "regdem_from",
        "RegDem §3 (docs/papers.md §RegDem)",
        "demotes registers to shared slots",
        "spills to shared memory",
    ] {
        assert!(old_spellings(new).is_empty(), "{new}");
    }
}
