//! Assembling the chosen budgets into the cubin that ships: a built whole-module variant that
//! is exactly the choice, else the baseline with the chosen kernels spliced in from the
//! variants they were evaluated in (what a whole-module run makes, byte for byte, tested),
//! else one more ptxas run; then each chosen rewrite redone on it, proved again, and every
//! kernel's code checked against what was evaluated before it replaces the baseline.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use super::evaluate::{Variant, requests};
use super::proven;
use super::record::TuneError;
use super::variants::{Budgets, Builder, Built};
use crate::cubin::Cubin;
use crate::transform;

/// The final cubin's bytes and the variant it came from (`spliced`: none built).
pub struct Assembled {
    pub(crate) bytes: Vec<u8>,
    pub(crate) built: Built,
    pub(crate) spliced: bool,
}

/// The cubin with the `chosen` budgets. `expected`: per kernel, the variant whose code it
/// must have (none: the baseline); `rounds`: the variants' budgets, as built.
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    argv: &[String],
    baseline: &Cubin,
    built: &[Option<Built>],
    parsed: &[Variant],
    rounds: &[Budgets],
    builder: &Builder<'_>,
    chosen: &Budgets,
    expected: &BTreeMap<String, Option<usize>>,
    block_sizes: &[(Option<String>, u32)],
) -> Result<Assembled, TuneError> {
    let mut spliced = false;
    let final_built = match built
        .iter()
        .flatten()
        .find(|b| b.whole_module && &b.budgets == chosen)
    {
        Some(b) => b.clone(),
        None => match splice_choice(argv, baseline, chosen, expected, parsed) {
            Some(cubin) => {
                spliced = true;
                Built {
                    budgets: chosen.clone(),
                    cubin,
                    // Not used: ptxas's own diagnostics for the step stay.
                    stderr: Vec::new(),
                    cached: false,
                    whole_module: true,
                }
            }
            None => builder.build(rounds.len(), chosen)?,
        },
    };
    let bytes = rewrite_chosen(final_built.cubin.clone(), chosen, block_sizes)?;
    let final_cubin = Cubin::parse(&bytes).map_err(|e| TuneError::Cubin("final".to_string(), e))?;
    for (kernel, source) in expected {
        let evaluated = match source {
            None => baseline,
            Some(i) => match &parsed[*i] {
                Some((c, _)) => c,
                None => return Err(TuneError::Mismatch(kernel.clone())),
            },
        };
        if kernel_code(&final_cubin, kernel) != kernel_code(evaluated, kernel) {
            return Err(TuneError::Mismatch(kernel.clone()));
        }
    }
    Ok(Assembled {
        bytes,
        built: final_built,
        spliced,
    })
}

/// Kernels chosen with a rewrite get the same proved rewrite on the final cubin, each
/// registered rewrite in turn.
fn rewrite_chosen(
    mut bytes: Vec<u8>,
    chosen: &Budgets,
    block_sizes: &[(Option<String>, u32)],
) -> Result<Vec<u8>, TuneError> {
    for t in transform::REGISTERED {
        let of_t = made_by(chosen, *t);
        if of_t.is_empty() {
            continue;
        }
        let requests = requests(*t, &bytes, &of_t, block_sizes)?;
        let outcome = proven::prove(*t, &bytes, &requests)
            .map_err(|e| TuneError::Transform(format!("final assembly: {e}")))?;
        if let Some((k, Err(e))) = outcome.kernels.iter().find(|(_, r)| r.is_err()) {
            return Err(TuneError::Transform(format!("final assembly, {k}: {e}")));
        }
        bytes = outcome.bytes;
    }
    Ok(bytes)
}

/// The budgets of `budgets` that the rewrite `t` makes.
pub(crate) fn made_by(budgets: &Budgets, t: &dyn transform::Transform) -> Budgets {
    budgets
        .iter()
        .filter(|(_, b)| b.rewrite.is_some_and(|r| r.transform == t.key()))
        .map(|(k, b)| (k.clone(), *b))
        .collect()
}

/// The baseline with each chosen kernel taken from the variant it was evaluated in, when that
/// can be done exactly: plain ptxas budgets only (a SASS rewrite is applied to the final
/// cubin), no `-v` report to reproduce, and a splice the cubin module accepts.
fn splice_choice(
    argv: &[String],
    baseline: &Cubin,
    chosen: &Budgets,
    expected: &BTreeMap<String, Option<usize>>,
    parsed: &[Variant],
) -> Option<Vec<u8>> {
    let verbose = argv
        .iter()
        .skip(1)
        .any(|a| matches!(a.as_str(), "-v" | "--verbose"));
    if verbose || chosen.values().any(|b| b.rewritten()) {
        return None;
    }
    let parts: Vec<(&str, &Cubin)> = chosen
        .keys()
        .map(|k| {
            let i = (*expected.get(k)?)?;
            Some((k.as_str(), &parsed.get(i)?.as_ref()?.0))
        })
        .collect::<Option<_>>()?;
    crate::cubin::splice::splice(baseline, &parts).ok()
}

/// The bytes of a kernel's code and of its own sub-functions (`$kernel$...`), in symbol
/// order: what must not change between the evaluated variant and the cubin that ships.
pub(crate) fn kernel_code(cubin: &Cubin, kernel: &str) -> Vec<Vec<u8>> {
    let prefix = format!("${kernel}$");
    let sections = &cubin.elf().sections;
    cubin
        .functions()
        .into_iter()
        .filter(|f| f.name == kernel || f.name.starts_with(&prefix))
        .map(|f| {
            let data = sections
                .get(f.text_section)
                .map_or(&[][..], |s| &s.data[..]);
            let start = usize::try_from(f.text_offset)
                .unwrap_or(usize::MAX)
                .min(data.len());
            let end = usize::try_from(f.text_offset.saturating_add(f.text_size))
                .unwrap_or(usize::MAX)
                .min(data.len());
            data[start..end.max(start)].to_vec()
        })
        .collect()
}

/// Put `bytes` in place of `path` in one rename, so a failed write never leaves half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
