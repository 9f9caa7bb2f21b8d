//! The section under check: the original and rewritten functions, the claim, and what is
//! derived from them once (images, origins, summaries). Building it validates the claim's
//! shape and runs the correspondence and summary passes; the per-function analysis is in
//! `driver.rs`.

use std::collections::{BTreeSet, HashMap};

use super::claim::SpillBase;
use super::claim::{Check, Claim, Rejection, reject};
use super::mapping::{Origin, images};
use super::regset::{RegLocs, SharedWrites};
use super::semantics::{escapes, pointer_stores};
use super::state::Loc;
use crate::sass::ir::{Function, RZ};

pub(super) struct Section<'a> {
    pub(super) orig: &'a [Function],
    pub(super) rew: &'a [Function],
    pub(super) claim: &'a Claim,
    pub(super) inserted: BTreeSet<u64>,
    pub(super) names: HashMap<&'a str, usize>,
    /// Per function: origin of each rewritten instruction.
    pub(super) origins: Vec<Vec<Origin>>,
    /// Per function: rewritten index of each original instruction's image.
    pub(super) images: Vec<Vec<Option<usize>>>,
    pub(super) summaries: Vec<Summary>,
    pub(super) escapes: Vec<bool>,
    /// Per function: may store to a caller's escaped frame (`semantics::pointer_stores`), in
    /// the original or in the rewrite.
    pub(super) pointer_stores: Vec<bool>,
    pub(super) count: Vec<u32>,
    /// The section has indirect calls (set by `summarize`).
    pub(super) has_indirect: bool,
}

pub(super) fn func_at(fs: &[Function], off: u64) -> Option<(usize, &Function, usize)> {
    fs.iter()
        .enumerate()
        .find_map(|(k, f)| f.index_of(off).map(|i| (k, f, i)))
}

impl<'a> Section<'a> {
    /// Where original location `l` is at a function boundary of the rewrite.
    pub(super) fn at_boundary(&self, l: Loc) -> Loc {
        match l {
            Loc::R(r) => Loc::R(self.claim.renamed.get(&r).copied().unwrap_or(r)),
            other => other,
        }
    }

    /// Validate the claim's shape against the two versions of the section, pair each
    /// original instruction with its image, check the correspondence of every function and
    /// summarise every function (callees first).
    pub(super) fn new(
        orig: &'a [Function],
        rew: &'a [Function],
        claim: &'a Claim,
    ) -> Result<Section<'a>, Rejection> {
        let names = same_functions(orig, rew)?;
        let inserted = inserted_offsets(orig, rew, claim)?;
        let (origins, images) = images(orig, rew, claim, &inserted)?;
        let pointer_stores = pointer_stores(orig, &names)
            .into_iter()
            .zip(pointer_stores(rew, &names))
            .map(|(a, b)| a || b)
            .collect();
        let mut s = Section {
            orig,
            rew,
            claim,
            inserted,
            names,
            origins,
            images,
            summaries: vec![Summary::default(); orig.len()],
            escapes: orig.iter().map(escapes).collect(),
            pointer_stores,
            count: orig.iter().map(|f| f.regs.unwrap_or(255)).collect(),
            has_indirect: false,
        };
        for fk in 0..orig.len() {
            s.correspondence(fk)?;
        }
        s.summarize()?;
        Ok(s)
    }

    pub(super) fn map(&self, off: u64) -> Option<u64> {
        self.claim.map.map(off)
    }
}

/// The two versions list the same functions, by name, in the same order: name → index.
fn same_functions<'a>(
    orig: &'a [Function],
    rew: &[Function],
) -> Result<HashMap<&'a str, usize>, Rejection> {
    let first = orig.first().map_or("", |f| f.name.as_str());
    if orig.len() != rew.len() {
        return reject(
            Check::Claim,
            first,
            0,
            format!(
                "{} original functions but {} rewritten",
                orig.len(),
                rew.len()
            ),
        );
    }
    for (a, b) in orig.iter().zip(rew) {
        if a.name != b.name {
            return reject(
                Check::Claim,
                &a.name,
                0,
                format!("rewritten function is `{}`, not `{}`", b.name, a.name),
            );
        }
    }
    let mut names = HashMap::new();
    for (k, f) in orig.iter().enumerate() {
        if names.insert(f.name.as_str(), k).is_some() {
            return reject(Check::Claim, &f.name, 0, "function listed twice");
        }
    }
    Ok(names)
}

