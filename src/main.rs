//! `nvcc-orion`: use it exactly as nvcc.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use nvcc_orion::cli::{self, Class};
use nvcc_orion::commands;
use nvcc_orion::driver;
use nvcc_orion::settings::{self, Mode, Settings};
use nvcc_orion::timings;
use nvcc_orion::toolkit::Toolkit;
use nvcc_orion::transform;

fn main() -> ExitCode {
    let started = std::time::Instant::now();
    let argv: Vec<OsString> = std::env::args_os().collect();
    if named_ptxas(argv.first()) {
        return ptxas_mode(&argv[1..]);
    }
    if let Some(sub) = argv.get(1).and_then(|a| commands::Subcommand::from_arg(a)) {
        return commands::run(sub, &argv);
    }
    if argv.get(1).is_some_and(|a| a == "--ptxas") {
        return ptxas_mode(&argv[2..]);
    }
    let args: Vec<OsString> = argv.into_iter().skip(1).collect();
    let env_str = |k: &str| std::env::var(k).ok();
    // nvcc never sees nvcc-orion's own variables.
    let nvcc_env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| !k.to_str().is_some_and(settings::is_ours))
        .collect();
    let tk = match toolkit() {
        Ok(tk) => tk,
        Err(code) => return code,
    };
    let inv = match cli::parse(&args, &env_str) {
        Ok(inv) => inv,
        Err(e) => return bad_options(&tk, args, &nvcc_env, &e.to_string()),
    };
    let (settings, warnings) = Settings::read(&env_str, &inv.orion_args, &transform::keys());
    for w in &warnings {
        eprintln!("{w}");
    }
    if let Some(code) = pass_through(&tk, &inv, &nvcc_env, &settings) {
        return code;
    }
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => return exec_nvcc(&tk, &inv.nvcc_args, &nvcc_env, Some(&e.to_string()), true),
    };
    match replay_guarded(&tk, &inv, &settings, &nvcc_env, &cwd) {
        Some(Ok(done)) => {
            publish(&done, &inv, &settings);
            write_timings(started);
            ExitCode::SUCCESS
        }
        // The user's own errors are reported by nvcc itself, silently; ours get one line.
        Some(Err(e)) => exec_nvcc(
            &tk,
            &inv.nvcc_args,
            &nvcc_env,
            Some(&e.to_string()),
            e.is_internal() || settings.verbose,
        ),
        None => exec_nvcc(
            &tk,
            &inv.nvcc_args,
            &nvcc_env,
            Some("internal error while replaying nvcc's steps"),
            true,
        ),
    }
}

/// nvcc reports a bad options file itself; we only keep our options away from it.
fn bad_options(
    tk: &Toolkit,
    args: Vec<OsString>,
    env: &[(OsString, OsString)],
    e: &str,
) -> ExitCode {
    let plain: Vec<OsString> = args
        .into_iter()
        .filter(|a| !a.to_str().is_some_and(|s| s.starts_with("--orion-")))
        .collect();
    exec_nvcc(tk, &plain, env, Some(e), false)
}

/// A compile that goes to nvcc unchanged (off, or nothing to tune), or nvcc-orion's own
/// `--dryrun`: its exit code. `None`: replay it.
fn pass_through(
    tk: &Toolkit,
    inv: &cli::Invocation,
    env: &[(OsString, OsString)],
    settings: &Settings,
) -> Option<ExitCode> {
    let why = match (&settings.mode, &inv.class) {
        (Mode::Off, _) => Some("NVCC_ORION=off".to_string()),
        (_, Class::PassThrough(reason)) => Some(reason.to_string()),
        (_, Class::Tunable) => None,
    };
    // Sources compiled untuned leave a line in the report, so a project view can say why.
    if let Some(warning) = driver::passed::note(inv, settings) {
        eprintln!("{warning}");
    }
    if settings.mode != Mode::Off
        && matches!(&inv.class, Class::PassThrough(r) if r.is_dryrun())
        && let Some(code) = dryrun_with_shim(tk, &inv.nvcc_args, env, settings)
    {
        return Some(code);
    }
    let why = why?;
    if settings.verbose {
        eprintln!("nvcc-orion: passing to nvcc unchanged: {why}");
    }
    Some(exec_nvcc(tk, &inv.nvcc_args, env, None, false))
}

/// The replay, with a bug of ours (a panic) as `None`: it falls back to the real nvcc like any
/// internal error, with one warning line instead of a backtrace.
fn replay_guarded(
    tk: &Toolkit,
    inv: &cli::Invocation,
    settings: &Settings,
    env: &[(OsString, OsString)],
    cwd: &std::path::Path,
) -> Option<Result<driver::Replayed, driver::DriverError>> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        driver::replay(tk, &inv.facts, settings, env, cwd)
    }));
    std::panic::set_hook(hook);
    r.ok()
}

