//! The selector's CUDA glue (`runtime/orion_runtime.cpp`, issue 21) on real toolchain
//! output: the test program `tests/runtime/glue_{a,b}.cu` built by plain nvcc, and again by
//! nvcc-orion under `NVCC_ORION=adapt|train`, which renames the host object's references to
//! the runtime's launch entry points and merges the glue object into it
//! (`src/driver/glue.rs`). The objects must redirect every launch path and keep the variants;
//! the programs must link with nvcc, g++ and clang++ (required under CI), with `-cudart static`
//! and `shared`, with and without `-rdc`, compiled with `-c` and linked apart or compiled and
//! linked in one call, and, run here without a GPU, behave exactly like the plain build: the
//! same output, the same runtime errors, the same exit code. Outputs without a host object,
//! units without launches and plain tune builds carry no glue, and a glue that cannot be
//! built leaves the plain object with one warning line.
//! The paths that need a GPU (resolving variants, launching them, timing, the profile) run
//! against a simulated runtime and driver (`tests/runtime/glue_fake.cpp`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use nvcc_orion::profile::{Profile, Variant};

use crate::common;

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

use common::{cuda_home, cudart_dir};

/// The glue compiled like the driver will: the host compiler, position-independent (the object
/// may end up in a shared library), no exceptions or RTTI, every warning an error.
fn compile_glue(cxx: &str, nvcc: &Path, out: &Path) {
    let inc = cuda_home(nvcc).join("include");
    run(Command::new(cxx)
        .args([
            "-std=c++11",
            "-O1",
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

/// nvcc-orion (this build's) standing in for `nvcc` under `NVCC_ORION=mode`, with its caches
/// in `cache` and no other setting of the caller's.
fn orion(nvcc: &Path, mode: &str, cache: &Path) -> Command {
    let mut cmd = common::orion();
    cmd.env("NVCC_ORION_NVCC", nvcc)
        .env("NVCC_ORION", mode)
        .env("NVCC_ORION_CACHE", cache);
    cmd
}

/// Which nvcc-orion built the driver's objects: a new build rebuilds them.
fn driver_identity() -> Vec<u8> {
    let md = std::fs::metadata(env!("CARGO_BIN_EXE_nvcc-orion")).unwrap();
    format!("{} {:?}", md.len(), md.modified().ok()).into_bytes()
}

/// Both units, plain and with the glue, with and without `-rdc`: `<unit>.<plain|host|glue>
/// <-rdc>.o` (`host`: redirected by hand but not merged; `glue`: built by nvcc-orion under
/// adapt), `a.train.o` (train), the programs nvcc-orion compiles and links in one call
/// (`once`: adapt, `-cudart static`; `once-rdc`: adapt, `-rdc`, `-cudart shared`), the
/// runtime libraries for the links (`cudart/`), the glue cache they share (`cache/`), and
/// the glue object compiled by hand (`glue.o`).
fn objects(nvcc: &Path) -> PathBuf {
    let sources: Vec<Vec<u8>> = [
        "tests/runtime/glue_a.cu",
        "tests/runtime/glue_b.cu",
        "runtime/orion_runtime.cpp",
        "runtime/orion_runtime.h",
        "runtime/orion_select.h",
        "tests/runtime/glue_fake.cpp",
    ]
    .iter()
    .map(|p| std::fs::read(root().join(p)).unwrap())
    .collect();
    let mut inputs: Vec<&[u8]> = sources.iter().map(Vec::as_slice).collect();
    let driver = driver_identity();
    inputs.push(&driver);
    // What the folder holds: bump when the build below changes.
    inputs.push(
        b"objects v5: plain, host (renamed), glue (driver), a.train, once, once-rdc, a.host-ptsz",
    );
    common::build_once("runtime-glue", nvcc, &inputs, |dir| {
        compile_glue("g++", nvcc, &dir.join("glue.o"));
        let lib = cudart_dir(nvcc, dir);
        let cache = dir.join("cache");
        let src = |unit: &str| root().join(format!("tests/runtime/glue_{unit}.cu"));
        let mut jobs = Vec::new();
        let mut spawn = |mut cmd: Command| {
            jobs.push((format!("{cmd:?}"), cmd.spawn().expect("spawn")));
            if jobs.len() == 2 {
                for (what, mut child) in jobs.drain(..) {
                    assert!(child.wait().unwrap().success(), "{what}");
                }
            }
        };
        for rdc in ["", "-rdc"] {
            for unit in ["a", "b"] {
                let src = src(unit);
                for kind in ["plain", "host", "glue"] {
                    let mut cmd = if kind == "glue" {
                        orion(nvcc, "adapt", &cache)
                    } else {
                        Command::new(nvcc)
                    };
                    cmd.args(["-arch=sm_90", "-c"]).arg(&src);
                    if !rdc.is_empty() {
                        cmd.arg("-rdc=true");
                    }
                    cmd.arg("-o").arg(dir.join(format!("{unit}.{kind}{rdc}.o")));
                    spawn(cmd);
                }
            }
        }
        // --default-stream per-thread: the runtime's `_ptsz` entry points.
        let mut cmd = Command::new(nvcc);
        cmd.args(["-arch=sm_90", "--default-stream", "per-thread", "-c"])
            .arg(src("a"))
            .arg("-o")
            .arg(dir.join("a.host-ptsz.o"));
        spawn(cmd);
        let mut cmd = orion(nvcc, "train", &cache);
        cmd.args(["-arch=sm_90", "-c"])
            .arg(src("a"))
            .arg("-o")
            .arg(dir.join("a.train.o"));
        spawn(cmd);
        for (exe, extra) in [
            ("once", &[][..]),
            ("once-rdc", &["-rdc=true", "-cudart", "shared"][..]),
        ] {
            let mut cmd = orion(nvcc, "adapt", &cache);
            cmd.arg("-arch=sm_90")
                .args(extra)
                .arg(src("a"))
                .arg(src("b"))
                .arg(format!("-L{}", lib.display()))
                .arg("-o")
                .arg(dir.join(exe));
            spawn(cmd);
        }
        for (what, mut child) in jobs {
            assert!(child.wait().unwrap().success(), "{what}");
        }
        // `host`: the launches renamed by hand, as the driver does, but no glue merged.
        for rdc in ["", "-rdc"] {
            for unit in ["a", "b"] {
                rename_launches(&dir.join(format!("{unit}.host{rdc}.o")));
            }
        }
        rename_launches(&dir.join("a.host-ptsz.o"));
    })
}

/// The runtime's entry points the glue stands in for (src/driver/glue.rs `ENTRY_POINTS`).
const REDIRECTED: [&str; 16] = [
    "cudaLaunchKernel",
    "cudaLaunchKernel_ptsz",
    "cudaLaunchKernelExC",
    "cudaLaunchKernelExC_ptsz",
    "__cudaGetKernel",
    "__cudaLaunchKernel",
    "__cudaLaunchKernel_ptsz",
    "cudaFuncSetAttribute",
    "cudaFuncSetCacheConfig",
    "cudaFuncGetAttributes",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cudaOccupancyAvailableDynamicSMemPerBlock",
    "cudaOccupancyMaxPotentialClusterSize",
    "cudaOccupancyMaxActiveClusters",
    "cudaDeviceReset",
];

/// The runtime's entry points an object references, renamed to the glue's
/// (`orion_rt_v1_<name>`): what the driver does before merging the glue.
fn rename_launches(object: &Path) {
    let mut cmd = Command::new("objcopy");
    for n in REDIRECTED {
        cmd.arg(format!("--redefine-sym={n}=orion_rt_v1_{n}"));
    }
    assert!(
        cmd.arg(object).status().unwrap().success(),
        "objcopy {}",
        object.display()
    );
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
        let host = common::nm_symbols(&dir.join(format!("a.host{rdc}.o")));
        let undefined: Vec<&str> = host
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("U "))
            .collect();
        // glue_a.cu sets attributes, asks about occupancy (the C function, and the runtime's
        // templates through cudaFuncGetAttributes and the flags form) and resets the device.
        let asked = [
            "__cudaGetKernel",
            "__cudaLaunchKernel",
            "cudaLaunchKernel",
            "cudaLaunchKernelExC",
            "cudaFuncSetAttribute",
            "cudaFuncSetCacheConfig",
            "cudaFuncGetAttributes",
            "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
            "cudaDeviceReset",
        ];
        for name in asked {
            let want = format!("orion_rt_v1_{name}");
            assert!(
                undefined.contains(&want.as_str()),
                "{rdc}: {want} not in {undefined:?}"
            );
        }
        for bypass in asked {
            assert!(!undefined.contains(&bypass), "{rdc}: still calls {bypass}");
        }
        // A graph's kernel nodes are the runtime's alone: the node runs the original
        // (docs/selector.md, "Graphs"), so these calls keep their names.
        for graph in [
            "cudaGraphAddKernelNode",
            "cudaGraphKernelNodeSetParams",
            "cudaGraphExecKernelNodeSetParams",
            "cudaGraphLaunch",
        ] {
            assert!(
                undefined.contains(&graph),
                "{rdc}: {graph} not in {undefined:?}"
            );
        }
        if rdc.is_empty() {
            let ptsz = common::nm_symbols(&dir.join("a.host-ptsz.o"));
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
        let plain = common::nm_symbols(&dir.join(format!("a.plain{rdc}.o")));
        assert!(plain.contains(" U __cudaLaunchKernel\n"), "{plain}");
        let merged = dir.join(format!("a.glue{rdc}.o"));
        let merged_symbols = common::nm_symbols(&merged);
        for object in [merged.clone(), dir.join("a.train.o")] {
            let symbols = common::nm_symbols(&object);
            for entry in [
                "orion_rt_v1___cudaGetKernel",
                "orion_rt_v1___cudaLaunchKernel",
                "orion_rt_v1_cudaLaunchKernel",
                "orion_rt_v1_cudaLaunchKernelExC",
            ] {
                assert!(
                    symbols.contains(&format!(" W {entry}\n")),
                    "{}: {entry} is not a weak definition in\n{symbols}",
                    object.display()
                );
            }
            // The redirected launches are all the glue's: none reaches the runtime's launch
            // functions but through it (only the glue itself calls them).
            assert!(!symbols.contains(" U orion_rt_v1_"), "{symbols}");
        }
        // One glue object per mode (ORION_RT_DEFAULT_MODE differs), both in the cache.
        let glue_objects: Vec<Vec<u8>> = std::fs::read_dir(dir.join("cache/runtime"))
            .unwrap()
            .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
            .map(|f| f.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "o"))
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        assert!(
            glue_objects.len() >= 2,
            "{} glue objects",
            glue_objects.len()
        );
        assert_ne!(glue_objects[0], glue_objects[1]);
        for kernel in ["_Z4walkPfi", "_Z4walkPfi__orion_v1", "_Z4walkPfi__orion_v2"] {
            assert!(
                merged_symbols.contains(&format!(" T {kernel}\n")),
                "{rdc}: host stub {kernel} missing"
            );
        }
        let readelf = run(Command::new("readelf").args(["-sW"]).arg(&merged)).stdout;
        let readelf = String::from_utf8_lossy(&readelf);
        let entry = readelf
            .lines()
            .find(|l| l.ends_with(" orion_rt_v1_cudaLaunchKernel"))
            .unwrap();
        assert!(
            entry.contains("WEAK") && entry.contains("HIDDEN"),
            "{entry}"
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
    let nm = common::nm_symbols(&dir.join("glue.o"));
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
    // Timings are polled on the user's own stream: the glue never waits on the device, a
    // context or a stream (cudaEventSynchronize, at exit for train's profile, is the one wait).
    let undefined: Vec<&str> = nm
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("U "))
        .collect();
    assert!(undefined.contains(&"cudaEventQuery"), "{undefined:?}");
    for wait in [
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cuCtxSynchronize",
    ] {
        assert!(!undefined.contains(&wait), "{wait} in {undefined:?}");
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
    let mut cmd = common::command(exe);
    cmd.env("LD_LIBRARY_PATH", lib)
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
    let lib = dir.join("cudart");
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
        // nvcc-orion compiling and linking in one call (replayed under adapt/train only): the
        // glue is in the program, merged into the temporary objects before nvlink and the link.
        let once = dir.join(if rdc.is_empty() { "once" } else { "once-rdc" });
        assert!(
            common::nm_symbols(&once).contains(" orion_rt_v1_cudaLaunchKernel\n"),
            "no glue in {}",
            once.display()
        );
        assert_eq!(execute(&once, &[], &lib), expected, "{}", once.display());
        if rdc.is_empty() && linkers.contains(&"clang++") {
            // The glue built by clang++ (`-ccbin clang++`: a glue object per host compiler),
            // linked by clang++.
            let obj = scratch.path().join("a.clang.o");
            run(orion(&nvcc, "adapt", &dir.join("cache"))
                .args(["-arch=sm_90", "-ccbin", "clang++", "-c"])
                .arg(root().join("tests/runtime/glue_a.cu"))
                .arg("-o")
                .arg(&obj));
            assert!(common::nm_symbols(&obj).contains(" W orion_rt_v1_cudaLaunchKernel\n"));
            let exe = scratch.path().join("clang-built");
            let objs = [obj, dir.join("b.glue.o")];
            link(&nvcc, "clang++", &objs, false, "shared", &lib, &exe);
            assert_eq!(execute(&exe, &[], &lib), expected, "{}", exe.display());
        }
        if rdc.is_empty() {
            // Train's object, linked by g++ with the plain b.
            let exe = scratch.path().join("train-g++");
            let objs = [dir.join("a.train.o"), dir.join("b.plain.o")];
            link(&nvcc, "g++", &objs, false, "static", &lib, &exe);
            let got = execute(&exe, &[("NVCC_ORION_PROFILE_OUT", "/dev/null")], &lib);
            assert_eq!(got, expected, "{}", exe.display());
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
            "user_orion_launch_untouched",
            "stub_get_kernel",
            "stub_uses_locked_variant",
            "ptsz_null_stream_is_per_thread",
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
    (
        "old_driver",
        &["old_driver_original_only", "old_driver_no_error_left"],
    ),
    (
        "shared_raise",
        &[
            "raise_variant_limit_once",
            "raise_selects_fitting_variant",
            "raise_overflow_excluded",
            "raise_no_driver_query_after",
        ],
    ),
    ("train_occupancy", OCCUPANCY_CASES),
    ("train_occupancy_flags", OCCUPANCY_CASES),
    ("train_func_attributes", OCCUPANCY_CASES),
    ("occupancy_late", &["occupancy_late_original"]),
    (
        "twins",
        &[
            "twin_measured_apart",
            "twin_keeps_its_original",
            "walk_keeps_its_variant",
        ],
    ),
    ("train_twins", &["twins_trained"]),
    (
        "reset",
        &[
            "reset_after_lock",
            "reset_no_stale_handle",
            "reset_variants_from_new_context",
            "reset_new_key_explores",
        ],
    ),
    ("train_reset", &["train_reset_new_context"]),
    (
        "attributes",
        &[
            "set_before_first_launch",
            "carveout_and_cache_carried",
            "cluster_width_carried",
            "uncarried_runs_original",
        ],
    ),
    (
        "devices",
        &[
            "devices_keyed_apart",
            "device_1_keeps_its_original",
            "attribute_reaches_its_device_only",
            "reset_leaves_other_device_alone",
            "reset_device_resolves_anew",
        ],
    ),
    (
        "graphs",
        &[
            "graph_captured_replays_the_choice",
            "graph_node_runs_the_original",
            "graph_exec_set_params_original",
            "graph_node_set_params_original",
            "graph_leaves_the_selector_alone",
        ],
    ),
    ("train_devices", &["devices_trained"]),
    (
        "train_threads",
        &["threads_all_launched", "threads_never_fewer_blocks"],
    ),
];

/// A program that asked about a kernel's occupancy (or attributes) before launching it.
const OCCUPANCY_CASES: &[&str] = &[
    "occupancy_answers_for_the_original",
    "occupancy_never_fewer_blocks",
    "occupancy_keeps_a_variant_with_as_many_blocks",
    "cooperative_original",
];

/// The glue object against a simulated GPU: no call but the launch without a driver; adapt
/// measures the original first, steps to v1, stops at the slower v2 and locks v1, with the
/// same argument pointers; the stub path, launch attributes, capture, shared memory that does
/// not fit and a pending user error behave as docs/selector.md says; train round-robins and
/// writes at exit a profile the build's reader accepts, with each variant's registers and
/// local bytes as the driver reports them, whose winner is v1; a build whose v1 has other
/// registers refuses it. With a gap (v1 and v3 in the module, v2 dropped by the build) the
/// profile numbers the variants as the build does, so the build's names match them and the
/// winner is v3. When the user raises the original's dynamic-shared limit after it was
/// resolved, the variants that fit get theirs raised once and are selected above 48 KiB.
/// Issue 45: the program's own `orion_launch` is never called; a kernel whose occupancy or
/// attributes the program asked about runs only variants with at least the original's blocks
/// per SM (asked before the first launch or after the lock), cooperative launches the
/// original; two `static` kernels of one name in two modules are measured and profiled
/// apart; after cudaDeviceReset the variants are resolved in the new context (none of the
/// old handles is used, the profile names the kernel); the carveout, cache configuration and
/// cluster shape set on the original reach every variant that runs, and one the driver
/// refuses on them leaves the original alone. Two devices of different architectures
/// resolve and key apart, an attribute reaches the variants of its own device, a reset of one
/// leaves the other alone, and the profile names each device's arch; a variant launched on the
/// per-thread default stream gets `CU_STREAM_PER_THREAD`. Four host threads training a kernel
/// asked about from its first launch on all launch, and never run the variant with fewer blocks.
/// Graphs: a captured graph replays what the glue launched at capture (a locked key's
/// variant, a new key's original), with the captured arguments; a graph built node by node
/// runs the original (the static winner) with the arguments last set on the node or on the
/// instantiated graph, with the right results, and the glue is not involved.
#[test]
fn glue_paths_on_a_simulated_gpu() {
    let Some(nvcc) = common::nvcc_or_skip("glue_paths_on_a_simulated_gpu") else {
        return;
    };
    let dir = objects(&nvcc);
    let scratch = tempfile::tempdir().unwrap();
    let exe = scratch.path().join("glue_fake");
    fake_program(&nvcc, &dir, &exe);
    let profile_of = |scenario: &str| scenario_profile(scratch.path(), scenario);
    for (scenario, cases) in FAKE_CASES {
        let mode = if scenario.starts_with("train") {
            "train"
        } else {
            "adapt"
        };
        let out = run(common::command(&exe)
            .arg(scenario)
            .env("NVCC_ORION", mode)
            .env("NVCC_ORION_PROFILE_OUT", profile_of(scenario)));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let passed: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("ok "))
            .collect();
        assert_eq!(&passed, cases, "{scenario}:\n{stdout}");
    }
    // With NVCC_ORION_VERBOSE, an old driver is said once, on stderr.
    let out = run(common::command(&exe)
        .arg("old_driver")
        .env("NVCC_ORION", "adapt")
        .env("NVCC_ORION_VERBOSE", "1"));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "nvcc-orion: selector off: the driver lacks cuFuncGetName/cuFuncGetModule (driver 12.3 \
         or newer); original kernels run\n"
    );
    // The benchmark's scenario (scripts/bench-selector.sh) measures a locked key.
    let out = run(common::command(&exe)
        .args(["bench", "1000"])
        .env("NVCC_ORION", "adapt"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = stdout
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["locked", "direct_ns", "glue_locked_ns", "glue_untuned_ns"],
        "{stdout}"
    );
    assert!(stdout.starts_with("locked v1\n"), "{stdout}");
    // Per entry: variant, its name, samples and median.
    fn rows(p: &Profile) -> Vec<(u32, &str, u64, f64)> {
        p.entries
            .iter()
            .map(|e| (e.variant, e.variant_name.as_str(), e.samples, e.median_us))
            .collect()
    }
    let p = Profile::read(&profile_of("train")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        rows(&p),
        [
            (0, "_Z4walkPfi", 10, 100.0),
            (1, "_Z4walkPfi__orion_v1", 10, 80.0),
            (2, "_Z4walkPfi__orion_v2", 10, 90.0),
        ]
    );
    // The simulated driver's CU_FUNC_ATTRIBUTE_NUM_REGS and _LOCAL_SIZE_BYTES per variant.
    let resources: Vec<(Option<u32>, Option<u32>)> = p
        .entries
        .iter()
        .map(|e| (e.registers, e.local_bytes))
        .collect();
    assert_eq!(
        resources,
        [
            (Some(32), Some(224)),
            (Some(40), Some(96)),
            (Some(64), Some(0))
        ]
    );
    let build = |v1_registers: u32| {
        [
            ("_Z4walkPfi", 32),
            ("_Z4walkPfi__orion_v1", v1_registers),
            ("_Z4walkPfi__orion_v2", 64),
        ]
        .map(|(name, registers)| Variant {
            name,
            registers,
            frame_bytes: 0,
        })
    };
    let winner = p
        .winner("_Z4walkPfi", "sm_90", &build(40))
        .unwrap()
        .unwrap();
    assert_eq!(winner.variant, 1);
    let refused = p
        .winner("_Z4walkPfi", "sm_90", &build(48))
        .unwrap_err()
        .to_string();
    assert!(
        refused.ends_with(
            "train.json: entry 1 (_Z4walkPfi, sm_90): variant 1 (`_Z4walkPfi__orion_v1`) ran \
             with 40 registers but has 48 in this build"
        ),
        "{refused}"
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
    assert_eq!(
        rows(&gap),
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
    check_twins_and_reset_profiles(scratch.path());
}

/// The `kernel_id` of an entry's key (the selector's id: what keeps two kernels apart).
fn kernel_id(e: &nvcc_orion::profile::Entry) -> u64 {
    serde_json::to_value(&e.key).unwrap()["kernel_id"]
        .as_u64()
        .unwrap()
}

/// Two `static` kernels of the same mangled name in two files (two modules): trained apart,
/// under two kernel ids, the first the name's FNV-1a hash; and a training run across a device
/// reset names its kernel, not what the destroyed context left.
fn check_twins_and_reset_profiles(scratch: &Path) {
    // What the runtime wrote: the twins' entries apart, under two ids.
    let path = scenario_profile(scratch, "train_twins");
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let written = raw["entries"].as_array().unwrap();
    let id_of = |e: &serde_json::Value| e["key"]["kernel_id"].as_u64().unwrap();
    let mut ids: Vec<u64> = written.iter().map(id_of).collect();
    ids.dedup();
    assert_eq!(ids.len(), 2, "{raw}");
    assert!(ids.contains(&0xE6FE_FD3A), "{ids:?}");
    for id in &ids {
        let variants: Vec<u64> = written
            .iter()
            .filter(|e| id_of(e) == *id)
            .map(|e| e["variant"].as_u64().unwrap())
            .collect();
        assert_eq!(variants, [0, 1, 2], "{raw}");
    }
    assert!(written.iter().all(|e| e["kernel"] == "_Z4walkPfi"), "{raw}");
    // What a guided build reads: a build finds entries by name and cannot tell which twin is
    // its own, so the name is left out, with one line.
    let twins = Profile::read(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(twins.entries.is_empty(), "{}", twins.to_json());
    let why: Vec<String> = twins.unsound().map(|e| e.to_string()).collect();
    assert!(
        why.iter()
            .any(|w| w.contains("two kernels of this name were measured")),
        "{why:?}"
    );
    let reset =
        Profile::read(&scenario_profile(scratch, "train_reset")).unwrap_or_else(|e| panic!("{e}"));
    // Two devices of different architectures: each entry names its own, one kernel id.
    let devices = Profile::read(&scenario_profile(scratch, "train_devices"))
        .unwrap_or_else(|e| panic!("{e}"));
    // Each device's entries name its own build's variants: the sm_80 device has other
    // registers and no v2 (the runtime once answered every device with the first one's).
    // (device, arch, device name, kernel id, variant, registers)
    type Seen<'a> = (i32, &'a str, &'a str, u64, u32, Option<u32>);
    let seen: Vec<Seen> = devices
        .entries
        .iter()
        .map(|e| {
            (
                e.key.device,
                e.arch.as_str(),
                e.device.as_str(),
                kernel_id(e),
                e.variant,
                e.registers,
            )
        })
        .collect();
    let id = 0xE6FE_FD3A;
    let want = vec![
        (0, "sm_90", "Fake GPU", id, 0, Some(32)),
        (0, "sm_90", "Fake GPU", id, 1, Some(40)),
        (0, "sm_90", "Fake GPU", id, 2, Some(64)),
        (1, "sm_80", "Fake GPU B", id, 0, Some(30)),
        (1, "sm_80", "Fake GPU B", id, 1, Some(48)),
    ];
    assert_eq!(seen, want, "{}", devices.to_json());
    let grids: Vec<u32> = reset.entries.iter().map(|e| e.key.grid[0]).collect();
    assert_eq!(grids, [8, 8, 8, 16, 16, 16], "{}", reset.to_json());
    for e in &reset.entries {
        assert_eq!(e.kernel, "_Z4walkPfi", "{}", reset.to_json());
        assert!(
            e.variant_name.starts_with("_Z4walkPfi"),
            "{}",
            reset.to_json()
        );
    }
}

fn scenario_profile(dir: &Path, scenario: &str) -> PathBuf {
    dir.join(format!("{scenario}.json"))
}

/// The simulated program built against the glue object compiled by hand.
fn fake_program(nvcc: &Path, dir: &Path, exe: &Path) {
    run(Command::new("g++")
        .args(["-std=c++11", "-O1", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{}", cuda_home(nvcc).join("include").display()))
        .arg(format!("-I{}", root().join("runtime").display()))
        .arg(root().join("tests/runtime/glue_fake.cpp"))
        .arg(dir.join("glue.o"))
        .arg("-o")
        .arg(exe));
}

/// The `grid[0]`s a profile holds, sorted, one per entry.
fn profile_grids(file: &Path) -> Vec<u32> {
    let p = Profile::read(file).unwrap_or_else(|e| panic!("{e}"));
    let mut grids: Vec<u32> = p.entries.iter().map(|e| e.key.grid[0]).collect();
    grids.sort_unstable();
    grids
}

/// Train's profile at exit (issue 45): a forked child writes nothing (its parent's
/// measurements are its parent's to write); two processes sharing the path (MPI ranks) both
/// keep their entries, while an earlier run's file is replaced; `%p` gives each process its own
/// file; no temporary is left behind; and a profile that cannot be written says so in one line
/// on stderr, verbose or not.
#[test]
fn train_profile_is_written_safely() {
    let Some(nvcc) = common::nvcc_or_skip("train_profile_is_written_safely") else {
        return;
    };
    let dir = objects(&nvcc);
    let scratch = tempfile::tempdir().unwrap();
    let exe = scratch.path().join("glue_fake");
    fake_program(&nvcc, &dir, &exe);
    let out = scratch.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let train = |args: &[&str], profile: &Path| {
        let mut cmd = common::command(&exe);
        cmd.args(args)
            .env("NVCC_ORION", "train")
            .env("NVCC_ORION_PROFILE_OUT", profile);
        cmd
    };
    // fork: the scenario checks the child's exit wrote nothing; the parent's file has its
    // own launches (grid 8), not the child's (grid 32).
    let forked = out.join("fork.json");
    let o = run(&mut train(&["train_fork"], &forked));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "ok fork_child_writes_nothing\n"
    );
    assert_eq!(profile_grids(&forked), [8, 8, 8]);
    // Two ranks: rank 2 trains, then waits while rank 1 trains and writes; rank 2 writes last.
    let shared = out.join("ranks.json");
    std::fs::write(&shared, "an earlier run's file").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mut waiting = train(&["train_rank", "2", "wait"], &shared)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(waiting.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ok rank_trained\n");
    std::thread::sleep(Duration::from_millis(20));
    run(&mut train(&["train_rank", "1"], &shared));
    assert_eq!(profile_grids(&shared), [1, 1, 1]);
    drop(waiting.stdin.take());
    assert!(waiting.wait().unwrap().success());
    assert_eq!(profile_grids(&shared), [1, 1, 1, 2, 2, 2]);
    // A later run replaces the file.
    std::thread::sleep(Duration::from_millis(20));
    run(&mut train(&["train_rank", "3"], &shared));
    assert_eq!(profile_grids(&shared), [3, 3, 3]);
    // %p: one file per process.
    let child = train(&["train_rank", "4"], &out.join("rank-%p.json"))
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(
        profile_grids(&out.join(format!("rank-{pid}.json"))),
        [4, 4, 4]
    );
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "fork.json",
            format!("rank-{pid}.json").as_str(),
            "ranks.json"
        ]
    );
    // Cannot be written: one line on stderr, without NVCC_ORION_VERBOSE.
    let missing = out.join("no such folder").join("p.json");
    let o = run(&mut train(&["train_rank", "1"], &missing));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        stderr,
        format!(
            "nvcc-orion: warning: cannot write the train profile {} (No such file or directory)\n",
            missing.display()
        )
    );
}

/// Every symbol the glue object defines for the linker carries its prefix `orion_rt_v1_`
/// (issue 45), one per runtime function it stands in for: a program's own `orion_launch`, or
/// any other name, stays the program's. A shared library that defines and exports
/// `orion_launch` beside the glue still exports it, and a program that defines one launches
/// exactly like the plain build.
#[test]
fn glue_takes_no_name_of_the_programs() {
    let Some(nvcc) = common::nvcc_or_skip("glue_takes_no_name_of_the_programs") else {
        return;
    };
    let dir = objects(&nvcc);
    let nm = run(Command::new("nm")
        .args(["-g", "--defined-only"])
        .arg(dir.join("glue.o")))
    .stdout;
    let nm = String::from_utf8_lossy(&nm);
    let mut defined: Vec<&str> = nm
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    defined.sort_unstable();
    let mut want: Vec<String> = REDIRECTED
        .iter()
        .map(|n| format!("orion_rt_v1_{n}"))
        .collect();
    want.sort_unstable();
    assert_eq!(defined, want, "{nm}");
    let scratch = tempfile::tempdir().unwrap();
    let user = scratch.path().join("user.cpp");
    std::fs::write(
        &user,
        "// The program's own function of that name.\nextern \"C\" int orion_launch(int x) { return x + 1; }\n",
    )
    .unwrap();
    let so = scratch.path().join("libuser.so");
    run(Command::new("g++")
        .args(["-shared", "-fPIC"])
        .arg(&user)
        .arg(dir.join("glue.o"))
        .arg("-o")
        .arg(&so));
    let exported = run(Command::new("nm").args(["-D", "--defined-only"]).arg(&so)).stdout;
    let exported = String::from_utf8_lossy(&exported);
    assert!(
        exported.lines().any(|l| l.ends_with(" T orion_launch")),
        "orion_launch not exported:\n{exported}"
    );
    assert!(!exported.contains("orion_rt_v1_"), "{exported}");
    let user_o = scratch.path().join("user.o");
    run(Command::new("g++")
        .args(["-c", "-fPIC"])
        .arg(&user)
        .arg("-o")
        .arg(&user_o));
    let lib = dir.join("cudart");
    let objs = |kind: &str| {
        vec![
            dir.join(format!("a.{kind}.o")),
            dir.join(format!("b.{kind}.o")),
            user_o.clone(),
        ]
    };
    let plain = scratch.path().join("plain");
    link(&nvcc, "nvcc", &objs("plain"), false, "static", &lib, &plain);
    let glued = scratch.path().join("glued");
    link(&nvcc, "g++", &objs("glue"), false, "static", &lib, &glued);
    let expected = execute(&plain, &[], &lib);
    assert_eq!(execute(&glued, &[("NVCC_ORION", "adapt")], &lib), expected);
}

/// Whether `file` carries any of the glue: its entry points or the renamed references.
fn has_glue(file: &Path) -> bool {
    let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    bytes.windows(12).any(|w| w == b"orion_rt_v1_")
}

/// Under adapt, outputs without a host object (`-E`, `-ptx`, `-cubin`, `-fatbin`, `--cuda`),
/// a unit that launches no kernel, and a plain tune build carry no glue; only the
/// `.cudafe1.cpp` host compilation's object is (nvcc-orion's `--dryrun` shows nvcc's own
/// steps). `-lib` is replayed like `-c`, so its archive holds that object, glue and all.
#[test]
fn driver_leaves_other_outputs_alone() {
    let Some(nvcc) = common::nvcc_or_skip("driver_leaves_other_outputs_alone") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    let a = root().join("tests/runtime/glue_a.cu");
    let host_only = scratch.path().join("host_only.cu");
    std::fs::write(
        &host_only,
        "// no kernel, no launch\nint twice(int x) { return 2 * x; }\n",
    )
    .unwrap();
    let cases: &[(&str, &[&str], &Path, &str)] = &[
        ("adapt", &["-E"], &a, "a.ii"),
        ("adapt", &["-ptx"], &a, "a.ptx"),
        ("adapt", &["-cubin"], &a, "a.cubin"),
        ("adapt", &["-fatbin"], &a, "a.fatbin"),
        ("adapt", &["--cuda"], &a, "a.cu.cpp.ii"),
        ("tune", &["-c"], &a, "a.tune.o"),
        ("adapt", &["-c"], &host_only, "host_only.o"),
    ];
    for (mode, flags, src, out) in cases {
        let out = scratch.path().join(out);
        let o = run(orion(&nvcc, mode, &cache)
            .arg("-arch=sm_90")
            .args(*flags)
            .arg(src)
            .arg("-o")
            .arg(&out));
        assert!(
            o.stderr.is_empty(),
            "{flags:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            !has_glue(&out),
            "{mode} {flags:?}: glue in {}",
            out.display()
        );
    }
    let lib = scratch.path().join("liba.a");
    let o = run(orion(&nvcc, "adapt", &cache)
        .args(["-arch=sm_90", "-lib"])
        .arg(&a)
        .arg("-o")
        .arg(&lib));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(has_glue(&lib), "adapt -lib: no glue in {}", lib.display());
    // A unit without launches gets no glue, and says so in verbose mode.
    let o = run(orion(&nvcc, "adapt", &cache)
        .env("NVCC_ORION_VERBOSE", "1")
        .args(["-arch=sm_90", "-c"])
        .arg(&host_only)
        .arg("-o")
        .arg(scratch.path().join("v.o")));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("no kernel launch in "), "{stderr}");
    // nvcc-orion's own --dryrun shows the real steps: the renaming happens at replay only.
    let o = run(orion(&nvcc, "adapt", &cache)
        .args(["-arch=sm_90", "-c", "--dryrun"])
        .arg(&a));
    let listing = String::from_utf8_lossy(&o.stderr);
    assert!(
        !listing.contains("objcopy") && !listing.contains("orion_rt_v1_"),
        "{listing}"
    );
}

/// A glue that cannot be built (a host compiler that fails on it, a cache that cannot be
/// written) leaves the plain object, with exactly one warning line and exit code 0; a user
/// error still comes from nvcc itself.
#[test]
fn driver_falls_back_to_the_plain_object() {
    let Some(nvcc) = common::nvcc_or_skip("driver_falls_back_to_the_plain_object") else {
        return;
    };
    let dir = objects(&nvcc);
    let scratch = tempfile::tempdir().unwrap();
    let bin = scratch.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let gxx = which::which("g++").unwrap();
    // Compiles everything but the glue.
    let wrapper = bin.join("g++");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *orion_runtime.cpp) echo 'cannot compile this' >&2; exit 1;; esac; done\nexec {} \"$@\"\n",
            gxx.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let not_a_dir = scratch.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let b = root().join("tests/runtime/glue_b.cu");
    let names = |file: &Path| -> Vec<String> {
        common::nm_symbols(file)
            .lines()
            .map(|l| l.get(17..).unwrap_or(l).to_string())
            .collect()
    };
    let plain = names(&dir.join("b.plain.o"));
    for (what, cache, ccbin) in [
        (
            "cannot compile this",
            scratch.path().join("cache"),
            Some(&wrapper),
        ),
        ("Not a directory", not_a_dir.clone(), None),
    ] {
        let out = scratch.path().join("b.o");
        let mut cmd = orion(&nvcc, "adapt", &cache);
        if let Some(cc) = ccbin {
            cmd.arg("-ccbin").arg(cc);
        }
        let o = run(cmd.args(["-arch=sm_90", "-c"]).arg(&b).arg("-o").arg(&out));
        let stderr = String::from_utf8_lossy(&o.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(
            lines[0].starts_with("nvcc-orion: warning: no launch-time selector in ")
                && lines[0].contains(what)
                && lines[0].ends_with("; the plain object stands"),
            "{stderr}"
        );
        assert!(!has_glue(&out));
        assert_eq!(names(&out), plain, "{what}");
    }
    // The user's own error: nvcc's message and exit code, no word of the glue.
    let bad = scratch.path().join("bad.cu");
    std::fs::write(&bad, "__global__ void k() { undeclared(); }\n").unwrap();
    let ours = orion(&nvcc, "adapt", &scratch.path().join("cache"))
        .args(["-arch=sm_90", "-c"])
        .arg(&bad)
        .current_dir(scratch.path())
        .output()
        .unwrap();
    let theirs = Command::new(&nvcc)
        .args(["-arch=sm_90", "-c"])
        .arg(&bad)
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert_eq!(ours.status.code(), theirs.status.code());
    assert_eq!(ours.stderr, theirs.stderr);
}

/// A host compiler at `dir/cc/gcc` for [`the_glue_leaves_the_front_ends_their_slot`]: gcc,
/// except that the host compilation of the `.cudafe1.cpp` first marks that it started, and
/// the glue's compile (`orion_runtime.cpp`) first waits, at most 20 s, for that mark and
/// appends to `dir/order` whether it saw it ("beside") or not ("before"). None: no gcc on PATH.
fn gcc_marking_the_host_compile(dir: &Path) -> Option<PathBuf> {
    let d = dir.display();
    common::gcc_with_cases(
        dir,
        &format!(
            "*\" -E \"*) ;;\n\
             *.cudafe1.cpp\" \"*) : > \"{d}/host-started\" ;;\n\
             *orion_runtime.cpp\" \"*)\n\
             n=0\n\
             while [ ! -e \"{d}/host-started\" ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done\n\
             if [ -e \"{d}/host-started\" ]; then echo beside; else echo before; fi >> \"{d}/order\" ;;"
        ),
    )
}

/// Issue 47: under adapt, a two-architecture build with one spare jobserver token (two cores)
/// gives the token to sm_90's front end, as a default build does, and compiles the selector's
/// glue beside the host compilation at the end, where the token is free again. Before, the
/// glue took the token at the plan's first step, so both front ends ran one after the other
/// on the driver's slot while the glue's compile (about a second of CPU) used the other core
/// for a fraction of their time. The object is the one a build without a spare token makes.
#[test]
fn the_glue_leaves_the_front_ends_their_slot() {
    let Some(nvcc) = common::nvcc_or_skip("the_glue_leaves_the_front_ends_their_slot") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let Some(cc) = gcc_marking_the_host_compile(dir.path()) else {
        common::skip(
            "the_glue_leaves_the_front_ends_their_slot",
            "no gcc on PATH",
        );
        return;
    };
    std::fs::write(
        dir.path().join("k.cu"),
        "__global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }\n\
         void launch(float* p) { k<<<1, 32>>>(p); }\n",
    )
    .unwrap();
    let build = |tokens: usize| {
        let client = jobserver::Client::new(tokens).expect("a jobserver");
        let mut cmd = orion(&nvcc, "adapt", Path::new("off"));
        cmd.current_dir(dir.path())
            .args(["-c", "-O3", "-ccbin"])
            .arg(&cc)
            .args(["-gencode", "arch=compute_80,code=sm_80"])
            .args(["-gencode", "arch=compute_90,code=sm_90"])
            .args(["k.cu", "-o", "k.o"])
            .env("NVCC_ORION_VERBOSE", "1");
        client.configure_make(&mut cmd);
        let o = run(&mut cmd);
        assert_eq!(
            client.available().unwrap(),
            tokens,
            "the jobserver's tokens after the build"
        );
        let said = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            said.contains("launch-time selector (adapt) merged into k.o"),
            "{said}"
        );
        let object = std::fs::read(dir.path().join("k.o")).unwrap();
        (said, common::mask_tmpxft(&object))
    };
    let (said, side) = build(1);
    assert!(
        said.contains("nvcc-orion: sm_90: front end run beside the steps before it"),
        "the glue took the front end's slot: {said}"
    );
    let order = std::fs::read_to_string(dir.path().join("order")).unwrap();
    assert_eq!(
        order, "beside\n",
        "the glue was compiled before the host compilation began"
    );
    let (_, serial) = build(0);
    assert!(side == serial, "the objects differ");
}

/// Issue 47: the selector's glue is compiled at `-O1`. Without a cache it is compiled for
/// every file, at the end beside the host compilation, where g++ `-O2` (1.1 s of CPU) outlasted
/// the host compilation by about 0.4 s on two cores; `-O1` takes 0.7 s and costs its launch
/// path about 3 ns per launch (bench/results/build.md). A host compiler that records the
/// glue's command line shows the level it ran at, once per build; the glue is merged.
#[test]
fn the_glue_is_compiled_at_o1() {
    let Some(nvcc) = common::nvcc_or_skip("the_glue_is_compiled_at_o1") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let Some(cc) = common::gcc_with_cases(
        dir.path(),
        &format!("*orion_runtime.cpp\" \"*) echo \"$*\" >> \"{d}/glue-line\" ;;"),
    ) else {
        common::skip("the_glue_is_compiled_at_o1", "no gcc on PATH");
        return;
    };
    std::fs::write(
        dir.path().join("k.cu"),
        "__global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }\n\
         void launch(float* p) { k<<<1, 32>>>(p); }\n",
    )
    .unwrap();
    let mut cmd = orion(&nvcc, "adapt", Path::new("off"));
    cmd.current_dir(dir.path())
        .args(["-c", "-O3", "-ccbin"])
        .arg(&cc)
        .args(["-arch=sm_80", "k.cu", "-o", "k.o"])
        .env("NVCC_ORION_VERBOSE", "1");
    let said = String::from_utf8_lossy(&run(&mut cmd).stderr).into_owned();
    assert!(
        said.contains("launch-time selector (adapt) merged into k.o"),
        "{said}"
    );
    let lines = std::fs::read_to_string(dir.path().join("glue-line")).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 1, "the glue compiled once: {lines:?}");
    let args: Vec<&str> = lines[0].split_whitespace().collect();
    assert!(
        args.contains(&"-O1") && !args.iter().any(|a| a.starts_with("-O") && *a != "-O1"),
        "the glue's compile: {}",
        lines[0]
    );
}
