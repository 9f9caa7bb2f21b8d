//! ptxas's command line, as nvcc's dry run and tools such as Triton write it: where the PTX
//! input is, where the cubin goes (`-o F`, `--output-file F`, `--output-file=F`, `-o=F`), and
//! the target (`-arch sm_90`, `-arch=sm_90`, `--gpu-name sm_90a`, ...). Anything else passes
//! through untouched. A command line we cannot place the files of (PTX given as a string, an
//! options file, no output) is not tuned.

use std::path::PathBuf;

/// ptxas options that take a value (ptxas 13.5 `--help`), long and short spellings.
const VALUED: &[&str] = &[
    "--Ofast-compile",
    "-Ofc",
    "--allow-expensive-optimizations",
    "-allow-expensive-optimizations",
    "--def-load-cache",
    "-dlcm",
    "--def-store-cache",
    "-dscm",
    "--device-function-maxrregcount",
    "-func-maxrregcount",
    "--device-stack-protector",
    "-device-stack-protector",
    "--enable-func-clone-sc",
    "-enable-func-clone-sc",
    "--entry",
    "-e",
    "--fmad",
    "-fmad",
    "--gpu-name",
    "-arch",
    "--machine",
    "-m",
    "--maxntid",
    "-maxntid",
    "--maxrregcount",
    "-maxrregcount",
    "--minnctapersm",
    "-minnctapersm",
    "--opt-level",
    "-O",
    "--output-file",
    "-o",
    "--position-independent-code",
    "-pic",
    "--register-usage-level",
    "-regUsageLevel",
    "--sanitize",
    "-sanitize",
    "--split-compile",
    "-split-compile",
];

/// Options that put the input somewhere we cannot follow.
const UNFOLLOWABLE: &[&str] = &["--input-as-string", "-ias", "--options-file", "-optf"];

/// Where the output path is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputArg {
    /// `-o F` / `--output-file F`: the path is the argument at this index.
    Separate(usize),
    /// `--output-file=F` / `-o=F`: this argument, after its `=`.
    Joined(usize),
}

/// The files of a ptxas command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxasArgs {
    /// Index of the PTX input.
    pub(crate) input: usize,
    pub(crate) output: OutputArg,
    /// `sm_90`, `sm_90a`, ... when given.
    pub arch: Option<String>,
}

fn name_of(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(n, _)| n)
}

impl PtxasArgs {
    /// Read `argv` (program first). `None` when the files cannot be placed.
    pub fn parse(argv: &[String]) -> Option<PtxasArgs> {
        let mut output = None;
        let mut arch = None;
        let mut positional = Vec::new();
        let mut i = 1;
        while i < argv.len() {
            let a = argv[i].as_str();
            let name = name_of(a);
            if UNFOLLOWABLE.contains(&name) {
                return None;
            }
            let joined = a.contains('=') && a.starts_with('-');
            let is_out = matches!(name, "-o" | "--output-file");
            let is_arch = matches!(name, "-arch" | "--gpu-name");
            if a.starts_with('-') && VALUED.contains(&name) {
                if joined {
                    if is_out {
                        output = Some(OutputArg::Joined(i));
                    }
                    if is_arch {
                        arch = a.split_once('=').map(|(_, v)| v.to_string());
                    }
                } else {
                    if is_out {
                        output = Some(OutputArg::Separate(i + 1));
                    }
                    if is_arch {
                        arch = argv.get(i + 1).cloned();
                    }
                    i += 1; // the value
                }
            } else if !a.starts_with('-') {
                positional.push(i);
            }
            i += 1;
        }
        let output = output.filter(|o| match *o {
            OutputArg::Separate(j) => j < argv.len(),
            OutputArg::Joined(_) => true,
        })?;
        // The PTX: a `.ptx` file if there is one, else the only positional argument.
        let input = positional
            .iter()
            .copied()
            .rfind(|&j| argv[j].ends_with(".ptx"))
            .or_else(|| (positional.len() == 1).then(|| positional[0]))?;
        Some(PtxasArgs {
            input,
            output,
            arch,
        })
    }

    /// The output path as written.
    pub fn output_path(&self, argv: &[String]) -> PathBuf {
        match self.output {
            OutputArg::Separate(j) => PathBuf::from(&argv[j]),
            OutputArg::Joined(j) => PathBuf::from(argv[j].split_once('=').map_or("", |(_, v)| v)),
        }
    }

    /// Whether argument `i` is the input, the output, or part of the output option.
    pub fn is_file_arg(&self, i: usize) -> bool {
        i == self.input
            || match self.output {
                OutputArg::Separate(j) => i == j,
                OutputArg::Joined(j) => i == j,
            }
    }

    /// `argv` with the input and output replaced.
    pub fn with_files(&self, argv: &[String], ptx: &str, out: &str) -> Vec<String> {
        let mut v = argv.to_vec();
        v[self.input] = ptx.to_string();
        match self.output {
            OutputArg::Separate(j) => v[j] = out.to_string(),
            OutputArg::Joined(j) => {
                let name = name_of(&argv[j]).to_string();
                v[j] = format!("{name}={out}");
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn nvcc_and_triton_forms() {
        // nvcc's dry run.
        let a = args("ptxas -arch=sm_90 -m64 -O3 /t/x.ptx -o /t/x.cubin");
        let p = PtxasArgs::parse(&a).unwrap();
        assert_eq!((p.input, p.arch.as_deref()), (4, Some("sm_90")));
        assert_eq!(p.output_path(&a), PathBuf::from("/t/x.cubin"));
        // Triton: --gpu-name=, -lineinfo, -v, --opt-level N, output after the input.
        let a =
            args("ptxas -lineinfo -v --gpu-name=sm_90a --opt-level 3 /tmp/k.ptx -o /tmp/k.ptx.o");
        let p = PtxasArgs::parse(&a).unwrap();
        assert_eq!((p.input, p.arch.as_deref()), (6, Some("sm_90a")));
        assert_eq!(p.output_path(&a), PathBuf::from("/tmp/k.ptx.o"));
        // --output-file=, -arch separate, input without a .ptx suffix.
        let a = args("ptxas -arch sm_80 --output-file=/o/k.cubin -maxrregcount 32 kernel.s");
        let p = PtxasArgs::parse(&a).unwrap();
        assert_eq!((p.input, p.arch.as_deref()), (6, Some("sm_80")));
        assert_eq!(p.output_path(&a), PathBuf::from("/o/k.cubin"));
        let v = p.with_files(&a, "/w/v.ptx", "/w/v.cubin");
        assert_eq!(
            v,
            args("ptxas -arch sm_80 --output-file=/w/v.cubin -maxrregcount 32 /w/v.ptx")
        );
        assert!(p.is_file_arg(6) && p.is_file_arg(3) && !p.is_file_arg(2));
    }

    #[test]
    fn unfollowable_command_lines() {
        assert_eq!(PtxasArgs::parse(&args("ptxas -arch=sm_90 k.ptx")), None);
        assert_eq!(PtxasArgs::parse(&args("ptxas -arch=sm_90 -o")), None);
        assert_eq!(
            PtxasArgs::parse(&args("ptxas -arch=sm_90 -ias .version -o k.cubin")),
            None
        );
        assert_eq!(
            PtxasArgs::parse(&args("ptxas --options-file f -o k.cubin")),
            None
        );
        // Two inputs, neither .ptx: ambiguous.
        assert_eq!(PtxasArgs::parse(&args("ptxas a b -o k.cubin")), None);
    }
}
