//! Compile CUDA sources from a cargo build script through nvcc-orion, the way the `cc` crate
//! compiles C.
//!
//! ```no_run
//! // build.rs
//! nvcc_orion_build::Build::new()
//!     .file("kernels/saxpy.cu")
//!     .include("kernels")
//!     .arch("sm_90")
//!     .compile("kernels"); // libkernels.a, linked with the toolkit's static cudart
//! ```
//!
//! The objects are made by [`cc`]'s CUDA support (`cc::Build::cuda`): its host-compiler and
//! target flags, its archiver and its `cargo:` link lines. What this crate adds is small:
//! - nvcc-orion is found through `NVCC_ORION_BIN`, then `nvcc-orion` on `PATH`; without it
//!   the sources are compiled by the real nvcc with a `cargo:warning`, so a build never breaks
//!   for want of the tuner (`compiler`);
//! - each source is its own whole-program compile (cc gives several `.cu` files relocatable
//!   device code, for which nvcc-orion offers fewer rewrites), the sources side by side as
//!   cargo's jobserver allows (`jobs`); the compilers inherit the jobserver, so nvcc-orion's
//!   variant builds draw on the same tokens;
//! - the nvcc-orion flags (`--orion-block-size`), `-gencode`s from [`Build::arch`] or
//!   `CUDA_COMPUTE_CAP`, and PTX or cubin outputs, which cc does not make (`args`);
//! - debug profiles compile untuned (`NVCC_ORION=off`) unless `NVCC_ORION` says otherwise;
//! - every source and every header the compiler read is a `rerun-if-changed`.
//!
//! This crate only runs the nvcc-orion binary; it depends on none of nvcc-orion's code.

mod args;
mod compiler;
mod jobs;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use args::Output;

