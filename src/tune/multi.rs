//! Multi-variant code (issue 21, docs/selector.md §Variant names): under
//! `NVCC_ORION=adapt|train`, each tuned kernel's ranked candidates ([`ranked`]) ship in the
//! same cubin as extra entry functions `<kernel>__orion_v<k>`, so that the launch-time
//! selector can find them from the original's handle. The original name keeps the static
//! winner, exactly as a plain tune build ships it, so the object works without a runtime.
//!
//! First choice: no ptxas run. Each variant is added to plain tune's cubin from the cubin its
//! candidate was built and evaluated in ([`crate::cubin::entry`], issue 31), where that can
//! be made exact (no rewrite, the module's constant banks read the same, not relocatable,
//! no sm_100+ copy of the code, no debug information) and every check below passes.
//!
//! Otherwise one extra ptxas run builds the step's PTX with each variant's `.entry` copied
//! under its name and given its budget; each rewrite-made variant then gets its rewrite,
//! proved by the checker as for the chosen kernels. A renamed copy can change ptxas's
//! heuristics, so every variant is checked against the candidate it was ranked from
//! (registers, spills, shared memory); one that differs is dropped and the cubin built once
//! more without it. Variant indices stay stable: a dropped `k` is absent, never renumbered,
//! so a training profile's variant `k` is the same candidate in the build it guides.
//! Before either, the object-size cap ([`super::cap`]) leaves out the variants the step's
//! cubin has no room for, the same way (absent, never renumbered).
//! An original that differs from what plain tune ships drops its variants the same way; one
//! with no variant to drop gets plain tune's copy spliced in ([`settle_originals`], and
//! [`settle_audit`] where only the assembly check sees the difference), with one warning
//! line naming it, so that it costs at most itself. Where the splice refuses (debug
//! information) the step's variants are not embedded: no build with fewer copies is sure to
//! give plain tune's original back, since any copy can change how ptxas compiles it.
//! Anything else that goes wrong leaves what plain tune ships, with one warning line.

use std::collections::BTreeMap;

use super::assemble::kernel_code;
use super::cap;
use super::ptx::{self, Budget};
use super::ranked::ranked;
use super::record::{Assembly, Embedded, KernelRecord, Limit, TuneError, VariantsRefused};
use super::select::Evaluated;
use super::variants::{self, Budgets, VariantError};
use crate::cubin::{Cubin, FunctionInfo, entry};

/// What the emitter needs of a tuned step.
pub(crate) struct Input<'a> {
    /// What the step's own assembly reads: its argv, ptxas's own cubin (where every
    /// candidate without a budget was evaluated), the variants as evaluated, the builder,
    /// the block sizes and the check's tools.
    pub(crate) step: &'a super::assemble::Inputs<'a>,
    /// The cubin plain tune ships (the assembled one, or ptxas's own when nothing changed).
    pub(crate) plain: &'a [u8],
    /// The budgets the original names get (the static winners), as assemble builds them.
    pub(crate) chosen: &'a Budgets,
    /// Per kernel: each candidate's variant in `parsed` (None = the baseline).
    pub(crate) sources: &'a BTreeMap<String, Vec<Option<usize>>>,
    /// The first free variant number of the step (names the work files).
    pub(crate) index: usize,
    /// `--orion-test-perturb-original` (testing only): originals whose copy in the
    /// multi-variant cubin is changed before the checks ([`perturbed`]).
    pub(crate) perturb: &'a [String],
    /// The first whole-module run, when the step started it beside plain tune's assembly
    /// ([`early`]); used only where [`build`] asks for exactly what it ran.
    pub(crate) prebuilt: Option<&'a Prebuilt>,
}

/// What the emitter gives the step.
#[derive(Debug)]
pub(crate) enum Embedding {
    /// The multi-variant cubin to ship, a verbose note on what it holds, how it was made,
    /// and a warning line per original kernel it ships from plain tune's cubin
    /// ([`settle_originals`]).
    Cubin(Vec<u8>, String, Assembly, Vec<String>),
    /// Nothing to embed (no kernel has a second candidate): plain tune's cubin ships.
    None,
    /// Not attempted, for this reason (a verbose note); plain tune's cubin ships.
    Note(String),
    /// Failed (a warning line); plain tune's cubin ships.
    Failed(String),
}

/// One variant to embed.
#[derive(Debug, Clone)]
struct Want {
    kernel: String,
    /// Index into the step's records.
    record: usize,
    variant: usize,
    name: String,
    /// Index into the record's candidates.
    candidate: usize,
    budget: Option<Budget>,
}

/// Embed the variants of the step, filling each record's `variants` when it works.
/// Never fails the build: a panic or an error becomes [`Embedding::Failed`].
pub(crate) fn embed(input: &Input<'_>, records: &mut [KernelRecord]) -> Embedding {
    if !variants::entries_allowed(input.step.argv) {
        return Embedding::Note(
            "no variants embedded: the step selects its entries (--entry/-e)".to_string(),
        );
    }
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| emit(input, records)));
    match r {
        Ok(Ok(Some((bytes, how, from_plain)))) => {
            let all = || records.iter().flat_map(|r| r.variants.iter().skip(1));
            let capped = all().filter(|v| v.left_out.is_some()).count();
            // Named: a disagreement costs only the variants it concerns.
            let dropped: Vec<&str> = all()
                .filter(|v| v.dropped.is_some() && v.left_out.is_none())
                .map(|v| v.name.as_str())
                .collect();
            let note = format!(
                "{} variant(s) embedded beside the original kernels ({}){}{}",
                all().count() - dropped.len() - capped,
                match how {
                    Assembly::VariantsAdded => "from the cubins tuning built",
                    _ => "by one more whole-module ptxas run",
                },
                if !dropped.is_empty() {
                    format!(
                        ", {} dropped ({}: their build differed; see the report)",
                        dropped.len(),
                        dropped.join(", ")
                    )
                } else {
                    String::new()
                },
                if capped > 0 {
                    format!(", {capped} left out by the object-size cap")
                } else {
                    String::new()
                }
            );
            let warnings = from_plain
                .iter()
                .map(|(kernel, why)| {
                    format!(
                        "kernel {kernel} differs in the multi-variant build ({why}); it ships \
                         plain tune's code, taken into the multi-variant cubin, and the other \
                         kernels keep their variants"
                    )
                })
                .collect();
            Embedding::Cubin(bytes, note, how, warnings)
        }
        // Every variant dropped (the records say why), or none to embed.
        Ok(Ok(None)) if records.iter().any(|r| !r.variants.is_empty()) => Embedding::Note(
            "no variants embedded: each one was left out by the object-size cap or its build \
             differed (see the report)"
                .to_string(),
        ),
        Ok(Ok(None)) => Embedding::None,
        Ok(Err(e)) => Embedding::Failed(format!(
            "variants not embedded ({e}); the tuned kernels ship alone"
        )),
        Err(_) => Embedding::Failed(
            "variants not embedded (internal error); the tuned kernels ship alone".to_string(),
        ),
    }
}

