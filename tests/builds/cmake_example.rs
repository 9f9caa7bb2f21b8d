//! End-to-end: configure and build `examples/cmake` with nvcc-orion as `CMAKE_CUDA_COMPILER`,
//! once with `NVCC_ORION=off` (pure pass-through) and once in the default mode.
//!
//! Needs a CUDA 13.5 toolkit, cmake and ninja (`eval "$(scripts/setup.sh)"`). Without them the
//! test prints a skip line and passes, unless `CI` is set, in which case it fails.

use crate::common;

use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ORION: &str = env!("CARGO_BIN_EXE_nvcc-orion");

struct Tools {
    nvcc: PathBuf,
    cmake: PathBuf,
    ninja: PathBuf,
}

fn canon(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A real nvcc: `NVCC_ORION_NVCC`, else `$CUDA_HOME/bin/nvcc`, else `nvcc` on PATH, never
/// nvcc-orion itself or one of the repository's shims (that would make it call itself).
fn find_nvcc() -> Option<PathBuf> {
    let is_real = |p: &Path| {
        let c = canon(p);
        let shims = canon(&Path::new(env!("CARGO_MANIFEST_DIR")).join("shims"));
        p.is_file() && c != canon(Path::new(ORION)) && !c.starts_with(&shims)
    };
    if let Some(p) = env::var_os("NVCC_ORION_NVCC").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| is_real(p));
    }
    if let Some(home) = env::var_os("CUDA_HOME").filter(|v| !v.is_empty()) {
        let p = Path::new(&home).join("bin").join("nvcc");
        if is_real(&p) {
            return Some(p);
        }
    }
    which::which_all("nvcc").ok()?.find(|p| is_real(p))
}

fn tools_or_skip(test: &str) -> Option<Tools> {
    let nvcc = find_nvcc();
    let cmake = which::which("cmake").ok();
    let ninja = which::which("ninja").ok();
    match (nvcc, cmake, ninja) {
        (Some(nvcc), Some(cmake), Some(ninja)) => Some(Tools { nvcc, cmake, ninja }),
        (nvcc, cmake, ninja) => {
            let missing: Vec<&str> = [
                ("nvcc", nvcc.is_none()),
                ("cmake", cmake.is_none()),
                ("ninja", ninja.is_none()),
            ]
            .iter()
            .filter(|(_, m)| *m)
            .map(|(n, _)| *n)
            .collect();
            common::skip(
                test,
                &format!(
                    "{} not found (run `eval \"$(scripts/setup.sh)\"`)",
                    missing.join(", ")
                ),
            );
            None
        }
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    let log = text(&out);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{cmd:?}\n{log}",
        out.status
    );
    log
}

