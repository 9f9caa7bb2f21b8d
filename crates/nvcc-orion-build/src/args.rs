//! The compiler arguments cc does not know: `-gencode`s (from `arch`, `gencode` or
//! `CUDA_COMPUTE_CAP`), the single `-arch` that PTX and cubin outputs take, stable output
//! names, and the paths in a make-style dependency file.

use std::path::{Path, PathBuf};

/// What to produce from each source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Object,
    Ptx,
    Cubin,
}

impl Output {
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Output::Object => "o",
            Output::Ptx => "ptx",
            Output::Cubin => "cubin",
        }
    }

    /// nvcc's flag for this output (objects are cc's `-c`).
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Output::Object => "-c",
            Output::Ptx => "-ptx",
            Output::Cubin => "-cubin",
        }
    }
}

/// `sm_90`, `compute_90` or `90` as a `-gencode` for that real architecture.
pub(crate) fn arch_gencode(sm: &str) -> String {
    let n = sm.trim_start_matches("sm_").trim_start_matches("compute_");
    format!("-gencode=arch=compute_{n},code=sm_{n}")
}

/// The `-gencode` flags: those given, else `CUDA_COMPUTE_CAP` (e.g. `90`), else nvcc's
/// default. PTX and cubins take a single `-arch`: the first gencode's virtual architecture
/// for PTX, its real one for a cubin (`90`, `90a`, ...).
pub(crate) fn gencode_args(given: &[String], what: Output) -> Vec<String> {
    let mut g = given.to_vec();
    if g.is_empty()
        && let Ok(cap) = std::env::var("CUDA_COMPUTE_CAP")
    {
        let cap = cap.trim().replace('.', "");
        if !cap.is_empty() && cap.chars().all(|c| c.is_ascii_digit()) {
            g.push(format!("-gencode=arch=compute_{cap},code=sm_{cap}"));
        }
    }
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

/// `<out>/<stem>-<hash of the source path>.<ext>`: two sources with one name in different
/// folders do not collide, and the name is the same on every run.
pub(crate) fn output_path(out: &Path, file: &Path, ext: &str) -> PathBuf {
    let mut name = file
        .file_stem()
        .map_or_else(|| "cuda".into(), |s| s.to_os_string());
    name.push(format!(
        "-{:08x}.{ext}",
        fnv(file.display().to_string().as_bytes())
    ));
    out.join(name)
}

/// The paths in a make-style dependency file (`target: dep dep \` ...), spaces escaped by `\`.
pub(crate) fn depfile_paths(text: &str) -> Vec<PathBuf> {
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
        let g = [arch_gencode("sm_90"), arch_gencode("80")];
        assert_eq!(
            gencode_args(&g, Output::Object),
            [
                "-gencode=arch=compute_90,code=sm_90",
                "-gencode=arch=compute_80,code=sm_80"
            ]
        );
        assert_eq!(gencode_args(&g, Output::Cubin), ["-arch=sm_90"]);
        assert_eq!(gencode_args(&g, Output::Ptx), ["-arch=compute_90"]);
    }

    #[test]
    fn output_names_are_stable_and_distinct() {
        let out = Path::new("/out");
        let a = output_path(out, Path::new("a/k.cu"), "o");
        assert_eq!(a, output_path(out, Path::new("a/k.cu"), "o"));
        assert_ne!(a, output_path(out, Path::new("b/k.cu"), "o"));
        assert!(a.file_name().unwrap().to_str().unwrap().starts_with("k-"));
    }
}
