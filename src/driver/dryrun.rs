//! Parsing `nvcc --dryrun` output into a plan of steps.
//!
//! nvcc prints one `#$ ` line per action on stderr: `NAME=value` environment assignments (from
//! `nvcc.profile`, exported to every step), shell command lines, and pseudo-steps it performs
//! itself (`-- Filter Dependencies -- > file`, `rm file`). Its own diagnostics (`nvcc warning :`)
//! are ordinary lines. Anything else is unknown and makes the whole plan fail, so that a change
//! in a future nvcc falls back to plain nvcc instead of a wrong replay.

use std::collections::HashMap;
use std::path::PathBuf;

use super::shell::{self, ShellError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Environment assignments in the order nvcc printed them (later ones win).
    pub env: Vec<(String, String)>,
    pub steps: Vec<Step>,
    /// nvcc's own diagnostics printed during the dry run, to be shown as nvcc shows them.
    pub(crate) messages: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A tool invocation: argv after shell expansion, the line as nvcc printed it, and what
    /// the step is (decided here, once).
    Run {
        argv: Vec<String>,
        line: String,
        kind: RunKind,
    },
    /// nvcc writes a `-MD`/`-MMD` dependency file from the preprocessed outputs before it.
    FilterDeps { out: PathBuf },
    /// nvcc deletes these files.
    Remove { paths: Vec<PathBuf> },
    /// `-lib`'s archive step, ``"`gcc -print-prog-name=ar`" cr lib.a objs...``: the shell
    /// asks the host compiler for its archiver (`query`), then runs it with `args`.
    Archive {
        query: Vec<String>,
        args: Vec<String>,
        line: String,
    },
}

impl Step {
    /// The program name of a `Run` step without its directory (`ptxas`, `cicc`, `gcc`, ...).
    pub fn tool(&self) -> Option<&str> {
        match self {
            Step::Run { argv, .. } => tool_of(argv),
            _ => None,
        }
    }
}

/// The program name of tool invocation `argv` without its directory.
pub fn tool_of(argv: &[String]) -> Option<&str> {
    argv.first().map(|a| a.rsplit('/').next().unwrap_or(a))
}

/// What a `Run` step does, as far as the replay treats it apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunKind {
    /// `ptxas`: the step that is tuned.
    Ptxas,
    /// The front end (`cicc`): the source as nvcc was given it (`--orig_src_file_name`) and
    /// the PTX it writes (`-o`), which names the unit of the ptxas step that reads it.
    FrontEnd {
        source: Option<String>,
        ptx: Option<String>,
    },
    /// The host compilation of the `.cudafe1.cpp`, where the selector's glue goes in.
    HostCompile(HostCompile),
    /// A preprocessing run (`-E`): its output, which the next dependency-file step reads.
    Preprocess { output: Option<String> },
    /// Anything else, run as printed.
    Other,
}

impl RunKind {
    pub fn of(argv: &[String]) -> RunKind {
        match tool_of(argv) {
            Some("ptxas") => return RunKind::Ptxas,
            Some("cicc") => {
                return RunKind::FrontEnd {
                    source: value_after(argv, "--orig_src_file_name"),
                    ptx: value_after(argv, "-o"),
                };
            }
            _ => {}
        }
        if let Some(host) = HostCompile::of(argv) {
            return RunKind::HostCompile(host);
        }
        if argv.iter().any(|a| a == "-E") {
            return RunKind::Preprocess {
                output: value_after(argv, "-o"),
            };
        }
        RunKind::Other
    }
}

fn value_after(argv: &[String], option: &str) -> Option<String> {
    let at = argv.iter().position(|a| a == option)?;
    argv.get(at + 1).cloned()
}

/// The host compilation of a `.cudafe1.cpp`: where its input is, and the object it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCompile {
    pub(crate) input: usize,
    pub(crate) object: String,
}

