//! The toolchain a remote builder (sccache-dist) runs nvcc-orion's ptxas steps with: nvcc-orion
//! in ptxas mode, the real ptxas and nvdisasm (the checker's disassembler), a `/bin/sh` for
//! the entry script, and every shared library they load, at the paths the loader expects.
//!
//! sccache-dist unpacks the archive as the root of a sandbox and runs [`ENTRY`] there with the
//! client's environment and the step's arguments (`--orion-*` options included). The entry
//! script points nvcc-orion at the packed toolkit, whatever the client's `NVCC_ORION_NVCC` or
//! `CUDA_HOME` say, turns the variant cache off (the sandbox is thrown away) and keeps
//! temporaries in the sandbox's own `/tmp`.

use std::path::{Path, PathBuf};

use super::archive::{Archive, ArchiveError};
use super::deps::{self, DepsError};
use crate::toolkit::Toolkit;

/// The program the client's configuration names as the archive's compiler.
pub const ENTRY: &str = "/nvcc-orion/bin/ptxas";
const ORION: &str = "/nvcc-orion/bin/nvcc-orion";
const TOOLKIT_BIN: &str = "/nvcc-orion/cuda/bin";

#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
    #[error(transparent)]
    Deps(#[from] DepsError),
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("{0} is missing: {1}")]
    Missing(PathBuf, std::io::Error),
}

fn entry_script() -> String {
    format!(
        "#!/bin/sh\n\
         # nvcc-orion's ptxas on a remote builder: the toolkit packed beside it, no variant\n\
         # cache (the sandbox is thrown away), temporaries in the sandbox's /tmp.\n\
         NVCC_ORION_NVCC={TOOLKIT_BIN}/nvcc\n\
         NVCC_ORION_CACHE=off\n\
         TMPDIR=/tmp\n\
         export NVCC_ORION_NVCC NVCC_ORION_CACHE TMPDIR\n\
         unset NVCC_ORION_REPORT NVCC_ORION_KEEP_CUBINS NVCC_ORION_PTXAS CUDA_HOME CUDA_PATH\n\
         exec {ORION} --ptxas \"$@\"\n"
    )
}

/// Stands where nvcc-orion looks for nvcc (it finds ptxas and nvdisasm next to it); never
/// run by a ptxas step. It must not name nvcc-orion, which would read as a shim of it.
const NVCC_PLACEHOLDER: &str = "#!/bin/sh\necho \"this toolchain runs ptxas steps only; nvcc is not part of it\" >&2\nexit 1\n";

/// The archive for `exe` (this nvcc-orion) and the real toolkit `tk`.
pub fn sccache_dist(exe: &Path, tk: &Toolkit) -> Result<Archive, ToolchainError> {
    let mut a = Archive::default();
    let mut programs: Vec<(String, PathBuf)> = vec![
        (ORION.to_string(), exe.to_path_buf()),
        (format!("{TOOLKIT_BIN}/ptxas"), tk.tool("ptxas")),
        (format!("{TOOLKIT_BIN}/nvdisasm"), tk.tool("nvdisasm")),
        ("/bin/sh".to_string(), PathBuf::from("/bin/sh")),
    ];
    for (at, src) in &mut programs {
        // The bytes, not a link that would dangle in the sandbox.
        *src = std::fs::canonicalize(&*src).map_err(|e| ToolchainError::Missing(src.clone(), e))?;
        a.add_file(at, src, true)?;
    }
    for (_, src) in &programs {
        for lib in deps::libraries(src)? {
            let real =
                std::fs::canonicalize(&lib).map_err(|e| ToolchainError::Missing(lib.clone(), e))?;
            // At the path the loader asks for (`/lib64/ld-linux-x86-64.so.2`, ...).
            a.add_file(&lib.to_string_lossy(), &real, true)?;
        }
    }
    a.add_bytes(ENTRY, entry_script().as_bytes(), true)?;
    a.add_bytes(
        &format!("{TOOLKIT_BIN}/nvcc"),
        NVCC_PLACEHOLDER.as_bytes(),
        true,
    )?;
    a.add_dir("/tmp", 0o1777)?;
    Ok(a)
}

/// The client configuration (sccache's TOML) that sends the ptxas steps of `shim` to the
/// archive, and keeps the programs `local` (cicc, cudafe++: they need the whole toolkit) on
/// the client.
pub fn client_config(shim: &Path, archive: &Path, local: &[PathBuf]) -> String {
    let q = |p: &Path| toml_string(&p.to_string_lossy());
    let mut s = format!(
        "[[dist.toolchains]]\n\
         type = \"path_override\"\n\
         compiler_executable = {}\n\
         archive = {}\n\
         archive_compiler_executable = \"{ENTRY}\"\n",
        q(shim),
        q(archive)
    );
    for c in local {
        s.push_str(&format!(
            "\n[[dist.toolchains]]\ntype = \"no_dist\"\ncompiler_executable = {}\n",
            q(c)
        ));
    }
    s
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed toolkit is the one a remote ptxas step runs: every variable that would
    /// point `--ptxas` at another ptxas (a client's `NVCC_ORION_PTXAS` above all, which
    /// `Toolkit::locate_ptxas` reads first) is unset, and `NVCC_ORION_NVCC` names the pack.
    #[test]
    fn entry_script_leaves_only_the_packed_toolkit() {
        let script = entry_script();
        let unset = script
            .lines()
            .find_map(|l| l.strip_prefix("unset "))
            .unwrap();
        for var in ["NVCC_ORION_PTXAS", "CUDA_HOME", "CUDA_PATH"] {
            assert!(unset.split(' ').any(|v| v == var), "{var}: {script}");
        }
        assert!(script.contains(&format!("NVCC_ORION_NVCC={TOOLKIT_BIN}/nvcc\n")));
    }

    #[test]
    fn config_names_the_shim_and_keeps_cicc_local() {
        let c = client_config(
            Path::new("/c/ptxas-shim-1/ptxas"),
            Path::new("/t/o\"rion.tar.gz"),
            &[PathBuf::from("/cuda/bin/../nvvm/bin/cicc")],
        );
        assert!(
            c.contains("compiler_executable = \"/c/ptxas-shim-1/ptxas\""),
            "{c}"
        );
        assert!(c.contains("archive = \"/t/o\\\"rion.tar.gz\""), "{c}");
        assert!(
            c.contains("archive_compiler_executable = \"/nvcc-orion/bin/ptxas\""),
            "{c}"
        );
        assert!(
            c.contains("type = \"no_dist\"\ncompiler_executable = \"/cuda/bin/../nvvm/bin/cicc\""),
            "{c}"
        );
    }

    #[test]
    fn the_placeholder_is_not_taken_for_a_shim() {
        // toolkit.rs refuses an nvcc whose script mentions nvcc-orion (it would recurse).
        assert!(!NVCC_PLACEHOLDER.contains("nvcc-orion"));
        assert!(entry_script().contains("--ptxas \"$@\""));
    }
}
