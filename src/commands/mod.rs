//! nvcc-orion's own subcommands, tools over the container and cubin layers. `main` hands
//! argv here when its first word names one; every other command line is nvcc's. nvcc would
//! refuse an input file called `inspect` (it has no known suffix), so the names cannot
//! shadow a real nvcc invocation.

use std::ffi::{OsStr, OsString};
use std::process::ExitCode;

use clap::Parser;

pub mod cache_key;
pub(crate) mod calibrate;
pub(crate) mod debug;
pub(crate) mod debug_audit;
pub mod debug_relayout;
pub(crate) mod debug_sass;
pub(crate) mod explain;
pub(crate) mod explain_project;
pub(crate) mod inspect;
pub(crate) mod rewrite;
pub(crate) mod toolchain;

/// The subcommands, by the word that selects them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subcommand {
    Inspect,
    Rewrite,
    Debug,
    Explain,
    Toolchain,
    CacheKey,
    Calibrate,
}

impl Subcommand {
    /// The subcommand `first` (argv[1]) selects, if any.
    pub fn from_arg(first: &OsStr) -> Option<Subcommand> {
        match first.to_str()? {
            "inspect" => Some(Subcommand::Inspect),
            "rewrite" => Some(Subcommand::Rewrite),
            "debug" => Some(Subcommand::Debug),
            "explain" => Some(Subcommand::Explain),
            "toolchain" => Some(Subcommand::Toolchain),
            "cache-key" => Some(Subcommand::CacheKey),
            "calibrate" => Some(Subcommand::Calibrate),
            _ => None,
        }
    }
}

/// Run `sub` with `args` (argv with the program name first, the subcommand word second).
/// Errors are one line each on stderr; the exit code is 0 when every file was handled, 1 when
/// one failed, 2 for a usage error.
pub fn run(sub: Subcommand, args: &[OsString]) -> ExitCode {
    // clap sees "nvcc-orion <sub>" as the program name, so usage lines read correctly.
    let argv = std::iter::once(OsString::from(match sub {
        Subcommand::Inspect => "nvcc-orion inspect",
        Subcommand::Rewrite => "nvcc-orion rewrite",
        Subcommand::Debug => "nvcc-orion debug",
        Subcommand::Explain => "nvcc-orion explain",
        Subcommand::Toolchain => "nvcc-orion toolchain",
        Subcommand::CacheKey => "nvcc-orion cache-key",
        Subcommand::Calibrate => "nvcc-orion calibrate",
    }))
    .chain(args.iter().skip(2).cloned());
    let mut out = std::io::stdout().lock();
    let failed = match sub {
        Subcommand::Inspect => match inspect::Args::try_parse_from(argv) {
            Ok(a) => inspect::run(&a, &mut out),
            Err(e) => return usage(e),
        },
        Subcommand::Rewrite => match rewrite::Args::try_parse_from(argv) {
            Ok(a) => rewrite::run(&a),
            Err(e) => return usage(e),
        },
        // explain takes nvcc's own arguments after the file: no option parsing of ours.
        Subcommand::Explain => explain::run(&args[2..], &mut out),
        Subcommand::Debug => match debug::Args::try_parse_from(argv) {
            Ok(a) => debug::run(&a, &mut out),
            Err(e) => return usage(e),
        },
        Subcommand::Toolchain => match toolchain::Args::try_parse_from(argv) {
            Ok(a) => toolchain::run(&a, &mut out),
            Err(e) => return usage(e),
        },
        // Run by ccache for every compile (`compiler_check`): no options to parse.
        Subcommand::CacheKey => cache_key::run(&mut out),
        // Its own exit statuses: 3 says there is no GPU.
        Subcommand::Calibrate => {
            return match calibrate::Args::try_parse_from(argv) {
                Ok(a) => ExitCode::from(calibrate::run(&a, &mut out)),
                Err(e) => usage(e),
            };
        }
    };
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn usage(e: clap::Error) -> ExitCode {
    let code = if e.use_stderr() { 2 } else { 0 };
    let _ = e.print();
    ExitCode::from(code)
}

/// Print one error line in the form every nvcc-orion command uses.
pub(crate) fn report_error(what: impl std::fmt::Display) {
    eprintln!("nvcc-orion: error: {what}");
}
