//! The cargo helper: compile CUDA sources from a `build.rs` through nvcc-orion, in the manner
//! of the `cc` crate.
//!
//! ```no_run
//! // build.rs
//! nvcc_orion::Build::new()
//!     .file("kernels/saxpy.cu")
//!     .include("kernels")
//!     .arch("sm_90")
//!     .compile("kernels"); // libkernels.a, linked with the toolkit's static cudart
//! ```
//!
//! nvcc-orion is found through `NVCC_ORION_BIN`, then `nvcc-orion` on `PATH`; without it the
//! sources are compiled by the real nvcc with a `cargo:warning`, so a build never breaks for
//! want of the tuner. Debug profiles are compiled without tuning (`NVCC_ORION=off`) unless
//! `NVCC_ORION` says otherwise. Sources compile side by side as cargo's jobserver allows,
//! and each compiler run gets the jobserver, so nvcc-orion's variant builds share its tokens.
//! Every source and every header the compiler read is a `rerun-if-changed`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A failed build step, as one line.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0} is not set (run from a cargo build script)")]
    Env(&'static str),
    #[error("no CUDA compiler: neither nvcc-orion (NVCC_ORION_BIN, PATH) nor nvcc found")]
    NoCompiler,
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} failed on {file} ({status})")]
    Failed {
        program: String,
        file: String,
        status: std::process::ExitStatus,
    },
    #[error("{0}")]
    Io(String),
}

/// What to produce from each source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    Object,
    Ptx,
    Cubin,
}

/// A cc-style builder for CUDA sources.
#[derive(Debug, Clone, Default)]
pub struct Build {
    files: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    flags: Vec<String>,
    gencodes: Vec<String>,
    block_sizes: Vec<String>,
    compiler: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    cargo_metadata: bool,
}

impl Build {
    pub fn new() -> Build {
        Build {
            cargo_metadata: true,
            ..Build::default()
        }
    }

    pub fn file(&mut self, p: impl AsRef<Path>) -> &mut Build {
        self.files.push(p.as_ref().to_path_buf());
        self
    }

