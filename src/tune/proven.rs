//! SASS rewrites applied to kernels of a cubin and kept only where the translation checker
//! proves them (docs/DESIGN.md §The translation checker: no rewrite ships unverified). One loop serves every
//! registered rewrite ([`crate::transform::Transform`]): the cubin is decoded with the
//! toolkit's nvdisasm once before and once after each round of rewrites, whole; a kernel whose rewrite is not proved is rewritten no more (the others are redone
//! without it, each kernel's rewrite being independent of the others').

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::cubin::Cubin;
use crate::sass::decode::{self, Decoded};
use crate::sass::ir::Function;
use crate::sass::listing::Sections;
use crate::transform::area::Options;
use crate::transform::regdem::{self, Regdem};
use crate::transform::spill2smem::{Rewrite, Spill2Smem};
use crate::transform::{self, Checks, Rewritten, Transform, TransformError};
use crate::verify::oracle::{self, Verdicts};
use crate::verify::plr;
use crate::verify::schedule::ScheduleError;
use crate::verify::{self, Claim, SpillBase};

/// A proved rewrite.
#[derive(Debug, Clone)]
pub struct Proved<R = Rewrite> {
    pub rewrite: R,
    /// Instructions the checker followed.
    pub(crate) checked: usize,
    /// Block shapes the spill base was proved for ([`verify::base`]; 0 without a spill area).
    pub shapes: usize,
}

impl<R: Rewritten> Proved<R> {
    /// One line for messages and reports.
    pub fn summary(&self) -> String {
        self.rewrite.summary(self.checked, self.shapes)
    }
}

/// A rewrite's claim as the checker takes it (the same statement in `verify`'s own types).
fn to_checker(c: transform::Claim) -> Claim {
    Claim {
        map: c.map,
        inserted: c.inserted,
        base: c.base.map(|b| SpillBase {
            reg: b.reg,
            defined_at: b.defined_at,
            stride: b.stride,
            slots: b.slots,
            area: b.area,
        }),
        passed: c.passed,
        renamed: c.renamed,
    }
}

