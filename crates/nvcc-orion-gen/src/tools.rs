//! The programs the harness runs: the real toolkit (nvcc, ptxas, cuobjdump, nvdisasm) and the
//! nvcc-orion binary under test.

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone)]
pub struct Tools {
    pub nvcc: PathBuf,
    pub ptxas: PathBuf,
    pub cuobjdump: PathBuf,
    pub nvdisasm: PathBuf,
    /// The nvcc-orion binary under test.
    pub orion: PathBuf,
}

impl Tools {
    /// The toolkit next to the real nvcc (`NVCC_ORION_NVCC`, `$CUDA_HOME/bin/nvcc`, or `nvcc` on
    /// `PATH`); `None` when there is none.
    pub fn find(orion: PathBuf) -> Option<Tools> {
        let nvcc = real_nvcc()?;
        let sib = |n: &str| {
            let p = nvcc.with_file_name(n);
            if p.is_file() { p } else { PathBuf::from(n) }
        };
        Some(Tools {
            ptxas: sib("ptxas"),
            cuobjdump: sib("cuobjdump"),
            nvdisasm: sib("nvdisasm"),
            nvcc,
            orion,
        })
    }
}

fn real_nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC_ORION_NVCC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    if let Some(h) = std::env::var_os("CUDA_HOME").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(h).join("bin").join("nvcc");
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
}

/// A finished command: success, and what it printed.
#[derive(Debug, Clone)]
pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Run `program args` in `dir` with `env` added and every `NVCC_ORION*` variable of ours
/// removed first (a setting in the caller's environment must not leak into a mode).
pub fn run(dir: &Path, program: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut c = Command::new(program);
    c.args(args).current_dir(dir);
    for (k, _) in std::env::vars_os() {
        if k.to_str()
            .is_some_and(|k| k == "NVCC_ORION" || k.starts_with("NVCC_ORION_"))
        {
            c.env_remove(k);
        }
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let start = std::time::Instant::now();
    let out = c.output();
    if std::env::var_os("ORION_GEN_TRACE").is_some() {
        eprintln!(
            "[{:.2}s] {} {}",
            start.elapsed().as_secs_f64(),
            program.display(),
            args.join(" ")
        );
    }
    match out {
        Ok(o) => Ran {
            ok: o.status.success(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        },
        Err(e) => Ran {
            ok: false,
            stdout: String::new(),
            stderr: format!("cannot run {}: {e}", program.display()),
        },
    }
}

/// Split a `--dryrun` command line the way `sh` would for the quoting nvcc prints (double
/// quotes around paths, no escapes inside).
pub fn split_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}
