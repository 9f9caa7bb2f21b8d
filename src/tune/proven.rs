//! SASS transforms applied to kernels of a cubin and kept only where the translation checker
//! proves them (docs/DESIGN.md §The translation checker: no rewrite ships unverified). The
//! cubin is decoded with the toolkit's nvdisasm once before and once after all the rewrites; a
//! kernel whose rewrite is not proved is rewritten no more (the others are redone without it,
//! each kernel's rewrite being independent of the others').

use std::fmt;
use std::path::Path;

use crate::cubin::Cubin;
use crate::sass::decode::{self, Decoded};
use crate::sass::ir::Function;
use crate::transform::TransformError;
use crate::transform::regdem;
use crate::transform::spill_to_shared::{self, Options, Rewrite};
use crate::verify::oracle::{self, Verdicts};
use crate::verify::{self, Claim, SpillBase};

/// A proved rewrite.
#[derive(Debug, Clone)]
pub struct Proved<R = Rewrite> {
    pub rewrite: R,
    /// Instructions the checker followed.
    pub checked: usize,
    /// Block shapes the spill base was proved for ([`verify::base`]; 0 without a spill area).
    pub shapes: usize,
}

impl Proved<regdem::Rewrite> {
    /// One line for messages and reports.
    pub fn summary(&self) -> String {
        let r = &self.rewrite;
        format!(
            "{} → {} registers: {} register(s) demoted ({}), {} loads and {} stores inserted, {} shared slots ({} bytes per block for {} threads, {}); proved ({} instructions checked, control bits of every access checked)",
            r.registers_before,
            r.registers,
            r.demoted.iter().map(|&(_, s)| u32::from(s)).sum::<u32>(),
            r.strategy.name(),
            r.loads,
            r.stores,
            r.slots,
            r.shared_added,
            r.options.threads,
            r.options.source.describe(),
            self.checked
        ) + &base_note(self.shapes, &r.options)
    }
}

/// The summary's note on the base proof and the launch bound.
fn base_note(shapes: usize, opts: &Options) -> String {
    if shapes == 0 {
        return String::new();
    }
    let bound = if opts.source.assumed() {
        format!(
            "; launches above {} threads refused (EIATTR_MAX_THREADS)",
            opts.threads
        )
    } else {
        String::new()
    };
    let s = if shapes == 1 { "" } else { "s" };
    format!("; base proved for {shapes} block shape{s}{bound}")
}

impl Proved {
    /// One line for messages and reports.
    pub fn summary(&self) -> String {
        let r = &self.rewrite;
        let mut stack = String::new();
        if r.stacked_slots != r.slots || r.moves > 0 {
            stack = format!(
                " (stack compressed from {} stacked slots, {} moved around calls)",
                r.stacked_slots, r.moves
            );
        }
        let kept = if r.kept_local > 0 {
            format!(
                "; {} kept in local memory (values passed between functions)",
                r.kept_local
            )
        } else if r.frame_released > 0 {
            format!("; local frame of {} bytes released", r.frame_released)
        } else {
            String::new()
        };
        format!(
            "{} spill instructions moved to {} shared slots{stack} ({} bytes per block for {} threads, {}){kept}; {} registers; proved ({} instructions checked)",
            r.spills,
            r.slots,
            r.shared_added,
            r.options.threads,
            r.options.source.describe(),
            r.registers,
            self.checked
        ) + &base_note(self.shapes, &r.options)
    }
}

/// Why a kernel keeps its code.
#[derive(Debug)]
pub enum NotProved {
    /// No toolkit nvdisasm to decode with.
    NoDisassembler,
    /// nvdisasm, our decoder or the cubin writer failed.
    Decode(String),
    /// The transform does not apply.
    Transform(TransformError),
    /// The checker rejected the rewrite.
    Rejected(String),
    /// `nvdisasm -plr` disagrees with our instruction facts somewhere in the kernel's section
    /// (before any rewrite): the checker cannot trust its model there.
    Oracle(String),
}

impl fmt::Display for NotProved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotProved::NoDisassembler => f.write_str("no nvdisasm found to decode the code"),
            NotProved::Decode(e) => write!(f, "decode failed: {e}"),
            NotProved::Transform(e) => write!(f, "{e}"),
            NotProved::Rejected(e) => write!(f, "the checker rejected the rewrite: {e}"),
            NotProved::Oracle(e) => write!(f, "refused: {e}"),
        }
    }
}

/// A cubin decoded with the toolkit, and the oracle's verdict on each of its functions.
struct Seen {
    decoded: Decoded,
    oracle: Verdicts,
}

