//! The shared libraries a program loads, as the system's `ldd` lists them: the paths a copy
//! of the program in another root needs (the dynamic loader included).

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum DepsError {
    #[error("cannot run ldd on {0}: {1}")]
    Run(PathBuf, std::io::Error),
    #[error("{0} needs {1}, which ldd cannot find")]
    NotFound(PathBuf, String),
}

/// The absolute paths of the libraries `program` loads (sorted, no duplicates); empty for a
/// static program or a script.
pub fn libraries(program: &Path) -> Result<Vec<PathBuf>, DepsError> {
    let out = Command::new("ldd")
        .arg(program)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| DepsError::Run(program.to_path_buf(), e))?;
    // ldd fails on static programs and scripts ("not a dynamic executable"): nothing to add.
    if !out.status.success() {
        return Ok(Vec::new());
    }
    parse(program, &String::from_utf8_lossy(&out.stdout))
}

/// The paths in `ldd`'s listing: `name => /path (0x…)` and the loader's own `/path (0x…)`.
fn parse(program: &Path, listing: &str) -> Result<Vec<PathBuf>, DepsError> {
    let mut libs = Vec::new();
    for line in listing.lines().map(str::trim) {
        let target = match line.split_once("=>") {
            Some((name, rest)) => {
                let rest = rest.trim();
                if rest.starts_with("not found") {
                    return Err(DepsError::NotFound(
                        program.to_path_buf(),
                        name.trim().to_string(),
                    ));
                }
                rest
            }
            None => line,
        };
        let path = target.split(" (").next().unwrap_or("").trim();
        // linux-vdso has no file; `statically linked` lines have no path.
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    libs.sort();
    libs.dedup();
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libraries_and_the_loader() {
        let l = "\tlinux-vdso.so.1 (0x00007f1acb516000)\n\
                 \tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f1ac8320000)\n\
                 \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1ac813e000)\n\
                 \t/lib64/ld-linux-x86-64.so.2 (0x00007f1acb518000)\n";
        let got = parse(Path::new("p"), l).unwrap();
        assert_eq!(
            got,
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                "/lib/x86_64-linux-gnu/libm.so.6".into(),
                "/lib64/ld-linux-x86-64.so.2".into()
            ]
        );
        let missing = "\tlibfoo.so.1 => not found\n";
        assert!(
            matches!(parse(Path::new("p"), missing), Err(DepsError::NotFound(_, n)) if n == "libfoo.so.1")
        );
    }

    #[test]
    fn a_real_program_needs_libc() {
        // /bin/sh exists wherever the tests run (they use it themselves).
        let libs = libraries(Path::new("/bin/sh")).unwrap();
        assert!(
            libs.iter().any(|l| l.to_string_lossy().contains("libc.so")),
            "{libs:?}"
        );
    }
}
