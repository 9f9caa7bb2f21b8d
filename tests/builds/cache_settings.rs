//! Compiler caches never return an object built under other settings (issue 22, item 3).
//!
//! A setting that changes the output (here `NVCC_ORION_FORCE`, which picks the lowest budget
//! instead of ptxas's own) must reach what a cache hashes: with sccache 0.9 and later, the
//! ptxas command lines of the `--dryrun` listing carry `--orion-*` options for the effective
//! settings; with ccache, `compiler_check = %compiler% cache-key` hashes them. Each test
//! compiles the same source three times — setting A, setting B, setting B again — and checks
//! that B misses and gives B's object (fewer registers), and that B again hits with the
//! same bytes.
//!
//! sccache with its dist features is built by `scripts/setup.sh` under CI
//! (`NVCC_ORION_SETUP_SCCACHE_DIST=1`); ccache comes from the distribution's packages.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

/// The registers of `walk_features` in an object.
fn walk_regs(obj: &Path) -> u32 {
    common::fixtures::res_usage(obj)
        .unwrap()
        .iter()
        .find(|u| u.function.contains("walk_features"))
        .expect("walk_features in the object")
        .reg
}

/// `--dryrun`'s ptxas lines carry the settings that change output, whether they come from the
/// environment or the command line, and nothing else changes (no setting: nvcc's own line).
#[test]
fn dryrun_ptxas_lines_carry_the_settings() {
    let label = "dryrun_settings";
    let Some(nvcc) = common::nvcc_or_skip(label) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let listing = |env: &[(&str, &str)], extra: &[&str]| -> String {
        let mut cmd = common::orion();
        cmd.current_dir(dir.path())
            .args(["--dryrun", "--keep", "-c", "-arch=sm_90", "-o", "w.o"])
            .arg(common::example("walk.cu"))
            .args(extra)
            .env("NVCC_ORION_NVCC", &nvcc)
            .env("NVCC_ORION_CACHE", dir.path().join("cache"))
            .envs(env.iter().copied());
        let o = cmd.output().unwrap();
        common::assert_ok(&o, label);
        let text = String::from_utf8(o.stderr).unwrap();
        text.lines()
            .find(|l| l.starts_with("#$ ptxas "))
            .unwrap_or_else(|| panic!("{label}: no ptxas line in\n{text}"))
            .to_string()
    };
    let plain = listing(&[], &[]);
    assert!(!plain.contains("--orion-"), "{plain}");
    let from_env = listing(
        &[
            ("NVCC_ORION_FORCE", "lowest"),
            ("NVCC_ORION_MARGIN", "7"),
            ("NVCC_ORION_BLOCK_SIZE", "256"),
            ("NVCC_ORION_TRANSFORMS", "spill2smem"),
        ],
        &[],
    );
    let from_flags = listing(
        &[],
        &[
            "--orion-force=lowest",
            "--orion-margin=7",
            "--orion-block-size=256",
            "--orion-transforms=spill2smem",
        ],
    );
    assert_eq!(from_env, from_flags);
    for o in [
        "--orion-force=lowest",
        "--orion-margin=7",
        "--orion-block-size=256",
        "--orion-transforms=spill2smem",
    ] {
        assert!(from_env.contains(o), "{label}: {o} missing from {from_env}");
    }
    // Settings that do not change the object stay off the line (a report path would split
    // the cache by where the report goes).
    let report = listing(&[("NVCC_ORION_REPORT", "r.jsonl")], &[]);
    assert_eq!(report, plain);
}

/// sccache with the dist features (0.19): it builds with the steps of `--dryrun`, caching each.
/// `None` (skipped) where it is not built, a failure under CI.
fn sccache_dist(label: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("NVCC_ORION_SCCACHE_DIST")
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(Path::new(&home).join(".cache/nvcc-orion/sccache-dist/bin"))
        })?;
    let bin = dir.join("sccache");
    if bin.is_file() {
        return Some(bin);
    }
    common::skip(
        label,
        &format!(
            "{} missing: sccache with dist features is not built (NVCC_ORION_SETUP_SCCACHE_DIST=1 scripts/setup.sh)",
            bin.display()
        ),
    );
    None
}

/// Three compiles (force baseline, lowest, lowest) through `launch`, which runs one compile
/// with the given `NVCC_ORION_FORCE` and returns the cache's miss count afterwards.
fn three_compiles(label: &str, d: &Path, launch: &dyn Fn(&str, &Path) -> u64) {
    let objs: Vec<PathBuf> = ["a.o", "b.o", "c.o"].iter().map(|o| d.join(o)).collect();
    let m1 = launch("baseline", &objs[0]);
    let m2 = launch("lowest", &objs[1]);
    let m3 = launch("lowest", &objs[2]);
    let (r1, r2, r3) = (
        walk_regs(&objs[0]),
        walk_regs(&objs[1]),
        walk_regs(&objs[2]),
    );
    assert!(
        r2 < r1,
        "{label}: the changed setting was served from the cache ({r1} → {r2} registers)"
    );
    assert!(m2 > m1, "{label}: no miss after the setting changed");
    assert_eq!(m3, m2, "{label}: the unchanged setting missed");
    assert_eq!(r3, r2);
    assert_eq!(
        std::fs::read(&objs[1]).unwrap(),
        std::fs::read(&objs[2]).unwrap(),
        "{label}: a hit gave other bytes"
    );
}