/// What [`emit`] gives: the multi-variant cubin, how it was made, and the originals it took
/// from plain tune's cubin ([`settle_originals`]: each with why).
type Emitted = (Vec<u8>, Assembly, BTreeMap<String, String>);

/// The multi-variant cubin ([`Emitted`]), or `None` when no kernel has a variant beyond its
/// original.
fn emit(input: &Input<'_>, records: &mut [KernelRecord]) -> Result<Option<Emitted>, TuneError> {
    let wants = wanted(input.sources, records);
    if wants.is_empty() {
        return Ok(None);
    }
    let capped = over_cap(input, records, &wants, input.plain.len() as u64);
    // A name the module already uses would make two entries of one name.
    let taken = ptx::entries(input.step.builder.ptx).map_err(VariantError::from)?;
    if let Some(w) = wants
        .iter()
        .find(|w| taken.iter().any(|e| e.name == w.name))
    {
        return Err(VariantsRefused::NameTaken(w.name.clone()).into());
    }
    // Any failure of the copy, an error or a panic, leaves the whole-module run below.
    let copied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        reused(input, records, &wants, &capped)
    }));
    if let Ok(Some(bytes)) = copied {
        return Ok(Some((bytes, Assembly::VariantsAdded, BTreeMap::new())));
    }
    // What the cap left out is built no more than what differed.
    let mut dropped = capped.clone();
    for attempt in 0..=LAST_ATTEMPT {
        let live: Vec<&Want> = wants
            .iter()
            .filter(|w| !dropped.contains_key(&w.name))
            .collect();
        if live.is_empty() {
            fill(records, &wants, (&dropped, &capped), &BTreeMap::new(), None);
            return Ok(None);
        }
        let (bytes, raw, refused) = build(input, &live, attempt)?;
        let mut differ = refused;
        let bytes = perturbed(input.perturb, bytes);
        let (bytes, multi, from_plain) = settle_originals(input, &live, bytes, &mut differ)?;
        let mut same_code = BTreeMap::new();
        for w in &live {
            if differ.contains_key(&w.name) {
                continue;
            }
            match check_variant(input, records, &multi, w) {
                Ok(same) => {
                    same_code.insert(w.name.clone(), same);
                }
                Err(why) => {
                    differ.insert(w.name.clone(), why);
                }
            }
        }
        let alone = audit_multi(input, &bytes, &raw, &live, &mut differ)?;
        let (bytes, multi, from_plain) = settle_audit(
            input,
            (bytes, multi, from_plain),
            &raw,
            &live,
            alone,
            &mut differ,
        )?;
        if differ.is_empty() {
            fill(
                records,
                &wants,
                (&dropped, &capped),
                &same_code,
                Some(&multi),
            );
            return Ok(Some((bytes, Assembly::MultiVariant, from_plain)));
        }
        if attempt == LAST_ATTEMPT {
            let (kernel, why) = differ.into_iter().next().unwrap_or_default();
            return Err(VariantsRefused::StillDiffers { kernel, why }.into());
        }
        dropped.extend(differ);
    }
    Err(VariantsRefused::NoAttemptLeft.into())
}

/// The wanted variants the object-size cap leaves out ([`cap::fitting`]), with why: each
/// priced by its kernel's sections in the cubin its candidate was built in (ptxas's own
/// when that cannot be found) and weighed by how far its occupancy is from the static
/// winner's.
fn over_cap(
    input: &Input<'_>,
    records: &[KernelRecord],
    wants: &[Want],
    tuned: u64,
) -> BTreeMap<String, String> {
    let own = input.step.baseline.1.len() as u64;
    let items: Vec<cap::Item<'_>> = wants
        .iter()
        .map(|w| {
            let r = &records[w.record];
            let donor = donor(input, w).unwrap_or(input.step.baseline.0);
            cap::Item {
                kernel: &w.kernel,
                variant: w.variant,
                bytes: cap::entry_bytes(donor, &w.kernel, &w.name),
                worth: cap::occupancy_gap(
                    &r.candidates[w.candidate].warps_per_sm,
                    &r.candidates[r.chosen].warps_per_sm,
                ),
            }
        })
        .collect();
    let fits = cap::fitting(own, tuned, &items);
    let room = cap::room(own, tuned);
    wants
        .iter()
        .zip(items.iter().zip(fits))
        .filter(|(_, (_, fits))| !fits)
        .map(|(w, (it, _))| {
            let why = format!(
                "left out by the object-size cap: the step's variants may add {room} B \
                 ({}% of ptxas's own cubin, {own} B, less the tuned kernels' {tuned} B, or \
                 {} B at least); this one, about {} B, does not fit beside those before it",
                cap::CAP_PERCENT,
                cap::FLOOR_BYTES,
                it.bytes
            );
            (w.name.clone(), why)
        })
        .collect()
}