impl Rewritten for Box<dyn Rewritten> {
    fn kernel(&self) -> &str {
        self.as_ref().kernel()
    }
    fn section(&self) -> usize {
        self.as_ref().section()
    }
    fn claim(&self) -> transform::Claim {
        self.as_ref().claim()
    }
    fn summary(&self, checked: usize, shapes: usize) -> String {
        self.as_ref().summary(checked, shapes)
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
    /// A check refused the rewritten kernel.
    Rejected(Refused),
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

/// Which check refused a rewritten kernel, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The oracle (`nvdisasm -plr`) disagrees with our instruction facts in the rewritten
    /// section.
    #[error("in the rewritten code, {0}")]
    Oracle(String),
    /// The translation checker.
    #[error(transparent)]
    Checker(#[from] verify::Rejection),
    /// The scheduling check of the inserted and moved instructions.
    #[error("scheduling: {0}")]
    Schedule(#[from] ScheduleError),
    /// The kernel has no launch attributes to prove its spill base for.
    #[error("no launch attributes for `{kernel}`")]
    NoLaunch { kernel: String },
    /// The kernel is missing from the decoded rewritten code.
    #[error("`{kernel}` was not decoded")]
    NotDecoded { kernel: String },
    /// The spill base is not proved for every launch.
    #[error("{kernel}: {why}")]
    Base { kernel: String, why: String },
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

/// The cubins this process decoded last, by their bytes, the sections listed and the
/// nvdisasm that read them: a build proves the same cubin twice, in its variant round and
/// again in the final assembly of the same ptxas output (bench/results/suite.md, fifth pass),
/// and nvdisasm's listing of the same bytes is the same listing, so the second proof reads
/// the first's decode where it lists every section the second needs (the checks themselves
/// all run again). Bounded: a build holds a few cubins at a time.
static DECODED: Mutex<VecDeque<Kept>> = Mutex::new(VecDeque::new());

/// One decode [`DECODED`] keeps: the nvdisasm, the cubin's bytes, the sections it lists,
/// what was seen.
type Kept = (PathBuf, Vec<u8>, Sections, Arc<Seen>);

/// How many decodes [`DECODED`] keeps.
const DECODED_KEPT: usize = 8;

/// The text sections `sections` of `bytes` decoded by `nv` (`-json`) and read by the oracle
/// (`-c -plr`), once per process for the same bytes ([`DECODED`]). A failed decode is not
/// kept.
fn decode_bytes(nv: &Path, bytes: &[u8], sections: &Sections) -> Result<Arc<Seen>, NotProved> {
    let kept = |d: &VecDeque<Kept>| {
        d.iter()
            .find(|(p, b, listed, _)| p == nv && b == bytes && listed.covers(sections))
            .map(|(_, _, _, s)| Arc::clone(s))
    };
    if let Some(seen) = kept(&DECODED.lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(seen);
    }
    let seen = Arc::new(decode_uncached(nv, bytes, sections)?);
    let mut d = DECODED.lock().unwrap_or_else(|e| e.into_inner());
    if kept(&d).is_none() {
        if d.len() == DECODED_KEPT {
            d.pop_front();
        }
        let listed = sections.clone();
        d.push_back((nv.to_path_buf(), bytes.to_vec(), listed, Arc::clone(&seen)));
    }
    Ok(seen)
}

/// `bytes` decoded (`nvdisasm -json`) and read by the oracle (`nvdisasm -c -plr`). The two
/// listings are independent, so the oracle's is made on a job slot free now, if any, while
/// this thread decodes (tried, never waited for: `jobs`): wall time for a user with cores to
/// spare, the same runs and CPU either way. Each listing runs once whoever asks first
/// (`process::listings`): the oracle's read below waits for the one under way.
fn decode_uncached(nv: &Path, bytes: &[u8], sections: &Sections) -> Result<Seen, NotProved> {
    let dir = tempfile::tempdir().map_err(|e| NotProved::Decode(e.to_string()))?;
    let path = dir.path().join("k.cubin");
    std::fs::write(&path, bytes).map_err(|e| NotProved::Decode(e.to_string()))?;
    std::thread::scope(|s| {
        if let Some(slot) = crate::jobs::Slots::of_process().try_extra() {
            let args = plr::Listing::args(sections);
            s.spawn(move || {
                let _slot = slot;
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                // A failure here is met again, and reported, by the oracle's own read.
                let _ = crate::process::listings::print(nv, &args, bytes);
            });
        }
        let decoded = decode::decode_sections(nv, &path, sections)
            .map_err(|e| NotProved::Decode(e.to_string()))?;
        let oracle = oracle::check_sections(nv, &path, sections, &decoded.functions)
            .map_err(|e| NotProved::Decode(e.to_string()))?;
        Ok(Seen { decoded, oracle })
    })
}

/// The outcome for a cubin: its final bytes and, per requested kernel, what happened.
#[derive(Debug)]
pub struct Outcome<R = Rewrite> {
    pub bytes: Vec<u8>,
    pub kernels: Vec<(String, Result<Proved<R>, NotProved>)>,
}

impl Outcome<Box<dyn Rewritten>> {
    /// The outcome with each rewrite as the type its transform made.
    fn downcast<R: Rewritten>(self) -> Outcome<R> {
        Outcome {
            bytes: self.bytes,
            kernels: self
                .kernels
                .into_iter()
                .map(|(k, r)| {
                    let r = r.map(|p| {
                        let any: Box<dyn Any> = p.rewrite;
                        Proved {
                            rewrite: *any
                                .downcast::<R>()
                                .expect("a transform returns its own rewrite type"),
                            checked: p.checked,
                            shapes: p.shapes,
                        }
                    });
                    (k, r)
                })
                .collect(),
        }
    }
}

/// Per request, its result once known.
type Results = Vec<Option<Result<Proved<Box<dyn Rewritten>>, NotProved>>>;

/// `t` on each `(kernel, options)` of the cubin `bytes`, each kept only if proved: the loop
/// every registered rewrite runs through. A kernel the transform skips from the cubin alone
/// ([`Transform::skip`]) is answered without running nvdisasm. `Err` when the cubin cannot
/// be read or decoded at all.
pub(crate) fn prove(
    t: &dyn Transform,
    bytes: &[u8],
    requests: &[(String, Options)],
) -> Result<Outcome<Box<dyn Rewritten>>, NotProved> {
    let original = Cubin::parse(bytes).map_err(|e| NotProved::Decode(e.to_string()))?;
    let mut results: Results = requests
        .iter()
        .map(|(k, _)| t.skip(&original, k).map(|e| Err(NotProved::Transform(e))))
        .collect();
    let finish = |results: Results, bytes: Vec<u8>| Outcome {
        bytes,
        kernels: requests
            .iter()
            .zip(results)
            .map(|((k, _), r)| {
                let r = r.unwrap_or(Err(NotProved::Decode("not run".into())));
                (k.clone(), r)
            })
            .collect(),
    };
    if results.iter().all(Option::is_some) {
        return Ok(finish(results, bytes.to_vec()));
    }
    let nv = crate::toolkit::find_tool("nvdisasm").ok_or(NotProved::NoDisassembler)?;
    let seen = decode_bytes(&nv, bytes, &Sections::Every)?;
    let checks = t.checks();
    for (i, (kernel, _)) in requests.iter().enumerate() {
        if checks.oracle
            && results[i].is_none()
            && let Some(why) = seen.refusal(kernel)
        {
            results[i] = Some(Err(NotProved::Oracle(why)));
        }
    }
    let before = &seen.decoded;
    // Rewrite every kernel still in the running; drop those the checker rejects; repeat.
    loop {
        let mut cubin = original.clone();
        let mut done: Vec<(usize, Box<dyn Rewritten>)> = Vec::new();
        for (i, (kernel, opts)) in requests.iter().enumerate() {
            if results[i].as_ref().is_some_and(|r| r.is_err()) {
                continue;
            }
            match t.apply(&mut cubin, &before.functions, kernel, *opts) {
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
        let written = Cubin::parse(&out).map_err(|e| NotProved::Decode(e.to_string()))?;
        // Whole, not only the rewritten sections: a partial listing's `-plr` columns equal the
        // whole one's only under an assumption about how nvdisasm sizes them, which the binary
        // does not check, and a narrower table would hide registers live across a call.
        let seen_after = decode_bytes(&nv, &out, &Sections::Every)?;
        let mut rejected = false;
        for (i, rewrite) in done {
            let proved = prove_kernel(
                checks,
                &original,
                &written,
                before,
                &seen_after,
                rewrite.kernel(),
                rewrite.section(),
                &to_checker(rewrite.claim()),
            );
            results[i] = Some(match proved {
                Ok((checked, shapes)) => Ok(Proved {
                    rewrite,
                    checked,
                    shapes,
                }),
                Err(e) => {
                    rejected = true;
                    Err(NotProved::Rejected(e))
                }
            });
        }
        if !rejected {
            return Ok(finish(results, out));
        }
    }
}

/// `spill2smem` on each `(kernel, options)` of the cubin `bytes` ([`prove`]).
pub fn spill2smem(bytes: &[u8], requests: &[(String, Options)]) -> Result<Outcome, NotProved> {
    prove(&Spill2Smem, bytes, requests).map(Outcome::downcast)
}

/// `regdem` on each `(kernel, options)` of the cubin `bytes` (`options.max_registers`
/// is the target) ([`prove`]).
pub fn regdem(
    bytes: &[u8],
    requests: &[(String, Options)],
) -> Result<Outcome<regdem::Rewrite>, NotProved> {
    prove(&Regdem, bytes, requests).map(Outcome::downcast)
}

/// The checker on one rewritten section: the functions of the kernel's section before and
/// after, and what the transform claims. Instructions checked, or the rejection.
pub fn check(before: &Decoded, after: &Decoded, r: &Rewrite) -> Result<usize, verify::Rejection> {
    check_claim(before, after, r.section, &to_checker(r.claim()))
}

/// What a `regdem` rewrite claims, for the checker.
pub fn regdem_claim(r: &regdem::Rewrite) -> Claim {
    to_checker(r.claim())
}

/// Every check a rewritten kernel must pass to ship, on cubins already decoded (the rewrite
/// loop decodes once per round for all its kernels): the oracle on the rewritten section,
/// the translation checker, the scheduling check of every inserted and moved instruction and
/// the base proof, as `checks` asks. `(instructions checked, block shapes)`, or the
/// rejection.
#[allow(clippy::too_many_arguments)]
fn prove_kernel(
    checks: Checks,
    original: &Cubin,
    written: &Cubin,
    before: &Decoded,
    after: &Seen,
    kernel: &str,
    section: usize,
    claim: &Claim,
) -> Result<(usize, usize), Refused> {
    if checks.oracle
        && let Some(why) = after.refusal(kernel)
    {
        return Err(Refused::Oracle(why));
    }
    let checked = check_claim(before, &after.decoded, section, claim)?;
    if checks.schedule {
        verify::schedule::check_rewrite(
            original.arch(),
            &section_functions(before, section),
            &section_functions(&after.decoded, section),
            &claim.map,
            &claim.inserted,
        )?;
    }
    let shapes = match &claim.base {
        Some(b) if checks.base => {
            prove_base(original, written, &after.decoded, kernel, section, b)?
        }
        _ => 0,
    };
    Ok((checked, shapes))
}

/// Would [`prove`] ship `rewritten` (made from `original` by `t`) for the claim `r`? The same
/// checks on the two cubins, both decoded here with nvdisasm and both read by the oracle, for one kernel on its own (the mutation tests). Instructions checked, or why not: a
/// refusal is [`NotProved::Rejected`], naming the check.
pub(crate) fn recheck(
    t: &dyn Transform,
    original: &[u8],
    rewritten: &[u8],
    r: &dyn Rewritten,
) -> Result<usize, NotProved> {
    let parsed = Cubin::parse(original).map_err(|e| NotProved::Decode(e.to_string()))?;
    let written = Cubin::parse(rewritten).map_err(|e| NotProved::Decode(e.to_string()))?;
    let nv = crate::toolkit::find_tool("nvdisasm").ok_or(NotProved::NoDisassembler)?;
    let checks = t.checks();
    let before = decode_bytes(&nv, original, &Sections::Every)?;
    if checks.oracle
        && let Some(why) = before.refusal(r.kernel())
    {
        return Err(NotProved::Oracle(why));
    }
    let after = decode_bytes(&nv, rewritten, &Sections::Every)?;
    prove_kernel(
        checks,
        &parsed,
        &written,
        &before.decoded,
        &after,
        r.kernel(),
        r.section(),
        &to_checker(r.claim()),
    )
    .map(|(checked, _)| checked)
    .map_err(NotProved::Rejected)
}

/// Would [`spill2smem`] ship `rewritten` for the claim `r`?
pub fn recheck_spill2smem(
    original: &[u8],
    rewritten: &[u8],
    r: &Rewrite,
) -> Result<usize, NotProved> {
    recheck(&Spill2Smem, original, rewritten, r)
}

/// Would [`regdem`] ship `rewritten` for the claim `r`?
pub fn recheck_regdem(
    original: &[u8],
    rewritten: &[u8],
    r: &regdem::Rewrite,
) -> Result<usize, NotProved> {
    recheck(&Regdem, original, rewritten, r)
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
) -> Result<usize, Refused> {
    let launch =
        verify::base::Launch::read(original, written, kernel).ok_or_else(|| Refused::NoLaunch {
            kernel: kernel.to_string(),
        })?;
    let f = after
        .functions
        .iter()
        .find(|f| f.section == section && f.name == kernel)
        .ok_or_else(|| Refused::NotDecoded {
            kernel: kernel.to_string(),
        })?;
    verify::base::prove(f, base, &launch)
        .map(|p| p.shapes)
        .map_err(|why| Refused::Base {
            kernel: kernel.to_string(),
            why: why.to_string(),
        })
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
) -> Result<usize, verify::Rejection> {
    verify::check(
        &section_functions(before, section),
        &section_functions(after, section),
        claim,
    )
    .map(|p| p.instructions)
}