    pub fn files<P: AsRef<Path>>(&mut self, ps: impl IntoIterator<Item = P>) -> &mut Build {
        self.files
            .extend(ps.into_iter().map(|p| p.as_ref().to_path_buf()));
        self
    }

    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.includes.push(dir.as_ref().to_path_buf());
        self
    }

    pub fn define(&mut self, name: &str, value: Option<&str>) -> &mut Build {
        self.defines
            .push((name.to_string(), value.map(str::to_string)));
        self
    }

    /// Any nvcc flag.
    pub fn flag(&mut self, f: &str) -> &mut Build {
        self.flags.push(f.to_string());
        self
    }

    /// A real architecture, `sm_90` or `90`: SASS for it (and PTX for the newest one given).
    pub fn arch(&mut self, sm: &str) -> &mut Build {
        let n = sm.trim_start_matches("sm_").trim_start_matches("compute_");
        self.gencodes
            .push(format!("-gencode=arch=compute_{n},code=sm_{n}"));
        self
    }

    /// A raw `-gencode` value, `arch=compute_90,code=[sm_90,compute_90]`.
    pub fn gencode(&mut self, spec: &str) -> &mut Build {
        self.gencodes.push(format!("-gencode={spec}"));
        self
    }

    /// Threads per block to tune for: `256`, or `kernel:256`.
    pub fn block_size(&mut self, spec: &str) -> &mut Build {
        self.block_sizes.push(spec.to_string());
        self
    }

    /// The compiler to run instead of looking for nvcc-orion.
    pub fn compiler(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.compiler = Some(path.as_ref().to_path_buf());
        self
    }

    /// Where outputs go (default: cargo's `OUT_DIR`).
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:` lines (default true).
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Build {
        self.cargo_metadata = on;
        self
    }

    /// Compile every file into `lib<name>.a` and tell cargo to link it and the toolkit's static
    /// CUDA runtime. Panics with the error, as build scripts expect.
    pub fn compile(&self, name: &str) {
        if let Err(e) = self.try_compile(name) {
            panic!("nvcc-orion build: {e}");
        }
    }

    /// [`Build::compile`], returning the error.
    pub fn try_compile(&self, name: &str) -> Result<PathBuf, BuildError> {
        let objects = self.run_all(Output::Object)?;
        let out = self.out()?;
        let lib = out.join(format!("lib{name}.a"));
        let _ = std::fs::remove_file(&lib);
        let mut ar = Command::new(std::env::var_os("AR").unwrap_or_else(|| "ar".into()));
        ar.arg("crs").arg(&lib).args(&objects);
        let status = ar.status().map_err(|source| BuildError::Spawn {
            program: "ar".into(),
            source,
        })?;
        if !status.success() {
            return Err(BuildError::Failed {
                program: "ar".into(),
                file: lib.display().to_string(),
                status,
            });
        }
        if self.cargo_metadata {
            println!("cargo:rustc-link-search=native={}", out.display());
            println!("cargo:rustc-link-lib=static={name}");
            if let Some(libdir) = self.toolkit_lib_dir() {
                println!("cargo:rustc-link-search=native={}", libdir.display());
            }
            println!("cargo:rustc-link-lib=static=cudart_static");
            for l in ["stdc++", "dl", "rt", "pthread"] {
                println!("cargo:rustc-link-lib=dylib={l}");
            }
        }
        Ok(lib)
    }

    /// Compile every file to PTX; returns the `.ptx` paths.
    pub fn build_ptx(&self) -> Result<Vec<PathBuf>, BuildError> {
        self.run_all(Output::Ptx)
    }

    /// Compile every file to a cubin (one architecture: the first `arch`); returns the paths.
    pub fn build_cubin(&self) -> Result<Vec<PathBuf>, BuildError> {
        self.run_all(Output::Cubin)
    }

    fn out(&self) -> Result<PathBuf, BuildError> {
        match &self.out_dir {
            Some(d) => Ok(d.clone()),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or(BuildError::Env("OUT_DIR")),
        }
    }

    /// nvcc-orion, or the real nvcc with a warning.
    fn program(&self) -> Result<(PathBuf, bool), BuildError> {
        if let Some(c) = &self.compiler {
            return Ok((c.clone(), true));
        }
        if let Some(p) = std::env::var_os("NVCC_ORION_BIN").filter(|p| !p.is_empty()) {
            return Ok((PathBuf::from(p), true));
        }
        if let Ok(p) = which::which("nvcc-orion") {
            return Ok((p, true));
        }
        let nvcc = std::env::var_os("NVCC_ORION_NVCC")
            .map(PathBuf::from)
            .or_else(|| {
                ["CUDA_HOME", "CUDA_PATH"]
                    .iter()
                    .filter_map(std::env::var_os)
                    .map(|h| Path::new(&h).join("bin/nvcc"))
                    .find(|p| p.is_file())
            })
            .or_else(|| which::which("nvcc").ok())
            .ok_or(BuildError::NoCompiler)?;
        if self.cargo_metadata {
            println!(
                "cargo:warning=nvcc-orion not found (NVCC_ORION_BIN, PATH): compiling with plain {}",
                nvcc.display()
            );
        }
        Ok((nvcc, false))
    }

    /// The toolkit's library folder (for cudart_static), from nvcc-orion's own lookup.
    fn toolkit_lib_dir(&self) -> Option<PathBuf> {
        let home = std::env::var_os("NVCC_ORION_NVCC")
            .map(|n| PathBuf::from(n).parent()?.parent().map(Path::to_path_buf))
            .unwrap_or(None)
            .or_else(|| {
                ["CUDA_HOME", "CUDA_PATH"]
                    .iter()
                    .filter_map(std::env::var_os)
                    .map(PathBuf::from)
                    .find(|h| h.join("bin/nvcc").is_file())
            })
            .or_else(|| {
                let nvcc = which::which("nvcc").ok()?;
                nvcc.parent()?.parent().map(Path::to_path_buf)
            })?;
        ["lib64", "lib"]
            .iter()
            .map(|l| home.join(l))
            .find(|d| d.join("libcudart_static.a").is_file())
    }

    fn run_all(&self, what: Output) -> Result<Vec<PathBuf>, BuildError> {
        let out = self.out()?;
        let (program, is_orion) = self.program()?;
        let mut jobs = Vec::new();
        for file in &self.files {
            let stem = file
                .file_stem()
                .map_or_else(|| "cuda".into(), |s| s.to_os_string());
            // Two sources with one name in different folders must not collide.
            let tag = format!("{:08x}", fnv(file.display().to_string().as_bytes()));
            let ext = match what {
                Output::Object => "o",
                Output::Ptx => "ptx",
                Output::Cubin => "cubin",
            };
            let mut name = stem;
            name.push(format!("-{tag}.{ext}"));
            let obj = out.join(name);
            let depfile = obj.with_extension(format!("{ext}.d"));
            let mut cmd = Command::new(&program);
            cmd.arg(match what {
                Output::Object => "-c",
                Output::Ptx => "-ptx",
                Output::Cubin => "-cubin",
            });
            cmd.args(self.gencode_args(what));
            for i in &self.includes {
                cmd.arg(format!("-I{}", i.display()));
            }
            for (k, v) in &self.defines {
                cmd.arg(match v {
                    Some(v) => format!("-D{k}={v}"),
                    None => format!("-D{k}"),
                });
            }
            if what == Output::Object {
                cmd.arg("-Xcompiler=-fPIC");
            }
            cmd.args(&self.flags);
            if is_orion {
                for b in &self.block_sizes {
                    cmd.arg(format!("--orion-block-size={b}"));
                }
                if std::env::var("PROFILE").is_ok_and(|p| p == "debug")
                    && std::env::var_os("NVCC_ORION").is_none()
                {
                    cmd.env("NVCC_ORION", "off");
                }
            }
            cmd.arg("-MD").arg("-MF").arg(&depfile);
            cmd.arg(file).arg("-o").arg(&obj);
            jobs.push((cmd, file.clone(), obj, depfile));
        }
        run_jobs(
            &program,
            jobs.iter_mut().map(|(c, f, _, _)| (c, f.as_path())),
        )?;
        let mut outputs = Vec::new();
        let mut deps = BTreeSet::new();
        for (_, file, obj, depfile) in jobs {
            deps.insert(file.clone());
            if let Ok(text) = std::fs::read_to_string(&depfile) {
                deps.extend(depfile_paths(&text));
            }
            outputs.push(obj);
        }
        if self.cargo_metadata {
            for d in &deps {
                println!("cargo:rerun-if-changed={}", d.display());
            }
            for v in [
                "NVCC_ORION_BIN",
                "NVCC_ORION",
                "NVCC_ORION_NVCC",
                "CUDA_HOME",
                "CUDA_PATH",
                "CUDA_COMPUTE_CAP",
                "NVCC_ORION_BLOCK_SIZE",
                "NVCC_ORION_MARGIN",
            ] {
                println!("cargo:rerun-if-env-changed={v}");
            }
        }
        Ok(outputs)
    }

    /// The `-gencode` flags: those given, else `CUDA_COMPUTE_CAP` (e.g. `90`), else nvcc's
    /// default. A cubin takes one architecture.
    fn gencode_args(&self, what: Output) -> Vec<String> {
        let mut g = self.gencodes.clone();
        if g.is_empty()
            && let Ok(cap) = std::env::var("CUDA_COMPUTE_CAP")
        {
            let cap = cap.trim().replace('.', "");
            if !cap.is_empty() && cap.chars().all(|c| c.is_ascii_digit()) {
                g.push(format!("-gencode=arch=compute_{cap},code=sm_{cap}"));
            }
        }
        // -ptx and -cubin take a single -arch: the first gencode's virtual architecture for
        // PTX, its real one for a cubin (`90`, `90a`, ...).
        let first = g.first().cloned();
        let number = |key: &str| -> Option<String> {
            let rest = first.as_deref()?.split(key).nth(1)?;
            let n: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            (!n.is_empty()).then_some(n)
        };
        match what {
            Output::Object => g,
            Output::Ptx => number("arch=compute_")
                .or_else(|| number("code=sm_"))
                .map(|n| vec![format!("-arch=compute_{n}")])
                .unwrap_or_default(),
            Output::Cubin => number("code=sm_")
                .or_else(|| number("arch=compute_"))
                .map(|n| vec![format!("-arch=sm_{n}")])
                .unwrap_or_default(),
        }
    }
}

/// Run the compiler commands, as many at once as cargo's jobserver allows (the build script's
/// own slot, plus every token that is free), each handed the jobserver so nvcc-orion's
/// variant builds draw on the same tokens. Without a jobserver (not under cargo or make), one
/// at a time. The first failure is reported once every started command has finished.
fn run_jobs<'a>(
    program: &Path,
    jobs: impl Iterator<Item = (&'a mut Command, &'a Path)>,
) -> Result<(), BuildError> {
    // Once per process: the client owns the inherited descriptors (as cc-rs keeps its own).
    static CLIENT: std::sync::OnceLock<Option<jobserver::Client>> = std::sync::OnceLock::new();
    // SAFETY: `from_env_ext` reads the descriptors MAKEFLAGS / CARGO_MAKEFLAGS name; with
    // `check_pipe` set it verifies they are the jobserver's pipe or fifo before using them, so
    // stale numbers that now name other files of this process are refused, not read.
    let client = CLIENT
        .get_or_init(|| unsafe { jobserver::Client::from_env_ext(true) }.client.ok())
        .as_ref();
    let spawn_err = |source| BuildError::Spawn {
        program: program.display().to_string(),
        source,
    };
    type Running<'a> = (std::process::Child, &'a Path, Option<jobserver::Acquired>);
    let mut running: Vec<Running> = Vec::new();
    let mut failed: Option<BuildError> = None;
    let finish = |(mut child, file, token): Running,
                  failed: &mut Option<BuildError>|
     -> Result<(), BuildError> {
        let status = child.wait().map_err(spawn_err)?;
        drop(token);
        if !status.success() && failed.is_none() {
            *failed = Some(BuildError::Failed {
                program: program.display().to_string(),
                file: file.display().to_string(),
                status,
            });
        }
        Ok(())
    };
    for (cmd, file) in jobs {
        if failed.is_some() {
            break;
        }
        // A slot: our own when nothing runs, else a free token, else wait for the oldest.
        let token = loop {
            if running.is_empty() {
                break None;
            }
            if let Some(t) = client.and_then(|c| c.try_acquire().ok().flatten()) {
                break Some(t);
            }
            finish(running.remove(0), &mut failed)?;
        };
        if let Some(c) = client {
            c.configure(cmd);
        }
        match cmd.spawn() {
            Ok(child) => running.push((child, file, token)),
            Err(e) => {
                // Let what runs finish before reporting.
                failed.get_or_insert(spawn_err(e));
                break;
            }
        }
    }
    for r in running {
        finish(r, &mut failed)?;
    }
    failed.map_or(Ok(()), Err)
}

/// The paths in a make-style dependency file (`target: dep dep \` ...), spaces escaped by `\`.
fn depfile_paths(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let Some((_, deps)) = line.split_once(": ").or_else(|| line.split_once(":\t")) else {
            continue;
        };
        let mut cur = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    cur.push(' ');
                    chars.next();
                }
                ' ' | '\t' => {
                    if !cur.is_empty() {
                        out.push(PathBuf::from(std::mem::take(&mut cur)));
                    }
                }
                _ => cur.push(c),
            }
        }
        if !cur.is_empty() {
            out.push(PathBuf::from(cur));
        }
    }
    out
}

/// FNV-1a, for stable output names.
fn fnv(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depfile_paths_with_escapes_and_continuations() {
        let d = "k.o: /src/k.cu /inc/a.h \\\n  /inc/with\\ space.h\n";
        assert_eq!(
            depfile_paths(d),
            ["/src/k.cu", "/inc/a.h", "/inc/with space.h"].map(PathBuf::from)
        );
    }

    #[test]
    fn gencodes() {
        let mut b = Build::new();
        b.arch("sm_90").arch("80");
        assert_eq!(
            b.gencode_args(Output::Object),
            [
                "-gencode=arch=compute_90,code=sm_90",
                "-gencode=arch=compute_80,code=sm_80"
            ]
        );
        assert_eq!(b.gencode_args(Output::Cubin), ["-arch=sm_90"]);
        assert_eq!(b.gencode_args(Output::Ptx), ["-arch=compute_90"]);
    }
}
