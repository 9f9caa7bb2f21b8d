//! The selector's CUDA glue (`runtime/orion_runtime.cpp`, `runtime/orion_launch_redirect.h`,
//! issue 21) on real toolchain output: the test program `tests/runtime/glue_{a,b}.cu` built by
//! plain nvcc, and again with the launch redirect in the host compilation and the glue object
//! merged into each object (`ld -r`), the way the driver will build it under
//! `NVCC_ORION=adapt|train`. The objects must redirect every launch path and keep the
//! variants; the programs must link with nvcc, g++ and clang++ (required under CI), with
//! `-cudart static` and `shared`, with and without `-rdc`, and, run here without a GPU, behave
//! exactly like the plain build: the same output, the same runtime errors, the same exit code.
//! The paths that need a GPU (resolving variants, launching them, timing, the profile) run
//! against a simulated runtime and driver (`tests/runtime/glue_fake.cpp`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use nvcc_orion::profile::Profile;

mod common;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn cuda_home(nvcc: &Path) -> PathBuf {
    nvcc.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The glue compiled like the driver will: the host compiler, position-independent (the object
/// may end up in a shared library), no exceptions or RTTI, every warning an error.
fn compile_glue(cxx: &str, nvcc: &Path, out: &Path) {
    let inc = cuda_home(nvcc).join("include");
    run(Command::new(cxx)
        .args([
            "-std=c++11",
            "-O2",
            "-fPIC",
            "-fno-exceptions",
            "-fno-rtti",
            "-Wall",
            "-Wextra",
            "-Werror",
        ])
        .arg(format!("-I{}", inc.display()))
        .arg(format!("-I{}", root().join("runtime").display()))
        .arg("-c")
        .arg(root().join("runtime/orion_runtime.cpp"))
        .arg("-o")
        .arg(out));
}

/// Both units, plain and with the glue, with and without `-rdc`: `<unit>.<plain|host|glue>
/// <-rdc>.o` (`host`: redirected but not merged yet), and the glue object itself.
fn objects(nvcc: &Path) -> PathBuf {
    let sources: Vec<Vec<u8>> = [
        "tests/runtime/glue_a.cu",
        "tests/runtime/glue_b.cu",
        "runtime/orion_runtime.cpp",
        "runtime/orion_runtime.h",
        "runtime/orion_launch_redirect.h",
        "runtime/orion_select.h",
        "tests/runtime/glue_fake.cpp",
    ]
    .iter()
    .map(|p| std::fs::read(root().join(p)).unwrap())
    .collect();
    let mut inputs: Vec<&[u8]> = sources.iter().map(Vec::as_slice).collect();
    // What the folder holds: bump when the build below changes.
    inputs.push(b"objects v2: plain, host, glue, a.host-ptsz");
    common::build_once("runtime-glue", nvcc, &inputs, |dir| {
        compile_glue("g++", nvcc, &dir.join("glue.o"));
        let redirect = root().join("runtime/orion_launch_redirect.h");
        let mut jobs = Vec::new();
        for rdc in ["", "-rdc"] {
            for unit in ["a", "b"] {
                let src = root().join(format!("tests/runtime/glue_{unit}.cu"));
                for kind in ["plain", "host"] {
                    let mut cmd = Command::new(nvcc);
                    cmd.args(["-arch=sm_90", "-c"]).arg(&src);
                    if !rdc.is_empty() {
                        cmd.arg("-rdc=true");
                    }
                    if kind == "host" {
                        // nvcc hands -Xcompiler to its preprocessing steps too, where the
                        // header does nothing (__CUDACC__); the driver passes it to the
                        // .cudafe1.cpp host compilation only.
                        cmd.arg("-Xcompiler")
                            .arg(format!("-include,{}", redirect.display()));
                    }
                    cmd.arg("-o").arg(dir.join(format!("{unit}.{kind}{rdc}.o")));
                    jobs.push((format!("{cmd:?}"), cmd.spawn().expect("spawn nvcc")));
                    if jobs.len() == 2 {
                        for (what, mut child) in jobs.drain(..) {
                            assert!(child.wait().unwrap().success(), "{what}");
                        }
                    }
                }
                if unit == "a" && rdc.is_empty() {
                    // --default-stream per-thread: the runtime's `_ptsz` entry points.
                    run(Command::new(nvcc)
                        .args(["-arch=sm_90", "--default-stream", "per-thread", "-c"])
                        .arg(&src)
                        .arg("-Xcompiler")
                        .arg(format!("-include,{}", redirect.display()))
                        .arg("-o")
                        .arg(dir.join("a.host-ptsz.o")));
                }
                run(Command::new("ld")
                    .arg("-r")
                    .arg(dir.join(format!("{unit}.host{rdc}.o")))
                    .arg(dir.join("glue.o"))
                    .arg("-o")
                    .arg(dir.join(format!("{unit}.glue{rdc}.o"))));
            }
        }
    })
}

fn symbols(file: &Path) -> String {
    String::from_utf8_lossy(&run(Command::new("nm").arg(file)).stdout).into_owned()
}

/// The redirected object calls the glue's entry points, never the runtime's launch functions
/// directly; the merged object carries the glue (weak, hidden) and still defines the original
/// kernel and its variants, host and device side, with the same registers.
#[test]
fn glue_objects_redirect_and_keep_variants() {
    let Some(nvcc) = common::nvcc_or_skip("glue_objects_redirect_and_keep_variants") else {
        return;
    };
    let dir = objects(&nvcc);
    for rdc in ["", "-rdc"] {
        let host = symbols(&dir.join(format!("a.host{rdc}.o")));
        let undefined: Vec<&str> = host
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("U "))
            .collect();
        for want in [
            "orion_rt_v1___cudaGetKernel",
            "orion_rt_v1___cudaLaunchKernel",
            "orion_rt_v1_cudaLaunchKernel",
            "orion_rt_v1_cudaLaunchKernelExC",
        ] {
            assert!(
                undefined.contains(&want),
                "{rdc}: {want} not in {undefined:?}"
            );
        }
        for bypass in [
            "__cudaGetKernel",
            "__cudaLaunchKernel",
            "cudaLaunchKernel",
            "cudaLaunchKernelExC",
        ] {
            assert!(!undefined.contains(&bypass), "{rdc}: still calls {bypass}");
        }
        if rdc.is_empty() {
            let ptsz = symbols(&dir.join("a.host-ptsz.o"));
            for want in [
                "orion_rt_v1___cudaLaunchKernel_ptsz",
                "orion_rt_v1_cudaLaunchKernel_ptsz",
                "orion_rt_v1_cudaLaunchKernelExC_ptsz",
            ] {
                assert!(
                    ptsz.contains(&format!(" U {want}\n")),
                    "{want} not in\n{ptsz}"
                );
            }
            assert!(!ptsz.contains(" U __cudaLaunchKernel_ptsz\n"), "{ptsz}");
        }
        let plain = symbols(&dir.join(format!("a.plain{rdc}.o")));
        assert!(plain.contains(" U __cudaLaunchKernel\n"), "{plain}");
        let merged = dir.join(format!("a.glue{rdc}.o"));
        let merged_symbols = symbols(&merged);
        for entry in [
            "orion_launch",
            "orion_rt_v1___cudaLaunchKernel",
            "orion_rt_v1_cudaLaunchKernelExC",
        ] {
            assert!(
                merged_symbols.contains(&format!(" W {entry}\n")),
                "{rdc}: {entry} is not a weak definition in\n{merged_symbols}"
            );
        }
        for kernel in ["_Z4walkPfi", "_Z4walkPfi__orion_v1", "_Z4walkPfi__orion_v2"] {
            assert!(
                merged_symbols.contains(&format!(" T {kernel}\n")),
                "{rdc}: host stub {kernel} missing"
            );
        }
        let readelf = run(Command::new("readelf").args(["-sW"]).arg(&merged)).stdout;
        let readelf = String::from_utf8_lossy(&readelf);
        let orion_launch = readelf
            .lines()
            .find(|l| l.ends_with(" orion_launch"))
            .unwrap();
        assert!(
            orion_launch.contains("WEAK") && orion_launch.contains("HIDDEN"),
            "{orion_launch}"
        );
        // Device side: every variant is an entry of the same cubin with the same resources.
        let cuobjdump = common::toolkit_tool(&nvcc, "cuobjdump");
        let res = run(Command::new(&cuobjdump).arg("-res-usage").arg(&merged)).stdout;
        let res = String::from_utf8_lossy(&res);
        let usage = |name: &str| -> String {
            let mut lines = res.lines();
            lines
                .find(|l| l.trim() == format!("Function {name}:"))
                .and_then(|_| lines.next())
                .unwrap_or_else(|| panic!("{rdc}: no {name} in\n{res}"))
                .trim()
                .to_string()
        };
        let original = usage("_Z4walkPfi");
        assert!(original.starts_with("REG:"), "{original}");
        assert_eq!(usage("_Z4walkPfi__orion_v1"), original);
        assert_eq!(usage("_Z4walkPfi__orion_v2"), original);
    }
}

/// The glue needs nothing from the C++ runtime library (any final link works, C or C++) and
/// compiles without a warning with every host compiler present; its state is zeroed storage.
#[test]
fn glue_object_needs_only_libc_and_cudart() {
    let Some(nvcc) = common::nvcc_or_skip("glue_object_needs_only_libc_and_cudart") else {
        return;
    };
    let dir = objects(&nvcc);
    let nm = symbols(&dir.join("glue.o"));
    for line in nm.lines() {
        if let Some(u) = line.trim_start().strip_prefix("U ") {
            assert!(
                !u.starts_with("_Z") && !u.starts_with("__cxa") && !u.starts_with("__gxx"),
                "C++ runtime symbol needed: {u}"
            );
        }
    }
    for bad in ["_GLOBAL__sub_I", "__cxa_guard", "__cxa_atexit"] {
        assert!(!nm.contains(bad), "{bad} in\n{nm}");
    }
    let state = nm.lines().find(|l| l.contains("g_stateE")).unwrap();
    assert!(
        state.contains(" b "),
        "the glue's state is not in .bss: {state}"
    );
    if common::clang_or_skip("glue_object_needs_only_libc_and_cudart") {
        let scratch = tempfile::tempdir().unwrap();
        compile_glue("clang++", &nvcc, &scratch.path().join("glue.o"));
    }
}

/// A folder with the runtime libraries for `-lcudart`, `-lcudart_static` and `-lcudadevrt`,
/// and for the loader: the PyPI toolkit ships `libcudart.so.N` without the `libcudart.so` link.
fn cudart_dir(nvcc: &Path, scratch: &Path) -> PathBuf {
    let lib = cuda_home(nvcc).join("lib");
    let lib = if lib.join("libcudart_static.a").exists() {
        lib
    } else {
        cuda_home(nvcc).join("lib64")
    };
    let link = scratch.join("cudart");
    std::fs::create_dir_all(&link).unwrap();
    for entry in std::fs::read_dir(&lib).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("libcudart") || name.starts_with("libcudadevrt") {
            std::os::unix::fs::symlink(&path, link.join(&name)).unwrap();
            if name.starts_with("libcudart.so.") && !link.join("libcudart.so").exists() {
                std::os::unix::fs::symlink(&path, link.join("libcudart.so")).unwrap();
            }
        }
    }
    link
}

