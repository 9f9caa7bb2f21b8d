//! nvcc's argument grammar and the classification of one invocation.
//!
//! The option table comes from `nvcc --help` of CUDA 13.5 (`table.rs`), so every option is known
//! in both spellings. Classification decides whether an invocation is a device compile we may
//! tune (and replay step by step) or anything else, which is exec'ed unchanged.

use std::ffi::OsString;
use std::path::PathBuf;

mod classify;
mod optfile;
mod parse;
mod reason;
pub(crate) mod table;

use parse::{Origin, Stop};
pub use reason::{Blocker, OptionsFileProblem, PassReason};

/// One nvcc command line, understood.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// What the real nvcc gets: `argv[1..]` with every `--orion-*` option removed, otherwise
    /// byte-for-byte the user's arguments in the user's order.
    pub nvcc_args: Vec<OsString>,
    /// The `--orion-NAME[=VALUE]` options found on the command line, in order.
    pub orion_args: Vec<(String, Option<String>)>,
    /// Tunable device compile, or pass-through with the reason.
    pub class: Class,
    /// What the driver needs to know about a tunable invocation.
    pub facts: Facts,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// `-c`/`-dc`/`-cubin`/`-fatbin` of `.cu` input(s) with at least one real SASS target.
    Tunable,
    /// Anything else: exec the real nvcc unchanged, for this reason (verbose logs, the report).
    PassThrough(PassReason),
}

/// Facts taken from the expanded command line (options files and `NVCC_PREPEND_FLAGS` /
/// `NVCC_APPEND_FLAGS` included, in nvcc's precedence).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Input files, in command-line order.
    pub inputs: Vec<PathBuf>,
    /// `-o`/`--output-file`.
    pub output: Option<PathBuf>,
    /// `-odir`/`--output-directory`.
    pub output_dir: Option<PathBuf>,
    /// `-MT`/`--dependency-target-name` values, in order (nvcc uses the last one).
    pub dep_targets: Vec<String>,
    /// `--keep`/`-keep` or `--save-temps`/`-save-temps` given.
    pub keep: bool,
    /// `--keep-dir`/`-keep-dir`.
    pub keep_dir: Option<PathBuf>,
    /// `nvcc_args` with `-t N`/`--threads N` (every spelling) removed: nvcc's `--dryrun` output
    /// is grouped by tool, not in execution order, when threads are on.
    pub dryrun_args: Vec<OsString>,
    /// The user's register limit (`-maxrregcount`, or `-Xptxas -maxrregcount`): later issues
    /// never exceed it.
    pub user_maxrregcount: Option<u32>,
    /// `-G`/`--device-debug`.
    pub device_debug: bool,
    /// `-rdc=true`/`-dc`.
    pub relocatable: bool,
    /// `-MMD`/`-MM`: dependency files leave out system headers.
    pub dep_skip_system: bool,
    /// `-MP`: dependency files get a phony target per header.
    pub dep_phony: bool,
    /// No compile mode (or `-lib`): nvcc compiles the sources and links the program (or
    /// archives the objects) in one call. Objects and libraries may be inputs too.
    pub compile_and_link: bool,
}

impl Facts {
    /// The target name nvcc writes into a `-MD`/`-MMD` dependency file for `input`: the last
    /// `-MT`, else `-o`, else `[odir/]stem.o` (also for `-cubin`/`-fatbin`, as nvcc 13.5 does).
    pub(crate) fn dep_target(&self, input: &std::path::Path) -> String {
        if let Some(t) = self.dep_targets.last() {
            return t.clone();
        }
        if let Some(o) = &self.output {
            return o.display().to_string();
        }
        let stem = input.file_stem().unwrap_or_default().to_string_lossy();
        match &self.output_dir {
            Some(d) => format!("{}/{stem}.o", d.display()),
            None => format!("{stem}.o"),
        }
    }
}

