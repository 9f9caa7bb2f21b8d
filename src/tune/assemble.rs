//! Assembling the chosen budgets into the cubin that ships, the cheapest exact way:
//! 1. a whole-module variant already built at exactly the chosen budgets;
//! 2. the baseline with the chosen kernels spliced in from the variants they were evaluated
//!    in ([`crate::cubin::splice`], which refuses anything it cannot make exact);
//! 3. one more whole-module ptxas run.
//!
//! Then each chosen rewrite is redone on it and proved again, every kernel must be priced as
//! it was evaluated (the same resources and predicted cost: a whole-module run may lay out
//! module-level constant banks, and so some immediates, differently from an `--entry` run),
//! and the assembly check ([`crate::audit`]) reads the result back with the toolkit and
//! compares every function with the cubin its code came from (a rewritten kernel with its
//! unrewritten section, the proof vouching for the difference). Any failure keeps the
//! baseline; the caller drops a rewritten kernel the check refuses and assembles again
//! (`tune::step`).

use std::collections::BTreeMap;
use std::path::Path;

use super::evaluate::{Variant, requests};
use super::proven;
use super::record::{Assembly, TuneError};
use super::variants::{Budgets, Builder, Built};
use crate::arch::Sm;
use crate::audit;
use crate::cubin::Cubin;
use crate::predict::memory::Placement;
use crate::predict::stalls::function_cost;
use crate::sass::{Function, raw};
use crate::timings::{self, Phase};
use crate::transform;

/// What assembling needs of a tuned step.
pub(crate) struct Inputs<'a> {
    pub(crate) argv: &'a [String],
    /// ptxas's own cubin: parsed, its bytes, its SASS.
    pub(crate) baseline: (&'a Cubin, &'a [u8], &'a [Function]),
    /// The variants as ptxas built them, and as evaluated (rewritten where their round asks).
    pub(crate) built: &'a [Option<Built>],
    pub(crate) parsed: &'a [Variant],
    /// The variants' budgets, as built.
    pub(crate) rounds: &'a [Budgets],
    pub(crate) builder: &'a Builder<'a>,
    pub(crate) block_sizes: &'a [(Option<String>, u32)],
    pub(crate) tools: &'a audit::Tools,
    /// `--orion-test-refuse-rewrite` (testing only): kernels whose rewritten section the
    /// assembly check is handed wrong ([`tampered`]).
    pub(crate) refuse_in_check: &'a [String],
}

/// What was chosen: per kernel not keeping the baseline its budget, and per kernel the
/// variant whose code it must have (None: the baseline).
pub(crate) struct Choice<'a> {
    pub(crate) chosen: &'a Budgets,
    pub(crate) expected: &'a BTreeMap<String, Option<usize>>,
}

/// The final cubin's bytes, the ptxas output it was made from, and how.
pub struct Assembled {
    pub(crate) bytes: Vec<u8>,
    pub(crate) built: Built,
    pub(crate) how: Assembly,
}

/// The cubin with the chosen budgets, checked (see the module docs).
pub(crate) fn assemble(inp: &Inputs<'_>, choice: &Choice<'_>) -> Result<Assembled, TuneError> {
    let (source, how) = timings::timed(Phase::Assembly, || source(inp, choice))?;
    let bytes = rewrite_chosen(source.cubin.clone(), choice.chosen, inp.block_sizes)?;
    let final_cubin = Cubin::parse(&bytes).map_err(|e| TuneError::Cubin("final".to_string(), e))?;
    priced_as_evaluated(inp, choice, &final_cubin)?;
    audit_assembled(inp, choice, &bytes, &source, how)?;
    Ok(Assembled {
        bytes,
        built: source,
        how,
    })
}

/// The ptxas output the final cubin starts from (see the module docs for the order).
fn source(inp: &Inputs<'_>, choice: &Choice<'_>) -> Result<(Built, Assembly), TuneError> {
    if let Some(b) = inp
        .built
        .iter()
        .flatten()
        .find(|b| b.whole_module && &b.budgets == choice.chosen)
    {
        return Ok((b.clone(), Assembly::Variant));
    }
    if let Some(cubin) = splice_choice(inp, choice) {
        let built = Built {
            budgets: choice.chosen.clone(),
            cubin,
            // Not used: ptxas's own diagnostics for the step stay.
            stderr: Vec::new(),
            cached: false,
            whole_module: true,
            request: None,
        };
        return Ok((built, Assembly::Spliced));
    }
    let built = inp.builder.build(inp.rounds.len(), choice.chosen)?;
    Ok((built, Assembly::WholeModule))
}

