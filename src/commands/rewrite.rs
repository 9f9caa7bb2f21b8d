//! `nvcc-orion rewrite IN -o OUT`: read a CUDA file through the container and cubin layers and
//! write it back. `--identity` changes nothing and checks that the result is byte-identical
//! (the round trip every later rewrite stands on); `--set-regs`/`--set-shared` edit kernels'
//! resource records, for debugging and for the tests of those edits; `--transform KEY=KERNELS`
//! applies any rewrite of `transform::REGISTERED` (`--spill2smem`, `--regdem`: the same
//! for the first two), each kept only where the checker proves it.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;

use crate::container::{self, ContainerError};
use crate::cubin::{Cubin, CubinError};
use crate::transform::area::Options;
use crate::transform::{self, Transform};
use crate::tune::proven;

#[derive(Debug, Parser)]
#[command(about = "Read a CUDA object, cubin, fatbin, executable or archive and write it back")]
pub struct Args {
    /// Change nothing; fail unless the output is byte-identical to the input.
    #[arg(long, conflicts_with_all = ["set_regs", "set_shared", "spill2smem", "regdem", "transform"], required_unless_present_any = ["set_regs", "set_shared", "spill2smem", "regdem", "transform"])]
    pub(crate) identity: bool,
    /// Apply the registered rewrite KEY (`spill2smem`, `regdem`, ...) to these kernels
    /// (mangled names; `all` for every kernel), each rewrite proved by the translation checker;
    /// repeatable. The rewrite may reach `--max-registers` (`--target-registers`) registers.
    #[arg(long, value_name = "KEY=KERNEL,...", value_parser = transform_kernels)]
    pub(crate) transform: Vec<(String, Vec<String>)>,
    /// Move the register spills of these kernels (mangled names; `all` for every kernel that
    /// spills) into shared memory, each rewrite proved by the translation checker (the alias:
    /// the flag's former name, kept for existing command lines).
    #[arg(
        long,
        visible_alias = "spill-to-shared",
        value_name = "KERNEL",
        num_args = 1,
        value_delimiter = ','
    )]
    pub(crate) spill2smem: Vec<String>,
    /// Demote registers of these kernels (mangled names; `all` for every kernel) to shared
    /// memory until each needs at most `--target-registers`, each rewrite proved by the
    /// translation checker and the scheduling check.
    #[arg(
        long,
        value_name = "KERNEL",
        num_args = 1,
        value_delimiter = ',',
        requires = "target_registers",
        conflicts_with = "spill2smem"
    )]
    pub(crate) regdem: Vec<String>,
    /// The register budget regdem must reach (an occupancy cliff: 32, 40, 48, ...);
    /// the same as `--max-registers` for `--transform`.
    #[arg(long, value_name = "N", conflicts_with = "max_registers")]
    pub(crate) target_registers: Option<u32>,
    /// Threads per block to lay spill slots out for, where a kernel declares no launch bounds
    /// (else 1024).
    #[arg(long, value_name = "N")]
    pub(crate) block_size: Option<u32>,
    /// Register count the spill rewrite may reach (default: the limit the kernel was compiled
    /// under).
    #[arg(long, value_name = "N")]
    pub(crate) max_registers: Option<u32>,
    /// Set a kernel's register count (in every cubin that has the kernel): KERNEL=N, mangled name.
    #[arg(long, value_name = "KERNEL=N", value_parser = kernel_value)]
    pub(crate) set_regs: Vec<(String, u64)>,
    /// Set a kernel's static shared-memory size in bytes: KERNEL=BYTES.
    #[arg(long, value_name = "KERNEL=BYTES", value_parser = kernel_value)]
    pub(crate) set_shared: Vec<(String, u64)>,
    /// Output file (may be the input).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub(crate) output: PathBuf,
    #[arg(value_name = "IN")]
    pub(crate) input: PathBuf,
}

/// Why an argument of `rewrite` is refused (clap prints it after the argument).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum ArgError {
    #[error("expected KEY=KERNEL,..., got {0:?}")]
    NotKeyKernels(String),
    /// `known`: the registered keys, listed.
    #[error("unknown transform {key:?} (use {known})")]
    UnknownTransform { key: String, known: String },
    #[error("no kernel named for {0}")]
    NoKernel(String),
    #[error("expected KERNEL=NUMBER, got {0:?}")]
    NotKernelNumber(String),
    #[error("{value:?}: {source}")]
    Number {
        value: String,
        source: std::num::ParseIntError,
    },
    #[error("empty kernel name")]
    EmptyKernel,
}