impl Seen {
    /// Why the oracle refuses the section holding `kernel` (the kernel and its callees).
    fn refusal(&self, kernel: &str) -> Option<String> {
        let Some(section) = self
            .decoded
            .functions
            .iter()
            .find(|f| f.name == kernel)
            .map(|f| f.section)
        else {
            return Some(format!("{kernel}: not found in the decoded code"));
        };
        let fs: Vec<&Function> = self
            .decoded
            .functions
            .iter()
            .filter(|f| f.section == section)
            .collect();
        self.oracle.first_in(&fs)
    }
}

fn decode_bytes(nv: &Path, bytes: &[u8]) -> Result<Seen, NotProved> {
    let dir = tempfile::tempdir().map_err(|e| NotProved::Decode(e.to_string()))?;
    let path = dir.path().join("k.cubin");
    std::fs::write(&path, bytes).map_err(|e| NotProved::Decode(e.to_string()))?;
    let decoded = decode::decode_file(nv, &path).map_err(|e| NotProved::Decode(e.to_string()))?;
    let oracle = oracle::check_cubin(nv, &path, &decoded.functions).map_err(NotProved::Decode)?;
    Ok(Seen { decoded, oracle })
}

/// The outcome for a cubin: its final bytes and, per requested kernel, what happened.
#[derive(Debug)]
pub struct Outcome<R = Rewrite> {
    pub bytes: Vec<u8>,
    pub kernels: Vec<(String, Result<Proved<R>, NotProved>)>,
}

impl<R> Outcome<R> {
    pub fn proved(&self) -> impl Iterator<Item = &Proved<R>> {
        self.kernels.iter().filter_map(|(_, r)| r.as_ref().ok())
    }
}

/// Spill → shared on each `(kernel, options)` of the cubin `bytes`, each kept only if proved.
/// A kernel without spills is answered without running nvdisasm (the tuner asks for every
/// kernel of a variant). `Err` when the cubin cannot be read or decoded at all.
pub fn spill_to_shared(bytes: &[u8], requests: &[(String, Options)]) -> Result<Outcome, NotProved> {
    let original = Cubin::parse(bytes).map_err(|e| NotProved::Decode(e.to_string()))?;
    let sm = original.arch();
    let mut results: Vec<(String, Option<Result<Proved, NotProved>>)> = requests
        .iter()
        .map(|(k, _)| {
            let spills = original
                .function_info(k)
                .is_some_and(|i| !original.spill_offsets(i.text_section).is_empty());
            let early = (!spills).then(|| {
                Err(NotProved::Transform(TransformError::NotApplicable(
                    "no spills".into(),
                )))
            });
            (k.clone(), early)
        })
        .collect();
    let finish =
        |results: Vec<(String, Option<Result<Proved, NotProved>>)>, bytes: Vec<u8>| Outcome {
            bytes,
            kernels: results
                .into_iter()
                .map(|(k, r)| (k, r.unwrap_or(Err(NotProved::Decode("not run".into())))))
                .collect(),
        };
    if results.iter().all(|(_, r)| r.is_some()) {
        return Ok(finish(results, bytes.to_vec()));
    }
    let nv = crate::toolkit::find_tool("nvdisasm").ok_or(NotProved::NoDisassembler)?;
    let seen = decode_bytes(&nv, bytes)?;
    for (i, (kernel, _)) in requests.iter().enumerate() {
        if results[i].1.is_none()
            && let Some(why) = seen.refusal(kernel)
        {
            results[i].1 = Some(Err(NotProved::Oracle(why)));
        }
    }
    let before = &seen.decoded;
    // Rewrite every kernel still in the running; drop those the checker rejects; repeat.
    loop {
        let mut cubin = original.clone();
        let mut done: Vec<(usize, Rewrite)> = Vec::new();
        for (i, (kernel, opts)) in requests.iter().enumerate() {
            if results[i].1.as_ref().is_some_and(|r| r.is_err()) {
                continue;
            }
            match spill_to_shared::spill_to_shared(&mut cubin, &before.functions, kernel, *opts) {
                Ok(r) => done.push((i, r)),
                Err(e) => results[i].1 = Some(Err(NotProved::Transform(e))),
            }
        }
        if done.is_empty() {
            return Ok(finish(results, bytes.to_vec()));
        }
        let out = cubin
            .write()
            .map_err(|e| NotProved::Decode(e.to_string()))?;
        let seen_after = decode_bytes(&nv, &out)?;
        let written = Cubin::parse(&out).map_err(|e| NotProved::Decode(e.to_string()))?;
        let mut rejected = false;
        for (i, rewrite) in done {
            let proved = prove_kernel(
                sm,
                &original,
                &written,
                before,
                &seen_after,
                &rewrite.kernel,
                rewrite.section,
                &spill_claim(&rewrite),
            );
            match proved {
                Ok((checked, shapes)) => {
                    results[i].1 = Some(Ok(Proved {
                        rewrite,
                        checked,
                        shapes,
                    }))
                }
                Err(e) => {
                    results[i].1 = Some(Err(NotProved::Rejected(e)));
                    rejected = true;
                }
            }
        }
        if !rejected {
            return Ok(finish(results, out));
        }
    }
}