/// Links `objs` into `exe` with `linker` (nvcc, g++, clang++).
fn link(
    nvcc: &Path,
    linker: &str,
    objs: &[PathBuf],
    rdc: bool,
    cudart: &str,
    lib: &Path,
    exe: &Path,
) {
    if linker == "nvcc" {
        let mut cmd = Command::new(nvcc);
        cmd.args(["-arch=sm_90", "-cudart", cudart])
            .arg(format!("-L{}", lib.display()));
        if rdc {
            cmd.arg("-rdc=true");
        }
        run(cmd.args(objs).arg("-o").arg(exe));
        return;
    }
    let mut all = objs.to_vec();
    if rdc {
        let dlink = exe.with_extension("dlink.o");
        run(Command::new(nvcc)
            .args(["-arch=sm_90", "-dlink"])
            .args(objs)
            .arg("-o")
            .arg(&dlink));
        all.push(dlink);
    }
    let mut cmd = Command::new(linker);
    cmd.args(&all)
        .arg("-o")
        .arg(exe)
        .arg(format!("-L{}", lib.display()));
    if rdc {
        cmd.arg("-lcudadevrt");
    }
    if cudart == "static" {
        cmd.args(["-lcudart_static", "-ldl", "-lpthread", "-lrt"]);
    } else {
        cmd.arg("-lcudart")
            .arg(format!("-Wl,-rpath,{}", lib.display()));
    }
    run(&mut cmd);
}