/// `KEY=KERNEL,...` of `--transform`, KEY one of the registered rewrites.
fn transform_kernels(s: &str) -> Result<(String, Vec<String>), ArgError> {
    let (key, kernels) = s
        .split_once('=')
        .ok_or_else(|| ArgError::NotKeyKernels(s.to_string()))?;
    let keys = transform::keys();
    if !keys.contains(&key) {
        return Err(ArgError::UnknownTransform {
            key: key.to_string(),
            known: keys.join(", "),
        });
    }
    let kernels: Vec<String> = kernels
        .split(',')
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .collect();
    if kernels.is_empty() {
        return Err(ArgError::NoKernel(key.to_string()));
    }
    Ok((key.to_string(), kernels))
}

fn kernel_value(s: &str) -> Result<(String, u64), ArgError> {
    let (k, v) = s
        .rsplit_once('=')
        .ok_or_else(|| ArgError::NotKernelNumber(s.to_string()))?;
    let v = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    }
    .map_err(|source| ArgError::Number {
        value: v.to_string(),
        source,
    })?;
    if k.is_empty() {
        return Err(ArgError::EmptyKernel);
    }
    Ok((k.to_string(), v))
}

/// Run the command; true on failure (already reported on stderr).
pub fn run(args: &Args) -> bool {
    match rewrite(args) {
        Ok(()) => false,
        Err(e) => {
            super::report_error(e);
            true
        }
    }
}

/// Why `rewrite` wrote nothing: each names the file (`path`).
#[derive(Debug, thiserror::Error)]
enum RewriteError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Container {
        path: PathBuf,
        source: ContainerError,
    },
    #[error("{}: no cubin has kernel {}", path.display(), kernels.join(", "))]
    Missing { path: PathBuf, kernels: Vec<String> },
    /// `--identity`: the bytes written back differ (`at`: where, first).
    #[error(
        "{}: writing it back is not byte-identical ({at}); output not written",
        path.display()
    )]
    NotIdentical { path: PathBuf, at: String },
}

fn rewrite(args: &Args) -> Result<(), RewriteError> {
    let input = std::fs::read(&args.input).map_err(|source| RewriteError::Io {
        path: args.input.clone(),
        source,
    })?;
    let at = |source| RewriteError::Container {
        path: args.input.clone(),
        source,
    };
    let mut artifact = container::read(input.clone()).map_err(at)?;
    let mut found = BTreeSet::new();
    let edited = artifact
        .edit_cubins(|loc, bytes| {
            let fail = |e: &dyn std::fmt::Display| ContainerError::Edit {
                at: loc.to_string(),
                what: e.to_string(),
            };
            let mut cubin = Cubin::parse(bytes).map_err(|e| fail(&e))?;
            let names: BTreeSet<String> = cubin.kernels().into_iter().map(|k| k.name).collect();
            let mut changed = false;
            for (kernel, n) in &args.set_regs {
                if names.contains(kernel) {
                    let n = u32::try_from(*n)
                        .map_err(|_| fail(&format!("{kernel}: {n} registers is out of range")))?;
                    cubin.set_register_count(kernel, n).map_err(|e| fail(&e))?;
                    found.insert(kernel.clone());
                    changed = true;
                }
            }
            for (t, asked, max_registers) in asked(args) {
                let requests: Vec<(String, Options)> = names
                    .iter()
                    .filter(|k| asked.iter().any(|w| w == *k || w == "all"))
                    .map(|k| {
                        let mut o = Options::for_kernel(&cubin, k, args.block_size);
                        o.max_registers = max_registers;
                        (k.clone(), o)
                    })
                    .collect();
                if requests.is_empty() {
                    continue;
                }
                let now = cubin.write().map_err(|e| fail(&e))?;
                let outcome = proven::prove(t, &now, &requests).map_err(|e| fail(&e))?;
                for (kernel, result) in &outcome.kernels {
                    match result {
                        Ok(p) => {
                            eprintln!("nvcc-orion: {loc}: {kernel}: {}", p.summary());
                            changed = true;
                        }
                        Err(e) => eprintln!("nvcc-orion: {loc}: {kernel}: left alone: {e}"),
                    }
                    found.insert(kernel.clone());
                }
                cubin = Cubin::parse(&outcome.bytes).map_err(|e| fail(&e))?;
            }
            for (kernel, bytes) in &args.set_shared {
                if names.contains(kernel) {
                    // A section ptxas's layout of which is not known here (sm_100+) is not
                    // added: this image's kernel keeps its shared memory, as a rewrite would.
                    match cubin.set_shared_size(kernel, *bytes) {
                        Err(e @ CubinError::SharedLayout { .. }) => {
                            eprintln!("nvcc-orion: {loc}: {kernel}: shared memory left alone: {e}")
                        }
                        r => {
                            r.map_err(|e| fail(&e))?;
                            changed = true;
                        }
                    }
                    found.insert(kernel.clone());
                }
            }
            let out = cubin.write().map_err(|e| fail(&e))?;
            if changed {
                return Ok(Some(out));
            }
            // Unedited: the cubin writer must give the same bytes back.
            if out != bytes {
                return Err(fail(&format!(
                    "the cubin writer changed an unedited cubin ({})",
                    first_difference(bytes, &out)
                )));
            }
            Ok(None)
        })
        .map_err(at)?;
    let named: Vec<String> = asked(args)
        .into_iter()
        .flat_map(|(_, kernels, _)| kernels)
        .collect();
    let missing: Vec<&str> = args
        .set_regs
        .iter()
        .chain(&args.set_shared)
        .map(|(k, _)| k.as_str())
        .chain(named.iter().map(String::as_str).filter(|k| *k != "all"))
        .filter(|k| !found.contains(*k))
        .collect();
    if !missing.is_empty() {
        return Err(RewriteError::Missing {
            path: args.input.clone(),
            kernels: missing.into_iter().map(str::to_string).collect(),
        });
    }
    let out = artifact.write().map_err(at)?;
    if args.identity && out != input {
        return Err(RewriteError::NotIdentical {
            path: args.input.clone(),
            at: first_difference(&input, &out),
        });
    }
    let _ = edited;
    write_atomically(&args.output, &args.input, &out).map_err(|source| RewriteError::Io {
        path: args.output.clone(),
        source,
    })
}

