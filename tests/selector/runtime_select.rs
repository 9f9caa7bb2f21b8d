//! The launch-time selector (`runtime/orion_select.h`, issue 21) built with the system C++
//! compilers: its logic against a simulated clock (`tests/runtime/select_test.cpp`, under
//! ThreadSanitizer where the compiler has it), the profile it writes read back by
//! `nvcc_orion::profile`, and what a user's object gets from it (`static_instance.cpp`). g++
//! and clang++ are required under CI (`.ci/run` installs clang: `NVCC_ORION_SETUP_CLANG=1`).

use std::path::{Path, PathBuf};
use std::process::Command;

use nvcc_orion::profile::Profile;

use crate::common;

/// The cases select_test.cpp runs; each must print `ok <case>`.
const CASES: &[&str] = &[
    "direction_search",
    "stops_at_first_slowdown",
    "last_candidate_is_best",
    "other_direction_after_a_slower_first_step",
    "both_directions_slower_keep_the_original",
    "gain_within_noise_is_no_step",
    "noisy_original_kept",
    "noisy_candidate_keeps_original",
    "short_kernel_kept",
    "locked_is_final",
    "late_timings",
    "capture_gets_original_or_locked",
    "bounded_table",
    "timer_failures_lock_original",
    "launch_failure_locks_original",
    "single_variant_and_off",
    "median_and_spread",
    "train_round_robin",
    "concurrent_threads",
    "profile_written",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `name` on PATH; `None` with a skip line unless `required` under CI.
fn compiler(name: &str, test: &str, required: bool) -> Option<PathBuf> {
    match which::which(name) {
        Ok(p) => Some(p),
        Err(_) => {
            let why = format!("{name} is not installed");
            if required {
                common::skip(test, &why);
            } else {
                common::skipped(test, &why);
            }
            None
        }
    }
}

fn compile(cxx: &Path, args: &[&str], out: &Path) -> std::process::Output {
    let mut cmd = Command::new(cxx);
    cmd.args(args)
        .arg(format!("-I{}", root().join("runtime").display()))
        .arg("-o")
        .arg(out);
    cmd.output().expect("run the C++ compiler")
}

const WARNINGS: &[&str] = &["-Wall", "-Wextra", "-Wpedantic", "-Werror"];

/// Builds and runs select_test.cpp; returns its stdout and the profile it wrote.
fn run_logic(cxx: &Path, dir: &Path) -> (String, PathBuf) {
    let src = root().join("tests/runtime/select_test.cpp");
    let src = src.to_str().unwrap();
    let exe = dir.join("select_test");
    let mut base = vec!["-std=c++11", "-O1", "-g", "-pthread", src];
    base.extend_from_slice(WARNINGS);
    // ThreadSanitizer where it builds and starts (it needs a compatible kernel memory layout);
    // the concurrency case then checks for races, not only for the right answers.
    let mut tsan = base.clone();
    tsan.push("-fsanitize=thread");
    let profile = dir.join("profile.json");
    if compile(cxx, &tsan, &exe).status.success() {
        let out = common::command(&exe).arg(&profile).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr.contains("FATAL: ThreadSanitizer") {
            assert!(
                !stderr.contains("WARNING: ThreadSanitizer"),
                "{}: a race:\n{stderr}",
                cxx.display()
            );
            eprintln!("{}: select_test under ThreadSanitizer", cxx.display());
            return finish(out, profile);
        }
    }
    eprintln!(
        "{}: select_test without ThreadSanitizer (unavailable)",
        cxx.display()
    );
    let built = compile(cxx, &base, &exe);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = common::command(&exe).arg(&profile).output().unwrap();
    finish(out, profile)
}

fn finish(out: std::process::Output, profile: PathBuf) -> (String, PathBuf) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "select_test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let passed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ok "))
        .collect();
    assert_eq!(passed, CASES, "cases run:\n{stdout}");
    (stdout, profile)
}