/// Runs `exe` with `env` under a 20 s limit: (exit code, stdout, stderr). The output goes to
/// files, so a full pipe can never stall it.
fn execute(exe: &Path, env: &[(&str, &str)], lib: &Path) -> (i32, String, String) {
    let out = exe.with_extension("stdout");
    let err = exe.with_extension("stderr");
    let mut cmd = Command::new(exe);
    cmd.env_remove("NVCC_ORION")
        .env_remove("NVCC_ORION_VERBOSE")
        .env("LD_LIBRARY_PATH", lib)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("{} hung", exe.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let code = status
        .code()
        .unwrap_or_else(|| panic!("{} crashed: {status}", exe.display()));
    (
        code,
        std::fs::read_to_string(out).unwrap(),
        std::fs::read_to_string(err).unwrap(),
    )
}

/// Every setup links, and runs here (no GPU) exactly like the plain nvcc build: same exit
/// code, same output including the runtime's error text for each launch path, same stderr;
/// under `NVCC_ORION_VERBOSE` one line more, once.
#[test]
fn glue_links_everywhere_and_runs_like_nvcc() {
    let Some(nvcc) = common::nvcc_or_skip("glue_links_everywhere_and_runs_like_nvcc") else {
        return;
    };
    let dir = objects(&nvcc);
    let scratch = tempfile::tempdir().unwrap();
    let lib = cudart_dir(&nvcc, scratch.path());
    let mut linkers = vec!["nvcc", "g++"];
    if common::clang_or_skip("glue_links_everywhere_and_runs_like_nvcc") {
        linkers.push("clang++");
    }
    let objs = |kind: &str, rdc: &str| -> Vec<PathBuf> {
        ["a", "b"]
            .iter()
            .map(|u| dir.join(format!("{u}.{kind}{rdc}.o")))
            .collect()
    };
    let mut checked = 0;
    for rdc in ["", "-rdc"] {
        let plain = scratch.path().join(format!("plain{rdc}"));
        link(
            &nvcc,
            "nvcc",
            &objs("plain", rdc),
            !rdc.is_empty(),
            "static",
            &lib,
            &plain,
        );
        let expected = execute(&plain, &[], &lib);
        assert!(
            expected.1.contains("stub: ") && expected.1.contains("failures "),
            "{}",
            expected.1
        );
        for linker in &linkers {
            for cudart in ["static", "shared"] {
                let exe = scratch.path().join(format!("glue{rdc}-{linker}-{cudart}"));
                link(
                    &nvcc,
                    linker,
                    &objs("glue", rdc),
                    !rdc.is_empty(),
                    cudart,
                    &lib,
                    &exe,
                );
                // The setup is what it says: cudart shared is a needed library, static is not.
                let dynamic = run(Command::new("readelf").arg("-dW").arg(&exe)).stdout;
                let needs_cudart = String::from_utf8_lossy(&dynamic).contains("libcudart.so");
                assert_eq!(needs_cudart, cudart == "shared", "{}", exe.display());
                for mode in ["adapt", "train"] {
                    let got = execute(
                        &exe,
                        &[
                            ("NVCC_ORION", mode),
                            ("NVCC_ORION_PROFILE_OUT", "/dev/null"),
                        ],
                        &lib,
                    );
                    assert_eq!(got, expected, "{} under {mode}", exe.display());
                }
                checked += 1;
            }
        }
        let exe = scratch.path().join(format!("glue{rdc}-nvcc-static"));
        let (code, stdout, stderr) = execute(&exe, &[("NVCC_ORION_VERBOSE", "1")], &lib);
        assert_eq!((code, &stdout), (expected.0, &expected.1));
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("nvcc-orion: "))
            .collect();
        assert_eq!(said.len(), 1, "{stderr}");
        assert!(said[0].contains("original kernels run"), "{}", said[0]);
        assert_eq!(
            stderr.lines().count() - 1,
            expected.2.lines().count(),
            "{stderr}"
        );
    }
    assert_eq!(checked, 4 * linkers.len());
}

