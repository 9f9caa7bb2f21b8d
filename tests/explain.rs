//! `nvcc-orion explain`: snapshot tests of the terminal table for the example kernels (the
//! numbers are ptxas 13.5's and the predictor's, deterministic), and the report form.
//! `UPDATE_SNAPSHOTS=1` rewrites the snapshots from the current output.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

mod common;

use std::path::Path;
use std::process::Command;

fn explain(args: &[&str], dir: &Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nvcc-orion"))
        .current_dir(dir)
        .arg("explain")
        .args(args)
        .env("NVCC_ORION_CACHE", dir.join("cache"))
        .env_remove("NVCC_ORION")
        .env_remove("NVCC_ORION_REPORT")
        .env_remove("NVCC_ORION_VERBOSE")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn snapshot(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 creates it)", path.display()));
    pretty_assertions::assert_eq!(want, got, "snapshot {name}");
}

#[test]
fn explain_tables_of_the_examples() {
    let Some(_) = common::fixtures::fixtures() else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    for (file, arch, snap) in [
        ("walk.cu", "-arch=sm_90", "explain_walk_sm90.txt"),
        ("nbody.cu", "-arch=sm_86", "explain_nbody_sm86.txt"),
        ("sgemm_dyn.cu", "-arch=sm_90", "explain_sgemm_sm90.txt"),
    ] {
        let src = repo.join("examples/kernels").join(file);
        let (ok, out, err) = explain(&[src.to_str().unwrap(), arch], dir.path());
        assert!(ok, "{file}: {err}");
        snapshot(snap, &out);
    }
}

#[test]
fn explain_a_report_and_a_failed_compile() {
    let Some(_) = common::fixtures::fixtures() else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    // A report written by a build explains the same as explaining the source.
    let report = dir.path().join("r.jsonl");
    let src = repo.join("examples/kernels/walk.cu");
    let status = Command::new(env!("CARGO_BIN_EXE_nvcc-orion"))
        .current_dir(dir.path())
        .args(["-c", "-arch=sm_90"])
        .arg(&src)
        .args(["-o", "w.o"])
        .env("NVCC_ORION_REPORT", &report)
        .env("NVCC_ORION_CACHE", dir.path().join("cache"))
        .env_remove("NVCC_ORION")
        .status()
        .unwrap();
    assert!(status.success());
    let (ok, from_report, _) = explain(&[report.to_str().unwrap()], dir.path());
    assert!(ok);
    let (_, from_source, _) = explain(&[src.to_str().unwrap(), "-arch=sm_90"], dir.path());
    assert_eq!(from_report, from_source);
    // nvcc's own error, then one line of ours.
    let bad = dir.path().join("bad.cu");
    std::fs::write(&bad, "__global__ void k( { }\n").unwrap();
    let (ok, out, err) = explain(&[bad.to_str().unwrap(), "-arch=sm_90"], dir.path());
    assert!(!ok && out.is_empty());
    assert!(err.contains("error"), "{err}");
    assert!(
        err.contains("nvcc-orion: error: the compile failed"),
        "{err}"
    );
}