/// The profile the train case wrote, read by the build's reader: what a profile-guided build
/// would see.
fn check_profile(file: &Path) {
    let p = Profile::read(file).unwrap_or_else(|e| panic!("{e}"));
    let walk = "_Z4walkPfi";
    let scale = "scale\"q\\uote"; // escaped by the writer, unescaped here
    let kernels: Vec<(&str, [u32; 3], u32)> = p
        .entries
        .iter()
        .map(|e| (e.kernel.as_str(), e.key.grid, e.variant))
        .collect();
    // sorted by key (kernel id 20 before 21, then the grid), then variant
    assert_eq!(
        kernels,
        [
            (walk, [64, 1, 1], 0),
            (walk, [64, 1, 1], 1),
            (walk, [64, 1, 1], 2),
            (walk, [256, 1, 1], 0),
            (walk, [256, 1, 1], 1),
            (walk, [256, 1, 1], 2),
            (scale, [8, 1, 1], 0),
            (scale, [8, 1, 1], 1),
        ]
    );
    for e in &p.entries {
        assert_eq!(
            (e.arch.as_str(), e.device.as_str()),
            ("sm_90", "Simulated GPU")
        );
    }
    // train: one warm-up and four timed launches per variant; the ramp base+0..3 µs
    let full = &p.entries[3..6];
    let medians: Vec<f64> = full.iter().map(|e| e.median_us).collect();
    assert_eq!(medians, [101.5, 81.5, 91.5]);
    assert!(full.iter().all(|e| (e.launches, e.samples) == (5, 4)));
    assert!((full[0].spread - 1.0 / 101.5).abs() < 1e-4);
    // the run cut short: 7 launches, round robin
    let short: Vec<(u64, u64)> = p.entries[..3]
        .iter()
        .map(|e| (e.launches, e.samples))
        .collect();
    assert_eq!(short, [(3, 2), (2, 1), (2, 1)]);
    assert_eq!(p.entries[6].key.shared, 1024);
    assert_eq!(p.entries[6].variant_name, "");
    let names = [walk, "_Z4walkPfi__orion_r40", "_Z4walkPfi__orion_r32"];
    let w = p.winner(walk, "sm_90", &names).unwrap().unwrap();
    assert_eq!((w.variant, w.configurations), (1, 2));
    assert_eq!(
        p.winner(scale, "sm_90", &["a", "b"])
            .unwrap()
            .unwrap()
            .variant,
        0
    );
    let other_build = [walk, "_Z4walkPfi__orion_r48", "_Z4walkPfi__orion_r32"];
    let err = p
        .winner(walk, "sm_90", &other_build)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "{}: entry 1 (_Z4walkPfi, sm_90): variant 1",
            file.display()
        )),
        "{err}"
    );
}

#[test]
fn selector_logic_gxx() {
    let Some(cxx) = compiler("g++", "selector_logic_gxx", true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_, profile) = run_logic(&cxx, dir.path());
    check_profile(&profile);
}

#[test]
fn selector_logic_clangxx() {
    let Some(cxx) = compiler("clang++", "selector_logic_clangxx", true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_, profile) = run_logic(&cxx, dir.path());
    check_profile(&profile);
}

/// A user's object: under every standard and without exceptions or RTTI, a static selector
/// and all its members compile to code that needs nothing from the C++ runtime (no global
/// constructor or destructor registration, no guard variables, no allocation, no exception
/// machinery: only libc), and the table is zeroed storage, not data in the object file.
#[test]
fn selector_header_in_user_objects() {
    let Some(cxx) = compiler("g++", "selector_header_in_user_objects", true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("tests/runtime/static_instance.cpp");
    let src = src.to_str().unwrap();
    for (std, opt) in [
        ("-std=c++11", "-O0"),
        ("-std=c++14", "-O2"),
        ("-std=c++17", "-O0"),
        ("-std=c++20", "-O2"),
    ] {
        let obj = dir.path().join(format!("si{std}.o"));
        let mut args = vec![std, opt, "-fno-exceptions", "-fno-rtti", "-c", src];
        args.extend_from_slice(WARNINGS);
        let out = compile(&cxx, &args, &obj);
        assert!(
            out.status.success(),
            "{std}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let nm = Command::new("nm").arg(&obj).output().expect("nm");
        let symbols = String::from_utf8_lossy(&nm.stdout);
        let undefined: Vec<&str> = symbols
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("U "))
            .collect();
        assert!(
            undefined.iter().all(|s| !s.starts_with('_')),
            "{std} {opt}: C++ runtime symbols needed: {undefined:?}"
        );
        for bad in ["_GLOBAL__sub_I", "__cxa_guard", "__cxa_atexit"] {
            assert!(!symbols.contains(bad), "{std} {opt}: {bad} in\n{symbols}");
        }
        let table = symbols
            .lines()
            .find(|l| l.contains("g_selector"))
            .unwrap_or_else(|| panic!("no g_selector in\n{symbols}"));
        assert!(
            table.contains(" b ") || table.contains(" B "),
            "{std} {opt}: the static selector is not in .bss: {table}"
        );
    }
}

/// The microbenchmark (bench/selector/bench.cpp) builds and runs; its numbers are recorded in
/// bench/results/selector.md by scripts/bench-selector.sh, not judged here.
#[test]
fn selector_bench_runs() {
    let Some(cxx) = compiler("g++", "selector_bench_runs", true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("bench");
    let src = root().join("bench/selector/bench.cpp");
    let mut args = vec!["-std=c++11", "-O2", "-pthread", src.to_str().unwrap()];
    args.extend_from_slice(WARNINGS);
    let out = compile(&cxx, &args, &exe);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = common::command(&exe).arg("1000").output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("| ")).count(),
        5,
        "{stdout}"
    );
}

/// The generated glue will include the header from CUDA translation units: it must pass nvcc's
/// own front end (cudafe++) and host compilation without a warning.
#[test]
fn selector_header_through_nvcc() {
    let Some(nvcc) = common::nvcc_or_skip("selector_header_through_nvcc") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("tests/runtime/static_instance.cpp");
    let out = Command::new(&nvcc)
        .args([
            "-x",
            "cu",
            "-arch=sm_90",
            "-Xcompiler",
            "-Wall,-Wextra",
            "-c",
        ])
        .arg(&src)
        .arg(format!("-I{}", root().join("runtime").display()))
        .arg("-o")
        .arg(dir.path().join("si.o"))
        .output()
        .expect("run nvcc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "nvcc warned:\n{stderr}");
}