/// Kernels chosen with a rewrite get the same proved rewrite on the final cubin, each
/// registered rewrite in turn.
fn rewrite_chosen(
    bytes: Vec<u8>,
    chosen: &Budgets,
    block_sizes: &[(Option<String>, u32)],
) -> Result<Vec<u8>, TuneError> {
    let (bytes, _) = rewrite_proved(bytes, chosen, block_sizes, "final assembly", &|_| true)?;
    Ok(bytes)
}

/// The rewrite-and-prove loop: each registered rewrite in turn, proved, on the kernels of
/// `budgets` it makes. A kernel that must hold (`must`) and is not proved fails the whole
/// (`what` names the cubin in the error); any other is left as it was and returned with why.
pub(crate) fn rewrite_proved(
    mut bytes: Vec<u8>,
    budgets: &Budgets,
    block_sizes: &[(Option<String>, u32)],
    what: &str,
    must: &dyn Fn(&str) -> bool,
) -> Result<(Vec<u8>, BTreeMap<String, String>), TuneError> {
    let mut refused = BTreeMap::new();
    for t in transform::REGISTERED {
        let of_t = made_by(budgets, *t);
        if of_t.is_empty() {
            continue;
        }
        let requests = requests(*t, &bytes, &of_t, block_sizes)?;
        let outcome = proven::prove(*t, &bytes, &requests).map_err(|e| TuneError::Transform {
            rewrite: t.key(),
            what: format!("{what}: {e}"),
        })?;
        for (k, r) in &outcome.kernels {
            if let Err(e) = r {
                if must(k) {
                    return Err(TuneError::Transform {
                        rewrite: t.key(),
                        what: format!("{what}, {k}: {e}"),
                    });
                }
                refused.insert(k.clone(), format!("{} not proved: {e}", t.key()));
            }
        }
        bytes = outcome.bytes;
    }
    Ok((bytes, refused))
}

/// The budgets of `budgets` that the rewrite `t` makes.
fn made_by(budgets: &Budgets, t: &dyn transform::Transform) -> Budgets {
    budgets
        .iter()
        .filter(|(_, b)| b.rewrite.is_some_and(|r| r.transform == t.key()))
        .map(|(k, b)| (k.clone(), *b))
        .collect()
}

/// ptxas options under which what ptxas prints depends on each kernel's code (`-v`'s
/// resource lines, the spill, local-memory and double-precision warnings, and `-Werror`,
/// which makes those warnings errors).
const DIAGNOSTICS: &[&str] = &[
    "-v",
    "--verbose",
    "-warn-spills",
    "--warn-on-spills",
    "-warn-lmem-usage",
    "--warn-on-local-memory-usage",
    "-warn-double-usage",
    "--warn-on-double-precision-use",
    "-Werror",
    "--warning-as-error",
];

/// The baseline with each chosen kernel taken from the variant it was evaluated in, when that
/// can be done exactly: plain ptxas budgets only (a SASS rewrite is applied to the final
/// cubin), no per-kernel diagnostics to reproduce ([`DIAGNOSTICS`]: the splice has only the
/// untuned run's messages, so a whole-module run, whose messages ship, is made instead), and
/// a splice the cubin module accepts.
fn splice_choice(inp: &Inputs<'_>, choice: &Choice<'_>) -> Option<Vec<u8>> {
    let diagnostics = inp
        .argv
        .iter()
        .skip(1)
        .any(|a| DIAGNOSTICS.contains(&a.as_str()));
    if diagnostics || choice.chosen.values().any(|b| b.rewritten()) {
        return None;
    }
    let parts: Vec<(&str, &Cubin)> = choice
        .chosen
        .keys()
        .map(|k| {
            let i = (*choice.expected.get(k)?)?;
            Some((k.as_str(), &inp.parsed.get(i)?.as_ref()?.0))
        })
        .collect::<Option<_>>()?;
    crate::cubin::splice::splice(inp.baseline.0, &parts).ok()
}