/// The checker on one rewritten section: the functions of the kernel's section before and
/// after, and what the transform claims. Instructions checked, or the rejection.
pub fn check(before: &Decoded, after: &Decoded, r: &Rewrite) -> Result<usize, String> {
    check_claim(before, after, r.section, &spill_claim(r))
}

/// What a spill → shared rewrite claims, for the checker.
pub fn spill_claim(r: &Rewrite) -> Claim {
    Claim {
        map: r.map.clone(),
        inserted: r.inserted.clone(),
        base: Some(spill_base_of(
            r.base_reg,
            r.base_defined_at,
            r.stride,
            r.slots,
            r.area_offset,
        )),
        passed: r.passed.clone(),
        renamed: Default::default(),
    }
}

/// Every check a rewritten kernel must pass to ship, on cubins already decoded (the rewrite
/// loops decode once per round for all their kernels): the oracle on the rewritten section,
/// the translation checker, the scheduling check of every inserted and moved instruction and
/// the base proof. `(instructions checked, block shapes)`, or the rejection.
#[allow(clippy::too_many_arguments)]
fn prove_kernel(
    sm: u32,
    original: &Cubin,
    written: &Cubin,
    before: &Decoded,
    after: &Seen,
    kernel: &str,
    section: usize,
    claim: &Claim,
) -> Result<(usize, usize), String> {
    if let Some(why) = after.refusal(kernel) {
        return Err(format!("in the rewritten code, {why}"));
    }
    let checked = check_claim(before, &after.decoded, section, claim)?;
    verify::schedule::check_rewrite(
        sm,
        &section_functions(before, section),
        &section_functions(&after.decoded, section),
        &claim.map,
        &claim.inserted,
    )
    .map_err(|e| format!("scheduling: {e}"))?;
    let shapes = match &claim.base {
        Some(b) => prove_base(original, written, &after.decoded, kernel, section, b)?,
        None => 0,
    };
    Ok((checked, shapes))
}

/// [`prove_kernel`] on the cubin before (`original`) and after (`rewritten`) a rewrite whose
/// claim is `claim`, both decoded here with nvdisasm and both read by the oracle — what the
/// rewrite loops decide, for one kernel on its own (the mutation tests).
fn recheck(
    original: &[u8],
    rewritten: &[u8],
    kernel: &str,
    section: usize,
    claim: &Claim,
) -> Result<usize, String> {
    let parsed = Cubin::parse(original).map_err(|e| e.to_string())?;
    let written = Cubin::parse(rewritten).map_err(|e| e.to_string())?;
    let nv = crate::toolkit::find_tool("nvdisasm")
        .ok_or_else(|| NotProved::NoDisassembler.to_string())?;
    let before = decode_bytes(&nv, original).map_err(|e| e.to_string())?;
    if let Some(why) = before.refusal(kernel) {
        return Err(NotProved::Oracle(why).to_string());
    }
    let after = decode_bytes(&nv, rewritten).map_err(|e| e.to_string())?;
    prove_kernel(
        parsed.arch(),
        &parsed,
        &written,
        &before.decoded,
        &after,
        kernel,
        section,
        claim,
    )
    .map(|(checked, _)| checked)
}

/// Would [`spill_to_shared`] ship `rewritten` for the claim `r`? Instructions checked, or
/// the rejection.
pub fn recheck_spill(original: &[u8], rewritten: &[u8], r: &Rewrite) -> Result<usize, String> {
    recheck(original, rewritten, &r.kernel, r.section, &spill_claim(r))
}

/// Would [`regdem`] ship `rewritten` for the claim `r`? Instructions checked, or the
/// rejection.
pub fn recheck_regdem(
    original: &[u8],
    rewritten: &[u8],
    r: &regdem::Rewrite,
) -> Result<usize, String> {
    recheck(original, rewritten, &r.kernel, r.section, &regdem_claim(r))
}

