//! `scripts/suite-rustc.sh`, the suite's rustc wrapper: only the integration tests' own crates
//! are compiled at opt-level 0 (with debug assertions and overflow checks still off); the
//! library, the binaries, a crate's unit tests and any compile outside this repository get
//! exactly the arguments cargo gave. Checked with a stand-in rustc that prints what it got.

use std::path::Path;
use std::process::Command;

const LOWER: [&str; 6] = [
    "-C",
    "opt-level=0",
    "-C",
    "debug-assertions=off",
    "-C",
    "overflow-checks=off",
];

/// The arguments the stand-in rustc received when cargo asked for `args` from `cwd`.
fn passed(cwd: &Path, args: &[&str]) -> Vec<String> {
    let d = tempfile::tempdir().unwrap();
    let rustc = d.path().join("rustc");
    std::fs::write(&rustc, "#!/bin/sh\nprintf '%s\\n' \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rustc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let wrapper = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/suite-rustc.sh");
    let o = Command::new(wrapper)
        .arg(&rustc)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn with_lowered(args: &[&str]) -> Vec<String> {
    args.iter()
        .chain(LOWER.iter())
        .map(|a| a.to_string())
        .collect()
}

fn unchanged(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

#[test]
fn only_the_integration_tests_own_crates_are_lowered() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let theme = [
        "--crate-name",
        "tuning",
        "tests/tuning/main.rs",
        "-C",
        "opt-level=3",
        "--test",
    ];
    assert_eq!(passed(repo, &theme), with_lowered(&theme));
    let single = [
        "--crate-name",
        "cargo_jobserver",
        "tests/cargo_jobserver.rs",
        "--test",
    ];
    assert_eq!(passed(repo, &single), with_lowered(&single));
    for args in [
        // The library's unit tests, the library, the binary: as cargo asks.
        &[
            "--crate-name",
            "nvcc_orion",
            "src/lib.rs",
            "-C",
            "opt-level=3",
            "--test",
        ][..],
        &[
            "--crate-name",
            "nvcc_orion",
            "src/lib.rs",
            "-C",
            "opt-level=3",
        ],
        &[
            "--crate-name",
            "nvcc_orion",
            "src/main.rs",
            "--crate-type",
            "bin",
        ],
        // A source under tests/ not built as a test, and cargo's own questions.
        &["--crate-name", "x", "tests/tuning/main.rs"],
        &["-vV"],
    ] {
        assert_eq!(passed(repo, args), unchanged(args), "{args:?}");
    }
    // Another project's tests (a cargo run inside a test): as cargo asks.
    let elsewhere = tempfile::tempdir().unwrap();
    assert_eq!(passed(elsewhere.path(), &theme), unchanged(&theme));
}
