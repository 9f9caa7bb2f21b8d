//! Finding the real CUDA toolkit: `NVCC_ORION_NVCC`, then `CUDA_HOME`/`CUDA_PATH`, then `nvcc`
//! on PATH with nvcc-orion itself and its shims skipped, so it never runs itself.
//!
//! `nvcc-orion --ptxas` (Triton and other JIT callers) needs only a ptxas
//! ([`Toolkit::locate_ptxas`]): a Triton user usually has no CUDA toolkit, only the ptxas
//! Triton bundles or the one of PyPI's `nvidia-cuda-nvcc` package.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    nvcc: PathBuf,
    /// The ptxas found by itself ([`Toolkit::locate_ptxas`]), which may be named otherwise
    /// than `ptxas`; `None`: the one next to nvcc.
    ptxas: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ToolkitError {
    #[error("{var} points at nvcc-orion itself ({path}); set NVCC_ORION_NVCC to the real nvcc")]
    Recursive { var: &'static str, path: PathBuf },
    #[error("NVCC_ORION_NVCC={0} is not an executable file")]
    BadExplicit(PathBuf),
    #[error(
        "cannot find the real nvcc; set NVCC_ORION_NVCC to its path or CUDA_HOME to the toolkit"
    )]
    NotFound,
    #[error("NVCC_ORION_PTXAS={0} is not an executable file")]
    BadExplicitPtxas(PathBuf),
    #[error("NVCC_ORION_PTXAS points at nvcc-orion itself ({0}); set it to a real ptxas")]
    RecursivePtxas(PathBuf),
    #[error(
        "cannot find a real ptxas (looked at NVCC_ORION_PTXAS, the CUDA toolkit, ptxas on PATH, \
         and Triton's or nvidia-cuda-nvcc's ptxas in the Python environments on PATH); set \
         NVCC_ORION_PTXAS to one"
    )]
    NoPtxas,
}

impl Toolkit {
    /// Look the toolkit up. `env` reads environment variables; `me` is nvcc-orion's own path.
    pub fn locate(env: &dyn Fn(&str) -> Option<OsString>, me: &Path) -> Result<Self, ToolkitError> {
        let me = std::fs::canonicalize(me).unwrap_or_else(|_| me.to_path_buf());
        if let Some(p) = env("NVCC_ORION_NVCC").filter(|p| !p.is_empty()) {
            let p = PathBuf::from(p);
            if !is_executable(&p) {
                return Err(ToolkitError::BadExplicit(p));
            }
            if is_us(&p, &me) {
                return Err(ToolkitError::Recursive {
                    var: "NVCC_ORION_NVCC",
                    path: p,
                });
            }
            return Ok(Toolkit::at(p));
        }
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            let Some(root) = env(var).filter(|p| !p.is_empty()) else {
                continue;
            };
            let p = Path::new(&root).join("bin").join("nvcc");
            if is_executable(&p) {
                if is_us(&p, &me) {
                    return Err(ToolkitError::Recursive { var, path: p });
                }
                return Ok(Toolkit::at(p));
            }
        }
        let path = env("PATH").unwrap_or_default();
        for dir in std::env::split_paths(&path) {
            let p = dir.join("nvcc");
            if is_executable(&p) && !is_us(&p, &me) {
                return Ok(Toolkit::at(p));
            }
        }
        Err(ToolkitError::NotFound)
    }

    fn at(nvcc: PathBuf) -> Toolkit {
        Toolkit { nvcc, ptxas: None }
    }

    /// The ptxas `nvcc-orion --ptxas` runs, with no nvcc needed: `NVCC_ORION_PTXAS`, then the
    /// toolkit's ([`Toolkit::locate`]), then `ptxas` on `PATH`, then the ptxas Python packages
    /// bring ([`python_ptxas`]); nvcc-orion and its shims are skipped everywhere. The toolkit
    /// found this way is ptxas's folder: `nvdisasm` and `cuobjdump` are looked for beside it
    /// (Triton bundles both), and [`Toolkit::nvcc`] names where nvcc would be, which nothing
    /// in that mode runs.
    pub fn locate_ptxas(
        env: &dyn Fn(&str) -> Option<OsString>,
        me: &Path,
    ) -> Result<Self, ToolkitError> {
        let me_real = std::fs::canonicalize(me).unwrap_or_else(|_| me.to_path_buf());
        let only = |ptxas: PathBuf| Toolkit {
            nvcc: ptxas.with_file_name("nvcc"),
            ptxas: Some(ptxas),
        };
        if let Some(p) = env("NVCC_ORION_PTXAS").filter(|p| !p.is_empty()) {
            let p = PathBuf::from(p);
            if !is_executable(&p) {
                return Err(ToolkitError::BadExplicitPtxas(p));
            }
            if is_us(&p, &me_real) {
                return Err(ToolkitError::RecursivePtxas(p));
            }
            return Ok(only(p));
        }
        match Toolkit::locate(env, me) {
            Ok(tk) if is_executable(&tk.tool("ptxas")) => return Ok(tk),
            // A wrong explicit setting is the user's to fix, not to guess around.
            Err(e @ (ToolkitError::BadExplicit(_) | ToolkitError::Recursive { .. })) => {
                return Err(e);
            }
            _ => {}
        }
        let path = env("PATH").unwrap_or_default();
        let on_path = std::env::split_paths(&path)
            .map(|dir| dir.join("ptxas"))
            .find(|p| is_executable(p) && !is_us(p, &me_real));
        on_path
            .or_else(|| python_ptxas(env, &me_real))
            .map(only)
            .ok_or(ToolkitError::NoPtxas)
    }

    pub fn nvcc(&self) -> &Path {
        &self.nvcc
    }

    /// The directory holding nvcc, where `ptxas`, `nvdisasm`, `cuobjdump`, `fatbinary` live too.
    pub(crate) fn bin_dir(&self) -> &Path {
        self.nvcc.parent().unwrap_or(Path::new("."))
    }

    /// A tool next to the real nvcc (`ptxas`, `nvdisasm`, `cuobjdump`, `fatbinary`, `nvlink`).
    pub fn tool(&self, name: &str) -> PathBuf {
        match &self.ptxas {
            Some(p) if name == "ptxas" => p.clone(),
            _ => self.bin_dir().join(name),
        }
    }
}