/// The rewrites asked for, in the order they are registered: each with the kernels named
/// for it (`all`: every kernel; the kernels of every `--transform` naming it and of its alias
/// flag) and the register count it may reach.
fn asked(args: &Args) -> Vec<(&'static dyn Transform, Vec<String>, Option<u32>)> {
    // The flags that predate `--transform`, kept as aliases (tests and docs/usage.md use them).
    let aliases: [(&str, &Vec<String>); 2] =
        [(SPILL2SMEM, &args.spill2smem), (REGDEM, &args.regdem)];
    let max_registers = args.max_registers.or(args.target_registers);
    transform::REGISTERED
        .iter()
        .filter_map(|&t| {
            let kernels: Vec<String> = aliases
                .iter()
                .filter(|(key, _)| *key == t.key())
                .flat_map(|(_, kernels)| kernels.iter().cloned())
                .chain(
                    args.transform
                        .iter()
                        .filter(|(key, _)| key == t.key())
                        .flat_map(|(_, kernels)| kernels.iter().cloned()),
                )
                .collect();
            (!kernels.is_empty()).then_some((t, kernels, max_registers))
        })
        .collect()
}

/// The keys the alias flags stand for.
const SPILL2SMEM: &str = "spill2smem";
const REGDEM: &str = "regdem";

fn first_difference(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!("first difference at byte {i:#x}"),
        None => format!("sizes {} and {}", a.len(), b.len()),
    }
}

/// Write through a temporary file in the same folder, then rename, so that a failed write
/// never leaves half a file, and `-o` may name the input. The input's permissions carry over
/// (an executable stays executable).
fn write_atomically(out: &Path, like: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let permissions = std::fs::metadata(like).ok().map(|m| m.permissions());
    crate::atomic_file::write_with(out, permissions, |f| f.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_values() {
        assert_eq!(kernel_value("_Z1kPf=64"), Ok(("_Z1kPf".into(), 64)));
        assert_eq!(kernel_value("k=0x800"), Ok(("k".into(), 0x800)));
        assert_eq!(
            kernel_value("k"),
            Err(ArgError::NotKernelNumber("k".into()))
        );
        assert_eq!(kernel_value("=3"), Err(ArgError::EmptyKernel));
        assert!(matches!(kernel_value("k=x"), Err(ArgError::Number { value, .. }) if value == "x"));
    }

    #[test]
    fn transform_flags() {
        assert_eq!(
            transform_kernels("regdem=a,b"),
            Ok(("regdem".into(), vec!["a".into(), "b".into()]))
        );
        assert!(matches!(
            transform_kernels("nothing=all"),
            Err(ArgError::UnknownTransform { key, .. }) if key == "nothing"
        ));
        assert_eq!(
            transform_kernels("regdem="),
            Err(ArgError::NoKernel("regdem".into()))
        );
        assert_eq!(
            transform_kernels("regdem"),
            Err(ArgError::NotKeyKernels("regdem".into()))
        );
        // `--transform` and the alias flag name the same rewrite; each appears once, in
        // registration order, with the register count to reach.
        let args = Args::try_parse_from([
            "rewrite",
            "--regdem",
            "k",
            "--transform",
            "regdem=all",
            "--target-registers",
            "40",
            "in.o",
            "-o",
            "out.o",
        ])
        .unwrap();
        let a = asked(&args);
        assert_eq!(a.len(), 1);
        assert_eq!(
            (a[0].0.key(), &a[0].1[..], a[0].2),
            ("regdem", &["k".to_string(), "all".into()][..], Some(40))
        );
    }
}
