//! Which CUDA compiler runs: nvcc-orion (`Build::compiler`, `NVCC_ORION_BIN`, `PATH`), else
//! the real nvcc with a warning; and where the toolkit keeps `cudart_static`, which cc looks
//! for next to the compiler (wrong for nvcc-orion, which lives in cargo's target folder).

use std::path::{Path, PathBuf};

use crate::BuildError;

/// The compiler, and whether it is nvcc-orion (which takes `--orion-*` flags).
#[derive(Debug, Clone)]
pub(crate) struct Tool {
    pub(crate) path: PathBuf,
    pub(crate) is_orion: bool,
}

/// nvcc-orion, or the real nvcc with a `cargo:warning` when `warn`.
pub(crate) fn find(explicit: Option<&Path>, warn: bool) -> Result<Tool, BuildError> {
    let orion = explicit
        .map(Path::to_path_buf)
        .or_else(|| {
            std::env::var_os("NVCC_ORION_BIN")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| on_path("nvcc-orion"));
    if let Some(path) = orion {
        return Ok(Tool {
            path,
            is_orion: true,
        });
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
        .or_else(|| on_path("nvcc"))
        .ok_or(BuildError::NoCompiler)?;
    if warn {
        println!(
            "cargo:warning=nvcc-orion not found (NVCC_ORION_BIN, PATH): compiling with plain {}",
            nvcc.display()
        );
    }
    Ok(Tool {
        path: nvcc,
        is_orion: false,
    })
}

/// The toolkit's library folder holding `libcudart_static.a`, found as nvcc-orion finds the
/// toolkit: `NVCC_ORION_NVCC`, `CUDA_HOME`/`CUDA_PATH`, then nvcc on `PATH`.
pub(crate) fn toolkit_lib_dir() -> Option<PathBuf> {
    let home = std::env::var_os("NVCC_ORION_NVCC")
        .and_then(|n| Some(PathBuf::from(n).parent()?.parent()?.to_path_buf()))
        .or_else(|| {
            ["CUDA_HOME", "CUDA_PATH"]
                .iter()
                .filter_map(std::env::var_os)
                .map(PathBuf::from)
                .find(|h| h.join("bin/nvcc").is_file())
        })
        .or_else(|| Some(on_path("nvcc")?.parent()?.parent()?.to_path_buf()))?;
    ["lib64", "lib"]
        .iter()
        .map(|l| home.join(l))
        .find(|d| d.join("libcudart_static.a").is_file())
}

/// The first executable file called `name` in a `PATH` folder.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}