/// Where Python packages keep a ptxas below `site-packages`, in the order tried: Triton's
/// bundled one (what Triton itself runs by default), then PyPI's CUDA 13 and CUDA 12
/// `nvidia-cuda-nvcc` packages.
const PYTHON_PTXAS: [&str; 3] = [
    "triton/backends/nvidia/bin/ptxas",
    "nvidia/cu13/bin/ptxas",
    "nvidia/cuda_nvcc/bin/ptxas",
];

/// A ptxas a Python package brought, found without running Python (this runs on every
/// ptxas call): in the environments `VIRTUAL_ENV` and `CONDA_PREFIX` name, then in the one
/// of each `python3` on `PATH` (its folder's parent), `lib/python3.*/site-packages/`.
fn python_ptxas(env: &dyn Fn(&str) -> Option<OsString>, me: &Path) -> Option<PathBuf> {
    let mut prefixes: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .iter()
        .filter_map(|v| env(v).filter(|p| !p.is_empty()).map(PathBuf::from))
        .collect();
    let path = env("PATH").unwrap_or_default();
    prefixes.extend(
        std::env::split_paths(&path)
            .filter(|dir| dir.join("python3").exists())
            .filter_map(|dir| dir.parent().map(Path::to_path_buf)),
    );
    prefixes.iter().find_map(|prefix| {
        let mut libs: Vec<PathBuf> = std::fs::read_dir(prefix.join("lib"))
            .ok()?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path().join("site-packages"))
            .collect();
        // Newest Python first, and the same answer whatever order the folder lists in.
        libs.sort_by(|a, b| b.cmp(a));
        PYTHON_PTXAS.iter().find_map(|rel| {
            libs.iter()
                .map(|site| site.join(rel))
                .find(|p| is_executable(p) && !is_us(p, me))
        })
    })
}