/// The cubin variant `w`'s candidate was built and evaluated in (ptxas's own for the
/// baseline candidate).
fn donor<'a>(input: &'a Input<'_>, w: &Want) -> Option<&'a Cubin> {
    match *input.sources.get(&w.kernel)?.get(w.candidate)? {
        None => Some(input.step.baseline.0),
        Some(i) => input.step.parsed.get(i)?.as_ref().map(|v| &v.0),
    }
}

/// The multi-variant cubin without running ptxas again, where it can be made exactly and
/// every check passes: plain tune's cubin with each variant the cap keeps (`capped`: the
/// ones it leaves out) added under its name from the cubin its candidate was evaluated in
/// ([`crate::cubin::entry`]). `None`: not possible (a rewrite's variant, a module the copy
/// refuses, any check that disagrees), so the whole-module run below makes it.
fn reused(
    input: &Input<'_>,
    records: &mut [KernelRecord],
    all: &[Want],
    capped: &BTreeMap<String, String>,
) -> Option<Vec<u8>> {
    let plain = Cubin::parse(input.plain).ok()?;
    let wants: Vec<&Want> = all
        .iter()
        .filter(|w| !capped.contains_key(&w.name))
        .collect();
    if wants.is_empty() {
        return None;
    }
    let donors: Option<Vec<&Cubin>> = wants
        .iter()
        .map(|w| {
            if w.budget.is_some_and(|b| b.rewritten()) {
                return None;
            }
            donor(input, w)
        })
        .collect();
    let donors = donors?;
    let copies: Vec<entry::Copy<'_>> = wants
        .iter()
        .zip(&donors)
        .map(|(w, donor)| entry::Copy {
            kernel: &w.kernel,
            name: &w.name,
            donor,
        })
        .collect();
    let bytes = perturbed(input.perturb, entry::add_copies(&plain, &copies).ok()?);
    let multi = Cubin::parse(&bytes).ok()?;
    // The originals are plain tune's sections here: one that differs is a fault of the copy.
    if !check_originals(input, &multi).ok()?.is_empty() {
        return None;
    }
    let live = wants;
    let mut same_code = BTreeMap::new();
    for w in &live {
        match check_variant(input, records, &multi, w) {
            Ok(true) => {
                same_code.insert(w.name.clone(), true);
            }
            _ => return None,
        }
    }
    let mut differ = BTreeMap::new();
    let alone = audit_multi(input, &bytes, input.plain, &live, &mut differ).ok()?;
    if !alone.is_empty() || !differ.is_empty() {
        return None;
    }
    fill(records, all, (capped, capped), &same_code, Some(&multi));
    Some(bytes)
}

/// The build after the first drops what differed: one more ptxas run at most.
const LAST_ATTEMPT: usize = 1;

/// Every tuned kernel's ranked variants beyond the original (`sources`: the kernels the
/// step tuned).
fn wanted(sources: &BTreeMap<String, Vec<Option<usize>>>, records: &[KernelRecord]) -> Vec<Want> {
    let mut wants = Vec::new();
    for (ri, r) in records.iter().enumerate() {
        if !sources.contains_key(&r.kernel) {
            continue;
        }
        for (k, v) in ranked(&r.kernel, &r.candidates, r.chosen)
            .into_iter()
            .enumerate()
            .skip(1)
        {
            wants.push(Want {
                kernel: r.kernel.clone(),
                record: ri,
                variant: k,
                name: v.name,
                candidate: v.candidate,
                budget: r.candidates[v.candidate].budget,
            });
        }
    }
    wants
}

/// What one build of the multi-variant cubin gives: the bytes after the rewrites, ptxas's
/// own output, and the variants whose rewrite was not proved (with why).
type Build = (Vec<u8>, Vec<u8>, BTreeMap<String, String>);

/// One ptxas run of the step's PTX with the `live` variants' entries copied in and given
/// their budgets (the originals get the chosen ones), then each rewrite on the kernels it
/// makes.
fn build(input: &Input<'_>, live: &[&Want], attempt: usize) -> Result<Build, TuneError> {
    let (budgets, text) = request(input, live)?;
    let prebuilt = input
        .prebuilt
        .filter(|p| attempt == 0 && p.budgets == budgets && p.text == text)
        .and_then(|p| p.built.clone());
    let built = match prebuilt {
        Some(built) => built,
        None => whole_module(input.step.builder, input.index + attempt, &budgets, &text)?,
    };
    // A variant runs at the block sizes its original runs at.
    let mut block_sizes = input.step.block_sizes.to_vec();
    for w in live {
        if let Some(n) = crate::settings::block_size_for(input.step.block_sizes, &w.kernel) {
            block_sizes.push((Some(w.name.clone()), n));
        }
    }
    let (bytes, refused) = super::assemble::rewrite_proved(
        built.cubin.clone(),
        &budgets,
        &block_sizes,
        "multi-variant cubin",
        &|k| input.chosen.contains_key(k),
    )?;
    Ok((bytes, built.cubin, refused))
}

/// What one build of the multi-variant cubin asks ptxas for: the budgets (the originals get
/// the chosen ones, each of the `live` variants its own) and the step's PTX with each
/// variant's entry copied in under its name and given its budget.
fn request(input: &Input<'_>, live: &[&Want]) -> Result<(Budgets, String), TuneError> {
    let copies: Vec<(String, String)> = live
        .iter()
        .map(|w| (w.kernel.clone(), w.name.clone()))
        .collect();
    let mut budgets = input.chosen.clone();
    for w in live {
        // ptxas's own candidate gets no budget (a user's own `.maxnreg` stays, copied along).
        if let Some(b) = w.budget {
            budgets.insert(w.name.clone(), b);
        }
    }
    let text = ptx::with_copies(input.step.builder.ptx, &copies)
        .and_then(|t| ptx::with_budgets(&t, &budgets))
        .map_err(VariantError::from)?;
    Ok((budgets, text))
}

