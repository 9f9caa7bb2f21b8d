//! Compile farms (issue 22, items 1 and 2): nvcc-orion under sccache-dist on 127.0.0.1.
//!
//! `nvcc-orion toolchain --sccache-dist` packs nvcc-orion's ptxas and the real toolkit into an
//! archive, the same bytes every time. A scheduler and a build server (overlay builder, in a
//! bubblewrap sandbox) then run on loopback, and `examples/cmake` is built with
//! `CMAKE_CUDA_COMPILER_LAUNCHER=sccache` and nvcc-orion as the compiler three times: through
//! sccache with no farm, through the farm (the tuned ptxas steps run on the build server), and
//! with the build server killed (sccache compiles locally). The three give the same objects.
//! Through the farm, a setting changed only in the environment misses (the ptxas steps run on
//! the server again) and the same setting again hits.
//!
//! sccache 0.19 with its dist features is built by `scripts/setup.sh` under CI
//! (`NVCC_ORION_SETUP_SCCACHE_DIST=1`), with Debian's bubblewrap. The farm needs root (the
//! build server mounts an overlay); elsewhere the test says so and skips.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const ORION: &str = env!("CARGO_BIN_EXE_nvcc-orion");
/// The setting that names a client's sccache server.
const PORT: &str = "SCCACHE_SERVER_PORT";

/// sccache and sccache-dist (0.19, dist features), where `scripts/setup.sh` builds them.
fn sccache_dist_bins() -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::var_os("NVCC_ORION_SCCACHE_DIST")
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(Path::new(&home).join(".cache/nvcc-orion/sccache-dist/bin"))
        })?;
    let (c, s) = (dir.join("sccache"), dir.join("sccache-dist"));
    (c.is_file() && s.is_file()).then_some((c, s))
}

/// `cmd`'s output, killed (and a failure) after `secs`.
fn output_within(cmd: &mut Command, secs: u64, what: &str) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    // Drain the pipes aside, so a chatty child never blocks on a full pipe.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = so.read_to_end(&mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = se.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {secs} s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    }
}

/// `nvcc-orion toolchain --sccache-dist out`: the client configuration it prints.
fn pack(nvcc: &Path, out: &Path, orion_cache: &Path) -> String {
    let o = output_within(
        common::orion()
            .args(["toolchain", "--sccache-dist"])
            .arg(out)
            .env("NVCC_ORION_NVCC", nvcc)
            .env("NVCC_ORION_CACHE", orion_cache),
        300,
        "nvcc-orion toolchain",
    );
    common::assert_ok(&o, "nvcc-orion toolchain");
    String::from_utf8(o.stdout).unwrap()
}

/// The archive is the same bytes every time and holds nvcc-orion, the entry script, the real
/// ptxas and nvdisasm, a shell and the loader with the libraries they need.
#[test]
fn toolchain_archive_is_deterministic() {
    let label = "toolchain_archive";
    // The real toolkit, not the suite's memos of it: its files are what gets packed.
    let Some(nvcc) = common::find_nvcc().map(|n| common::real_nvcc(&n)) else {
        return common::skip(label, "no nvcc found");
    };
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a.tar.gz"), d.path().join("b.tar.gz"));
    let config = pack(&nvcc, &a, &d.path().join("cache"));
    pack(&nvcc, &b, &d.path().join("cache"));
    let bytes = std::fs::read(&a).unwrap();
    assert!(
        bytes == std::fs::read(&b).unwrap(),
        "{label}: two runs differ"
    );
    let list = output_within(Command::new("tar").arg("tzvf").arg(&a), 120, "tar tzvf");
    common::assert_ok(&list, "tar tzvf");
    let list = String::from_utf8(list.stdout).unwrap();
    eprintln!("{list}");
    let names: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .collect();
    for want in [
        "nvcc-orion/bin/nvcc-orion",
        "nvcc-orion/bin/ptxas",
        "nvcc-orion/cuda/bin/ptxas",
        "nvcc-orion/cuda/bin/nvdisasm",
        "bin/sh",
        "tmp/",
    ] {
        assert!(names.contains(&want), "{label}: {want} missing:\n{list}");
    }
    assert!(
        names.iter().any(|n| n.contains("ld-linux")) && names.iter().any(|n| n.contains("libc.so")),
        "{label}: no loader or libc:\n{list}"
    );
    // Fixed owners and times.
    for l in list.lines() {
        assert!(l.contains(" root/root ") || l.contains(" 0/0 "), "{l}");
        assert!(l.contains("1970-01-01"), "{l}");
    }
    // The configuration maps the shim `--dryrun` names to the archive's entry script.
    let shim = config
        .lines()
        .find_map(|l| l.strip_prefix("compiler_executable = \""))
        .unwrap()
        .trim_end_matches('"');
    assert!(
        shim.ends_with("/ptxas") && shim.contains("ptxas-shim-"),
        "{config}"
    );
    assert!(Path::new(shim).is_file(), "{config}");
    assert!(
        config.contains(&format!("archive = \"{}\"", a.display())),
        "{config}"
    );
    assert!(config.contains("archive_compiler_executable = \"/nvcc-orion/bin/ptxas\""));
    assert!(config.contains("type = \"no_dist\""), "{config}");
}