impl HostCompile {
    /// `argv` is nvcc's `<ccbin> ... -c -x c++ ... "<tmp>/x.cudafe1.cpp" -o "<obj>"` line.
    /// Preprocessing (`-E`) and every other step are not.
    pub(crate) fn of(argv: &[String]) -> Option<HostCompile> {
        if !argv.iter().any(|a| a == "-c") || argv.iter().any(|a| a == "-E") {
            return None;
        }
        let input = argv
            .iter()
            .position(|a| a.ends_with(".cudafe1.cpp") && !a.starts_with('-'))?;
        let o = argv.iter().position(|a| a == "-o")?;
        let object = argv.get(o + 1)?.clone();
        Some(HostCompile { input, object })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DryRunError {
    #[error("unrecognised line {line_no} in nvcc --dryrun output: {text:?}")]
    UnknownLine { line_no: usize, text: String },
    #[error("line {line_no} of nvcc --dryrun output: {source}")]
    Shell { line_no: usize, source: ShellError },
    #[error("nvcc --dryrun printed no command")]
    Empty,
}

const FILTER_DEPS: &str = "-- Filter Dependencies -- > ";

/// Parse dry-run text. `base_env` is the environment nvcc itself runs in; `$NAME` references
/// in commands see it overlaid with the printed assignments, as the steps' shell does.
pub fn parse(text: &str, base_env: &HashMap<String, String>) -> Result<Plan, DryRunError> {
    let mut vars = base_env.clone();
    let mut plan = Plan {
        env: Vec::new(),
        steps: Vec::new(),
        messages: Vec::new(),
    };
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let Some(body) = raw.strip_prefix("#$ ") else {
            if raw.starts_with("nvcc warning") || raw.starts_with("nvcc info") {
                plan.messages.push(raw.to_string());
                continue;
            }
            if raw.trim().is_empty() {
                continue;
            }
            return Err(DryRunError::UnknownLine {
                line_no,
                text: raw.to_string(),
            });
        };
        if let Some((name, value)) = assignment(body) {
            vars.insert(name.to_string(), value.to_string());
            plan.env.push((name.to_string(), value.to_string()));
            continue;
        }
        if let Some(out) = body.strip_prefix(FILTER_DEPS) {
            plan.steps.push(Step::FilterDeps {
                out: PathBuf::from(out.trim_end()),
            });
            continue;
        }
        let shell_err = |source| DryRunError::Shell { line_no, source };
        if let Some((query, args)) = archive(body) {
            let query = shell::split(query, &vars).map_err(shell_err)?;
            let args = shell::split(args, &vars).map_err(shell_err)?;
            // Only the form nvcc prints: `<host compiler> -print-prog-name=<tool>`.
            if query.len() != 2 || !query[1].starts_with("-print-prog-name=") {
                return Err(DryRunError::UnknownLine {
                    line_no,
                    text: raw.to_string(),
                });
            }
            plan.steps.push(Step::Archive {
                query,
                args,
                line: body.to_string(),
            });
            continue;
        }
        let argv = shell::split(body, &vars).map_err(shell_err)?;
        match argv.first().map(String::as_str) {
            None => {
                return Err(DryRunError::UnknownLine {
                    line_no,
                    text: raw.to_string(),
                });
            }
            Some("rm") => {
                // nvcc only ever prints `rm <files>`; options would change the meaning.
                if argv[1..].iter().any(|a| a.starts_with('-')) {
                    return Err(DryRunError::UnknownLine {
                        line_no,
                        text: raw.to_string(),
                    });
                }
                plan.steps.push(Step::Remove {
                    paths: argv[1..].iter().map(PathBuf::from).collect(),
                });
            }
            Some(_) => plan.steps.push(Step::Run {
                kind: RunKind::of(&argv),
                argv,
                line: body.to_string(),
            }),
        }
    }
    if plan.steps.is_empty() {
        return Err(DryRunError::Empty);
    }
    Ok(plan)
}

/// ``"`gcc -print-prog-name=ar`" cr "lib.a" ...`` → (`gcc -print-prog-name=ar`, `cr "lib.a" ...`):
/// the one command substitution nvcc prints (`-lib`), as the program of its step.
fn archive(body: &str) -> Option<(&str, &str)> {
    let rest = body.strip_prefix("\"`")?;
    let (query, args) = rest.split_once("`\"")?;
    args.starts_with(' ').then_some((query, args))
}

/// `NAME=value` where NAME is a shell variable name. Commands never start that way in nvcc's
/// output (they start with a program path or a quoted `"$CICC_PATH/cicc"`).
fn assignment(body: &str) -> Option<(&str, &str)> {
    let (name, value) = body.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let ok = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"#$ _NVVM_BRANCH_=nvvm
#$ _SPACE_= 
#$ CICC_PATH=/cuda/bin/../nvvm/bin
#$ INCLUDES="-I/cuda/bin/../include"  
#$ gcc -D__CUDA_ARCH_LIST__=900 -E -x c++ -D__CUDACC__ "-I/cuda/bin/../include" -m64 "k.cu" -o "/t/tmpxft_1-5_k.cpp4.ii" 
#$ -- Filter Dependencies -- > k.d
#$ "$CICC_PATH/cicc" --c++17 -arch compute_90 "/t/x.cpp1.ii" --simt-only -o "/t/k.ptx"
#$ ptxas -arch=sm_90 -m64  "/t/k.ptx"  -o "/t/k.sm_90.cubin" 
nvcc warning : something nvcc says itself
#$ rm /t/tmpxft_1-3_k.fatbin
"#;

    #[test]
    fn parses_assignments_steps_and_messages() {
        let plan = parse(SAMPLE, &HashMap::new()).unwrap();
        assert_eq!(plan.env[1], ("_SPACE_".to_string(), " ".to_string()));
        assert_eq!(plan.env[3].1, "\"-I/cuda/bin/../include\"  ");
        assert_eq!(plan.steps.len(), 5);
        assert_eq!(plan.steps[0].tool(), Some("gcc"));
        assert_eq!(plan.steps[1], Step::FilterDeps { out: "k.d".into() });
        match &plan.steps[2] {
            Step::Run { argv, .. } => assert_eq!(argv[0], "/cuda/bin/../nvvm/bin/cicc"),
            s => panic!("unexpected {s:?}"),
        }
        assert_eq!(plan.steps[3].tool(), Some("ptxas"));
        let kinds: Vec<Option<&RunKind>> = plan
            .steps
            .iter()
            .map(|s| match s {
                Step::Run { kind, .. } => Some(kind),
                _ => None,
            })
            .collect();
        assert_eq!(
            kinds,
            [
                Some(&RunKind::Preprocess {
                    output: Some("/t/tmpxft_1-5_k.cpp4.ii".into())
                }),
                None,
                Some(&RunKind::FrontEnd {
                    source: None,
                    ptx: Some("/t/k.ptx".into())
                }),
                Some(&RunKind::Ptxas),
                None,
            ]
        );
        assert_eq!(
            plan.steps[4],
            Step::Remove {
                paths: vec!["/t/tmpxft_1-3_k.fatbin".into()]
            }
        );
        assert_eq!(plan.messages, ["nvcc warning : something nvcc says itself"]);
    }

    #[test]
    fn unknown_lines_fail_loudly() {
        let err = parse(
            "#$ gcc -c k.cu\nsomething new in CUDA 14\n",
            &HashMap::new(),
        )
        .unwrap_err();
        assert!(
            matches!(err, DryRunError::UnknownLine { line_no: 2, .. }),
            "{err}"
        );
        assert!(matches!(
            parse("#$ a | b\n", &HashMap::new()),
            Err(DryRunError::Shell { .. })
        ));
        assert_eq!(parse("#$ X=1\n", &HashMap::new()), Err(DryRunError::Empty));
        assert!(parse("#$ rm -rf /t\n", &HashMap::new()).is_err());
        assert!(parse("#$ \"`rm -rf /`\" x\n", &HashMap::new()).is_err());
        assert!(parse("#$ \"`gcc -print-prog-name=ar` x\n", &HashMap::new()).is_err());
    }

    #[test]
    fn the_archive_step_of_lib() {
        let plan = parse(
            "#$ \"`gcc -print-prog-name=ar`\" cr \"lib w.a\" \"/t/tmpxft_1-9_w.o\"\n",
            &HashMap::new(),
        )
        .unwrap();
        match &plan.steps[0] {
            Step::Archive { query, args, .. } => {
                assert_eq!(query, &["gcc", "-print-prog-name=ar"]);
                assert_eq!(args, &["cr", "lib w.a", "/t/tmpxft_1-9_w.o"]);
            }
            s => panic!("unexpected {s:?}"),
        }
    }
}
