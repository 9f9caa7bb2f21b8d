//! `nvcc-orion --dryrun` for compiler caches that run nvcc's steps themselves.
//!
//! sccache asks `nvcc --dryrun` for the steps of a compile and then runs each itself, ptxas
//! included, with the `PATH` the listing's `#$ PATH=` line gives (reference/ecosystem.md
//! §1.2), so a wrapper that only forwards `--dryrun` would never see a ptxas step. nvcc-orion
//! answers with nvcc's own listing, the `PATH` line starting with a directory whose `ptxas`
//! runs `nvcc-orion --ptxas`: each ptxas step sccache runs is then tuned like one nvcc-orion
//! replays. The shim finds the real ptxas next to the real nvcc, never itself.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory holding a `ptxas` that runs `exe --ptxas "$@"`, created under `root` if
/// missing (one per nvcc-orion binary, named by a hash of its path).
pub fn shim_dir(root: &Path, exe: &Path) -> std::io::Result<PathBuf> {
    let key = exe.to_string_lossy();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let dir = root.join(format!("ptxas-shim-{h:016x}"));
    let script = format!(
        "#!/bin/sh\n# nvcc-orion's ptxas for steps a compiler cache runs from `nvcc-orion --dryrun`.\nexec {} --ptxas \"$@\"\n",
        shell_quote(&key)
    );
    let path = dir.join("ptxas");
    if std::fs::read_to_string(&path).is_ok_and(|s| s == script) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir)?;
    // Written aside and renamed, so a concurrent compile never runs half a script.
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    tmp.write_all(script.as_bytes())?;
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o755))?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(dir)
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// nvcc's dry-run listing with `dir` first on every `#$ PATH=` line; every other line as is.
pub fn with_shim_first(listing: &str, dir: &Path) -> String {
    let mut out = String::with_capacity(listing.len() + 64);
    for line in listing.split_inclusive('\n') {
        match line.strip_prefix("#$ PATH=") {
            Some(rest) => {
                out.push_str("#$ PATH=");
                out.push_str(&dir.to_string_lossy());
                out.push(':');
                out.push_str(rest);
            }
            None => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_path_line_changes() {
        let l = "#$ _NVVM_BRANCH_=nvvm\n#$ PATH=/t/bin:/usr/bin\n#$ ptxas -arch=sm_80 -o a.cubin a.ptx\n";
        let got = with_shim_first(l, Path::new("/c/shim"));
        assert_eq!(
            got,
            "#$ _NVVM_BRANCH_=nvvm\n#$ PATH=/c/shim:/t/bin:/usr/bin\n#$ ptxas -arch=sm_80 -o a.cubin a.ptx\n"
        );
    }

    #[test]
    fn the_shim_runs_this_binary_in_ptxas_mode() {
        let root = tempfile::tempdir().unwrap();
        let dir = shim_dir(root.path(), Path::new("/opt/it's/nvcc-orion")).unwrap();
        let text = std::fs::read_to_string(dir.join("ptxas")).unwrap();
        assert!(
            text.ends_with("exec '/opt/it'\\''s/nvcc-orion' --ptxas \"$@\"\n"),
            "{text}"
        );
        // Idempotent: the same directory, the same script.
        assert_eq!(
            shim_dir(root.path(), Path::new("/opt/it's/nvcc-orion")).unwrap(),
            dir
        );
    }
}