/// Child processes stopped when the test ends, however it ends.
struct Procs(Vec<(String, Child)>);

impl Procs {
    fn kill(&mut self, name: &str) {
        if let Some(i) = self.0.iter().position(|(n, _)| n == name) {
            let (_, mut c) = self.0.remove(i);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn cmake_through_sccache_dist_on_loopback() {
    let label = "farm_loopback";
    // The real toolkit, not the suite's memos of it: its files are what gets packed.
    let Some(nvcc) = common::find_nvcc().map(|n| common::real_nvcc(&n)) else {
        return common::skip(label, "no nvcc found");
    };
    let (Ok(cmake), Ok(ninja)) = (which::which("cmake"), which::which("ninja")) else {
        return common::skip(label, "cmake or ninja not found (run scripts/setup.sh)");
    };
    let Some((sccache, sccache_dist)) = sccache_dist_bins() else {
        return common::skip(
            label,
            "sccache with dist features not built (NVCC_ORION_SETUP_SCCACHE_DIST=1 scripts/setup.sh)",
        );
    };
    let Ok(bwrap) = which::which("bwrap") else {
        return common::skip(label, "bubblewrap not installed");
    };
    if !is_root() {
        return common::skipped(label, "the overlay build server needs root");
    }
    let t0 = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let orion_cache = d.join("orion-cache");
    let config = pack(&nvcc, &d.join("orion.tar.gz"), &orion_cache);

    let (sp, bp) = (common::sccache::free_port(), common::sccache::free_port());
    std::fs::write(
        d.join("scheduler.toml"),
        format!(
            "public_addr = \"127.0.0.1:{sp}\"\n\
             [client_auth]\ntype = \"token\"\ntoken = \"orion-client\"\n\
             [server_auth]\ntype = \"token\"\ntoken = \"orion-server\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("server.toml"),
        format!(
            "cache_dir = \"{}\"\npublic_addr = \"127.0.0.1:{bp}\"\n\
             scheduler_url = \"http://127.0.0.1:{sp}\"\n\
             [builder]\ntype = \"overlay\"\nbuild_dir = \"{}\"\nbwrap_path = \"{}\"\n\
             [scheduler_auth]\ntype = \"token\"\ntoken = \"orion-server\"\n",
            d.join("server-cache").display(),
            d.join("server-build").display(),
            bwrap.display()
        ),
    )
    .unwrap();
    // The host compiler stays local too: sccache-dist's remote C++ compile of nvcc's
    // generated host code (from preprocessed input) gave other bytes than the local one.
    let gcc = which::which("gcc").unwrap_or_else(|_| PathBuf::from("/usr/bin/gcc"));
    let client_conf = |dist: bool| -> PathBuf {
        let p = d.join(if dist {
            "client-dist.toml"
        } else {
            "client-local.toml"
        });
        let text = if dist {
            format!(
                "[dist]\nscheduler_url = \"http://127.0.0.1:{sp}\"\ncache_dir = \"{}\"\n\
                 [dist.auth]\ntype = \"token\"\ntoken = \"orion-client\"\n\n{config}\n\
                 [[dist.toolchains]]\ntype = \"no_dist\"\ncompiler_executable = \"{}\"\n",
                d.join("client-toolchains").display(),
                gcc.display()
            )
        } else {
            String::new()
        };
        std::fs::write(&p, text).unwrap();
        p
    };
    let spawn = |role: &str| -> Child {
        let log = std::fs::File::create(d.join(format!("{role}.log"))).unwrap();
        common::command(&sccache_dist)
            .arg(role)
            .arg("--config")
            .arg(d.join(format!("{role}.toml")))
            // The build server logs each compile command (trace): the test reads them.
            .env("SCCACHE_LOG", "info,sccache_dist::build=trace")
            // In the foreground, so the test holds (and stops) the process itself.
            .env("SCCACHE_NO_DAEMON", "1")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let mut procs = Procs(Vec::new());
    procs.0.push(("scheduler".into(), spawn("scheduler")));
    procs.0.push(("server".into(), spawn("server")));
    let logs = || {
        ["scheduler", "server"]
            .iter()
            .map(|r| {
                format!(
                    "--- {r}.log:\n{}",
                    std::fs::read_to_string(d.join(format!("{r}.log"))).unwrap_or_default()
                )
            })
            .collect::<String>()
    };

    // One sccache client server per build (its own port, cache and configuration).
    let client = |name: &str, dist: bool| -> Vec<(&'static str, String)> {
        vec![
            ("SCCACHE_CONF", client_conf(dist).display().to_string()),
            (
                "SCCACHE_DIR",
                d.join(format!("sccache-{name}")).display().to_string(),
            ),
            (PORT, common::sccache::free_port().to_string()),
            ("SCCACHE_IDLE_TIMEOUT", "60".to_string()),
            (
                "SCCACHE_ERROR_LOG",
                d.join(format!("client-{name}.log")).display().to_string(),
            ),
            ("SCCACHE_LOG", "info".to_string()),
        ]
    };
    let sc = |env: &[(&str, String)], args: &[&str]| -> Output {
        output_within(
            common::command(&sccache)
                .args(args)
                .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
                .env_remove("RUSTC_WRAPPER"),
            120,
            "sccache",
        )
    };
    // What every build's commands run with: its client's settings, the toolkit and the cache.
    let with_env = |cmd: &mut Command, env: &[(&str, String)]| {
        cmd.envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("NVCC_ORION_NVCC", &nvcc)
            .env("NVCC_ORION_CACHE", &orion_cache)
            .env("LC_ALL", "C")
            .env_remove("CUDAARCHS")
            .env_remove("CUDACXX")
            .env_remove("RUSTC_WRAPPER");
    };
    // The client server, started before its first client (see common::sccache), with the
    // settings its builds' clients have.
    let serve = |env: &[(&str, String)]| -> common::sccache::Server {
        let port = env
            .iter()
            .find(|(k, _)| *k == PORT)
            .unwrap()
            .1
            .parse()
            .unwrap();
        let mut cmd = common::command(&sccache);
        with_env(&mut cmd, env);
        common::sccache::Server::start(cmd, port, label)
    };
    // Wait for the build server to join the scheduler.
    let probe = client("probe", true);
    let server = serve(&probe);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = sc(&probe, &["--dist-status"]);
        let text = String::from_utf8_lossy(&s.stdout).into_owned();
        if text.contains("\"num_cpus\"") && !text.contains("\"num_cpus\":0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{label}: the build server never joined:\n{text}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    drop(server);

    // One configure for the five builds. Configuring runs no sccache (CMake's compiler checks
    // take no launcher) and reads only the settings every build shares (nvcc-orion, the real
    // nvcc, the variant cache), so each build's own configure was the same work five times
    // (about 3 s of CPU each; issue 50, bench/results/suite.md, seventh pass). Each build
    // cleans first and its objects are taken away once read, so every build compiles them
    // all anew under its own sccache client, as in a folder of its own.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cmake");
    let dir = d.join("build");
    let mut configure = common::command(&cmake);
    configure
        .args(["-G", "Ninja"])
        .arg(format!("-DCMAKE_MAKE_PROGRAM={}", ninja.display()))
        .arg(format!("-DCMAKE_CUDA_COMPILER={ORION}"))
        .arg(format!(
            "-DCMAKE_CUDA_COMPILER_LAUNCHER={}",
            sccache.display()
        ))
        .arg("-S")
        .arg(&src)
        .arg("-B")
        .arg(&dir);
    with_env(&mut configure, &[]);
    common::assert_ok(
        &output_within(&mut configure, 300, "configure"),
        &format!("{label}: configure"),
    );
    let build = |name: &str, env: &[(&str, String)]| -> Vec<(String, Vec<u8>)> {
        let mut compile = common::command(&cmake);
        compile.arg("--build").arg(&dir).arg("--clean-first");
        with_env(&mut compile, env);
        let o = output_within(&mut compile, 600, name);
        assert!(
            o.status.success(),
            "{label}: build {name}:\n{}\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
            logs()
        );
        ["forces.cu.o", "integrate.cu.o"]
            .iter()
            .map(|o| {
                let p = dir.join("CMakeFiles/particles.dir").join(o);
                let bytes = std::fs::read(&p)
                    .unwrap_or_else(|e| panic!("{label}: build {name}: {}: {e}", p.display()));
                std::fs::remove_file(&p).unwrap();
                (o.to_string(), bytes)
            })
            .collect()
    };
    let stats = |env: &[(&str, String)]| -> serde_json::Value {
        let o = sc(env, &["--show-stats", "--stats-format=json"]);
        common::assert_ok(&o, "sccache --show-stats");
        let _ = sc(env, &["--stop-server"]);
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let dist_compiles = |s: &serde_json::Value| -> u64 {
        s["stats"]["dist_compiles"]
            .as_object()
            .map_or(0, |m| m.values().filter_map(|v| v.as_u64()).sum())
    };

    // 1. Through sccache, no farm: the reference.
    let env = client("local", false);
    let server = serve(&env);
    let local = build("local", &env);
    let s = stats(&env);
    drop(server);
    assert_eq!(dist_compiles(&s), 0, "{s}");

    // 2. Through the farm: the ptxas steps run on the build server, same objects.
    let env = client("dist", true);
    let server = serve(&env);
    let dist = build("dist", &env);
    let s = stats(&env);
    drop(server);
    assert!(
        dist_compiles(&s) > 0,
        "{label}: nothing ran on the build server:\n{s}\n{}",
        logs()
    );
    let server_log = std::fs::read_to_string(d.join("server.log")).unwrap_or_default();
    // The archive's entry script is what ran: the ptxas steps, tuned on the server.
    assert!(
        server_log.contains("Compile command: \"/nvcc-orion/bin/ptxas\""),
        "{label}: no ptxas step ran on the build server:\n{}",
        logs()
    );
    assert!(
        local == dist,
        "{label}: objects built on the farm differ from local ones"
    );

    // 2b. The same cache, a setting changed through the environment only: the ptxas steps
    // miss and run on the server again; the same setting once more: they hit, nothing runs.
    let remote_ptxas = || {
        std::fs::read_to_string(d.join("server.log"))
            .unwrap_or_default()
            .matches("Compile command: \"/nvcc-orion/bin/ptxas\"")
            .count()
    };
    let before = remote_ptxas();
    let mut changed = env.clone();
    changed.push(("NVCC_ORION_MARGIN", "50".to_string()));
    let server = serve(&changed);
    build("dist-margin", &changed);
    let after_change = remote_ptxas();
    build("dist-margin-again", &changed);
    let _ = stats(&env);
    drop(server);
    assert!(
        after_change > before,
        "{label}: a changed setting was served from the cache\n{}",
        logs()
    );
    assert_eq!(
        remote_ptxas(),
        after_change,
        "{label}: an unchanged setting missed"
    );

    // 3. The build server dies: sccache compiles locally, the same objects.
    procs.kill("server");
    let env = client("dead", true);
    let server = serve(&env);
    let dead = build("dead", &env);
    let s = stats(&env);
    drop(server);
    assert_eq!(dist_compiles(&s), 0, "{s}");
    assert!(
        local == dead,
        "{label}: objects built after the server died differ"
    );
    drop(procs);
    eprintln!("{label}: {:.0} s", t0.elapsed().as_secs_f64());
}
