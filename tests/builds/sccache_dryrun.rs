//! The compiler-cache path: sccache asks `nvcc --dryrun` for a compile's steps and runs them
//! itself (docs/DESIGN.md §Caching and compile farms). This test does what sccache does with
//! the listing `nvcc-orion --dryrun` gives: runs every step in a shell with the listing's
//! environment, and checks that the ptxas step went through nvcc-orion (a tuning record for the
//! kernel) and that the object it leaves links.
//!
//! sccache itself, as the distribution packages it (0.4, which caches whole nvcc invocations),
//! in front of nvcc-orion: the first compile is tuned, the second is a cache hit with the same
//! object.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use std::process::Command;

const KERNEL: &str = r#"
__global__ void scale_add(float *x, const float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 2.f + y[i];
}
int main() { return 0; }
"#;

#[test]
fn dryrun_steps_run_by_a_cache_are_tuned() {
    let Some(nvcc) = common::nvcc_or_skip("sccache_dryrun") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("k.cu"), KERNEL).unwrap();
    let report = d.join("report.jsonl");
    let me = env!("CARGO_BIN_EXE_nvcc-orion");
    let out = common::command(me)
        .current_dir(d)
        .args([
            "--dryrun",
            "--keep",
            "-c",
            "k.cu",
            "-arch=sm_80",
            "-o",
            "k.o",
        ])
        .env("NVCC_ORION_NVCC", &nvcc)
        .env("NVCC_ORION_CACHE", d.join("cache"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = String::from_utf8(out.stderr).unwrap();
    let path_line = listing
        .lines()
        .find(|l| l.starts_with("#$ PATH="))
        .expect("a PATH line");
    let shim = path_line["#$ PATH=".len()..].split(':').next().unwrap();
    assert!(shim.contains("ptxas-shim-"), "{path_line}");
    assert!(std::path::Path::new(shim).join("ptxas").exists());
    // Run the steps as a cache would: the listing's plain `NAME=value` lines as the
    // environment (the quoted ones are already expanded in the commands), then every command.
    let mut script = String::from("set -e\n");
    for l in listing.lines().filter_map(|l| l.strip_prefix("#$ ")) {
        let var = l.split_once('=').filter(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        match var {
            Some((k, v)) if !v.contains('"') => {
                script.push_str(&format!("export {k}='{}'\n", v.trim_end()));
            }
            Some(_) => {}
            None => script.push_str(&format!("{l}\n")),
        }
    }
    let run = Command::new("bash")
        .current_dir(d)
        .arg("-c")
        .arg(&script)
        .env("NVCC_ORION_NVCC", &nvcc)
        .env("NVCC_ORION_REPORT", &report)
        .env("NVCC_ORION_CACHE", d.join("cache"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let records = std::fs::read_to_string(&report).expect("the ptxas step wrote a record");
    assert!(records.contains("scale_add"), "{records}");
    assert!(d.join("k.o").exists());
    let link = Command::new(&nvcc)
        .current_dir(d)
        .args(["k.o", "-o", "k", "-arch=sm_80"])
        .output()
        .unwrap();
    assert!(
        link.status.success(),
        "{}",
        String::from_utf8_lossy(&link.stderr)
    );
}

/// `sccache nvcc-orion ...` twice: the first compile misses and is tuned (a report record,
/// the object has the chosen register count), the second is served from sccache's cache with
/// an identical object (and, being a hit, writes no record). sccache comes from the
/// distribution's packages (`scripts/setup.sh` installs it under CI); where it cannot be
/// installed the test says so and skips.
#[test]
fn sccache_as_a_launcher_caches_tuned_objects() {
    let label = "sccache_launcher";
    let Some(nvcc) = common::nvcc_or_skip("sccache_dryrun") else {
        return;
    };
    let Some(sccache) = common::packaged_tool("sccache", label) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let walk = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kernels/walk.cu");
    let report = d.join("report.jsonl");
    // A server of our own (its port), so another sccache user's server and cache stay apart.
    let port = common::sccache::free_port();
    let with_env = |args: &[&std::ffi::OsStr]| {
        let mut cmd = common::command(&sccache);
        cmd.args(args)
            .current_dir(d)
            .env("SCCACHE_DIR", d.join("sccache"))
            .env("SCCACHE_SERVER_PORT", port.to_string())
            .env("SCCACHE_IDLE_TIMEOUT", "120")
            .env("NVCC_ORION_NVCC", &nvcc)
            .env("NVCC_ORION_CACHE", d.join("orion-cache"))
            .env_remove("RUSTC_WRAPPER");
        cmd
    };
    let server = common::sccache::Server::start(with_env(&[]), port, label);
    let sc = |args: &[&std::ffi::OsStr]| with_env(args).output().unwrap();
    let report_flag = format!("--orion-report={}", report.display());
    let compile = |out: &str| {
        sc(&[
            env!("CARGO_BIN_EXE_nvcc-orion").as_ref(),
            "-c".as_ref(),
            "-arch=sm_90".as_ref(),
            report_flag.as_ref(),
            walk.as_os_str(),
            "-o".as_ref(),
            d.join(out).as_os_str(),
        ])
    };
    let runs = [compile("first.o"), compile("second.o")];
    let stats = sc(&["--show-stats".as_ref()]);
    drop(server);
    for o in &runs {
        assert!(
            o.status.success(),
            "{label}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let stats = String::from_utf8_lossy(&stats.stdout).into_owned();
    let count = |key: &str| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(count("Cache hits "), 1, "{label}:\n{stats}");
    assert_eq!(count("Cache misses "), 1, "{label}:\n{stats}");
    assert_eq!(
        std::fs::read(d.join("first.o")).unwrap(),
        std::fs::read(d.join("second.o")).unwrap(),
        "{label}: objects differ"
    );
    // The miss was tuned: one record, whose choice the object holds.
    let records = std::fs::read_to_string(&report).unwrap();
    assert_eq!(records.lines().count(), 1, "{records}");
    let v: serde_json::Value = serde_json::from_str(records.trim()).unwrap();
    let chosen = v["chosen_registers"].as_u64().unwrap() as u32;
    let ru = common::fixtures::res_usage(&d.join("second.o")).unwrap();
    let k = ru
        .iter()
        .find(|u| u.function.contains("walk_features"))
        .unwrap();
    assert_eq!(k.reg, chosen, "{records}");
}