/// The claim's inserted offsets, each an instruction of the rewrite and listed once, and
/// the spill area's shape ([`check_base`]).
fn inserted_offsets(
    orig: &[Function],
    rew: &[Function],
    claim: &Claim,
) -> Result<BTreeSet<u64>, Rejection> {
    let first = orig.first().map_or("", |f| f.name.as_str());
    let mut inserted = BTreeSet::new();
    for &o in &claim.inserted {
        if !inserted.insert(o) {
            return reject(Check::Claim, first, o, "offset listed twice as inserted");
        }
        if func_at(rew, o).is_none() {
            return reject(
                Check::Claim,
                first,
                o,
                "inserted offset is not an instruction of any rewritten function",
            );
        }
    }
    if let Some(b) = &claim.base {
        check_base(orig, rew, b, &inserted)?;
    }
    Ok(inserted)
}

/// The spill area: defined by an inserted instruction, in a register that can hold it,
/// with a positive word stride, in a section a kernel owns.
fn check_base(
    orig: &[Function],
    rew: &[Function],
    b: &SpillBase,
    inserted: &BTreeSet<u64>,
) -> Result<(), Rejection> {
    let first = orig.first().map_or("", |f| f.name.as_str());
    let Some((_, f, _)) = func_at(rew, b.defined_at) else {
        return reject(
            Check::Claim,
            first,
            b.defined_at,
            "base.defined_at is not an instruction of the section",
        );
    };
    if !inserted.contains(&b.defined_at) {
        return reject(
            Check::Claim,
            &f.name,
            b.defined_at,
            "base.defined_at is not an inserted instruction",
        );
    }
    if b.reg == 1 || b.reg == RZ {
        return reject(
            Check::Claim,
            &f.name,
            b.defined_at,
            format!("R{} cannot be the base", b.reg),
        );
    }
    if b.stride == 0 || !b.stride.is_multiple_of(4) || b.slots == 0 {
        return reject(
            Check::Claim,
            &f.name,
            b.defined_at,
            format!(
                "spill area of {} slots with a stride of {} bytes",
                b.slots, b.stride
            ),
        );
    }
    if let Some(owner) = orig.iter().find(|f| f.start == 0)
        && !owner.kernel
    {
        return reject(
            Check::Claim,
            &owner.name,
            0,
            "a spill area in a section not owned by a kernel",
        );
    }
    Ok(())
}

/// Summaries of one function.
#[derive(Debug, Clone, Default)]
pub(super) struct Summary {
    pub(super) orig_writes: RegLocs,
    pub(super) rew_writes: RegLocs,
    pub(super) rew_shared: SharedWrites,
    pub(super) live_in: RegLocs,
    /// General registers the original writes on every path to each of its returns (an
    /// unguarded call of it kills them in the caller's liveness).
    pub(super) must_writes: BTreeSet<u8>,
    /// Local words the original reads before writing them (through its callees too), as
    /// offsets from its `R1` on entry; `None` when they cannot be named (it moves `R1` or
    /// indexes the frame): then every tracked frame word must hold its own value at a call.
    /// ptxas' sub-functions share the kernel's frame, so a callee can read what its caller
    /// stored (a spilled return address): the caller must still hold it there.
    pub(super) live_in_local: Option<BTreeSet<i64>>,
    /// Words of its caller's frame the function may write (`STL [R1+imm]` of a function that
    /// shares its caller's frame, as ptxas' sub-functions do, through its callees too), in
    /// the original and in the rewrite; `None` when they cannot be named (a store through
    /// `R1` with an index). A function that moves `R1` writes none (the ABI: its frame is
    /// below its caller's `R1`).
    pub(super) orig_local_writes: Option<BTreeSet<i64>>,
    pub(super) rew_local_writes: Option<BTreeSet<i64>>,
}
