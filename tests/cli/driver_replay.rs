//! The replay driver on its own (below the argument grammar): a replayed compile makes the same
//! cubins and dependency files as the real nvcc, and a failing step is reported as such.

use crate::common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// Issue 47: each further architecture's front end runs beside the first's on a spare job slot.
/// `nvcc-orion -c` of `src` (in `dir`) for sm_80 and sm_90 under a jobserver of `tokens` spare
/// tokens, with `extra` arguments: what it printed and its exit code.
fn two_arches(dir: &Path, src: &str, tokens: usize, verbose: bool, extra: &[&str]) -> Output {
    let client = jobserver::Client::new(tokens).expect("a jobserver");
    let mut cmd = common::orion();
    cmd.current_dir(dir)
        .args(["-c", "-O3"])
        .args(["-gencode", "arch=compute_80,code=sm_80"])
        .args(["-gencode", "arch=compute_90,code=sm_90"])
        .args(extra)
        .args([src, "-o", "k.o"])
        .env("NVCC_ORION_CACHE", "off");
    if verbose {
        cmd.env("NVCC_ORION_VERBOSE", "1");
    }
    client.configure_make(&mut cmd);
    cmd.output().unwrap()
}

/// The real nvcc's answer to [`two_arches`]' compile.
fn nvcc_two_arches(nvcc: &Path, dir: &Path, src: &str) -> Output {
    common::command(nvcc)
        .current_dir(dir)
        .args(["-c", "-O3"])
        .args(["-gencode", "arch=compute_80,code=sm_80"])
        .args(["-gencode", "arch=compute_90,code=sm_90"])
        .args([src, "-o", "k.o"])
        .output()
        .unwrap()
}

const KERNEL_BODY: &str = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }\n";

/// A source valid for sm_80 whose sm_90 preprocessing fails: the user sees nvcc's own message
/// and exit code, whether sm_90's front end ran beside sm_80's (one spare token) or after it
/// (none), and the failure the driver saw is sm_90's preprocessing.
#[test]
fn a_failing_second_front_end_reports_as_nvcc() {
    let Some(nvcc) = common::nvcc_or_skip(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n#error no sm_90 here\n#endif\n{KERNEL_BODY}"
    );
    std::fs::write(dir.path().join("k.cu"), src).unwrap();
    let real = nvcc_two_arches(&nvcc, dir.path(), "k.cu");
    assert!(!real.status.success(), "nvcc accepted the #error");
    let message = String::from_utf8_lossy(&real.stderr).into_owned();
    assert!(message.contains("no sm_90 here"), "{message}");
    for tokens in [1, 0] {
        let o = two_arches(dir.path(), "k.cu", tokens, false, &[]);
        assert_eq!(o.status.code(), real.status.code(), "{tokens} spare tokens");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            message,
            "{tokens} spare tokens"
        );
        assert!(o.stdout == real.stdout);
        let o = two_arches(dir.path(), "k.cu", tokens, true, &[]);
        let said = String::from_utf8_lossy(&o.stderr);
        assert!(
            said.starts_with("nvcc-orion: warning: step `gcc` exited with exit status: 1"),
            "{tokens} spare tokens: {said}"
        );
    }
}

/// When both architectures fail, the failure reported is the first in nvcc's order: sm_80's
/// `cicc` (an undefined name) comes before sm_90's preprocessing (`#error`) in the plan,
/// although run side by side sm_90's fails sooner.
#[test]
fn the_first_failure_in_plan_order_is_reported() {
    let Some(nvcc) = common::nvcc_or_skip(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n#error no sm_90 here\n#endif\n\
         #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 800\n\
         __device__ int f() {{ return not_declared_anywhere; }}\n#endif\n{KERNEL_BODY}"
    );
    std::fs::write(dir.path().join("k.cu"), src).unwrap();
    let real = nvcc_two_arches(&nvcc, dir.path(), "k.cu");
    let message = String::from_utf8_lossy(&real.stderr).into_owned();
    assert!(message.contains("not_declared_anywhere"), "{message}");
    assert!(!message.contains("no sm_90 here"), "{message}");
    let o = two_arches(dir.path(), "k.cu", 1, true, &[]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.starts_with("nvcc-orion: warning: step `cicc` exited with exit status: 1"),
        "{said}"
    );
    assert_eq!(o.status.code(), real.status.code());
    let o = two_arches(dir.path(), "k.cu", 1, false, &[]);
    assert_eq!(String::from_utf8_lossy(&o.stderr), message);
}

/// With one spare token, sm_90's front end starts while sm_80's runs. The host compiler is a
/// wrapper whose sm_80 preprocessing waits (at most 20 s) for sm_90's to start, so only a
/// driver that runs them side by side sees it start; timing plays no part, so load cannot
/// make the test flaky. The object is the one a build without a spare token makes.
#[test]
fn the_second_front_end_starts_beside_the_first() {
    side_by_side_as_serial(
        "*\" -D__CUDA_ARCH__=800 \"*\" -E \"*)",
        "sm_80's preprocessing ran before sm_90's started",
    );
}

