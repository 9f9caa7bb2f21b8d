//! The build.rs helper stays small: every user's build script compiles `nvcc-orion-build`
//! and what it depends on, so that is `cc` (with its own small dependencies) and `jobserver`,
//! never nvcc-orion's library or its heavy dependencies (object, petgraph, ruzstd, clap, serde).
//! Read from `cargo tree`, offline (the lock file pins everything), for the host platform.

use std::path::Path;
use std::process::Command;

/// `cargo tree` for a package of the workspace: the crate names it builds (normal edges).
fn normal_deps(manifest: &Path, package: &str) -> Vec<String> {
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "tree",
            "--offline",
            "--prefix",
            "none",
            "-e",
            "normal",
            "-p",
            package,
        ])
        .arg("--manifest-path")
        .arg(manifest)
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn helper_crate_depends_on_cc_and_little_else() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let names = normal_deps(&root.join("Cargo.toml"), "nvcc-orion-build");
    for heavy in [
        "nvcc-orion",
        "object",
        "petgraph",
        "ruzstd",
        "clap",
        "serde",
        "thiserror",
        "syn",
    ] {
        assert!(!names.iter().any(|n| n == heavy), "{heavy} in {names:?}");
    }
    assert!(names.iter().any(|n| n == "cc"), "{names:?}");
    // cc, find-msvc-tools, shlex, jobserver, libc: room for one more, not for a tree.
    assert!(names.len() <= 7, "{} crates: {names:?}", names.len());

    // The example crate's build script builds the helper, not nvcc-orion's library.
    let build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["tree", "--offline", "--prefix", "none", "-e", "build"])
        .arg("--manifest-path")
        .arg(root.join("examples/cargo/Cargo.toml"))
        .output()
        .expect("run cargo tree");
    let build = String::from_utf8_lossy(&build.stdout);
    assert!(build.contains("nvcc-orion-build v"), "{build}");
    assert!(!build.contains("nvcc-orion v"), "{build}");
}