/// The replay's output as nvcc would have printed it, and in verbose mode its notes.
fn publish(done: &driver::Replayed, inv: &cli::Invocation, settings: &Settings) {
    // Write errors (a closed pipe) must not turn a good build into a failed one.
    let _ = std::io::stdout().write_all(&done.stdout);
    let _ = std::io::stderr().write_all(&done.stderr);
    if settings.verbose {
        for note in &done.notes {
            eprintln!("{note}");
        }
        eprintln!(
            "nvcc-orion: replayed {} steps ({} ptxas) of {}",
            done.steps,
            done.ptxas_steps,
            inv.facts
                .inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
}

/// `NVCC_ORION_TIMINGS=FILE`: where this compile's time went, appended to FILE as one JSON
/// line (`nvcc_orion::timings`). A file that cannot be written costs one warning line.
fn write_timings(started: std::time::Instant) {
    let Some(path) = std::env::var_os("NVCC_ORION_TIMINGS").filter(|p| !p.is_empty()) else {
        return;
    };
    let path = std::path::PathBuf::from(path);
    if let Err(e) = timings::append(&path, started.elapsed().as_secs_f64()) {
        eprintln!(
            "nvcc-orion: warning: cannot write the timings {}: {e}",
            path.display()
        );
    }
}

/// Replace this process with the real nvcc: same arguments, environment, streams, exit code.
fn exec_nvcc(
    tk: &Toolkit,
    args: &[OsString],
    env: &[(OsString, OsString)],
    why: Option<&str>,
    say: bool,
) -> ExitCode {
    if say && let Some(why) = why {
        eprintln!("nvcc-orion: warning: {why}; running plain nvcc");
    }
    exec_with(tk.nvcc(), args, env)
}

/// `--dryrun` as a compiler cache asks it (sccache runs the steps itself): nvcc's listing
/// with nvcc-orion's ptxas shim first on its `PATH` line, so the ptxas steps are tuned.
/// `None` (then plain nvcc answers) when the shim cannot be made.
fn dryrun_with_shim(
    tk: &Toolkit,
    args: &[OsString],
    env: &[(OsString, OsString)],
    settings: &Settings,
) -> Option<ExitCode> {
    let exe = std::env::current_exe().ok()?;
    let root = driver::dryrun_shim::shim_root(settings);
    let dir = driver::dryrun_shim::shim_dir(&root, &exe)
        .map_err(|e| {
            if settings.verbose {
                eprintln!("nvcc-orion: no ptxas shim for --dryrun ({e}); nvcc's listing as is");
            }
        })
        .ok()?;
    let out = Command::new(tk.nvcc())
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .ok()?;
    if settings.verbose {
        eprintln!(
            "nvcc-orion: passing to nvcc unchanged: --dryrun (with nvcc-orion's ptxas first on the listing's PATH)"
        );
    }
    let listing = String::from_utf8_lossy(&out.stderr);
    let _ = std::io::stdout().write_all(&out.stdout);
    let _ = std::io::stderr().write_all(
        driver::dryrun_shim::with_shim_first(&listing, &dir, &settings.output_options()).as_bytes(),
    );
    Some(match out.status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    })
}

/// The real toolkit, or the exit code after saying why there is none.
fn toolkit() -> Result<Toolkit, ExitCode> {
    let me = std::env::current_exe().unwrap_or_else(|_| "nvcc-orion".into());
    Toolkit::locate(&|k| std::env::var_os(k), &me).map_err(|e| {
        eprintln!("nvcc-orion: error: {e}");
        ExitCode::from(1)
    })
}

/// Replace this process with `program args` in exactly the environment `env`.
fn exec_with(
    program: &std::path::Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
) -> ExitCode {
    let err = Command::new(program)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .exec();
    eprintln!("nvcc-orion: error: cannot run {}: {err}", program.display());
    ExitCode::from(1)
}

/// Whether this binary was started through a link named `ptxas` (as ccache is through a link
/// named after the compiler): then it is `nvcc-orion --ptxas`. A JIT that runs ptxas once per
/// kernel, pointed at such a link, starts no shell script first.
fn named_ptxas(argv0: Option<&OsString>) -> bool {
    argv0
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| n == "ptxas")
}