/// `mode`: value for `NVCC_ORION`, or `None` for the default mode.
fn build_example(mode: Option<&str>) {
    let label = format!("cmake_example[NVCC_ORION={}]", mode.unwrap_or("<default>"));
    let Some(t) = tools_or_skip(&label) else {
        return;
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cmake");
    let tmp = tempfile::tempdir().expect("temp dir");
    let build = tmp.path().join("build");

    let with_env = |cmd: &mut Command| {
        cmd.env("NVCC_ORION_NVCC", &t.nvcc)
            .env("LC_ALL", "C")
            .env_remove("CUDAARCHS")
            .env_remove("CUDACXX");
        match mode {
            Some(m) => cmd.env("NVCC_ORION", m),
            None => cmd.env_remove("NVCC_ORION"),
        };
    };

    let mut configure = common::command(&t.cmake);
    configure
        .arg("-G")
        .arg("Ninja")
        .arg(format!("-DCMAKE_MAKE_PROGRAM={}", t.ninja.display()))
        .arg(format!("-DCMAKE_CUDA_COMPILER={ORION}"))
        .arg("-S")
        .arg(&src)
        .arg("-B")
        .arg(&build);
    with_env(&mut configure);
    let log = run(&mut configure, &format!("{label} configure"));
    assert!(
        log.contains("The CUDA compiler identification is NVIDIA 13.5"),
        "{label}: unexpected compiler identification:\n{log}"
    );

    // CMake must have kept nvcc-orion as the compiler but found the real toolkit behind it.
    let cache = fs::read_to_string(build.join("CMakeCache.txt")).expect("CMakeCache.txt");
    assert!(
        cache.lines().any(|l| l.starts_with("CMAKE_CUDA_COMPILER:")
            && canon(Path::new(l.split_once('=').unwrap().1)) == canon(Path::new(ORION))),
        "{label}: CMAKE_CUDA_COMPILER is not nvcc-orion"
    );
    // Behind the suite's memos (scripts/toolkit-memo/) the root is the real toolkit's.
    let real = common::real_nvcc(&t.nvcc);
    let toolkit = canon(real.parent().and_then(Path::parent).unwrap());
    let root = toolkit_root(&build).expect("CMAKE_CUDA_COMPILER_TOOLKIT_ROOT in CMakeFiles");
    assert_eq!(
        canon(&root),
        toolkit,
        "{label}: CMake found the wrong toolkit root"
    );

    let mut compile = common::command(&t.cmake);
    compile.arg("--build").arg(&build).arg("--verbose");
    with_env(&mut compile);
    let log = run(&mut compile, &format!("{label} build"));
    assert!(
        log.contains(ORION),
        "{label}: the build did not call nvcc-orion:\n{log}"
    );

    let exe = build.join("particles_demo");
    assert!(exe.is_file(), "{label}: {} was not built", exe.display());
    // Exits 0 without a GPU; with one it checks its result against the CPU.
    let demo = run(
        &mut common::command(&exe),
        &format!("{label} particles_demo"),
    );
    eprintln!("{label}: {}", demo.trim());

    let cuobjdump = t.nvcc.with_file_name("cuobjdump");
    let dump = run(
        Command::new(&cuobjdump).arg("-res-usage").arg(&exe),
        &format!("{label} cuobjdump"),
    );
    for needle in ["arch = sm_80", "arch = sm_90", "chain_step", "spring_force"] {
        assert!(
            dump.contains(needle),
            "{label}: cuobjdump output lacks {needle:?}:\n{dump}"
        );
    }
}

/// `set(CMAKE_CUDA_COMPILER_TOOLKIT_ROOT "…")` from `CMakeFiles/<version>/CMakeCUDACompiler.cmake`.
fn toolkit_root(build: &Path) -> Option<PathBuf> {
    for entry in fs::read_dir(build.join("CMakeFiles")).ok()?.flatten() {
        let Ok(s) = fs::read_to_string(entry.path().join("CMakeCUDACompiler.cmake")) else {
            continue;
        };
        for line in s.lines() {
            if let Some(rest) = line
                .trim()
                .strip_prefix("set(CMAKE_CUDA_COMPILER_TOOLKIT_ROOT ")
            {
                return Some(PathBuf::from(rest.trim_end_matches(')').trim_matches('"')));
            }
        }
    }
    None
}

#[test]
fn cmake_example_pass_through() {
    build_example(Some("off"));
}

#[test]
fn cmake_example_default_mode() {
    build_example(None);
}

/// `cmake/NvccOrion.cmake`: as a toolchain file for the CUDA language, or `include()`d by a
/// project that uses the legacy FindCUDA module, with `CMAKE_CUDA_ARCHITECTURES=archs`.
/// Either way the build goes through nvcc-orion and links; the report it asks for has the
/// kernel for every architecture the library's objects hold code for, and those are
/// returned (`None`: skipped).
fn build_with_module(findcuda: bool, archs: &str) -> Option<BTreeSet<String>> {
    let label = format!("cmake_module[findcuda={findcuda}, archs={archs}]");
    let t = tools_or_skip(&label)?;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    let build = tmp.path().join("build");
    let report = tmp.path().join("report.jsonl");
    let mut configure = common::command(&t.cmake);
    configure
        .args(["-G", "Ninja"])
        .arg(format!("-DCMAKE_MAKE_PROGRAM={}", t.ninja.display()))
        .arg(format!("-DNVCC_ORION_EXECUTABLE={ORION}"))
        .arg(format!("-DNVCC_ORION_REPORT={}", report.display()))
        .arg("-DNVCC_ORION_BLOCK_SIZE=256")
        .arg("-DNVCC_ORION_SEARCH=full")
        .arg(format!("-DCMAKE_CUDA_ARCHITECTURES={archs}"))
        .arg("-S")
        .arg(repo.join("examples/cmake"))
        .arg("-B")
        .arg(&build);
    if findcuda {
        configure.arg("-DORION_EXAMPLE_FINDCUDA=ON");
    } else {
        configure.arg(format!(
            "-DCMAKE_TOOLCHAIN_FILE={}",
            repo.join("cmake/NvccOrion.cmake").display()
        ));
    }
    configure
        .env("NVCC_ORION_NVCC", &t.nvcc)
        .env("LC_ALL", "C")
        .env_remove("CUDAARCHS")
        .env_remove("CUDACXX")
        .env_remove("CUDA_NVCC_EXECUTABLE");
    run(&mut configure, &format!("{label} configure"));
    let mut compile = common::command(&t.cmake);
    compile
        .arg("--build")
        .arg(&build)
        .arg("--verbose")
        .env("NVCC_ORION_NVCC", &t.nvcc);
    let log = run(&mut compile, &format!("{label} build"));
    assert!(
        log.contains(ORION),
        "{label}: the build did not call nvcc-orion:\n{log}"
    );
    // Each cache option travels as its flag (the budget search's among them).
    assert!(
        log.lines()
            .any(|l| l.contains(ORION) && l.contains("--orion-search=full")),
        "{label}: NVCC_ORION_SEARCH did not reach nvcc-orion:\n{log}"
    );
    // The --orion-* options reach nvcc-orion only, never the host compiler or linker.
    let leaked: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("--orion-") && !l.contains(ORION))
        .collect();
    assert!(
        leaked.is_empty(),
        "{label}: --orion- options leaked:\n{}",
        leaked.join("\n")
    );
    assert!(
        build.join("particles_demo").is_file(),
        "{label}: no executable"
    );
    let records = fs::read_to_string(&report).expect("the report was written");
    let arches: std::collections::BTreeSet<String> = records
        .lines()
        .filter(|l| l.contains("chain_step"))
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            let arch = v["arch"].as_str()?.to_string();
            if arch == "sm_110" {
                let reason = v["reason"].as_str().unwrap_or("");
                assert!(reason.starts_with("not tuned: no occupancy table"), "{l}");
            } else {
                assert_eq!(v["block_sizes"], serde_json::json!([256]), "{l}");
            }
            Some(arch)
        })
        .collect();
    // The architectures the objects hold code for (FindCUDA names its objects itself).
    let mut objects = Vec::new();
    let mut dirs = vec![build.join("CMakeFiles")];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.to_string_lossy().contains("integrate.cu")
                && p.extension().is_some_and(|x| x == "o")
            {
                objects.push(p);
            }
        }
    }
    assert!(!objects.is_empty(), "{label}: no object of integrate.cu");
    let in_objects: BTreeSet<String> = objects
        .iter()
        .flat_map(|o| common::fixtures::res_usage(o).unwrap())
        .filter(|u| u.function.contains("chain_step"))
        .map(|u| format!("sm_{}", u.arch))
        .collect();
    assert_eq!(arches, in_objects, "{label}: report:\n{records}");
    Some(arches)
}