/// Every kernel of the final cubin has the code it was evaluated with, or code priced the
/// same: the same registers, frame, spills and shared memory, and the same predicted cost.
fn priced_as_evaluated(
    inp: &Inputs<'_>,
    choice: &Choice<'_>,
    final_cubin: &Cubin,
) -> Result<(), TuneError> {
    let sm = final_cubin.arch();
    let mut final_functions = None;
    for (kernel, source) in choice.expected {
        let (evaluated, functions) = match source {
            None => (inp.baseline.0, inp.baseline.2),
            Some(i) => match &inp.parsed[*i] {
                Some((c, f)) => (c, &f[..]),
                None => return Err(TuneError::Mismatch(kernel.clone())),
            },
        };
        if kernel_code(final_cubin, kernel) == kernel_code(evaluated, kernel) {
            continue;
        }
        let resources = |c: &Cubin| {
            c.function_info(kernel).map(|f| {
                let spills = f.spill_instructions;
                (
                    f.registers,
                    f.frame_size,
                    spills,
                    f.static_shared,
                    f.min_stack,
                )
            })
        };
        let finals = final_functions.get_or_insert_with(|| raw::functions(final_cubin));
        // Any one placement of local data will do: the two codes must price alike.
        let memory = Sm::of(sm).memory();
        let at = Placement::new(&memory, 0, 0, 0).latencies(&memory);
        let same_price =
            function_cost(sm, &at, finals, kernel) == function_cost(sm, &at, functions, kernel);
        if resources(final_cubin) != resources(evaluated) || !same_price {
            return Err(TuneError::Mismatch(kernel.clone()));
        }
    }
    Ok(())
}

/// The assembly check on the final cubin: spliced kernels against the variants they came
/// from, everything else against the ptxas output the cubin was made from. A rewritten
/// kernel is compared with its unrewritten section there (`audit::Job::proved`): the
/// translation checker proved the rewrite against that very section in `rewrite_chosen`, and
/// a rewrite is never spliced, so that section is whole-module ptxas output.
fn audit_assembled(
    inp: &Inputs<'_>,
    choice: &Choice<'_>,
    bytes: &[u8],
    source: &Built,
    how: Assembly,
) -> Result<(), TuneError> {
    let rewritten = |k: &String| choice.chosen.get(k).is_some_and(|b| b.rewritten());
    let origin_of = |k: &String| -> Option<Vec<u8>> {
        let i = (*choice.expected.get(k)?)?;
        match how {
            Assembly::Spliced => Some(inp.built[i].as_ref()?.cubin.clone()),
            _ => None,
        }
    };
    let origins: Vec<(&String, Vec<u8>)> = choice
        .chosen
        .keys()
        .filter(|k| !rewritten(k))
        .filter_map(|k| Some((k, origin_of(k)?)))
        .collect();
    let module = match how {
        Assembly::Spliced => inp.baseline.1,
        _ => &source.cubin[..],
    };
    let job = audit::Job {
        shipped: bytes,
        baseline: inp.baseline.1,
        module,
        origins: origins
            .iter()
            .map(|(k, c)| audit::Origin {
                shipped: k,
                name: k,
                cubin: c,
            })
            .collect(),
        proved: choice
            .chosen
            .keys()
            .filter(|k| rewritten(k))
            .map(String::as_str)
            .collect(),
    };
    let wrong = tampered(inp.refuse_in_check, choice, bytes);
    let job = audit::Job {
        shipped: wrong.as_deref().unwrap_or(bytes),
        ..job
    };
    timings::timed(Phase::Check, || {
        audit::check_cached(inp.tools, &job, inp.builder.cache.as_deref())
    })?;
    Ok(())
}

/// `--orion-test-refuse-rewrite` (testing only): `bytes` with each named kernel that this
/// choice rewrites recording one register, fewer than its code names, which the assembly
/// check refuses for that kernel. `None` when no named kernel is rewritten here (what ships
/// is never this copy: it only goes to the check).
fn tampered(names: &[String], choice: &Choice<'_>, bytes: &[u8]) -> Option<Vec<u8>> {
    let rewritten = |k: &&String| choice.chosen.get(*k).is_some_and(|b| b.rewritten());
    let named: Vec<&String> = names.iter().filter(rewritten).collect();
    if named.is_empty() {
        return None;
    }
    let mut cubin = Cubin::parse(bytes).ok()?;
    for k in named {
        cubin.set_register_count(k, 1).ok()?;
    }
    cubin.write().ok()
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

/// Put `bytes` in place of `path` in one rename ([`crate::atomic_file`]), its folder made
/// first, so a failed write never leaves half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    crate::atomic_file::write(path, bytes)
}
