//! The replay driver on its own (below the argument grammar): a replayed compile makes the same
//! cubins and dependency files as the real nvcc, and a failing step is reported as such.

use crate::common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use nvcc_orion::cli::Facts;
use nvcc_orion::driver::{self, DriverError};
use nvcc_orion::settings::Settings;
use nvcc_orion::toolkit::Toolkit;

fn toolkit() -> Option<Toolkit> {
    let me = Path::new(env!("CARGO_BIN_EXE_nvcc-orion"));
    match Toolkit::locate(&|k| std::env::var_os(k), me) {
        Ok(tk) => Some(tk),
        Err(e) => {
            common::skip(module_path!(), &format!("no CUDA toolkit: {e}"));
            None
        }
    }
}

const KERNEL: &str = r#"#include "inc/com mon.h"
#ifdef __CUDA_ARCH__
#include "inc/dev.h"
#else
#include "inc/host.h"
#endif
__device__ double poly(double x) { double s = 0; for (int i = 0; i < 8; ++i) s = s * x + COMMON + i; return s; }
extern "C" __global__ void k(double* out, const double* in, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = poly(in[i]) + DEV_ONLY;
}
"#;

fn project(dir: &Path) {
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(dir.join("k.cu"), KERNEL).unwrap();
    std::fs::write(dir.join("inc/com mon.h"), "#define COMMON 1\n").unwrap();
    std::fs::write(dir.join("inc/dev.h"), "#define DEV_ONLY 2\n").unwrap();
    std::fs::write(dir.join("inc/host.h"), "#define DEV_ONLY 2\n").unwrap();
}

fn env() -> Vec<(OsString, OsString)> {
    std::env::vars_os().collect()
}

fn sass(tk: &Toolkit, obj: &Path) -> String {
    let out = Command::new(tk.tool("cuobjdump"))
        .arg("-sass")
        .arg(obj)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cuobjdump failed on {}",
        obj.display()
    );
    String::from_utf8(out.stdout).unwrap()
}

fn args(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

#[test]
fn replay_matches_nvcc_outputs_and_depfiles() {
    let Some(tk) = toolkit() else { return };
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("nvcc"), root.path().join("replay"));
    project(&a);
    project(&b);
    let common = [
        "-c",
        "k.cu",
        "-gencode",
        "arch=compute_80,code=sm_80",
        "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
        "-MMD",
        "-MP",
        "-MT",
        "obj/k.o",
        "-o",
        "k.o",
    ];
    let status = Command::new(tk.nvcc())
        .args(common)
        .current_dir(&a)
        .status()
        .unwrap();
    assert!(status.success());
    let facts = Facts {
        dryrun_args: args(&common),
        dep_targets: vec!["obj/k.o".into()],
        output: Some(PathBuf::from("k.o")),
        dep_skip_system: true,
        dep_phony: true,
        ..Facts::default()
    };
    let done = driver::replay(&tk, &facts, &Settings::default(), &env(), &b).unwrap();
    assert_eq!(done.ptxas_steps, 2, "one ptxas step per real target");
    assert_eq!(sass(&tk, &a.join("k.o")), sass(&tk, &b.join("k.o")));
    let (da, db) = (
        std::fs::read_to_string(a.join("k.d")).unwrap(),
        std::fs::read_to_string(b.join("k.d")).unwrap(),
    );
    assert_eq!(da, db, "dependency files differ");
    assert!(
        db.starts_with("obj/k.o : k.cu \\\n")
            && db.contains("inc/com\\ mon.h")
            && db.contains("inc/host.h"),
        "{db}"
    );
    assert!(
        !db.contains("/usr/include/"),
        "-MMD keeps system headers out: {db}"
    );
}

#[test]
fn full_depfile_and_default_names_match_nvcc() {
    let Some(tk) = toolkit() else { return };
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("nvcc"), root.path().join("replay"));
    project(&a);
    project(&b);
    let common = ["-c", "k.cu", "-arch=sm_86", "-MD"];
    assert!(
        Command::new(tk.nvcc())
            .args(common)
            .current_dir(&a)
            .status()
            .unwrap()
            .success()
    );
    let facts = Facts {
        dryrun_args: args(&common),
        ..Facts::default()
    };
    driver::replay(&tk, &facts, &Settings::default(), &env(), &b).unwrap();
    assert_eq!(
        std::fs::read(a.join("k.d")).unwrap(),
        std::fs::read(b.join("k.d")).unwrap()
    );
    assert_eq!(sass(&tk, &a.join("k.o")), sass(&tk, &b.join("k.o")));
}

#[test]
fn user_errors_surface_as_failed_steps_or_dry_runs() {
    let Some(tk) = toolkit() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.cu"), "__global__ void k( { }\n").unwrap();
    let facts = Facts {
        dryrun_args: args(&["-c", "bad.cu"]),
        ..Facts::default()
    };
    let err = driver::replay(&tk, &facts, &Settings::default(), &env(), dir.path()).unwrap_err();
    assert!(matches!(err, DriverError::StepFailed { .. }), "{err}");
    assert!(!err.is_internal());
    let facts = Facts {
        dryrun_args: args(&["-c", "missing.cu"]),
        ..Facts::default()
    };
    let err = driver::replay(&tk, &facts, &Settings::default(), &env(), dir.path()).unwrap_err();
    assert!(!err.is_internal(), "{err}");
}
