//! nvcc's option table, parsed from the `nvcc --help` text of CUDA 13.5.
//!
//! Help layout: `--long-name <arg>   (-short)` at column 0, then an indented description. The
//! argument column may be `<x>`, `<x>,...`, `{a|b}`, `[a,b]` or `entry,...`; any of them means
//! the option takes a value.

use std::collections::HashMap;
use std::sync::LazyLock;

/// The embedded `nvcc --help` of CUDA 13.5.
pub(crate) const HELP_TEXT: &str = include_str!("nvcc-13.5-help.txt");

/// Options whose help entry omits the argument column although nvcc requires a value
/// (verified on 13.5: `-MF` without a value fails, `-qpp-config foo` consumes `foo`).
const VALUE_WITHOUT_HELP_ARG: &[&str] = &["dependency-output", "qpp-config"];

/// One-letter short options that nvcc also accepts glued to their value (`-Ifoo`, `-t4`).
/// Verified on 13.5: `-o`, `-x`, `-e` and `-m` are NOT accepted glued (`-ox.o`, `-m32` are
/// unknown options; `-m64` is the separate flag `--m64`).
pub(crate) const GLUED_SHORTS: &[&str] = &["l", "D", "U", "I", "L", "O", "t"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptSpec {
    /// Long name without the leading `--`, e.g. `output-file`.
    pub(crate) long: String,
    /// Short name without the leading `-`, e.g. `o`; `None` when the help lists none.
    pub(crate) short: Option<String>,
    /// The option needs a value (`-o x`, `-o=x`, `--output-file=x`).
    pub(crate) takes_value: bool,
    /// The help marks the value as a comma-separated list (`<...>,...`).
    pub(crate) comma_list: bool,
}

/// The option table with lookups by either spelling.
#[derive(Debug, PartialEq, Eq)]
pub struct Table {
    pub(crate) specs: Vec<OptSpec>,
    by_long: HashMap<String, usize>,
    by_short: HashMap<String, usize>,
}

impl Table {
    /// Parse a help text. Lines that do not look like option headers are ignored.
    pub(crate) fn from_help(text: &str) -> Table {
        let mut specs = Vec::new();
        for line in text.lines() {
            if let Some(spec) = parse_header(line) {
                specs.push(spec);
            }
        }
        let mut by_long = HashMap::new();
        let mut by_short = HashMap::new();
        for (i, s) in specs.iter().enumerate() {
            by_long.entry(s.long.clone()).or_insert(i);
            if let Some(sh) = &s.short {
                by_short.entry(sh.clone()).or_insert(i);
            }
        }
        Table {
            specs,
            by_long,
            by_short,
        }
    }

    /// Look up `name` as written after `--`.
    pub fn long(&self, name: &str) -> Option<&OptSpec> {
        self.by_long.get(name).map(|&i| &self.specs[i])
    }

    /// Look up `name` as written after a single `-`.
    pub fn short(&self, name: &str) -> Option<&OptSpec> {
        self.by_short.get(name).map(|&i| &self.specs[i])
    }
}

/// The table of the embedded CUDA 13.5 help text.
pub(crate) static TABLE: LazyLock<Table> = LazyLock::new(|| Table::from_help(HELP_TEXT));

fn parse_header(line: &str) -> Option<OptSpec> {
    let rest = line.strip_prefix("--")?;
    let line = line.trim_end();
    let name_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let long = rest[..name_len].to_string();
    if long.is_empty() {
        return None;
    }
    let after = rest[name_len..].trim_end();
    // The short column is the last `(-x)`; the argument text itself may hold parentheses.
    let (arg, short) = match after.rfind(" (-") {
        Some(p) if line.ends_with(')') => {
            let short = after[p + 3..after.len() - 1].to_string();
            (after[..p].trim(), Some(short))
        }
        // `--no-align-double   --no-align-double`: the help repeats the long name, no short.
        _ => match after.trim().strip_prefix("--") {
            Some(_) => ("", None),
            None => (after.trim(), None),
        },
    };
    let takes_value = !arg.is_empty() || VALUE_WITHOUT_HELP_ARG.contains(&long.as_str());
    Some(OptSpec {
        comma_list: arg.ends_with(",..."),
        long,
        short,
        takes_value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_short(s: &str) -> &'static OptSpec {
        TABLE.short(s).unwrap_or_else(|| panic!("-{s} missing"))
    }

    #[test]
    fn table_is_complete() {
        assert!(TABLE.specs.len() > 150, "{}", TABLE.specs.len());
        assert_eq!(TABLE.specs.len(), 163);
    }

    #[test]
    fn arities() {
        for (s, long, val, list) in [
            ("o", "output-file", true, false),
            ("odir", "output-directory", true, false),
            ("gencode", "generate-code", true, true),
            ("Xptxas", "ptxas-options", true, true),
            ("Xcompiler", "compiler-options", true, true),
            ("maxrregcount", "maxrregcount", true, false),
            ("t", "threads", true, false),
            ("MF", "dependency-output", true, false),
            ("MT", "dependency-target-name", true, false),
            ("ccbin", "compiler-bindir", true, false),
            ("optf", "options-file", true, true),
            ("rdc", "relocatable-device-code", true, false),
            ("e", "entries", true, true),
            ("compress-mode", "compress-mode", true, false),
            (
                "fdevice-time-trace-granularity",
                "fdevice-time-trace-granularity",
                true,
                false,
            ),
            ("c", "compile", false, false),
            ("keep", "keep", false, false),
            ("MD", "generate-dependencies-with-compile", false, false),
            ("G", "device-debug", false, false),
        ] {
            let spec = by_short(s);
            assert_eq!(spec.long, long, "-{s}");
            assert_eq!(spec.takes_value, val, "-{s} takes value");
            assert_eq!(spec.comma_list, list, "-{s} comma list");
            assert_eq!(TABLE.long(long), Some(spec));
        }
    }

    #[test]
    fn option_without_short() {
        let s = TABLE.long("no-align-double").expect("listed");
        assert_eq!(s.short, None);
        assert!(!s.takes_value);
        assert!(TABLE.short("no-align-double").is_none());
    }

    #[test]
    fn descriptions_are_not_options() {
        // Indented example lines such as `        -arch=all ...` must not become entries.
        assert!(TABLE.long("arch=all").is_none());
        assert!(TABLE.specs.iter().all(|s| !s.long.contains('=')));
    }

    fn real_nvcc() -> Option<std::path::PathBuf> {
        let mut cands: Vec<std::path::PathBuf> = Vec::new();
        if let Ok(p) = std::env::var("NVCC_ORION_NVCC") {
            cands.push(p.into());
        }
        if let Ok(h) = std::env::var("CUDA_HOME") {
            cands.push(std::path::Path::new(&h).join("bin/nvcc"));
        }
        cands.push(
            "/root/.cache/nvcc-orion/cuda-venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc"
                .into(),
        );
        cands.into_iter().find(|p| p.is_file())
    }

    /// Guards drift between the embedded text and the installed nvcc.
    #[test]
    fn embedded_help_matches_installed_nvcc() {
        let Some(nvcc) = real_nvcc() else {
            eprintln!("no nvcc found; skipping drift check");
            return;
        };
        let out = std::process::Command::new(&nvcc)
            .arg("--help")
            .output()
            .expect("run nvcc");
        let text = String::from_utf8_lossy(&out.stdout);
        let live = Table::from_help(&text);
        assert_eq!(
            live.specs,
            TABLE.specs,
            "nvcc --help of {} differs",
            nvcc.display()
        );
    }
}