/// The first whole-module run of [`emit`], known before plain tune's cubin is assembled
/// ([`early`]): what to give ptxas.
#[derive(Debug)]
pub(crate) struct Early {
    budgets: Budgets,
    text: String,
}

/// What an [`Early`] run made ([`start`]): its request, and its output (`None`: it failed,
/// and [`build`] runs it again where it is wanted, to fail or not as it then does).
#[derive(Debug)]
pub(crate) struct Prebuilt {
    budgets: Budgets,
    text: String,
    built: Option<variants::Built>,
}

/// Issue 47: the whole-module run that [`emit`] will make first, when that is known before
/// plain tune's cubin exists, so that the step can run it beside the assembly instead of
/// after it. Known when the copy ([`reused`]) is sure to be refused whatever plain tune's
/// cubin turns out to be ([`copy_refused`]). The object-size cap reads that cubin's size,
/// which [`estimated_plain`] stands in for (`input.plain` is not read: that cubin does not
/// exist yet). [`build`] uses the run only if the real cubin leads it to ask for exactly the
/// same budgets and text, so what ships never depends on the estimate.
/// `None` when nothing is known or nothing is to be built.
pub(crate) fn early(input: &Input<'_>, records: &[KernelRecord]) -> Option<Early> {
    if !variants::entries_allowed(input.step.argv) {
        return None;
    }
    let wants = wanted(input.sources, records);
    // The cap reads plain tune's size, estimated: where the real size leads it to leave out
    // other variants, this run is wasted (the bytes that ship are the same).
    let capped = over_cap(input, records, &wants, estimated_plain(input, records));
    let live: Vec<&Want> = wants
        .iter()
        .filter(|w| !capped.contains_key(&w.name))
        .collect();
    if live.is_empty() || !copy_refused(input, &live) {
        return None;
    }
    // A name the module already uses fails the embedding before any run.
    let taken = ptx::entries(input.step.builder.ptx).ok()?;
    if live.iter().any(|w| taken.iter().any(|e| e.name == w.name)) {
        return None;
    }
    let (budgets, text) = request(input, &live).ok()?;
    Some(Early { budgets, text })
}

/// Plain tune's cubin's size before it is assembled: ptxas's own, with each kernel's own
/// sections as large as in the cubin its static winner was evaluated in (a kernel's code is
/// the same there and in the assembly: `assemble` checks it). It missed by 24 B of 297 KB on
/// `tests/kernels/spill2smem/spills.cu` (each kernel forced to its lowest budget) and by
/// 764 B of 450 KB on issue 47's held-out file (names, symbols and frames of helpers only the
/// retuned build has).
fn estimated_plain(input: &Input<'_>, records: &[KernelRecord]) -> u64 {
    let base = input.step.baseline.0;
    let own = |c: &Cubin, kernel: &str| -> i64 {
        let suffix = format!(".{kernel}");
        c.elf()
            .sections
            .iter()
            .filter(|s| s.name.ends_with(&suffix))
            .map(|s| i64::try_from(s.file_size()).unwrap_or(i64::MAX))
            .sum()
    };
    let grown: i64 = records
        .iter()
        .filter_map(|r| {
            let i = (*input.sources.get(&r.kernel)?.get(r.chosen)?)?;
            let donor = &input.step.parsed.get(i)?.as_ref()?.0;
            Some(own(donor, &r.kernel) - own(base, &r.kernel))
        })
        .sum();
    let size = i64::try_from(input.step.baseline.1.len()).unwrap_or(i64::MAX);
    u64::try_from(size.saturating_add(grown)).unwrap_or(0)
}

/// Whether [`reused`] refuses `live` whatever plain tune's cubin: a variant a rewrite made,
/// one whose donor is not found, or one the copy refuses on its donor alone
/// ([`entry::refused_by_donor`]: e.g. a kernel that calls a function with its own section).
fn copy_refused(input: &Input<'_>, live: &[&Want]) -> bool {
    live.iter().any(|w| {
        w.budget.is_some_and(|b| b.rewritten())
            || donor(input, w).is_none_or(|d| entry::refused_by_donor(d, &w.kernel).is_err())
    })
}

/// Start `early`'s ptxas run (variant `index`, as [`build`]'s first) on a thread of `scope`,
/// on an extra job slot held until it ends; `None` (nothing started) when no slot is free,
/// and [`build`] then runs it in turn, as without an early run.
pub(crate) fn start<'scope, 'env, 'b>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    builder: &'env variants::Builder<'b>,
    index: usize,
    early: Early,
) -> Option<std::thread::ScopedJoinHandle<'scope, Prebuilt>> {
    let slot = builder.slots.try_extra()?;
    Some(scope.spawn(move || {
        let _slot = slot;
        let built = whole_module(builder, index, &early.budgets, &early.text).ok();
        Prebuilt {
            budgets: early.budgets,
            text: early.text,
            built,
        }
    }))
}

/// ptxas's threads for the multi-variant run, whatever the machine: ptxas lays the cubin out
/// by how the module is split, so the number is fixed for the same bytes everywhere (its
/// code is the same as a single-threaded run's; the checks below compare each kernel).
const SPLIT_COMPILE: &str = "2";