impl Invocation {
    /// Why a pass-through invocation compiles `.cu` sources to SASS untuned, for the report
    /// (`None` when it is tuned, or builds no SASS).
    pub fn untuned_sass(&self) -> Option<&PassReason> {
        let Class::PassThrough(why) = &self.class else {
            return None;
        };
        let cu = self
            .facts
            .inputs
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "cu"));
        (cu && why.builds_sass()).then_some(why)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("cannot read options file {path}: {source}")]
    OptionsFile {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Parse `args` (argv without argv[0]). `env` looks up environment variables
/// (`NVCC_PREPEND_FLAGS`, `NVCC_APPEND_FLAGS`); relative options-file paths resolve against the
/// current directory. Never fails on an unknown option: that makes the invocation pass-through.
/// Fails only when an options file cannot be read (nvcc would fail too).
pub fn parse(
    args: &[OsString],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Invocation, CliError> {
    let mut nvcc_args = Vec::new();
    let mut orion_args = Vec::new();
    for a in args {
        if a.as_encoded_bytes().starts_with(b"--orion-") {
            let s = a.to_string_lossy();
            let rest = &s["--orion-".len()..];
            orion_args.push(match rest.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (rest.to_string(), None),
            });
        } else {
            nvcc_args.push(a.clone());
        }
    }
    let pass = |nvcc_args: Vec<OsString>, orion_args, why: PassReason| Invocation {
        facts: Facts {
            dryrun_args: nvcc_args.clone(),
            ..Facts::default()
        },
        nvcc_args,
        orion_args,
        class: Class::PassThrough(why),
    };
    let Some(utf8) = nvcc_args
        .iter()
        .map(|a| a.to_str().map(str::to_string))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(pass(nvcc_args, orion_args, PassReason::NonUtf8Argument));
    };
    // nvcc's order: NVCC_PREPEND_FLAGS, the command line, NVCC_APPEND_FLAGS.
    let prepend = env("NVCC_PREPEND_FLAGS")
        .map(|s| optfile::split_env_flags(&s))
        .unwrap_or_default();
    let append = env("NVCC_APPEND_FLAGS")
        .map(|s| optfile::split_env_flags(&s))
        .unwrap_or_default();
    let mut items = Vec::new();
    let tokenized = parse::tokenize(&prepend, false, Origin::Env, 0, &mut items)
        .and_then(|()| parse::tokenize(&utf8, true, Origin::Env, 0, &mut items))
        .and_then(|()| parse::tokenize(&append, false, Origin::Env, 0, &mut items));
    match tokenized {
        Ok(()) => {}
        Err(Stop::Pass(why)) => return Ok(pass(nvcc_args, orion_args, why)),
        Err(Stop::Io(e)) => return Err(e),
    }
    let (class, facts) = classify::classify(&items, &nvcc_args);
    Ok(Invocation {
        nvcc_args,
        orion_args,
        class,
        facts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn run_env(args: &[&str], prepend: Option<&str>, append: Option<&str>) -> Invocation {
        let (p, a) = (prepend.map(str::to_string), append.map(str::to_string));
        let env = move |k: &str| match k {
            "NVCC_PREPEND_FLAGS" => p.clone(),
            "NVCC_APPEND_FLAGS" => a.clone(),
            _ => None,
        };
        parse(&os(args), &env).expect("parse")
    }

    fn run(args: &[&str]) -> Invocation {
        run_env(args, None, None)
    }

    fn reason(args: &[&str]) -> String {
        match run(args).class {
            Class::PassThrough(r) => r.to_string(),
            Class::Tunable => panic!("{args:?} is tunable"),
        }
    }

    #[test]
    fn tunable_compiles() {
        for args in [
            &["-c", "k.cu"][..],
            &[
                "-c",
                "k.cu",
                "-o",
                "k.o",
                "-O3",
                "-Ifoo",
                "-DX=1",
                "-std=c++17",
            ],
            &["-dc", "k.cu"],
            &["-dw", "k.cu"],
            &["-cubin", "-arch=sm_80", "k.cu"],
            &["--fatbin", "k.cu"],
            &["-c", "a.cu", "b.cu", "-odir", "out"],
            &["-x", "cu", "-c", "k.cpp"],
            &["-c", "k.cu", "-MD", "-MF", "k.d", "-MT", "k.o", "-MP"],
            &[
                "-c",
                "k.cu",
                "--generate-code=arch=compute_80,code=[compute_80,sm_80]",
            ],
            &[
                "-c",
                "k.cu",
                "-gencode",
                "arch=compute_90,code=compute_90",
                "-gencode=arch=compute_80,code=sm_80",
            ],
            &["-c", "k.cu", "-arch=compute_80", "-code=sm_80,compute_80"],
            &["-c", "k.cu", "-arch=native"],
            &[
                "-c",
                "k.cu",
                "-rdc=true",
                "-Xcompiler",
                "-fPIC,-Wall",
                "-Xptxas=-v",
            ],
            &[
                "-c",
                "k.cu",
                "-t",
                "4",
                "--threads=2",
                "-lineinfo",
                "-keep",
                "-keep-dir",
                "tmp",
            ],
        ] {
            assert_eq!(run(args).class, Class::Tunable, "{args:?}");
        }
    }

    #[test]
    fn compiling_and_linking_in_one_call() {
        for args in [
            &["k.cu"][..],
            &["a.cu", "b.cu", "-o", "app", "-rdc=true"],
            &["a.cu", "b.o", "libc.a", "-o", "app"],
            &["-lib", "a.cu", "b.cu", "-o", "libab.a"],
            &["--lib", "a.cu", "b.o"],
        ] {
            let inv = run(args);
            assert_eq!(inv.class, Class::Tunable, "{args:?}");
            assert!(inv.facts.compile_and_link, "{args:?}");
        }
        assert!(!run(&["-c", "k.cu"]).facts.compile_and_link);
        assert_eq!(
            reason(&["a.cu", "b.ptx", "-o", "app"]),
            "input b.ptx is not a .cu/.c/.cc/.cpp/.cxx source nor an object or library"
        );
        assert_eq!(
            reason(&["-c", "a.cu", "b.o"]),
            "input b.o is not a .cu/.c/.cc/.cpp/.cxx source"
        );
        assert_eq!(
            reason(&["-lib", "-c", "k.cu"]),
            "-lib with {\"compile\"}",
            "the reason's text is the report's"
        );
    }

    #[test]
    fn pass_through_reasons() {
        for (args, want) in [
            (&["-c", "k.cpp"][..], "no .cu input"),
            (&["k.cu", "-MD"], "no compile mode"),
            (&["-c", "k.cu", "k.ptx"], "input k.ptx"),
            (&["-c", "k.cu", "a.o"], "input a.o"),
            (&["-c", "k.cu", "-x", "c++"], "-x c++"),
            (&["-E", "k.cu"], "-E"),
            (&["-M", "-c", "k.cu"], "-M"),
            (&["-MM", "k.cu"], "-MM"),
            (&["--version"], "--version"),
            (&["-c", "k.cu", "-V"], "--version"),
            (&["-h"], "--help"),
            (&["-c", "k.cu", "-v"], "-v"),
            (&["-c", "k.cu", "-dryrun"], "--dryrun"),
            (&["--list-gpu-arch"], "--list-gpu-arch"),
            (&["-c", "k.cu", "-G"], "-G"),
            (&["-ptx", "k.cu"], "-ptx"),
            (&["-lib", "-c", "k.cu"], "-lib with"),
            (&["-dlink", "a.o"], "-dlink"),
            (&["-c", "k.cu", "-dlto"], "-dlto"),
            (&["-c", "k.cu", "-arch=lto_90"], "LTO"),
            (&["-c", "k.cu", "-time", "t.csv"], "-time"),
            (&["-c", "k.cu", "-enable-tile"], "-enable-tile"),
            (&["-c", "k.cu", "-Xptxas", "-O3,-g"], "-Xptxas -g"),
            (&["-c", "k.cu", "-arch=compute_80"], "PTX only"),
            (
                &["-c", "k.cu", "-gencode", "arch=compute_80,code=compute_80"],
                "PTX only",
            ),
            (
                &["-c", "a.cu", "b.cu", "-o", "x.o"],
                "-o with several inputs",
            ),
            (
                &["-c", "k.cu", "-frobnicate"],
                "unknown option '-frobnicate'",
            ),
            (&["-c", "k.cu", "-ox.o"], "unknown option"),
            (&["-c", "k.cu", "-o"], "argument expected"),
            (&["-c", "-cubin", "k.cu"], "several compile modes"),
            (&["-dc", "-rdc=false", "k.cu"], "contradict"),
            (&["-c", "k.cu", "-maxrregcount=lots"], "bad -maxrregcount"),
        ] {
            let r = reason(args);
            assert!(r.contains(want), "{args:?}: {r:?} lacks {want:?}");
        }
    }

    #[test]
    fn untuned_sass_is_said_for_the_report() {
        let inv = run(&["-c", "k.cu", "-G"]);
        let why = inv.untuned_sass().expect("-G builds SASS untuned");
        assert!(matches!(why, PassReason::Option(b) if b.long == "device-debug"));
        assert_eq!(why.to_string(), "-G (device debug)");
        assert_eq!(
            run(&["k.cu", "-MD", "-o", "app"]).untuned_sass(),
            Some(&PassReason::DepfileWithoutCompileMode)
        );
        for quiet in [
            &["-E", "k.cu"][..],
            &["-ptx", "k.cu"],
            &["-c", "k.cu"],
            &["-c", "k.cpp", "-G"],
        ] {
            assert_eq!(run(quiet).untuned_sass(), None, "{quiet:?}");
        }
    }

    #[test]
    fn orion_args_are_removed_and_recorded() {
        let inv = run(&[
            "--orion-verbose",
            "-c",
            "--orion-budget=3",
            "k.cu",
            "--orion-x=",
        ]);
        assert_eq!(inv.nvcc_args, os(&["-c", "k.cu"]));
        assert_eq!(
            inv.orion_args,
            vec![
                ("verbose".to_string(), None),
                ("budget".to_string(), Some("3".to_string())),
                ("x".to_string(), Some(String::new())),
            ]
        );
        assert_eq!(inv.class, Class::Tunable);
    }

    #[test]
    fn non_utf8_passes_through() {
        use std::os::unix::ffi::OsStringExt;
        let args = vec![
            OsString::from("-c"),
            OsString::from_vec(b"k\xff.cu".to_vec()),
        ];
        let inv = parse(&args, &|_| None).unwrap();
        assert_eq!(inv.class, Class::PassThrough(PassReason::NonUtf8Argument));
        assert_eq!(inv.nvcc_args, args);
    }

    #[test]
    fn facts() {
        let inv = run(&[
            "-c",
            "-o",
            "out/k.o",
            "k.cu",
            "-odir",
            "d",
            "-MT",
            "a",
            "--dependency-target-name=b",
            "-save-temps",
            "--keep-dir=kd",
            "-rdc",
            "true",
        ]);
        let f = &inv.facts;
        assert_eq!(f.inputs, vec![PathBuf::from("k.cu")]);
        assert_eq!(f.output, Some(PathBuf::from("out/k.o")));
        assert_eq!(f.output_dir, Some(PathBuf::from("d")));
        assert_eq!(f.dep_targets, vec!["a".to_string(), "b".to_string()]);
        assert!(f.keep && f.relocatable && !f.device_debug);
        assert_eq!(f.keep_dir, Some(PathBuf::from("kd")));
        assert_eq!(f.user_maxrregcount, None);
        assert!(run(&["-dc", "k.cu"]).facts.relocatable);
        assert!(!run(&["-c", "k.cu", "-rdc=false"]).facts.relocatable);
        assert!(run(&["-c", "k.cu", "--device-debug"]).facts.device_debug);
    }

    #[test]
    fn dependency_file_style() {
        let f = run(&["-c", "k.cu", "-MMD", "-MP"]).facts;
        assert!(f.dep_skip_system && f.dep_phony);
        let f = run(&[
            "-c",
            "k.cu",
            "--generate-dependencies-with-compile",
            "-MF",
            "k.d",
        ])
        .facts;
        assert!(!f.dep_skip_system && !f.dep_phony);
        let f = run(&[
            "-c",
            "k.cu",
            "--generate-nonsystem-dependencies-with-compile",
            "--generate-dependency-targets",
        ])
        .facts;
        assert!(f.dep_skip_system && f.dep_phony);
    }

    #[test]
    fn dryrun_args_drop_threads_in_every_spelling() {
        let inv = run(&[
            "-t",
            "4",
            "-c",
            "-t8",
            "k.cu",
            "--threads",
            "2",
            "--threads=3",
            "-t=5",
            "-O2",
        ]);
        assert_eq!(inv.nvcc_args.len(), 10);
        assert_eq!(inv.facts.dryrun_args, os(&["-c", "k.cu", "-O2"]));
        assert_eq!(inv.class, Class::Tunable);
    }

    #[test]
    fn threads_outside_the_command_line_pass_through() {
        let inv = run_env(&["-c", "k.cu"], None, Some("-t 4"));
        assert_eq!(
            inv.class,
            Class::PassThrough(PassReason::ThreadsOutsideCommandLine)
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("o.txt");
        std::fs::write(&f, "--threads=2").unwrap();
        let inv = run(&["-c", "k.cu", "-optf", f.to_str().unwrap()]);
        assert_eq!(
            inv.class,
            Class::PassThrough(PassReason::ThreadsOutsideCommandLine)
        );
    }

    #[test]
    fn maxrregcount_precedence() {
        let m = |args: &[&str], pre: Option<&str>, app: Option<&str>| {
            run_env(args, pre, app).facts.user_maxrregcount
        };
        assert_eq!(
            m(
                &["-c", "k.cu", "-maxrregcount=64", "--maxrregcount", "48"],
                None,
                None
            ),
            Some(48)
        );
        assert_eq!(
            m(&["-c", "k.cu", "-Xptxas", "-maxrregcount=32"], None, None),
            Some(32)
        );
        assert_eq!(
            m(
                &["-c", "k.cu", "--ptxas-options=--maxrregcount,40"],
                None,
                None
            ),
            Some(40)
        );
        assert_eq!(
            m(&["-c", "k.cu", "-Xptxas", "--maxrregcount 36"], None, None),
            Some(36)
        );
        // ptxas sees -Xptxas options before nvcc's own -maxrregcount, whatever the order.
        assert_eq!(
            m(
                &[
                    "-c",
                    "k.cu",
                    "-maxrregcount=64",
                    "-Xptxas",
                    "-maxrregcount=32"
                ],
                None,
                None
            ),
            Some(64)
        );
        assert_eq!(
            m(
                &["-c", "k.cu", "-maxrregcount=64"],
                None,
                Some("-maxrregcount=40")
            ),
            Some(40)
        );
        assert_eq!(
            m(
                &["-c", "k.cu", "-maxrregcount=64"],
                Some("-maxrregcount=40"),
                None
            ),
            Some(64)
        );
        let inv = run_env(&["-c", "k.cu"], Some("-O2"), Some("-maxrregcount=40"));
        assert_eq!(
            inv.nvcc_args,
            os(&["-c", "k.cu"]),
            "env flags are not copied into nvcc_args"
        );
        assert_eq!(inv.facts.dryrun_args, os(&["-c", "k.cu"]));
    }

    #[test]
    fn env_flags_classify() {
        assert!(matches!(
            run_env(&["-c", "k.cu"], Some("-G"), None).class,
            Class::PassThrough(_)
        ));
        // nvcc does not unquote these: `"-O1"` is an input it does not know what to do with.
        let inv = run_env(&["-c", "k.cu"], None, Some("\"-O1\""));
        assert_eq!(
            inv.class,
            Class::PassThrough(PassReason::NotASource {
                input: PathBuf::from("\"-O1\""),
                linking: false
            })
        );
        assert_eq!(run_env(&["k.cu"], Some("-c"), None).class, Class::Tunable);
    }

    #[test]
    fn options_file_on_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("o.txt");
        std::fs::write(&f, "-c \"k.cu\"\n-arch=sm_80\n").unwrap();
        let inv = run(&["--options-file", f.to_str().unwrap()]);
        assert_eq!(inv.class, Class::Tunable);
        assert_eq!(inv.facts.inputs, vec![PathBuf::from("k.cu")]);
        assert_eq!(inv.nvcc_args.len(), 2);
        let missing = dir.path().join("missing.txt");
        let r = parse(&os(&["-optf", missing.to_str().unwrap()]), &|_| None);
        assert!(matches!(r, Err(CliError::OptionsFile { .. })));
        // `--orion-*` inside a file is an ordinary unknown option.
        std::fs::write(&f, "--orion-x -c k.cu").unwrap();
        assert!(matches!(
            run(&["-optf", f.to_str().unwrap()]).class,
            Class::PassThrough(_)
        ));
    }

    #[test]
    fn dep_target() {
        let p = std::path::Path::new("src/k.cu");
        let mut f = Facts::default();
        assert_eq!(f.dep_target(p), "k.o");
        f.output_dir = Some("d".into());
        assert_eq!(f.dep_target(p), "d/k.o");
        f.output = Some("x/y.o".into());
        assert_eq!(f.dep_target(p), "x/y.o");
        f.dep_targets = vec!["a".into(), "b".into()];
        assert_eq!(f.dep_target(p), "b");
    }

    /// Random token soup never panics, and the invariants of `nvcc_args`/`dryrun_args` hold.
    #[test]
    fn random_command_lines_do_not_panic() {
        const VOCAB: &[&str] = &[
            "-c",
            "-dc",
            "-o",
            "x.o",
            "k.cu",
            "a.cpp",
            "-t",
            "4",
            "-t4",
            "--threads=",
            "-arch",
            "-arch=sm_80",
            "compute_80",
            "-code",
            "sm_80",
            "-gencode",
            "arch=compute_80,code=[",
            "code=sm_80,arch=compute_80",
            "]",
            "-Xptxas",
            "-maxrregcount",
            "--maxrregcount=",
            "-maxrregcount=12",
            "-x",
            "cu",
            "-",
            "",
            "=",
            "--",
            "-=",
            "--=",
            "-D",
            "-I=",
            "é",
            "-é",
            "--orion-",
            "--orion-a=b",
            "-rdc",
            "true",
            "-optf",
            "--options-file=",
            ",",
            "-MT",
            "-odir",
            "-G",
            "-E",
            "-?",
            "-keep=1",
            "-Xptxas=-g",
            "-O",
            "-m64",
            "-lfoo",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..5000 {
            let n = (next() % 10) as usize;
            let args: Vec<&str> = (0..n)
                .map(|_| VOCAB[(next() as usize) % VOCAB.len()])
                .collect();
            let inv = match parse(&os(&args), &|_| None) {
                Ok(inv) => inv,
                Err(CliError::OptionsFile { .. }) => continue,
            };
            assert!(
                inv.nvcc_args
                    .iter()
                    .all(|a| !a.to_string_lossy().starts_with("--orion-"))
            );
            assert!(inv.facts.dryrun_args.len() <= inv.nvcc_args.len());
            let orion = args.iter().filter(|a| a.starts_with("--orion-")).count();
            assert_eq!(inv.nvcc_args.len() + orion, args.len());
            if let Class::PassThrough(r) = &inv.class {
                assert!(!r.to_string().is_empty());
            }
        }
    }
}
