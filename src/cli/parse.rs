//! Tokenising an nvcc command line into options and input files, with every spelling nvcc 13.5
//! accepts (each verified against the real nvcc):
//! `--long v`, `--long=v`, `-short v`, `-short=v`, and glued `-Ifoo` for the one-letter shorts in
//! [`GLUED_SHORTS`]. Single-dash long names (`-output-file`) and double-dash shorts (`--arch`)
//! are unknown to nvcc, so they are unknown here too. `--options-file`/`-optf` lists are
//! expanded in place, recursively, relative to the current directory (also inside files).

use std::path::PathBuf;

use super::CliError;
use super::optfile::split_options_file;
use super::reason::PassReason;
use super::table::{GLUED_SHORTS, OptSpec, TABLE};

/// Options files nested deeper than this are taken for a cycle.
const MAX_DEPTH: usize = 16;

/// Where an item came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `nvcc_args[start..start + len]` (after `--orion-*` removal).
    CommandLine {
        start: usize,
        len: usize,
    },
    OptionsFile,
    Env,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Opt {
        spec: &'static OptSpec,
        value: Option<String>,
        origin: Origin,
    },
    Input {
        path: String,
        origin: Origin,
    },
}

/// Why tokenising stopped.
#[derive(Debug)]
pub enum Stop {
    /// The invocation is not understood well enough: pass it through, with this reason.
    Pass(PassReason),
    Io(CliError),
}

impl From<PassReason> for Stop {
    fn from(r: PassReason) -> Stop {
        Stop::Pass(r)
    }
}