/// The cases glue_fake.cpp checks per scenario; each prints `ok <case>`.
const FAKE_CASES: &[(&str, &[&str])] = &[
    (
        "no_gpu",
        &[
            "no_gpu_get_kernel",
            "no_gpu_stub",
            "no_gpu_no_other_calls",
            "no_gpu_last_error",
        ],
    ),
    (
        "adapt",
        &[
            "adapt_original_first",
            "adapt_locks_fastest_before_slowdown",
            "adapt_same_arguments",
            "adapt_tried_next_step",
            "stub_get_kernel",
            "stub_uses_locked_variant",
            "attributes_get_original",
            "ex_without_attributes_selected",
            "capture_locked_variant",
            "capture_new_key_original",
            "shared_memory_does_not_fit",
            "pending_error_kept",
        ],
    ),
    ("train", &["train_round_robin", "train_locks_original"]),
    ("train_gap", &["gap_round_robin_finds_v3"]),
];

/// The glue object against a simulated GPU: no call but the launch without a driver; adapt
/// measures the original first, steps to v1, stops at the slower v2 and locks v1, with the
/// same argument pointers; the stub path, launch attributes, capture, shared memory that does
/// not fit and a pending user error behave as docs/selector.md says; train round-robins and
/// writes at exit a profile the build's reader accepts, whose winner is v1. With a gap (v1 and
/// v3 in the module, v2 dropped by the build) the profile numbers the variants as the build
/// does, so the build's names match them and the winner is v3.
#[test]
fn glue_paths_on_a_simulated_gpu() {
    let Some(nvcc) = common::nvcc_or_skip("glue_paths_on_a_simulated_gpu") else {
        return;
    };
    let dir = objects(&nvcc);
    let scratch = tempfile::tempdir().unwrap();
    let exe = scratch.path().join("glue_fake");
    run(Command::new("g++")
        .args(["-std=c++11", "-O1", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{}", cuda_home(&nvcc).join("include").display()))
        .arg(format!("-I{}", root().join("runtime").display()))
        .arg(root().join("tests/runtime/glue_fake.cpp"))
        .arg(dir.join("glue.o"))
        .arg("-o")
        .arg(&exe));
    let profile_of = |scenario: &str| scenario_profile(scratch.path(), scenario);
    for (scenario, cases) in FAKE_CASES {
        let mode = if scenario.starts_with("train") {
            "train"
        } else {
            "adapt"
        };
        let out = run(Command::new(&exe)
            .arg(scenario)
            .env("NVCC_ORION", mode)
            .env("NVCC_ORION_PROFILE_OUT", profile_of(scenario))
            .env_remove("NVCC_ORION_VERBOSE"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let passed: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("ok "))
            .collect();
        assert_eq!(&passed, cases, "{scenario}:\n{stdout}");
    }
    let p = Profile::read(&profile_of("train")).unwrap_or_else(|e| panic!("{e}"));
    let rows: Vec<(u32, &str, u64, f64)> = p
        .entries
        .iter()
        .map(|e| (e.variant, e.variant_name.as_str(), e.samples, e.median_us))
        .collect();
    assert_eq!(
        rows,
        [
            (0, "_Z4walkPfi", 10, 100.0),
            (1, "_Z4walkPfi__orion_v1", 10, 80.0),
            (2, "_Z4walkPfi__orion_v2", 10, 90.0),
        ]
    );
    for e in &p.entries {
        assert_eq!(
            (e.kernel.as_str(), e.arch.as_str(), e.device.as_str()),
            ("_Z4walkPfi", "sm_90", "Fake GPU")
        );
        assert_eq!(
            (e.key.grid, e.key.block, e.key.shared),
            ([8, 1, 1], [128, 1, 1], 0)
        );
    }
    let names = ["_Z4walkPfi", "_Z4walkPfi__orion_v1", "_Z4walkPfi__orion_v2"];
    let winner = p.winner("_Z4walkPfi", "sm_90", &names).unwrap().unwrap();
    assert_eq!(winner.variant, 1);

    let gap = Profile::read(&profile_of("train_gap")).unwrap_or_else(|e| panic!("{e}"));
    let rows: Vec<(u32, &str, u64, f64)> = gap
        .entries
        .iter()
        .map(|e| (e.variant, e.variant_name.as_str(), e.samples, e.median_us))
        .collect();
    assert_eq!(
        rows,
        [
            (0, "_Z4walkPfi", 10, 100.0),
            (1, "_Z4walkPfi__orion_v1", 10, 80.0),
            (3, "_Z4walkPfi__orion_v3", 10, 70.0),
        ]
    );
    // The build's names by number (v2 dropped, its slot kept): the winner is the build's 3.
    let names = [
        "_Z4walkPfi",
        "_Z4walkPfi__orion_v1",
        "_Z4walkPfi__orion_v2",
        "_Z4walkPfi__orion_v3",
    ];
    let winner = gap.winner("_Z4walkPfi", "sm_90", &names).unwrap().unwrap();
    assert_eq!(winner.variant, 3);
}

fn scenario_profile(dir: &Path, scenario: &str) -> PathBuf {
    dir.join(format!("{scenario}.json"))
}