#[test]
fn cmake_module_as_toolchain_file() {
    if let Some(a) = build_with_module(false, "80;90") {
        assert_eq!(a, ["sm_80", "sm_90"].map(String::from).into());
    }
}

#[test]
fn cmake_module_with_findcuda() {
    if let Some(a) = build_with_module(true, "80;90") {
        assert_eq!(a, ["sm_80", "sm_90"].map(String::from).into());
    }
}

/// `CMAKE_CUDA_ARCHITECTURES=all-major`: CMake hands `-arch=all-major` to the compiler, nvcc's
/// dry run expands it, and the report has a record for every architecture the objects hold:
/// tuned where the tuner has an occupancy table, "not tuned" (ptxas's code kept) for sm_110,
/// whose limits it does not have.
#[test]
fn cmake_module_all_major() {
    if let Some(a) = build_with_module(false, "all-major") {
        for arch in ["sm_75", "sm_80", "sm_90", "sm_100", "sm_110", "sm_120"] {
            assert!(a.contains(arch), "{arch} missing: {a:?}");
        }
    }
}

/// `CMAKE_CUDA_ARCHITECTURES=native`: CMake hands `-arch=native` to the compiler; nvcc picks
/// the machine's GPU (without one, its default with a warning) and nvcc-orion tunes what
/// nvcc picked: the same architecture as plain nvcc's `-arch=native` object.
#[test]
fn cmake_module_native() {
    let Some(a) = build_with_module(false, "native") else {
        return;
    };
    let t = tools_or_skip("cmake_module_native").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let obj = tmp.path().join("k.o");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cmake/integrate.cu");
    run(
        Command::new(&t.nvcc)
            .args(["-c", "-rdc=true", "-arch=native", "-I"])
            .arg(src.parent().unwrap())
            .arg(&src)
            .arg("-o")
            .arg(&obj),
        "nvcc -arch=native",
    );
    let plain: BTreeSet<String> = common::fixtures::res_usage(&obj)
        .unwrap()
        .iter()
        .map(|u| format!("sm_{}", u.arch))
        .collect();
    assert_eq!(a, plain);
}