/// What one argument is, before any separate value is taken from the next argument.
#[derive(Debug, PartialEq, Eq)]
enum Lexed {
    Opt(&'static OptSpec, Option<String>),
    Input,
}

fn lex_arg(a: &str) -> Result<Lexed, PassReason> {
    let table = &*TABLE;
    if let Some(body) = a.strip_prefix("--") {
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let spec = table
            .long(name)
            .ok_or_else(|| PassReason::UnknownOption(a.to_string()))?;
        return with_inline(spec, inline, a);
    }
    let Some(body) = a.strip_prefix('-') else {
        return if a.is_empty() {
            Err(PassReason::EmptyArgument)
        } else {
            Ok(Lexed::Input)
        };
    };
    if body.is_empty() {
        return Err(PassReason::StdinInput);
    }
    if let Some(spec) = table.short(body) {
        return Ok(Lexed::Opt(spec, None));
    }
    if let Some((n, v)) = body.split_once('=')
        && let Some(spec) = table.short(n)
    {
        return with_inline(spec, Some(v.to_string()), a);
    }
    let first_len = body.chars().next().map_or(0, char::len_utf8);
    let (first, rest) = body.split_at(first_len);
    if GLUED_SHORTS.contains(&first)
        && let Some(spec) = table.short(first)
        && spec.takes_value
    {
        return Ok(Lexed::Opt(spec, Some(rest.to_string())));
    }
    Err(PassReason::UnknownOption(a.to_string()))
}

fn with_inline(
    spec: &'static OptSpec,
    inline: Option<String>,
    a: &str,
) -> Result<Lexed, PassReason> {
    if inline.is_some() && !spec.takes_value {
        return Err(PassReason::NoArgumentExpected(a.to_string()));
    }
    Ok(Lexed::Opt(spec, inline))
}

/// Tokenise `args`, appending to `out`. `top_level` marks the user's command line, whose items
/// record their argument positions; `from` is the origin of everything else.
pub(crate) fn tokenize(
    args: &[String],
    top_level: bool,
    from: Origin,
    depth: usize,
    out: &mut Vec<Item>,
) -> Result<(), Stop> {
    let mut i = 0;
    while i < args.len() {
        let start = i;
        let a = &args[i];
        i += 1;
        let origin = |len| {
            if top_level {
                Origin::CommandLine { start, len }
            } else {
                from
            }
        };
        match lex_arg(a)? {
            Lexed::Input => out.push(Item::Input {
                path: a.clone(),
                origin: origin(1),
            }),
            Lexed::Opt(spec, inline) => {
                let value = match (spec.takes_value, inline) {
                    (true, None) => {
                        let v = args
                            .get(i)
                            .ok_or_else(|| PassReason::ArgumentExpected(a.clone()))?
                            .clone();
                        i += 1;
                        Some(v)
                    }
                    (_, v) => v,
                };
                if spec.long == "options-file" {
                    let list = value.unwrap_or_default();
                    for f in list.split(',') {
                        expand_file(f, depth, out)?;
                    }
                } else {
                    out.push(Item::Opt {
                        spec,
                        value,
                        origin: origin(i - start),
                    });
                }
            }
        }
    }
    Ok(())
}

fn expand_file(f: &str, depth: usize, out: &mut Vec<Item>) -> Result<(), Stop> {
    if depth >= MAX_DEPTH {
        return Err(Stop::Pass(PassReason::OptionsFilesTooDeep));
    }
    let path = PathBuf::from(f);
    let bytes = std::fs::read(&path).map_err(|source| {
        Stop::Io(CliError::OptionsFile {
            path: path.clone(),
            source,
        })
    })?;
    let text =
        String::from_utf8(bytes).map_err(|_| PassReason::NonUtf8OptionsFile(f.to_string()))?;
    let words = split_options_file(&text).map_err(|problem| PassReason::OptionsFile {
        problem,
        file: f.to_string(),
    })?;
    tokenize(&words, false, Origin::OptionsFile, depth + 1, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Toks = Vec<(String, Option<String>)>;

    fn toks(args: &[&str]) -> Result<Toks, PassReason> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut out = Vec::new();
        match tokenize(&args, true, Origin::Env, 0, &mut out) {
            Ok(()) => {}
            Err(Stop::Pass(r)) => return Err(r),
            Err(Stop::Io(e)) => panic!("{e}"),
        }
        Ok(out
            .into_iter()
            .map(|it| match it {
                Item::Opt { spec, value, .. } => (spec.long.clone(), value),
                Item::Input { path, .. } => ("<input>".into(), Some(path)),
            })
            .collect())
    }

    fn one(args: &[&str]) -> (String, Option<String>) {
        let v = toks(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(v.len(), 1, "{args:?} -> {v:?}");
        v.into_iter().next().unwrap()
    }

    fn opt(long: &str, v: Option<&str>) -> (String, Option<String>) {
        (long.to_string(), v.map(str::to_string))
    }

    #[test]
    fn every_accepted_spelling_of_a_value_option() {
        let want = opt("output-file", Some("x.o"));
        assert_eq!(one(&["-o", "x.o"]), want);
        assert_eq!(one(&["-o=x.o"]), want);
        assert_eq!(one(&["--output-file", "x.o"]), want);
        assert_eq!(one(&["--output-file=x.o"]), want);
        let t = opt("threads", Some("4"));
        for spelling in [
            &["-t", "4"][..],
            &["-t4"],
            &["-t=4"],
            &["--threads", "4"],
            &["--threads=4"],
        ] {
            assert_eq!(one(spelling), t, "{spelling:?}");
        }
        assert_eq!(one(&["-odir", "d"]), opt("output-directory", Some("d")));
        assert_eq!(
            one(&["-rdc", "true"]),
            opt("relocatable-device-code", Some("true"))
        );
        assert_eq!(
            one(&["--relocatable-device-code", "true"]),
            opt("relocatable-device-code", Some("true"))
        );
        assert_eq!(one(&["-MF=k.d"]), opt("dependency-output", Some("k.d")));
    }

    #[test]
    fn glued_one_letter_shorts() {
        assert_eq!(one(&["-Ifoo"]), opt("include-path", Some("foo")));
        assert_eq!(one(&["-DX=1,Y=2"]), opt("define-macro", Some("X=1,Y=2")));
        assert_eq!(one(&["-lfoo"]), opt("library", Some("foo")));
        assert_eq!(one(&["-L/p"]), opt("library-path", Some("/p")));
        assert_eq!(one(&["-O3"]), opt("optimize", Some("3")));
        // Exact names win over glueing: `-ldir` is --libdevice-directory, `-m64` is --m64.
        assert_eq!(one(&["-ldir", "d"]), opt("libdevice-directory", Some("d")));
        assert_eq!(one(&["-m64"]), opt("m64", None));
        assert_eq!(one(&["-lineinfo"]), opt("generate-line-info", None));
        // What nvcc itself does with an unknown `-t...`: threads with a bad number.
        assert_eq!(one(&["-timex"]), opt("threads", Some("imex")));
    }

    #[test]
    fn spellings_nvcc_rejects_are_unknown() {
        for bad in [
            &["-ox.o"][..],
            &["-xcu"],
            &["-e1"],
            &["-MFk.d"],
            &["-Xptxas-v"],
            &["-maxrregcount32"],
            &["-m32"],
            &["-output-file", "x"],
            &["--arch=sm_80"],
            &["--c"],
            &["--dc"],
            &["-no-align-double"],
            &["-?"],
        ] {
            let e = toks(bad).expect_err(&format!("{bad:?} accepted"));
            assert_eq!(e, PassReason::UnknownOption(bad[0].to_string()), "{bad:?}");
        }
    }

    #[test]
    fn flags_take_no_value_and_values_are_required() {
        assert_eq!(
            toks(&["-keep=true"]).unwrap_err(),
            PassReason::NoArgumentExpected("-keep=true".into())
        );
        assert_eq!(
            toks(&["--keep=false"]).unwrap_err(),
            PassReason::NoArgumentExpected("--keep=false".into())
        );
        assert_eq!(
            toks(&["-c", "k.cu", "-o"]).unwrap_err(),
            PassReason::ArgumentExpected("-o".into())
        );
        assert_eq!(toks(&["-"]).unwrap_err(), PassReason::StdinInput);
        assert_eq!(toks(&[""]).unwrap_err(), PassReason::EmptyArgument);
    }

    #[test]
    fn separate_value_is_taken_even_if_it_looks_like_an_option() {
        assert_eq!(
            toks(&["-Xcompiler", "-Wall,-O2", "-Xptxas=-v", "k.cu"]).unwrap(),
            vec![
                opt("compiler-options", Some("-Wall,-O2")),
                opt("ptxas-options", Some("-v")),
                opt("<input>", Some("k.cu")),
            ]
        );
    }

    #[test]
    fn command_line_positions() {
        let args: Vec<String> = ["-c", "-t", "2", "k.cu", "-t3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut out = Vec::new();
        tokenize(&args, true, Origin::Env, 0, &mut out).unwrap();
        let origins: Vec<Origin> = out
            .iter()
            .map(|i| match i {
                Item::Opt { origin, .. } | Item::Input { origin, .. } => *origin,
            })
            .collect();
        assert_eq!(
            origins,
            vec![
                Origin::CommandLine { start: 0, len: 1 },
                Origin::CommandLine { start: 1, len: 2 },
                Origin::CommandLine { start: 3, len: 1 },
                Origin::CommandLine { start: 4, len: 1 },
            ]
        );
    }

    #[test]
    fn options_files_expand_in_place_recursively() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner.txt");
        let outer = dir.path().join("outer.txt");
        let other = dir.path().join("other.txt");
        std::fs::write(&inner, "-maxrregcount=40 \"a b.cu\"").unwrap();
        std::fs::write(&outer, format!("-c\n-optf {}\n", inner.display())).unwrap();
        std::fs::write(&other, "-G").unwrap();
        let list = format!("--options-file={},{}", outer.display(), other.display());
        let args = vec!["-O2".to_string(), list, "k.cu".to_string()];
        let mut out = Vec::new();
        tokenize(&args, true, Origin::Env, 0, &mut out).unwrap();
        let names: Vec<(String, Option<String>, bool)> = out
            .iter()
            .map(|i| match i {
                Item::Opt {
                    spec,
                    value,
                    origin,
                } => (
                    spec.long.clone(),
                    value.clone(),
                    *origin == Origin::OptionsFile,
                ),
                Item::Input { path, origin } => (
                    "<input>".into(),
                    Some(path.clone()),
                    *origin == Origin::OptionsFile,
                ),
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("optimize".into(), Some("2".into()), false),
                ("compile".into(), None, true),
                ("maxrregcount".into(), Some("40".into()), true),
                ("<input>".into(), Some("a b.cu".into()), true),
                ("device-debug".into(), None, true),
                ("<input>".into(), Some("k.cu".into()), false),
            ]
        );
    }

    #[test]
    fn options_file_cycle_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("self.txt");
        std::fs::write(&f, format!("-optf {}", f.display())).unwrap();
        let e = toks(&["-optf", f.to_str().unwrap()]).unwrap_err();
        assert_eq!(e, PassReason::OptionsFilesTooDeep);
        assert_eq!(e.to_string(), "options files nested too deeply");
        let missing = dir.path().join("nope.txt");
        let args = vec!["-optf".to_string(), missing.display().to_string()];
        let mut out = Vec::new();
        let r = tokenize(&args, true, Origin::Env, 0, &mut out);
        assert!(
            matches!(r, Err(Stop::Io(CliError::OptionsFile { .. }))),
            "{r:?}"
        );
    }
}
