//! Why an invocation goes to nvcc unchanged: a typed reason, shown as one line in verbose logs
//! and in the report's `passed_through` records (the texts are part of the report: keep them).

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

/// An option that nvcc handles itself and nvcc-orion does not replay, with how it is shown
/// and whether nvcc builds SASS under it (the report then notes the sources as untuned).
#[derive(Debug, PartialEq, Eq)]
pub struct Blocker {
    /// The option's long name in nvcc's table (`dryrun`).
    pub long: &'static str,
    /// How the reason shows it (`--dryrun`).
    pub shown: &'static str,
    /// Whether an invocation with it still builds SASS (`-G` does, `-E` does not).
    pub builds_sass: bool,
}

/// Why an invocation is passed through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassReason {
    /// An option that nvcc handles itself ([`Blocker`]).
    Option(&'static Blocker),
    /// An argument that is not UTF-8.
    NonUtf8Argument,
    /// An option not in nvcc 13.5's table (as written).
    UnknownOption(String),
    EmptyArgument,
    /// `-` (standard input) as an input.
    StdinInput,
    /// A value glued to an option that takes none (the argument as written).
    NoArgumentExpected(String),
    /// An option that takes a value, last on the line (as written).
    ArgumentExpected(String),
    OptionsFilesTooDeep,
    /// An options file that is not UTF-8 (its name as given).
    NonUtf8OptionsFile(String),
    /// An options file nvcc's reading of is uncertain.
    OptionsFile {
        problem: OptionsFileProblem,
        file: String,
    },
    BadMaxrregcount(String),
    BadRdc(String),
    /// `--threads` from an options file or `NVCC_*_FLAGS`, where it cannot be taken out.
    ThreadsOutsideCommandLine,
    /// `-lib` with compile modes (their long names).
    LibWithModes(BTreeSet<&'static str>),
    /// A one-call build with `-MD`/`-MMD`.
    DepfileWithoutCompileMode,
    /// `-Xptxas -g` (the spelling given).
    PtxasDebug(String),
    BadPtxasMaxrregcount(String),
    PtxasMaxrregcountWithoutValue,
    /// Several compile modes (their long names).
    SeveralModes(BTreeSet<&'static str>),
    DcDwContradictRdc,
    NoInput,
    /// An input that is not a source (nor, in a one-call build, an object or library).
    NotASource {
        input: PathBuf,
        linking: bool,
    },
    /// `-x` other than `cu`.
    Language(String),
    NoCuInput,
    OutputWithSeveralInputs,
    LtoTarget,
    CodeNeedsVirtualArch,
    UnrecognisedArch(String),
    NoRealTarget,
    UnparsableGencode(String),
}

/// What makes an options file's splitting uncertain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionsFileProblem {
    Backslash,
    UnterminatedQuote,
}

impl fmt::Display for OptionsFileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OptionsFileProblem::Backslash => "backslash in options file",
            OptionsFileProblem::UnterminatedQuote => "unterminated quote in options file",
        })
    }
}

impl PassReason {
    /// Whether nvcc builds SASS for such an invocation (what a report should say was left
    /// untuned); `false` for preprocessing, PTX only, help, a dry run, no input, ...
    pub fn builds_sass(&self) -> bool {
        match self {
            PassReason::Option(b) => b.builds_sass,
            PassReason::NoInput | PassReason::NoCuInput | PassReason::NoRealTarget => false,
            _ => true,
        }
    }

    /// nvcc's own `--dryrun`, which nvcc-orion answers with its shim in the commands.
    pub fn is_dryrun(&self) -> bool {
        matches!(self, PassReason::Option(b) if b.long == "dryrun")
    }
}

impl fmt::Display for PassReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PassReason as R;
        match self {
            R::Option(b) => f.write_str(b.shown),
            R::NonUtf8Argument => f.write_str("non-UTF-8 argument"),
            R::UnknownOption(a) => write!(f, "unknown option '{a}'"),
            R::EmptyArgument => f.write_str("empty argument"),
            R::StdinInput => f.write_str("'-' (stdin) input"),
            R::NoArgumentExpected(a) => write!(f, "no argument expected after '{a}'"),
            R::ArgumentExpected(a) => write!(f, "argument expected after '{a}'"),
            R::OptionsFilesTooDeep => f.write_str("options files nested too deeply"),
            R::NonUtf8OptionsFile(file) => write!(f, "non-UTF-8 options file {file}"),
            R::OptionsFile { problem, file } => write!(f, "{problem} {file}"),
            R::BadMaxrregcount(v) => write!(f, "bad -maxrregcount value '{v}'"),
            R::BadRdc(v) => write!(f, "bad -rdc value '{v}'"),
            R::ThreadsOutsideCommandLine => {
                f.write_str("--threads inside options file or NVCC_*_FLAGS")
            }
            R::LibWithModes(m) => write!(f, "-lib with {m:?}"),
            R::DepfileWithoutCompileMode => {
                f.write_str("no compile mode (-c/-dc/-dw/-cubin/-fatbin) with -MD/-MMD")
            }
            R::PtxasDebug(t) => write!(f, "-Xptxas {t}"),
            R::BadPtxasMaxrregcount(v) => write!(f, "bad -Xptxas maxrregcount '{v}'"),
            R::PtxasMaxrregcountWithoutValue => f.write_str("-Xptxas maxrregcount without value"),
            R::SeveralModes(m) => write!(f, "several compile modes: {m:?}"),
            R::DcDwContradictRdc => f.write_str("-dc/-dw contradict -rdc"),
            R::NoInput => f.write_str("no input"),
            R::NotASource { input, linking } => write!(
                f,
                "input {} is not a .cu/.c/.cc/.cpp/.cxx source{}",
                input.display(),
                if *linking {
                    " nor an object or library"
                } else {
                    ""
                }
            ),
            R::Language(l) => write!(f, "-x {l}"),
            R::NoCuInput => f.write_str("no .cu input"),
            R::OutputWithSeveralInputs => f.write_str("-o with several inputs"),
            R::LtoTarget => f.write_str("LTO target (lto_NN)"),
            R::CodeNeedsVirtualArch => f.write_str("-code needs a virtual -arch"),
            R::UnrecognisedArch(a) => write!(f, "unrecognised -arch '{a}'"),
            R::NoRealTarget => f.write_str("no real SASS target (PTX only)"),
            R::UnparsableGencode(s) => write!(f, "unparsable -gencode '{s}'"),
        }
    }
}