/// ccache as `CMAKE_CUDA_COMPILER_LAUNCHER` in front of nvcc-orion: the second of two identical
/// builds (in another build folder) is served from the cache, with identical objects. ccache
/// comes from the distribution's packages (`scripts/setup.sh` installs it under CI); where it
/// cannot be installed (not root, no apt-get) the test says so and skips.
#[test]
fn cmake_with_ccache_launcher() {
    let label = "cmake_ccache";
    let Some(t) = tools_or_skip(label) else {
        return;
    };
    let Some(ccache) = common::packaged_tool("ccache", label) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let cache_dir = tmp.path().join("ccache");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cmake");
    let with_env = |cmd: &mut Command| {
        cmd.env("NVCC_ORION_NVCC", &t.nvcc)
            .env("CCACHE_DIR", &cache_dir)
            .env("LC_ALL", "C")
            .env_remove("CUDAARCHS")
            .env_remove("CUDACXX");
    };
    let objects = |build: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut v: Vec<(PathBuf, Vec<u8>)> =
            ["particles.dir/forces.cu.o", "particles.dir/integrate.cu.o"]
                .iter()
                .map(|o| {
                    let p = build.join("CMakeFiles").join(o);
                    let bytes = fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                    (PathBuf::from(o), bytes)
                })
                .collect();
        v.sort();
        v
    };
    let mut builds = Vec::new();
    for name in ["first", "second"] {
        let build = tmp.path().join(name);
        let mut configure = common::command(&t.cmake);
        configure
            .args(["-G", "Ninja"])
            .arg(format!("-DCMAKE_MAKE_PROGRAM={}", t.ninja.display()))
            .arg(format!("-DCMAKE_CUDA_COMPILER={ORION}"))
            .arg(format!(
                "-DCMAKE_CUDA_COMPILER_LAUNCHER={}",
                ccache.display()
            ))
            .arg("-S")
            .arg(&src)
            .arg("-B")
            .arg(&build);
        with_env(&mut configure);
        run(&mut configure, &format!("{label} configure {name}"));
        let mut compile = common::command(&t.cmake);
        compile.arg("--build").arg(&build);
        with_env(&mut compile);
        run(&mut compile, &format!("{label} build {name}"));
        builds.push(build);
    }
    let mut stats = common::command(&ccache);
    stats.arg("--print-stats");
    with_env(&mut stats);
    let stats = run(&mut stats, "ccache --print-stats");
    let count = |key: &str| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
            .unwrap_or(0)
    };
    let hits = count("direct_cache_hit\t") + count("preprocessed_cache_hit\t");
    assert!(
        hits >= 2,
        "{label}: the second build was not served from ccache:\n{stats}"
    );
    assert_eq!(
        objects(&builds[0]),
        objects(&builds[1]),
        "{label}: objects differ"
    );
}

