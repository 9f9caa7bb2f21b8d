//! The compiler-cache path: sccache asks `nvcc --dryrun` for a compile's steps and runs them
//! itself (reference/ecosystem.md §1.2). This test does what sccache does with the listing
//! `nvcc-orion --dryrun` gives: runs every step in a shell with the listing's environment,
//! and checks that the ptxas step went through nvcc-orion (a tuning record for the kernel)
//! and that the object it leaves links.
//!
//! Without nvcc the test prints a skip message and passes (with `CI` set it fails).

mod common;

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
    let Some(nvcc) = common::find_nvcc() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no nvcc found and CI is set"
        );
        eprintln!("skipping: no nvcc found");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("k.cu"), KERNEL).unwrap();
    let report = d.join("report.jsonl");
    let me = env!("CARGO_BIN_EXE_nvcc-orion");
    let out = Command::new(me)
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
        .env_remove("NVCC_ORION")
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
        .env_remove("NVCC_ORION")
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