/// `nvcc-orion --ptxas ARGS...`: ptxas's own command line (as Triton, numba or a build script
/// runs it), tuned like a ptxas step of an nvcc compile. `--orion-*` options and
/// `NVCC_ORION_*` variables apply; ptxas never sees them.
fn ptxas_mode(args: &[OsString]) -> ExitCode {
    let me = std::env::current_exe().unwrap_or_else(|_| "nvcc-orion".into());
    let tk = match Toolkit::locate_ptxas(&|k| std::env::var_os(k), &me) {
        Ok(tk) => tk,
        Err(e) => {
            eprintln!("nvcc-orion: error: {e}");
            // What a shell answers for a program it cannot find: callers that check for a
            // missing ptxas (Triton falls back to its own) see the same as with none at all.
            return ExitCode::from(127);
        }
    };
    let ptxas = tk.tool("ptxas");
    let mut orion_args = Vec::new();
    let mut ptxas_args: Vec<String> = Vec::new();
    for a in args {
        let Some(a) = a.to_str() else {
            // Not UTF-8: nothing we could tune; let ptxas have it all.
            return exec_plain(&ptxas, args);
        };
        match a.strip_prefix("--orion-") {
            Some(o) => orion_args.push(match o.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (o.to_string(), None),
            }),
            None => ptxas_args.push(a.to_string()),
        }
    }
    let env_str = |k: &str| std::env::var(k).ok();
    let (settings, warnings) = Settings::read(&env_str, &orion_args, &transform::keys());
    for w in &warnings {
        eprintln!("{w}");
    }
    if matches!(&ptxas_args[..], [v] if v == "--version" || v == "-V") {
        return ptxas_version(&ptxas, &me, &settings);
    }
    if settings.mode == Mode::Off {
        let plain: Vec<OsString> = ptxas_args.iter().map(OsString::from).collect();
        return exec_plain(&ptxas, &plain);
    }
    let Ok(cwd) = std::env::current_dir() else {
        let plain: Vec<OsString> = ptxas_args.iter().map(OsString::from).collect();
        return exec_plain(&ptxas, &plain);
    };
    let ctx = nvcc_orion::process::StepContext {
        env: std::env::vars_os()
            .filter(|(k, _)| !k.to_str().is_some_and(settings::is_ours))
            .collect(),
        cwd,
    };
    let mut argv = vec![ptxas.display().to_string()];
    argv.extend(ptxas_args);
    let mut notes = Vec::new();
    let tune = nvcc_orion::tune::TuneContext {
        selector_refused: None,
        toolkit: &tk,
        settings: &settings,
    };
    match nvcc_orion::tune::ptxas_step(&argv, &ctx, tune) {
        Ok(stepped) => {
            let done = stepped.publish(tune, &mut notes);
            let _ = std::io::stdout().write_all(&done.stdout);
            let _ = std::io::stderr().write_all(&done.stderr);
            if settings.verbose {
                for n in &notes {
                    eprintln!("{n}");
                }
            }
            match done.status.code() {
                Some(0) => ExitCode::SUCCESS,
                Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
                None => ExitCode::from(1),
            }
        }
        Err(e) => {
            eprintln!("nvcc-orion: error: cannot run {}: {e}", ptxas.display());
            ExitCode::from(1)
        }
    }
}

/// `ptxas --version` through the shim: ptxas's own banner first (Triton reads its
/// `release X.Y`), then a line naming this nvcc-orion and a digest of the settings that change
/// the output. Triton keys its kernel cache on this text, so a kernel compiled under one
/// setting is not served under another.
fn ptxas_version(ptxas: &std::path::Path, me: &std::path::Path, settings: &Settings) -> ExitCode {
    let out = match Command::new(ptxas)
        .arg("--version")
        .env_clear()
        .envs(std::env::vars_os().filter(|(k, _)| !k.to_str().is_some_and(settings::is_ours)))
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("nvcc-orion: error: cannot run {}: {e}", ptxas.display());
            return ExitCode::from(127);
        }
    };
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(&out.stdout);
    let _ = std::io::stderr().write_all(&out.stderr);
    if !out.status.success() {
        return ExitCode::from(
            out.status
                .code()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(1),
        );
    }
    if !out.stdout.is_empty() && !out.stdout.ends_with(b"\n") {
        let _ = stdout.write_all(b"\n");
    }
    let _ = writeln!(stdout, "{}", commands::cache_key::banner_line(me, settings));
    ExitCode::SUCCESS
}

/// Replace this process with `program args` (the environment minus our own variables).
fn exec_plain(program: &std::path::Path, args: &[OsString]) -> ExitCode {
    let env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| !k.to_str().is_some_and(settings::is_ours))
        .collect();
    exec_with(program, args, &env)
}