/// sccache (0.19, local cache): the ptxas step misses when a setting given only through the
/// environment changes, and hits when it does not.
#[test]
fn sccache_steps_miss_when_a_setting_changes() {
    let label = "sccache_settings";
    let Some(nvcc) = common::nvcc_or_skip(label) else {
        return;
    };
    let Some(sccache) = sccache_dist(label) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = common::sccache::free_port();
    let with_env = |args: &[&std::ffi::OsStr]| {
        let mut cmd = common::command(&sccache);
        cmd.args(args)
            .current_dir(d)
            .env("SCCACHE_DIR", d.join("sccache"))
            .env("SCCACHE_SERVER_PORT", port.to_string())
            .env("SCCACHE_IDLE_TIMEOUT", "120")
            .env("SCCACHE_CONF", d.join("no-config.toml"))
            .env("NVCC_ORION_NVCC", &nvcc)
            .env("NVCC_ORION_CACHE", d.join("orion-cache"))
            .env_remove("RUSTC_WRAPPER");
        cmd
    };
    let _server = common::sccache::Server::start(with_env(&[]), port, label);
    let sc = |force: Option<&str>, args: &[&std::ffi::OsStr]| -> Output {
        let mut cmd = with_env(args);
        match force {
            Some(f) => cmd.env("NVCC_ORION_FORCE", f),
            None => cmd.env_remove("NVCC_ORION_FORCE"),
        };
        cmd.output().unwrap()
    };
    let misses = |_: ()| -> u64 {
        let o = sc(None, &["--show-stats".as_ref()]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("Cache misses ")?.trim().parse().ok())
            .unwrap_or(0)
    };
    let launch = |force: &str, obj: &Path| -> u64 {
        let o = sc(
            Some(force),
            &[
                env!("CARGO_BIN_EXE_nvcc-orion").as_ref(),
                "-c".as_ref(),
                "-arch=sm_90".as_ref(),
                common::example("walk.cu").as_os_str(),
                "-o".as_ref(),
                obj.as_os_str(),
            ],
        );
        common::assert_ok(&o, &format!("{label} {force}"));
        misses(())
    };
    three_compiles(label, d, &launch);
}

/// ccache with `compiler_check = %compiler% cache-key`: a setting given only through the
/// environment is hashed.
#[test]
fn ccache_misses_when_a_setting_changes() {
    let label = "ccache_settings";
    let Some(nvcc) = common::nvcc_or_skip(label) else {
        return;
    };
    let Some(ccache) = common::packaged_tool("ccache", label) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cc = |force: Option<&str>, args: &[&std::ffi::OsStr]| -> Output {
        let mut cmd = common::command(&ccache);
        cmd.args(args)
            .current_dir(d)
            .env("CCACHE_DIR", d.join("ccache"))
            .env("CCACHE_CONFIGPATH", d.join("ccache.conf"))
            .env("CCACHE_COMPILERCHECK", "%compiler% cache-key")
            .env("LC_ALL", "C")
            .env("NVCC_ORION_NVCC", &nvcc)
            .env("NVCC_ORION_CACHE", d.join("orion-cache"));
        match force {
            Some(f) => cmd.env("NVCC_ORION_FORCE", f),
            None => cmd.env_remove("NVCC_ORION_FORCE"),
        };
        cmd.output().unwrap()
    };
    let launch = |force: &str, obj: &Path| -> u64 {
        let o = cc(
            Some(force),
            &[
                env!("CARGO_BIN_EXE_nvcc-orion").as_ref(),
                "-c".as_ref(),
                "-arch=sm_90".as_ref(),
                common::example("walk.cu").as_os_str(),
                "-o".as_ref(),
                obj.as_os_str(),
            ],
        );
        common::assert_ok(&o, &format!("{label} {force}"));
        let stats = cc(None, &["--print-stats".as_ref()]);
        let text = String::from_utf8_lossy(&stats.stdout).into_owned();
        let count = |key: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or(0)
        };
        let hits = count("direct_cache_hit\t") + count("preprocessed_cache_hit\t");
        let misses = count("cache_miss\t");
        // Every compile must have been looked up: a hit or a miss, never "uncacheable".
        assert!(hits + misses > 0, "{label}: ccache did not cache:\n{text}");
        misses
    };
    three_compiles(label, d, &launch);
}