/// With one spare token, sm_90's chain starts with the plan, beside the host preprocessing
/// and `cudafe++` (issue 47): its preprocessing needs nothing of theirs, and only its `cicc`
/// waits for `cudafe++`'s module-id file. The host compiler is a wrapper whose host
/// preprocessing (to the `.cpp4.ii` that `cudafe++` reads) waits (at most 20 s) for sm_90's
/// preprocessing to start. Before, `cudafe++` was a fence and the device preprocessing came
/// after both: only a driver that starts it before `cudafe++` sees it; timing plays no part.
/// The object is the one a build without a spare token makes.
#[test]
fn device_preprocessing_starts_beside_cudafe() {
    side_by_side_as_serial(
        "*\" -D__CUDA_ARCH__=\"*) ;;\n*\" -E \"*\".cpp4.ii \"*)",
        "the host preprocessing ran before sm_90's started",
    );
}

/// With `-MD`, nvcc preprocesses for sm_80, sm_90 and the host one after another before it
/// writes the dependency file; with a spare token the driver runs the host's beside sm_80's
/// (the chain it would reach last is offered the token first), and the dependency file is
/// nvcc's, byte for byte (the driver keeps the preprocessed files in plan order).
#[test]
fn dependency_files_of_side_by_side_preprocessing_match_nvcc() {
    let Some(nvcc) = common::nvcc_or_skip(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let real = common::command(&nvcc)
        .current_dir(dir.path())
        .args(["-c", "-O3", "-MD"])
        .args(["-gencode", "arch=compute_80,code=sm_80"])
        .args(["-gencode", "arch=compute_90,code=sm_90"])
        .args(["k.cu", "-o", "k.o"])
        .output()
        .unwrap();
    common::assert_ok(&real, "nvcc -MD");
    let expected = std::fs::read(dir.path().join("k.d")).unwrap();
    std::fs::remove_file(dir.path().join("k.d")).unwrap();
    let o = two_arches(dir.path(), "k.cu", 1, true, &["-MD"]);
    common::assert_ok(&o, "nvcc-orion -MD");
    let said = String::from_utf8_lossy(&o.stderr);
    // The host's preprocessing beside sm_80's and sm_90's (the driver runs sm_90's itself:
    // the one token is taken), then sm_90's cicc and ptxas beside cudafe++ and sm_80's.
    let beside = "nvcc-orion: sm_90: front end run beside the steps before it";
    assert_eq!(said.matches(beside).count(), 1, "{said}");
    assert_eq!(
        said.matches("host: front end run beside").count(),
        1,
        "{said}"
    );
    assert!(std::fs::read(dir.path().join("k.d")).unwrap() == expected);
}

/// Build a two-architecture kernel with one spare token through [`gcc_waiting_for_sm90`]
/// (`waiting` names the run that waits): the run must have seen sm_90's preprocessing start
/// (`why` otherwise), and the object must be the one a build without a spare token makes.
fn side_by_side_as_serial(waiting: &str, why: &str) {
    let Some(_) = common::nvcc_or_skip(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let Some(cc) = gcc_waiting_for_sm90(dir.path(), waiting) else {
        common::skip(module_path!(), "no gcc on PATH");
        return;
    };
    std::fs::write(dir.path().join("k.cu"), KERNEL_BODY).unwrap();
    let ccbin = cc.to_str().unwrap();
    let o = two_arches(dir.path(), "k.cu", 1, true, &["-ccbin", ccbin]);
    common::assert_ok(&o, "nvcc-orion with a spare token");
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("nvcc-orion: sm_90: front end run beside the steps before it"),
        "{said}"
    );
    let order = std::fs::read_to_string(dir.path().join("order")).unwrap();
    assert_eq!(order, "beside\n", "{why}");
    let side = std::fs::read(dir.path().join("k.o")).unwrap();
    // The marker stays: the serial build's waiting run finds it and does not wait.
    let o = two_arches(dir.path(), "k.cu", 0, false, &["-ccbin", ccbin]);
    common::assert_ok(&o, "nvcc-orion without a spare token");
    let serial = std::fs::read(dir.path().join("k.o")).unwrap();
    assert!(
        common::mask_tmpxft(&side) == common::mask_tmpxft(&serial),
        "the objects differ"
    );
}

/// A host compiler at `dir/cc/gcc`: gcc, except that a run matching the shell `case` pattern
/// `waiting` (with its `)`) first waits, at most 20 s, for sm_90's preprocessing to start, and
/// appends to `dir/order` whether it did ("beside") or not ("after"). None: no gcc on PATH.
fn gcc_waiting_for_sm90(dir: &std::path::Path, waiting: &str) -> Option<std::path::PathBuf> {
    let d = dir.display();
    common::gcc_with_cases(
        dir,
        &format!(
            "*\" -D__CUDA_ARCH__=900 \"*) : > \"{d}/sm90-started\" ;;\n\
             {waiting}\n\
             n=0\n\
             while [ ! -e \"{d}/sm90-started\" ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done\n\
             if [ -e \"{d}/sm90-started\" ]; then echo beside; else echo after; fi >> \"{d}/order\" ;;"
        ),
    )
}