/// ccache as `CMAKE_CUDA_COMPILER_LAUNCHER` through `cmake/NvccOrion.cmake`, with ccache's
/// own defaults (an empty configuration): the module makes ccache hash `nvcc-orion
/// cache-key`, so a build whose only difference is `NVCC_ORION=off` in the environment
/// misses and gets the tuned objects, and an unchanged one hits with the same bytes. Three
/// build folders configured alike share one cache: off, default, default.
#[test]
fn cmake_module_ccache_sees_settings_from_the_environment() {
    let label = "cmake_module_ccache";
    let Some(t) = tools_or_skip(label) else {
        return;
    };
    let Some(ccache) = common::packaged_tool("ccache", label) else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = tmp.path().join("ccache.conf");
    fs::write(&config, "").unwrap();
    let with_env = |cmd: &mut Command, mode: Option<&str>| {
        cmd.env("NVCC_ORION_NVCC", &t.nvcc)
            .env("CCACHE_DIR", tmp.path().join("ccache"))
            .env("CCACHE_CONFIGPATH", &config)
            .env("NVCC_ORION_CACHE", tmp.path().join("orion-cache"))
            .env("LC_ALL", "C")
            .env_remove("CCACHE_COMPILERCHECK")
            .env_remove("CUDAARCHS")
            .env_remove("CUDACXX")
            .env_remove("CMAKE_CUDA_COMPILER_LAUNCHER");
        match mode {
            Some(m) => cmd.env("NVCC_ORION", m),
            None => cmd.env_remove("NVCC_ORION"),
        };
    };
    let stats = || -> (u64, u64) {
        let mut c = common::command(&ccache);
        c.arg("--print-stats");
        with_env(&mut c, None);
        let text = run(&mut c, "ccache --print-stats");
        let count = |key: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or(0)
        };
        (
            count("direct_cache_hit\t") + count("preprocessed_cache_hit\t"),
            count("cache_miss\t"),
        )
    };
    // neighbors.cu's kernel is retuned (64 registers under ptxas, fewer tuned).
    let object = "CMakeFiles/particles.dir/neighbors.cu.o";
    let regs = |o: &Path| -> u32 {
        common::fixtures::res_usage(o)
            .unwrap()
            .iter()
            .find(|u| u.function.contains("neighbor_score"))
            .expect("neighbor_score in the object")
            .reg
    };
    let mut regs_seen = Vec::new();
    let mut objects = Vec::new();
    let mut counts = Vec::new();
    for (name, mode) in [("off", Some("off")), ("tuned", None), ("again", None)] {
        let build = tmp.path().join(name);
        let mut configure = common::command(&t.cmake);
        configure
            .args(["-G", "Ninja"])
            .arg(format!("-DCMAKE_MAKE_PROGRAM={}", t.ninja.display()))
            .arg(format!(
                "-DCMAKE_TOOLCHAIN_FILE={}",
                repo.join("cmake/NvccOrion.cmake").display()
            ))
            .arg(format!("-DNVCC_ORION_EXECUTABLE={ORION}"))
            .arg(format!(
                "-DCMAKE_CUDA_COMPILER_LAUNCHER={}",
                ccache.display()
            ))
            .arg("-DCMAKE_CUDA_ARCHITECTURES=90")
            .arg("-S")
            .arg(repo.join("examples/cmake"))
            .arg("-B")
            .arg(&build);
        with_env(&mut configure, None);
        run(&mut configure, &format!("{label} configure {name}"));
        let cache = fs::read_to_string(build.join("CMakeCache.txt")).unwrap();
        assert!(
            cache.contains("CCACHE_COMPILERCHECK=%compiler% cache-key"),
            "{label}: the module did not set ccache's compiler check"
        );
        let mut compile = common::command(&t.cmake);
        compile.arg("--build").arg(&build);
        with_env(&mut compile, mode);
        run(&mut compile, &format!("{label} build {name}"));
        objects.push(fs::read(build.join(object)).unwrap());
        regs_seen.push(regs(&build.join(object)));
        counts.push(stats());
    }
    let (hits, misses): (Vec<u64>, Vec<u64>) = counts.into_iter().unzip();
    assert!(misses[0] > 0, "{label}: the first build was not looked up");
    assert!(
        misses[1] > misses[0],
        "{label}: NVCC_ORION=off's objects were served to the default build (misses {misses:?})"
    );
    assert!(
        regs_seen[1] < regs_seen[0],
        "{label}: the default build got the untuned object (registers {regs_seen:?})"
    );
    assert_eq!(misses[2], misses[1], "{label}: an unchanged build missed");
    assert!(hits[2] > hits[1], "{label}: an unchanged build did not hit");
    assert_eq!(objects[1], objects[2], "{label}: a hit gave other bytes");
}