/// Register demotion on each `(kernel, options)` of the cubin `bytes` (`options.max_registers`
/// is the target), each kept only if the checker proves its values and
/// [`verify::schedule`] the control bits of every inserted access.
pub fn regdem(
    bytes: &[u8],
    requests: &[(String, Options)],
) -> Result<Outcome<regdem::Rewrite>, NotProved> {
    let original = Cubin::parse(bytes).map_err(|e| NotProved::Decode(e.to_string()))?;
    let sm = original.arch();
    let mut results: Vec<Option<Result<Proved<regdem::Rewrite>, NotProved>>> =
        requests.iter().map(|_| None).collect();
    let finish = |results: Vec<Option<Result<Proved<regdem::Rewrite>, NotProved>>>,
                  bytes: Vec<u8>| Outcome {
        bytes,
        kernels: requests
            .iter()
            .zip(results)
            .map(|((k, _), r)| {
                (
                    k.clone(),
                    r.unwrap_or(Err(NotProved::Decode("not run".into()))),
                )
            })
            .collect(),
    };
    let nv = crate::toolkit::find_tool("nvdisasm").ok_or(NotProved::NoDisassembler)?;
    let seen = decode_bytes(&nv, bytes)?;
    for (i, (kernel, _)) in requests.iter().enumerate() {
        if let Some(why) = seen.refusal(kernel) {
            results[i] = Some(Err(NotProved::Oracle(why)));
        }
    }
    let before = &seen.decoded;
    loop {
        let mut cubin = original.clone();
        let mut done: Vec<(usize, regdem::Rewrite)> = Vec::new();
        for (i, (kernel, opts)) in requests.iter().enumerate() {
            if results[i].as_ref().is_some_and(|r| r.is_err()) {
                continue;
            }
            match regdem::regdem(&mut cubin, &before.functions, kernel, *opts) {
                Ok(r) => done.push((i, r)),
                Err(e) => results[i] = Some(Err(NotProved::Transform(e))),
            }
        }
        if done.is_empty() {
            return Ok(finish(results, bytes.to_vec()));
        }
        let out = cubin
            .write()
            .map_err(|e| NotProved::Decode(e.to_string()))?;
        let seen_after = decode_bytes(&nv, &out)?;
        let written = Cubin::parse(&out).map_err(|e| NotProved::Decode(e.to_string()))?;
        let mut rejected = false;
        for (i, r) in done {
            let proved = prove_kernel(
                sm,
                &original,
                &written,
                before,
                &seen_after,
                &r.kernel,
                r.section,
                &regdem_claim(&r),
            );
            match proved {
                Ok((checked, shapes)) => {
                    results[i] = Some(Ok(Proved {
                        rewrite: r,
                        checked,
                        shapes,
                    }))
                }
                Err(e) => {
                    results[i] = Some(Err(NotProved::Rejected(e)));
                    rejected = true;
                }
            }
        }
        if !rejected {
            return Ok(finish(results, out));
        }
    }
}

/// What a register demotion claims, for the checker.
pub fn regdem_claim(r: &regdem::Rewrite) -> Claim {
    Claim {
        map: r.map.clone(),
        inserted: r.inserted.clone(),
        // Compaction alone uses no spill area.
        base: (r.slots > 0).then(|| {
            spill_base_of(
                r.base_reg,
                r.base_defined_at,
                r.stride,
                r.slots,
                r.area_offset,
            )
        }),
        passed: Vec::new(),
        renamed: r.renamed.clone(),
    }
}

fn spill_base_of(reg: u8, defined_at: u64, stride: u32, slots: u32, area: u32) -> SpillBase {
    SpillBase {
        reg,
        defined_at,
        stride,
        slots,
        area,
    }
}

/// The spill base of `kernel` proved for every launch the rewritten cubin allows
/// ([`verify::base`]): the block shapes checked, or why not.
fn prove_base(
    original: &Cubin,
    written: &Cubin,
    after: &Decoded,
    kernel: &str,
    section: usize,
    base: &SpillBase,
) -> Result<usize, String> {
    let launch = verify::base::Launch::read(original, written, kernel)
        .ok_or_else(|| format!("no launch attributes for `{kernel}`"))?;
    let f = after
        .functions
        .iter()
        .find(|f| f.section == section && f.name == kernel)
        .ok_or_else(|| format!("`{kernel}` was not decoded"))?;
    verify::base::prove(f, base, &launch)
        .map(|p| p.shapes)
        .map_err(|e| format!("{kernel}: {e}"))
}

fn section_functions(d: &Decoded, section: usize) -> Vec<Function> {
    let mut fs: Vec<Function> = d
        .functions
        .iter()
        .filter(|f| f.section == section)
        .cloned()
        .collect();
    fs.sort_by_key(|f| f.start);
    fs
}

fn check_claim(
    before: &Decoded,
    after: &Decoded,
    section: usize,
    claim: &Claim,
) -> Result<usize, String> {
    verify::check(
        &section_functions(before, section),
        &section_functions(after, section),
        claim,
    )
    .map(|p| p.instructions)
    .map_err(|e| e.to_string())
}
