//! `nvcc-orion --dryrun` for compiler caches that run nvcc's steps themselves.
//!
//! sccache asks `nvcc --dryrun` for the steps of a compile and then runs each itself, ptxas
//! included, with the `PATH` the listing's `#$ PATH=` line gives (docs/DESIGN.md §Caching
//! and compile farms), so a wrapper that only forwards `--dryrun` would never see a ptxas step.
//! nvcc-orion answers with nvcc's own listing, the `PATH` line starting with a directory whose
//! `ptxas` runs `nvcc-orion --ptxas`: each ptxas step sccache runs is then tuned like one
//! nvcc-orion replays. The shim finds the real ptxas next to the real nvcc, never itself.
//!
//! What the cache hashes for such a step is the shim's bytes and the step's command line, so
//! both carry what decides the output: the shim names nvcc-orion's identity (version and a
//! hash of its bytes), and every ptxas line carries `--orion-*` options restating the
//! settings that change the output (`Settings::output_options`), from the environment or
//! the command line alike. A changed setting or another nvcc-orion build is then a miss.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::settings::Settings;

/// Where shims live: next to the variant cache, else in the temporary directory.
pub fn shim_root(settings: &Settings) -> PathBuf {
    settings
        .cache
        .as_ref()
        .and_then(|c| c.parent().map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
}

/// The directory holding a `ptxas` that runs `exe --ptxas "$@"`, created under `root` if
/// missing: one per nvcc-orion binary, named by a hash of its path, size and time, and the
/// script names the binary's identity (hashing it only when the directory is new).
pub fn shim_dir(root: &Path, exe: &Path) -> std::io::Result<PathBuf> {
    let key = exe.to_string_lossy();
    let meta = std::fs::metadata(exe)?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{key}\0{}\0{mtime}", meta.len()).bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let dir = root.join(format!("ptxas-shim-{h:016x}"));
    let path = dir.join("ptxas");
    if std::fs::read_to_string(&path).is_ok_and(|s| s.ends_with(&exec_line(&key))) {
        return Ok(dir);
    }
    let script = format!(
        "#!/bin/sh\n# nvcc-orion's ptxas for steps a compiler cache runs from `nvcc-orion --dryrun`.\n# {}\n{}",
        crate::farm::identity::of_binary(exe)?,
        exec_line(&key)
    );
    std::fs::create_dir_all(&dir)?;
    // Written aside and renamed, so a concurrent compile never runs half a script.
    use std::os::unix::fs::PermissionsExt;
    crate::atomic_file::write_with(&path, Some(std::fs::Permissions::from_mode(0o755)), |f| {
        f.write_all(script.as_bytes())
    })?;
    Ok(dir)
}

fn exec_line(exe: &str) -> String {
    format!("exec {} --ptxas \"$@\"\n", shell_quote(exe))
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A word for a listing's shell line: as is when it needs no quoting.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=.,:/+%@".contains(&b))
    {
        s.to_string()
    } else {
        shell_quote(s)
    }
}

/// nvcc's dry-run listing with `dir` first on every `#$ PATH=` line and `options` after the
/// program of every ptxas line; every other line as is.
pub fn with_shim_first(listing: &str, dir: &Path, options: &[String]) -> String {
    let extra: String = options
        .iter()
        .map(|o| format!(" {}", shell_word(o)))
        .collect();
    let mut out = String::with_capacity(listing.len() + 64);
    for line in listing.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("#$ PATH=") {
            out.push_str("#$ PATH=");
            out.push_str(&dir.to_string_lossy());
            out.push(':');
            out.push_str(rest);
        } else if let Some(rest) = line.strip_prefix("#$ ")
            && let Some((program, args)) = rest.split_once(' ')
            && program.trim_matches('"').rsplit('/').next() == Some("ptxas")
        {
            out.push_str("#$ ");
            out.push_str(program);
            out.push_str(&extra);
            out.push(' ');
            out.push_str(args);
        } else {
            out.push_str(line);
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
        let got = with_shim_first(l, Path::new("/c/shim"), &[]);
        assert_eq!(
            got,
            "#$ _NVVM_BRANCH_=nvvm\n#$ PATH=/c/shim:/t/bin:/usr/bin\n#$ ptxas -arch=sm_80 -o a.cubin a.ptx\n"
        );
    }

    #[test]
    fn ptxas_lines_carry_the_options() {
        let l = "#$ PATH=/t/bin\n#$ \"$CICC_PATH/cicc\" -arch compute_80 a.cpp1.ii -o a.ptx\n#$ ptxas -arch=sm_80 -m64  \"a.ptx\"  -o \"a.cubin\" \n#$ /t/bin/ptxas -arch=sm_90 b.ptx -o b.cubin\n";
        let opts = [
            "--orion-force=lowest".to_string(),
            "--orion-block-size=k a:1".to_string(),
        ];
        let got = with_shim_first(l, Path::new("/s"), &opts);
        assert_eq!(
            got,
            "#$ PATH=/s:/t/bin\n#$ \"$CICC_PATH/cicc\" -arch compute_80 a.cpp1.ii -o a.ptx\n#$ ptxas --orion-force=lowest '--orion-block-size=k a:1' -arch=sm_80 -m64  \"a.ptx\"  -o \"a.cubin\" \n#$ /t/bin/ptxas --orion-force=lowest '--orion-block-size=k a:1' -arch=sm_90 b.ptx -o b.cubin\n"
        );
    }

    #[test]
    fn the_shim_runs_this_binary_in_ptxas_mode() {
        let root = tempfile::tempdir().unwrap();
        let exe = root.path().join("it's").join("nvcc-orion");
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        std::fs::write(&exe, b"one build").unwrap();
        let dir = shim_dir(root.path(), &exe).unwrap();
        let text = std::fs::read_to_string(dir.join("ptxas")).unwrap();
        let quoted = shell_quote(&exe.to_string_lossy());
        assert!(quoted.contains(r"'\''"), "{quoted}");
        assert!(
            text.ends_with(&format!("exec {quoted} --ptxas \"$@\"\n")),
            "{text}"
        );
        assert!(text.contains("nvcc-orion 0."), "{text}");
        // Idempotent: the same directory, the same script.
        assert_eq!(shim_dir(root.path(), &exe).unwrap(), dir);
        // Another build of nvcc-orion (other bytes) is another shim, with another identity.
        std::fs::write(&exe, b"another build").unwrap();
        let other = shim_dir(root.path(), &exe).unwrap();
        assert_ne!(other, dir);
        assert_ne!(std::fs::read(other.join("ptxas")).unwrap(), text.as_bytes());
    }
}