/// A toolkit tool (`nvdisasm`, ...) next to the real nvcc this process would use (the
/// environment and `PATH`, never nvcc-orion itself), else next to the ptxas it would run
/// ([`Toolkit::locate_ptxas`]: Triton bundles `nvdisasm` beside its ptxas); `None` without
/// either, or where that folder lacks the tool.
pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    let me = std::env::current_exe().unwrap_or_else(|_| "nvcc-orion".into());
    let env = |k: &str| std::env::var_os(k);
    Toolkit::locate(&env, &me)
        .or_else(|_| Toolkit::locate_ptxas(&env, &me))
        .ok()
        .map(|t| t.tool(name))
        .filter(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Is `p` nvcc-orion itself, a link to it, or one of its shims (a script that runs it)?
fn is_us(p: &Path, me: &Path) -> bool {
    if std::fs::canonicalize(p).is_ok_and(|c| c == me) {
        return true;
    }
    // Shims are small scripts; a real nvcc is an ELF binary and never mentions us.
    // Read only the head: a real nvcc is tens of MB and this runs on every invocation.
    let mut bytes = Vec::with_capacity(4096);
    let read = std::fs::File::open(p).and_then(|f| {
        use std::io::Read;
        f.take(4096).read_to_end(&mut bytes)
    });
    if read.is_err() {
        return false;
    }
    bytes.starts_with(b"#!") && bytes.windows(10).any(|w| w == b"nvcc-orion")
}

/// A program's identity as the caches key tools (ptxas for variants, cuobjdump and nvdisasm
/// for the assembly check's verdicts): path, size, modification time.
pub fn program_identity(program: &Path) -> String {
    let meta = std::fs::metadata(program).ok();
    let mtime = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}:{}:{mtime}",
        program.display(),
        meta.map_or(0, |m| m.len())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    fn exe(path: &Path, body: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn lookup(vars: HashMap<&'static str, OsString>) -> impl Fn(&str) -> Option<OsString> {
        move |k| vars.get(k).cloned()
    }

    #[test]
    fn order_explicit_then_cuda_home_then_path_skipping_ourselves() {
        let d = tempfile::tempdir().unwrap();
        let me = d.path().join("orion/nvcc-orion");
        exe(&me, "\x7fELF me");
        let shim = d.path().join("shims/nvcc");
        exe(&shim, "#!/bin/sh\nexec nvcc-orion \"$@\"\n");
        let link = d.path().join("link/nvcc");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&me, &link).unwrap();
        let real = d.path().join("cuda/bin/nvcc");
        exe(&real, "\x7fELF real");
        let explicit = d.path().join("other/nvcc");
        exe(&explicit, "\x7fELF other");

        let path = std::env::join_paths([
            shim.parent().unwrap(),
            link.parent().unwrap(),
            real.parent().unwrap(),
        ])
        .unwrap();
        let env = lookup(HashMap::from([("PATH", path.clone())]));
        assert_eq!(Toolkit::locate(&env, &me).unwrap().nvcc(), real);

        let env = lookup(HashMap::from([
            ("PATH", path.clone()),
            ("CUDA_HOME", d.path().join("cuda").into()),
        ]));
        assert_eq!(
            Toolkit::locate(&env, &me).unwrap().tool("ptxas"),
            d.path().join("cuda/bin/ptxas")
        );

        let env = lookup(HashMap::from([
            ("PATH", path),
            ("NVCC_ORION_NVCC", explicit.clone().into()),
        ]));
        assert_eq!(Toolkit::locate(&env, &me).unwrap().nvcc(), explicit);
    }

    #[test]
    fn refuses_to_run_itself() {
        let d = tempfile::tempdir().unwrap();
        let me = d.path().join("nvcc-orion");
        exe(&me, "\x7fELF me");
        let env = lookup(HashMap::from([("NVCC_ORION_NVCC", me.clone().into())]));
        let err = Toolkit::locate(&env, &me).unwrap_err();
        assert!(err.to_string().contains("set NVCC_ORION_NVCC"), "{err}");
        let env = lookup(HashMap::from([("PATH", d.path().into())]));
        assert_eq!(Toolkit::locate(&env, &me), Err(ToolkitError::NotFound));
        assert!(
            ToolkitError::NotFound
                .to_string()
                .contains("NVCC_ORION_NVCC")
        );
    }

    #[test]
    fn ptxas_alone_explicit_then_toolkit_then_path_then_python_packages() {
        let d = tempfile::tempdir().unwrap();
        let me = d.path().join("orion/nvcc-orion");
        exe(&me, "\x7fELF me");
        let shim = d.path().join("shims/ptxas");
        exe(&shim, "#!/bin/sh\nexec nvcc-orion --ptxas \"$@\"\n");
        let venv = d.path().join("venv");
        exe(&venv.join("bin/python3"), "\x7fELF python");
        let site = venv.join("lib/python3.12/site-packages");
        let triton = site.join("triton/backends/nvidia/bin/ptxas");
        exe(&triton, "\x7fELF triton's ptxas");
        let pypi = site.join("nvidia/cu13/bin/ptxas");
        exe(&pypi, "\x7fELF nvidia-cuda-nvcc's ptxas");
        let path = |dirs: &[&Path]| std::env::join_paths(dirs).unwrap();
        let found = |vars: &[(&'static str, OsString)]| {
            Toolkit::locate_ptxas(&lookup(vars.iter().cloned().collect()), &me)
                .map(|t| t.tool("ptxas"))
        };

        // Nothing but the shim: one error naming the setting.
        let err = found(&[("PATH", path(&[shim.parent().unwrap()]))]).unwrap_err();
        assert_eq!(err, ToolkitError::NoPtxas);
        assert!(err.to_string().contains("NVCC_ORION_PTXAS"), "{err}");
        // A Python environment on PATH: Triton's bundled ptxas first, then PyPI's.
        let with_python = path(&[shim.parent().unwrap(), &venv.join("bin")]);
        assert_eq!(found(&[("PATH", with_python.clone())]), Ok(triton.clone()));
        std::fs::remove_file(&triton).unwrap();
        assert_eq!(found(&[("PATH", with_python.clone())]), Ok(pypi.clone()));
        // VIRTUAL_ENV without its python on PATH.
        assert_eq!(
            found(&[("VIRTUAL_ENV", venv.clone().into())]),
            Ok(pypi.clone())
        );
        // A ptxas on PATH (not the shim) comes before the Python packages.
        let bare = d.path().join("bare/ptxas");
        exe(&bare, "\x7fELF bare ptxas");
        let bare_first = path(&[
            shim.parent().unwrap(),
            bare.parent().unwrap(),
            &venv.join("bin"),
        ]);
        assert_eq!(found(&[("PATH", bare_first.clone())]), Ok(bare.clone()));
        // A toolkit comes before PATH, and tools are looked for beside its ptxas.
        let cuda = d.path().join("cuda/bin");
        exe(&cuda.join("nvcc"), "\x7fELF nvcc");
        exe(&cuda.join("ptxas"), "\x7fELF ptxas");
        let home = ("CUDA_HOME", d.path().join("cuda").into_os_string());
        assert_eq!(
            found(&[("PATH", bare_first.clone()), home.clone()]),
            Ok(cuda.join("ptxas"))
        );
        // The explicit setting wins, whatever its name; nvdisasm is looked for beside it.
        let explicit = d.path().join("other/ptxas-blackwell");
        exe(&explicit, "\x7fELF ptxas-blackwell");
        let tk = Toolkit::locate_ptxas(
            &lookup(HashMap::from([
                ("PATH", bare_first.clone()),
                home.clone(),
                ("NVCC_ORION_PTXAS", explicit.clone().into()),
            ])),
            &me,
        )
        .unwrap();
        assert_eq!(tk.tool("ptxas"), explicit);
        assert_eq!(tk.tool("nvdisasm"), d.path().join("other/nvdisasm"));
        // A wrong explicit setting, or one naming the shim, is an error, not a guess.
        let explicit = |bad: &Path| {
            found(&[
                ("PATH", bare_first.clone()),
                ("NVCC_ORION_PTXAS", bad.into()),
            ])
        };
        let missing = d.path().join("missing");
        assert_eq!(
            explicit(&missing),
            Err(ToolkitError::BadExplicitPtxas(missing.clone()))
        );
        assert_eq!(
            explicit(&shim),
            Err(ToolkitError::RecursivePtxas(shim.clone()))
        );
    }
}