/// A failed build step, as one line.
#[derive(Debug)]
pub enum BuildError {
    /// A variable cargo sets for build scripts is missing.
    Env(&'static str),
    /// Neither nvcc-orion nor nvcc was found.
    NoCompiler,
    /// A program could not be started.
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// The compiler failed on a source.
    Failed {
        program: String,
        file: String,
        status: std::process::ExitStatus,
    },
    /// The `cc` crate failed (compiling a source, or archiving).
    Cc { file: String, message: String },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Env(v) => write!(f, "{v} is not set (run from a cargo build script)"),
            BuildError::NoCompiler => f.write_str(
                "no CUDA compiler: neither nvcc-orion (NVCC_ORION_BIN, PATH) nor nvcc found",
            ),
            BuildError::Spawn { program, source } => write!(f, "cannot run {program}: {source}"),
            BuildError::Failed {
                program,
                file,
                status,
            } => write!(f, "{program} failed on {file} ({status})"),
            BuildError::Cc { file, message } => write!(f, "{file}: {message}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A cc-style builder for CUDA sources.
#[derive(Debug, Clone)]
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

impl Default for Build {
    fn default() -> Build {
        Build::new()
    }
}

impl Build {
    pub fn new() -> Build {
        Build {
            files: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            flags: Vec::new(),
            gencodes: Vec::new(),
            block_sizes: Vec::new(),
            compiler: None,
            out_dir: None,
            cargo_metadata: true,
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
        self.gencodes.push(args::arch_gencode(sm));
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
        let out = self.out()?;
        let tool = self.tool()?;
        // Clones share cc's cache, so the compiler is probed once for all sources.
        let base = self.cc_base(&tool, &out);
        let cc_jobs = self
            .files
            .iter()
            .map(|file| {
                let depfile = args::output_path(&out, file, "o.d");
                let cc = self.cc_object(&base, &tool, file, &depfile);
                move || {
                    let mut objects =
                        cc.try_compile_intermediates().map_err(|e| BuildError::Cc {
                            file: file.display().to_string(),
                            message: e.to_string(),
                        })?;
                    Ok((objects.pop().unwrap_or_default(), depfile))
                }
            })
            .collect();
        let done = jobs::run_side_by_side(cc_jobs)?;
        let objects: Vec<PathBuf> = done.iter().map(|(o, _)| o.clone()).collect();
        self.print_rerun(done.iter().map(|(_, d)| d.as_path()));
        // No files on the archiving build: cc device-links only what it compiled itself.
        let archiver = base;
        let archive_err = |e: cc::Error| BuildError::Cc {
            file: format!("lib{name}.a"),
            message: e.to_string(),
        };
        let lib = archiver
            .try_create_archive(name, &objects)
            .map_err(archive_err)?;
        if self.cargo_metadata {
            // The archive, the C++ runtime and cudart_static (cc's lines), then what cc cannot
            // know: where the toolkit keeps cudart when the compiler is nvcc-orion, and the
            // system libraries cudart_static needs.
            cc::try_emit_link_directives(&archiver, &lib).map_err(archive_err)?;
            if let Some(libdir) = compiler::toolkit_lib_dir() {
                println!("cargo:rustc-link-search=native={}", libdir.display());
            }
            for l in ["dl", "rt", "pthread"] {
                println!("cargo:rustc-link-lib=dylib={l}");
            }
        }
        Ok(lib)
    }

    /// Compile every file to PTX; returns the `.ptx` paths.
    pub fn build_ptx(&self) -> Result<Vec<PathBuf>, BuildError> {
        self.run_direct(Output::Ptx)
    }

    /// Compile every file to a cubin (one architecture: the first `arch`); returns the paths.
    pub fn build_cubin(&self) -> Result<Vec<PathBuf>, BuildError> {
        self.run_direct(Output::Cubin)
    }

    fn out(&self) -> Result<PathBuf, BuildError> {
        match &self.out_dir {
            Some(d) => Ok(d.clone()),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or(BuildError::Env("OUT_DIR")),
        }
    }

    fn tool(&self) -> Result<compiler::Tool, BuildError> {
        compiler::find(self.compiler.as_deref(), self.cargo_metadata)
    }

    /// Whether this compile skips tuning: a debug profile, unless `NVCC_ORION` is set.
    fn untuned(tool: &compiler::Tool) -> bool {
        tool.is_orion
            && std::env::var("PROFILE").is_ok_and(|p| p == "debug")
            && std::env::var_os("NVCC_ORION").is_none()
    }

    /// The flags every output shares after the `-gencode`s: includes, defines, the user's
    /// flags, and nvcc-orion's own.
    fn common_args(&self, tool: &compiler::Tool) -> Vec<String> {
        let mut a: Vec<String> = self
            .includes
            .iter()
            .map(|i| format!("-I{}", i.display()))
            .collect();
        a.extend(self.defines.iter().map(|(k, v)| match v {
            Some(v) => format!("-D{k}={v}"),
            None => format!("-D{k}"),
        }));
        a.extend(self.flags.iter().cloned());
        if tool.is_orion {
            a.extend(
                self.block_sizes
                    .iter()
                    .map(|b| format!("--orion-block-size={b}")),
            );
        }
        a
    }

    /// A `cc` build with nvcc-orion as its CUDA compiler and nothing to compile yet.
    fn cc_base(&self, tool: &compiler::Tool, out: &Path) -> cc::Build {
        let mut cc = cc::Build::new();
        // cc takes its CUDA compiler from `NVCC` (its documented variable; `Build::compiler`
        // would name the host compiler instead), read from this build's copy of the
        // environment, without the target-specific spellings that would outrank it.
        let target = std::env::var("TARGET").unwrap_or_default();
        let outranking = [
            format!("NVCC_{target}"),
            format!("NVCC_{}", target.replace(['-', '.'], "_")),
            "HOST_NVCC".to_string(),
            "TARGET_NVCC".to_string(),
        ];
        let vars = std::env::vars_os()
            .filter(|(k, _)| !outranking.iter().any(|o| k.as_os_str() == o.as_str()))
            .chain([("NVCC".into(), tool.path.clone().into_os_string())]);
        cc.set_envs_snapshot(vars)
            .cuda(true)
            .out_dir(out)
            .cargo_metadata(self.cargo_metadata)
            // cc's debug profiles add `-G`: unoptimised device code, which nvcc-orion does not
            // tune. The old helper never passed it; keep device code as a release compile.
            .debug(false);
        cc
    }

    /// The `cc` build for one source's object, writing its dependency file.
    fn cc_object(
        &self,
        base: &cc::Build,
        tool: &compiler::Tool,
        file: &Path,
        depfile: &Path,
    ) -> cc::Build {
        let mut cc = base.clone();
        for a in args::gencode_args(&self.gencodes, Output::Object) {
            cc.flag(a);
        }
        for a in self.common_args(tool) {
            cc.flag(a);
        }
        cc.flag("-MD").flag("-MF").flag(depfile).file(file);
        if Self::untuned(tool) {
            cc.env("NVCC_ORION", "off");
        }
        cc
    }

    /// PTX and cubins, which cc does not make: the compiler runs directly, one per source.
    fn run_direct(&self, what: Output) -> Result<Vec<PathBuf>, BuildError> {
        let out = self.out()?;
        let tool = self.tool()?;
        let jobs_list = self
            .files
            .iter()
            .map(|file| {
                let ext = what.extension();
                let output = args::output_path(&out, file, ext);
                let depfile = args::output_path(&out, file, &format!("{ext}.d"));
                let mut cmd = Command::new(&tool.path);
                cmd.arg(what.flag())
                    .args(args::gencode_args(&self.gencodes, what))
                    .args(self.common_args(&tool));
                if Self::untuned(&tool) {
                    cmd.env("NVCC_ORION", "off");
                }
                cmd.arg("-MD").arg("-MF").arg(&depfile);
                cmd.arg(file).arg("-o").arg(&output);
                let program = tool.path.display().to_string();
                move || {
                    jobs::run_command(cmd, &program, file)?;
                    Ok((output, depfile))
                }
            })
            .collect();
        let done = jobs::run_side_by_side(jobs_list)?;
        self.print_rerun(done.iter().map(|(_, d)| d.as_path()));
        Ok(done.into_iter().map(|(o, _)| o).collect())
    }

    /// `rerun-if-changed` for every source and every header the dependency files name, and
    /// `rerun-if-env-changed` for the settings that change what is compiled.
    fn print_rerun<'a>(&self, depfiles: impl Iterator<Item = &'a Path>) {
        if !self.cargo_metadata {
            return;
        }
        let mut deps: std::collections::BTreeSet<PathBuf> = self.files.iter().cloned().collect();
        for d in depfiles {
            if let Ok(text) = std::fs::read_to_string(d) {
                deps.extend(args::depfile_paths(&text));
            }
        }
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
            "NVCC_ORION_SEARCH",
            "NVCC_ORION_REPORT",
        ] {
            println!("cargo:rerun-if-env-changed={v}");
        }
    }
}