/// The whole-module ptxas run of `text`: on two threads (`--split-compile`, holding an extra
/// job slot when one is free) unless the step sets its own, since this run is the one
/// nothing else overlaps (issue 31); single-threaded when this ptxas refuses the option.
fn whole_module(
    builder: &variants::Builder<'_>,
    index: usize,
    budgets: &Budgets,
    text: &str,
) -> Result<variants::Built, VariantError> {
    let _timed = crate::timings::span(crate::timings::Phase::Selector);
    let own = builder
        .argv
        .iter()
        .any(|a| a.trim_start_matches('-').starts_with("split-compile"));
    if own {
        return builder.build_text(index, budgets, text, &[], &[]);
    }
    let split = ["--split-compile".to_string(), SPLIT_COMPILE.to_string()];
    let _slot = builder.slots.try_extra();
    match builder.build_text(index, budgets, text, &[], &split) {
        Err(VariantError::Refused { .. }) => builder.build_text(index, budgets, text, &[], &[]),
        r => r,
    }
}

/// The assembly check on the multi-variant cubin: each original against what plain tune
/// ships, each variant against its standalone candidate (under the original's name), the
/// rest against ptxas's output `raw`. A variant a rewrite made is checked as the default
/// mode checks a rewritten kernel (`audit::Job::proved`): the translation checker proved it
/// against its unrewritten section in `raw` ([`build`]), and everything the proof does not
/// cover is compared with that section, which is whole-module ptxas output. (Its standalone
/// candidate is an `--entry` build, rewritten on its own: its helper subroutines' frames
/// follow that build's rewrite, not this one's.) A variant that disagrees joins `differ` (it
/// is dropped and the cubin built again), and so do the variants of an original that
/// disagrees ([`blame_variants`]). An original with no variant left to blame is given back,
/// with what differs, for [`settle_audit`]; any other disagreement fails the embedding.
fn audit_multi(
    input: &Input<'_>,
    bytes: &[u8],
    raw: &[u8],
    live: &[&Want],
    differ: &mut BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, TuneError> {
    let plain = Cubin::parse(input.plain).map_err(|e| TuneError::Cubin("tuned".to_string(), e))?;
    let checked = |w: &&&Want| !differ.contains_key(&w.name);
    let rewritten = |w: &&&Want| w.budget.is_some_and(|b| b.rewritten());
    let proved: Vec<&str> = live
        .iter()
        .filter(checked)
        .filter(rewritten)
        .map(|w| w.name.as_str())
        .collect();
    let standalone: Vec<(&Want, Vec<u8>)> = live
        .iter()
        .filter(checked)
        .filter(|w| !rewritten(w))
        .filter_map(|w| {
            let source = *input.sources.get(&w.kernel)?.get(w.candidate)?;
            let bytes = match source {
                None => input.step.baseline.1.to_vec(),
                Some(i) => input.step.parsed.get(i)?.as_ref()?.0.write().ok()?,
            };
            Some((*w, bytes))
        })
        .collect();
    let kernels: Vec<String> = plain.kernels().into_iter().map(|f| f.name).collect();
    let mut origins: Vec<crate::audit::Origin<'_>> = kernels
        .iter()
        .map(|k| crate::audit::Origin {
            shipped: k,
            name: k,
            cubin: input.plain,
        })
        .collect();
    origins.extend(standalone.iter().map(|(w, c)| crate::audit::Origin {
        shipped: &w.name,
        name: &w.kernel,
        cubin: c,
    }));
    let job = crate::audit::Job {
        proved,
        shipped: bytes,
        baseline: input.step.baseline.1,
        module: raw,
        origins,
    };
    let (_, found) = crate::timings::timed(crate::timings::Phase::Check, || {
        crate::audit::check_each(input.step.tools, &job)
    })?;
    let mut alone = BTreeMap::new();
    for e in found {
        match e {
            crate::audit::AuditError::Disagrees { kernel, what }
                if live.iter().any(|w| w.name == kernel) =>
            {
                differ.insert(kernel, format!("assembly check: {what}"));
            }
            crate::audit::AuditError::Disagrees { kernel, what }
                if blame_variants(live, &kernel, &format!("assembly check: {what}"), differ) => {}
            crate::audit::AuditError::Disagrees { kernel, what } if kernels.contains(&kernel) => {
                alone.insert(kernel, format!("assembly check: {what}"));
            }
            e => return Err(e.into()),
        }
    }
    Ok(alone)
}

/// The multi-variant cubin after the assembly check found originals with no variant to
/// blame that differ from plain tune's (`alone`, each with what differs; [`audit_multi`]):
/// the same remedy as [`settle_originals`]'s, for a difference only the check sees (an
/// attribute, a relocation, a symbol's flags). Plain tune's sections of each are spliced in
/// and both checks run once more; the originals join those taken from plain tune's cubin.
/// Where the splice refuses, or the check still disagrees, the embedding fails, naming the
/// kernel. Unchanged when `alone` is empty.
fn settle_audit(
    input: &Input<'_>,
    (bytes, multi, mut from_plain): Settled,
    raw: &[u8],
    live: &[&Want],
    alone: BTreeMap<String, String>,
    differ: &mut BTreeMap<String, String>,
) -> Result<Settled, TuneError> {
    if alone.is_empty() {
        return Ok((bytes, multi, from_plain));
    }
    let (bytes, multi) = take_plain_copies(input, &multi, &alone)?;
    let mut still = check_originals(input, &multi)?;
    still.extend(audit_multi(input, &bytes, raw, live, differ)?);
    if let Some((kernel, why)) = still.into_iter().next() {
        let why = format!("{why}, even with plain tune's copy taken in");
        return Err(VariantsRefused::OriginalDiffers { kernel, why }.into());
    }
    from_plain.extend(alone);
    Ok((bytes, multi, from_plain))
}

/// What [`settle_originals`] gives: the bytes, the parsed cubin, and the originals taken from
/// plain tune's cubin (each with why).
type Settled = (Vec<u8>, Cubin, BTreeMap<String, String>);

/// The multi-variant cubin `bytes` (parsed too) with every original as plain tune ships it,
/// and the originals taken from plain tune's cubin, with why. An original that differs
/// ([`check_originals`]) drops the variants copied from it ([`blame_variants`]: the cubin is
/// built again without them). For one with no variant left to drop, building again could
/// only help by leaving out other kernels' variants, so plain tune's sections of it are
/// spliced in ([`crate::cubin::splice`]) and it is
/// checked once more: it costs at most itself, never the other kernels' variants. Only
/// where the splice refuses (or its result still differs) does the embedding fail, naming
/// the kernel. The assembly check ([`audit_multi`]) then compares the result with plain
/// tune's cubin as it compares every original; it shares nothing with the splice.
fn settle_originals(
    input: &Input<'_>,
    live: &[&Want],
    bytes: Vec<u8>,
    differ: &mut BTreeMap<String, String>,
) -> Result<Settled, TuneError> {
    let multi =
        Cubin::parse(&bytes).map_err(|e| TuneError::Cubin("multi-variant".to_string(), e))?;
    let mut alone = BTreeMap::new();
    for (kernel, why) in check_originals(input, &multi)? {
        if !blame_variants(live, &kernel, &why, differ) {
            alone.insert(kernel, why);
        }
    }
    if alone.is_empty() {
        return Ok((bytes, multi, alone));
    }
    let (spliced, multi) = take_plain_copies(input, &multi, &alone)?;
    let still = check_originals(input, &multi)?;
    if let Some((kernel, why)) = still.into_iter().find(|(k, _)| alone.contains_key(k)) {
        let why = format!("{why}, even with plain tune's copy taken in");
        return Err(VariantsRefused::OriginalDiffers { kernel, why }.into());
    }
    Ok((spliced, multi, alone))
}

/// `multi` with plain tune's sections of each original in `alone` (each with why it differs)
/// spliced in ([`crate::cubin::splice`]), written and parsed. Where the splice refuses, the
/// embedding fails, naming the kernel, why it differed and why the splice refused.
fn take_plain_copies(
    input: &Input<'_>,
    multi: &Cubin,
    alone: &BTreeMap<String, String>,
) -> Result<(Vec<u8>, Cubin), TuneError> {
    let plain = Cubin::parse(input.plain).map_err(|e| TuneError::Cubin("tuned".to_string(), e))?;
    let parts: Vec<(&str, &Cubin)> = alone.keys().map(|k| (k.as_str(), &plain)).collect();
    let spliced = crate::cubin::splice::splice(multi, &parts).map_err(|e| {
        let kernel = if e.kernel.is_empty() {
            alone.keys().next().cloned().unwrap_or_default()
        } else {
            e.kernel.clone()
        };
        let why = alone.get(&kernel).cloned().unwrap_or_default();
        VariantsRefused::OriginalDiffers {
            kernel,
            why: format!("{why}; plain tune's copy could not be taken in: {}", e.what),
        }
    })?;
    let parsed =
        Cubin::parse(&spliced).map_err(|e| TuneError::Cubin("multi-variant".to_string(), e))?;
    Ok((spliced, parsed))
}

/// `--orion-test-perturb-original` (testing only): `bytes` as if this build had compiled
/// each named original apart from plain tune's. `KERNEL` changes one bit (of its third
/// byte) of the kernel's first instruction, which [`check_originals`] sees; `KERNEL:check`
/// changes one bit of a value in the kernel's `.nv.info.<k>` that [`check_originals`] does
/// not read but the assembly check compares ([`perturbed_attribute`]). Only ever handed to
/// the checks, which refuse it, so it never ships. Unchanged when nothing is named or the
/// bytes do not parse.
fn perturbed(names: &[String], mut bytes: Vec<u8>) -> Vec<u8> {
    if names.is_empty() {
        return bytes;
    }
    let Ok(cubin) = Cubin::parse(&bytes) else {
        return bytes;
    };
    for f in cubin.functions() {
        let at = if names.contains(&f.name) {
            cubin
                .elf()
                .sections
                .get(f.text_section)
                .map(|s| s.sh_offset.saturating_add(f.text_offset).saturating_add(2))
        } else if names.contains(&format!("{}:check", f.name)) {
            perturbed_attribute(&cubin, f.text_section)
        } else {
            continue;
        };
        if let Some(b) = at
            .and_then(|a| usize::try_from(a).ok())
            .and_then(|a| bytes.get_mut(a))
        {
            *b ^= 1;
        }
    }
    bytes
}

/// Where in the file the `KERNEL:check` perturbation flips a bit: the low byte of the value
/// of the kernel's `EIATTR_MAXREG_COUNT` record (or else its `EIATTR_CBANK_PARAM_SIZE`) in
/// the `.nv.info.<k>` of text section `text`. Neither is among the resources
/// [`check_originals`] compares; the assembly check compares every record of the section.
fn perturbed_attribute(cubin: &Cubin, text: usize) -> Option<u64> {
    use crate::cubin::Attr;
    let sections = &cubin.elf().sections;
    let info = sections
        .iter()
        .position(|s| s.name.starts_with(".nv.info.") && s.sh_info as usize == text)?;
    let records = crate::cubin::parse_records(&sections[info].data).ok()?;
    let mut at = 0u64;
    let mut found = Vec::new();
    for r in &records {
        if matches!(r.attr, Attr::MaxregCount | Attr::CbankParamSize) && r.data.is_empty() {
            found.push((r.attr != Attr::MaxregCount, at + 2));
        }
        at += r.encoded_len() as u64;
    }
    let (_, offset) = found.into_iter().min()?;
    Some(sections[info].sh_offset + offset)
}

/// An original kernel `kernel` differs in the multi-variant cubin from what plain tune ships
/// (`why`): the variants copied from it are dropped (each with why) and the cubin is built
/// again without them, so the other kernels keep theirs. `false`: it has no variant left to
/// drop; [`settle_originals`] takes plain tune's copy of it in instead.
fn blame_variants(
    live: &[&Want],
    kernel: &str,
    why: &str,
    differ: &mut BTreeMap<String, String>,
) -> bool {
    let mut blamed = false;
    for w in live.iter().filter(|w| w.kernel == kernel) {
        differ
            .entry(w.name.clone())
            .or_insert_with(|| format!("its original {kernel} differs: {why}"));
        blamed = true;
    }
    blamed
}

/// Every kernel under its own name must be what plain tune ships: the same code, registers,
/// stack frame and shared memory. Those that are not, with why.
fn check_originals(
    input: &Input<'_>,
    multi: &Cubin,
) -> Result<BTreeMap<String, String>, TuneError> {
    let plain = Cubin::parse(input.plain).map_err(|e| TuneError::Cubin("tuned".to_string(), e))?;
    let mut differ = BTreeMap::new();
    for f in plain.kernels() {
        let got = multi.function_info(&f.name);
        let same_info = got.as_ref().is_some_and(|g| {
            (
                g.registers,
                g.frame_size,
                g.static_shared,
                g.spill_instructions,
            ) == (
                f.registers,
                f.frame_size,
                f.static_shared,
                f.spill_instructions,
            )
        });
        if !same_info {
            differ.insert(f.name.clone(), "its resources differ".to_string());
        } else if kernel_code(multi, &f.name) != kernel_code(&plain, &f.name) {
            differ.insert(f.name.clone(), "its code differs".to_string());
        }
    }
    Ok(differ)
}

/// Whether variant `w` in `multi` is its standalone candidate: `Ok(same code)`, else why
/// not (registers, spills or shared memory differ).
fn check_variant(
    input: &Input<'_>,
    records: &[KernelRecord],
    multi: &Cubin,
    w: &Want,
) -> Result<bool, String> {
    let want: &Evaluated = &records[w.record].candidates[w.candidate];
    let Some(got) = multi.function_info(&w.name) else {
        return Err("not in the cubin".to_string());
    };
    if let Some(why) = differs(want, &got) {
        return Err(why);
    }
    let standalone = match input
        .sources
        .get(&w.kernel)
        .and_then(|s| s.get(w.candidate))
    {
        Some(None) => Some(input.step.baseline.0),
        Some(Some(i)) => input
            .step
            .parsed
            .get(*i)
            .and_then(|v| v.as_ref())
            .map(|v| &v.0),
        None => None,
    };
    Ok(standalone.is_some_and(|c| kernel_code(c, &w.kernel) == kernel_code(multi, &w.name)))
}

/// How `got` (a variant as the multi-variant cubin has it) differs from `want` (its
/// standalone candidate) in what the choice rests on: registers, stack frame, spill
/// instructions, static shared memory.
fn differs(want: &Evaluated, got: &FunctionInfo) -> Option<String> {
    let got_regs = got.registers.unwrap_or(0);
    let got_frame = got.frame_size.unwrap_or(0);
    let g = (
        got_regs,
        got_frame,
        got.spill_instructions,
        got.static_shared,
    );
    let w = (
        want.registers,
        want.frame_bytes,
        want.spill_instructions,
        want.static_shared,
    );
    (g != w).then(|| {
        format!(
            "{} registers, {} B frame, {} spill instructions, {} B shared where its standalone \
             build has {}, {} B, {}, {} B",
            g.0, g.1, g.2, g.3, w.0, w.1, w.2, w.3
        )
    })
}

/// The records' `variants`: the original first, then each wanted variant as embedded (from
/// `multi`) or dropped (`dropped`: why, for each; `capped`: those of them the object-size
/// cap left out).
fn fill(
    records: &mut [KernelRecord],
    wants: &[Want],
    (dropped, capped): (&BTreeMap<String, String>, &BTreeMap<String, String>),
    same_code: &BTreeMap<String, bool>,
    multi: Option<&Cubin>,
) {
    for (ri, r) in records.iter_mut().enumerate() {
        let mine: Vec<&Want> = wants.iter().filter(|w| w.record == ri).collect();
        if mine.is_empty() {
            continue;
        }
        let of = |c: &Evaluated| (c.registers, c.frame_bytes, c.spill_instructions);
        let (registers, frame_bytes, spill_instructions) = of(&r.candidates[r.chosen]);
        let mut variants = vec![Embedded {
            variant: 0,
            name: r.kernel.clone(),
            candidate: r.chosen,
            registers,
            frame_bytes,
            spill_instructions,
            same_code: multi.map(|_| true),
            dropped: None,
            left_out: None,
        }];
        for w in mine {
            let (registers, frame_bytes, spill_instructions) = of(&r.candidates[w.candidate]);
            let embedded = multi.and_then(|m| m.function_info(&w.name));
            variants.push(Embedded {
                variant: w.variant as u32,
                name: w.name.clone(),
                candidate: w.candidate,
                registers: embedded
                    .as_ref()
                    .and_then(|e| e.registers)
                    .unwrap_or(registers),
                frame_bytes: embedded
                    .as_ref()
                    .map_or(frame_bytes, |e| e.frame_size.unwrap_or(0)),
                spill_instructions: embedded
                    .as_ref()
                    .map_or(spill_instructions, |e| e.spill_instructions),
                same_code: same_code.get(&w.name).copied(),
                dropped: dropped.get(&w.name).cloned(),
                left_out: capped.contains_key(&w.name).then_some(Limit::ObjectSize),
            });
        }
        r.variants = variants;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tune::candidates::BlockFrom;
    use crate::tune::select::tests::ev;

    /// A record of `kernel` with `candidates`, `chosen` of them chosen (test constructor).
    pub(crate) fn record(kernel: &str, candidates: Vec<Evaluated>, chosen: usize) -> KernelRecord {
        KernelRecord {
            arch: "sm_90".into(),
            kernel: kernel.into(),
            output: "k.cubin".into(),
            block_sizes: vec![256],
            block_from: BlockFrom::Assumed,
            chosen_registers: candidates[chosen].registers,
            candidates,
            pruned: Vec::new(),
            chosen,
            gain_percent: 0.0,
            reason: String::new(),
            transform: None,
            verdict: None,
            cubins: None,
            measured: None,
            variants: Vec::new(),
            assembly: None,
            selector: None,
            dynamic_shared: None,
            kept_by: None,
            train_would_measure: Vec::new(),
        }
    }

    fn info(registers: u32, frame: u32) -> FunctionInfo {
        FunctionInfo {
            registers: Some(registers),
            frame_size: Some(frame),
            ..FunctionInfo::default()
        }
    }

    fn want(kernel: &str, name: &str) -> Want {
        Want {
            kernel: kernel.into(),
            record: 0,
            variant: 1,
            name: name.into(),
            candidate: 1,
            budget: None,
        }
    }

    /// An original that differs in the multi-variant cubin drops its own variants only (the
    /// cubin is built again without them); one with no variant left to drop is not blamed on
    /// any (`settle_originals` takes plain tune's copy of it in instead).
    #[test]
    fn an_original_that_differs_drops_only_its_variants() {
        let (a1, a2, b1) = (want("a", "a__v1"), want("a", "a__v2"), want("b", "b__v1"));
        let live = [&a1, &a2, &b1];
        let mut differ = BTreeMap::new();
        assert!(blame_variants(&live, "a", "its code differs", &mut differ));
        assert_eq!(
            differ.keys().collect::<Vec<_>>(),
            ["a__v1", "a__v2"],
            "b's variant stays"
        );
        assert_eq!(differ["a__v1"], "its original a differs: its code differs");
        // Blamed again (the assembly check after check_originals): still only a's, the
        // first reason kept.
        assert!(blame_variants(&live, "a", "assembly check: x", &mut differ));
        assert_eq!(differ.len(), 2);
        assert_eq!(differ["a__v2"], "its original a differs: its code differs");
        assert!(!blame_variants(&live, "c", "its code differs", &mut differ));
        assert_eq!(differ.len(), 2);
    }

    #[test]
    fn a_variant_must_match_its_standalone_candidate() {
        let want = ev(Some(40), 40, &[Some(1.0)]);
        assert_eq!(differs(&want, &info(40, 0)), None);
        let why = differs(&want, &info(38, 0)).unwrap();
        assert_eq!(
            why,
            "38 registers, 0 B frame, 0 spill instructions, 0 B shared where its standalone \
             build has 40, 0 B, 0, 0 B"
        );
        let spilled = FunctionInfo {
            spill_instructions: 3,
            ..info(40, 16)
        };
        assert!(differs(&want, &spilled).is_some());
    }

    #[test]
    fn variants_keep_their_ranked_index_when_one_is_dropped() {
        // ptxas's own at 96; budgets 64 (+17.6%, the static winner), 48 (+11%), 40 (-3.8%,
        // 22% slower than the winner: in the band); each at its own occupancy.
        let at = |mut e: Evaluated, warps: u32| {
            e.warps_per_sm = vec![warps];
            e
        };
        let candidates = vec![
            at(ev(None, 96, &[Some(100.0)]), 20),
            at(ev(Some(64), 64, &[Some(85.0)]), 32),
            at(ev(Some(48), 48, &[Some(90.0)]), 40),
            at(ev(Some(40), 40, &[Some(104.0)]), 48),
        ];
        let mut records = vec![
            record("_Z1kPf", candidates, 1),
            // A kernel the step did not tune (no sources) gets nothing.
            record("_Z1jPf", vec![ev(None, 32, &[Some(1.0)])], 0),
        ];
        let sources =
            BTreeMap::from([("_Z1kPf".to_string(), vec![None, Some(0), Some(1), Some(2)])]);
        let names = |ws: &[Want]| -> Vec<(usize, String, usize)> {
            ws.iter()
                .map(|w| (w.variant, w.name.clone(), w.candidate))
                .collect()
        };
        let wants = wanted(&sources, &records);
        assert_eq!(
            names(&wants),
            [
                (1, "_Z1kPf__orion_v1".to_string(), 2),
                (2, "_Z1kPf__orion_v2".to_string(), 0),
                (3, "_Z1kPf__orion_v3".to_string(), 3),
            ]
        );
        // v2 (ptxas's own) dropped: v3 keeps its number and candidate.
        let dropped = BTreeMap::from([("_Z1kPf__orion_v2".to_string(), "differs".to_string())]);
        let same = BTreeMap::from([
            ("_Z1kPf__orion_v1".to_string(), true),
            ("_Z1kPf__orion_v3".to_string(), false),
        ]);
        fill(
            &mut records,
            &wants,
            (&dropped, &BTreeMap::new()),
            &same,
            None,
        );
        let got: Vec<String> = records[0]
            .variants
            .iter()
            .map(|v| {
                format!(
                    "{} {} {} {:?} {:?}",
                    v.variant, v.name, v.candidate, v.same_code, v.dropped
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "0 _Z1kPf 1 None None",
                "1 _Z1kPf__orion_v1 2 Some(true) None",
                "2 _Z1kPf__orion_v2 0 None Some(\"differs\")",
                "3 _Z1kPf__orion_v3 3 Some(false) None",
            ]
        );
        assert_eq!(records[0].variants[2].registers, 96);
        assert!(records[1].variants.is_empty());
        let json = serde_json::to_string(&super::super::report_line::embedded(
            &records[0].variants[2],
        ))
        .unwrap();
        assert_eq!(
            json,
            r#"{"variant":2,"name":"_Z1kPf__orion_v2","candidate":0,"registers":96,"frame_bytes":0,"spill_instructions":0,"dropped":"differs"}"#
        );
    }
}
