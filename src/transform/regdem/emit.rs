//! The new code of regdem: the prologue and the encoded accesses inserted, the
//! original instructions (and the sub-functions') renamed with their new control bits, and
//! the kernel's register count and shared size.

use std::collections::{BTreeMap, BTreeSet};

use super::code::Code;
use super::demote::{Accesses, kept_number};
use super::fields::{self, RegFields};
use super::select::{Analysis, Layout};
use super::{COUNT_EXTRA, access, sched};
use crate::cubin::{Cubin, OffsetMap};
use crate::sass::Op;
use crate::sass::encode;
use crate::sass::ir::Function;
use crate::sass::relayout::{self, Relayout};
use crate::transform::area::{Area, Options};
use crate::transform::prologue::{self, Shape};
use crate::transform::{TransformError, not_applicable};

/// What is inserted, in request order: the prologue at the start, then per instruction its
/// loads before it and its stores after it.
pub(super) struct Insertions {
    pub(super) list: Vec<(u64, Vec<[u8; 16]>)>,
    /// Per inserted instruction: whether it is an access (for the schedule check).
    pub(super) is_access: Vec<bool>,
    /// Instructions of the prologue.
    pub(super) prologue: usize,
}

/// The inserted code: the prologue (temporaries from the pool: nothing lives there at
/// entry) and each access encoded with its control bits. No demoted register (compaction
/// alone): no spill area, no prologue.
pub(super) fn insertions(
    shape: Shape,
    layout: &Layout,
    any_demoted: bool,
    f: &Function,
    acc: &Accesses,
    schedule: &sched::Schedule,
    area: &Area,
) -> Insertions {
    let base = layout.base;
    let pro = prologue::spill_base(shape, base, layout.pool, layout.pool + 1);
    let pro_words = if any_demoted { pro.words } else { Vec::new() };
    let mut list: Vec<(u64, Vec<[u8; 16]>)> = Vec::new();
    let mut is_access: Vec<bool> = vec![false; pro_words.len()];
    let prologue = pro_words.len();
    if !pro_words.is_empty() {
        list.push((0, pro_words));
    }
    for (k, site) in acc.sites.iter().enumerate() {
        let off = f.instrs[k].offset;
        if !site.loads.is_empty() {
            let words: Vec<[u8; 16]> = site
                .loads
                .iter()
                .zip(&acc.load_slots[k])
                .zip(&schedule.loads[k])
                .map(|((&v, &s), &c)| encode::to_bytes(access::lds(v, base, area.imm(s), c)))
                .collect();
            is_access.extend(words.iter().map(|_| true));
            list.push((off, words));
        }
        if !site.stores.is_empty() {
            let words: Vec<[u8; 16]> = site
                .stores
                .iter()
                .zip(&acc.store_slots[k])
                .zip(&schedule.stores[k])
                .map(|((&v, &s), &c)| encode::to_bytes(access::sts(v, base, area.imm(s), c)))
                .collect();
            is_access.extend(words.iter().map(|_| true));
            list.push((off + 16, words));
        }
    }
    Insertions {
        list,
        is_access,
        prologue,
    }
}

/// A `BRA` into an instruction with loads enters through the loads (after the stores of
/// the instruction before, which run on fall-through only): target → stores to skip.
fn heads(f: &Function, sites: &[sched::Site]) -> BTreeMap<u64, u64> {
    let bra_targets: BTreeSet<u64> = f
        .instrs
        .iter()
        .filter(|i| i.op() == Op::Bra)
        .filter_map(|i| i.target)
        .collect();
    (1..f.instrs.len())
        .filter(|&k| !sites[k].loads.is_empty() && bra_targets.contains(&f.instrs[k].offset))
        .map(|k| (f.instrs[k].offset, sites[k - 1].stores.len() as u64))
        .collect()
}

/// The re-laid section's code, rewritten word by word.
struct Patcher<'a> {
    code: Vec<u8>,
    map: &'a OffsetMap,
}

impl Patcher<'_> {
    /// Rewrite the re-laid word of the original instruction at `offset` (its PC-relative
    /// fields already re-encoded).
    fn patch(&mut self, offset: u64, f: &dyn Fn(u128) -> u128) -> Result<(), TransformError> {
        let at = self
            .map
            .map(offset)
            .ok_or_else(|| not_applicable(format!("{offset:#x} lost in re-layout")))?
            as usize;
        let slot = self
            .code
            .get_mut(at..at + 16)
            .ok_or_else(|| not_applicable("re-layout moved an instruction outside the section"))?;
        let w = f(encode::from_bytes(slot.try_into().unwrap_or([0; 16])));
        slot.copy_from_slice(&encode::to_bytes(w));
        Ok(())
    }
}

/// What the new code is made of.
pub(super) struct NewCode<'a> {
    pub(super) kernel: &'a str,
    pub(super) section: usize,
    pub(super) code: &'a Code<'a>,
    pub(super) fields: &'a [RegFields],
    pub(super) analysis: &'a Analysis,
    pub(super) layout: &'a Layout,
    pub(super) acc: &'a Accesses,
    pub(super) schedule: &'a sched::Schedule,
}

impl NewCode<'_> {
    /// `cubin` with the insertions laid in and every original instruction rewritten, and
    /// where everything went.
    pub(super) fn write(
        &self,
        cubin: &Cubin,
        insertions: &Insertions,
    ) -> Result<(Cubin, Relayout), TransformError> {
        let f = self.code.kernel();
        let mut out = cubin.clone();
        let relaid = relayout::insert_with_heads(
            &mut out,
            self.kernel,
            &insertions.list,
            &heads(f, &self.acc.sites),
        )?;
        let mut p = Patcher {
            code: out.elf().sections[self.section].data.clone(),
            map: &relaid.map,
        };
        self.patch_kernel(&mut p)?;
        self.patch_callees(&mut p)?;
        let code = p.code;
        out.replace_text(self.kernel, code, &OffsetMap::new())?;
        Ok((out, relaid))
    }

    /// The kernel's registers and control fields.
    fn patch_kernel(&self, p: &mut Patcher) -> Result<(), TransformError> {
        let (fields, renamed, schedule) = (self.fields, &self.acc.renamed, self.schedule);
        for (k, ins) in self.code.kernel().instrs.iter().enumerate() {
            // NOPs name no register; trailing padding is re-made by re-layout. A NOP ends a
            // block, though, and may now wait for our scoreboards.
            if ins.op() == Op::Nop {
                if schedule.original[k] != ins.ctrl {
                    p.patch(ins.offset, &|w| {
                        encode::set_bits(w, 105, 23, u64::from(schedule.original[k].to_bits()))
                    })?;
                }
                continue;
            }
            p.patch(ins.offset, &|w| {
                let w = if fields[k].pinned {
                    w
                } else {
                    fields::rename(w, &fields[k], |r| renamed[k][usize::from(r)])
                };
                encode::set_bits(w, 105, 23, u64::from(schedule.original[k].to_bits()))
            })?;
        }
        Ok(())
    }

    /// Sub-functions: the kernel's numbering, control bits as they were.
    fn patch_callees(&self, p: &mut Patcher) -> Result<(), TransformError> {
        let renumber = |r: u8| -> u8 {
            match self.analysis.group_of[usize::from(r)] {
                Some(g) => kept_number(self.layout, g, r),
                None => r,
            }
        };
        for (c, cfields) in &self.code.callees.code {
            for (ins, fl) in c.instrs.iter().zip(cfields) {
                if ins.op() != Op::Nop && !fl.pinned {
                    p.patch(ins.offset, &|w| fields::rename(w, fl, renumber))?;
                }
            }
        }
        Ok(())
    }
}

/// The register count: the highest register any instruction or access now names, + 3.
pub(super) fn register_count(sites: &[sched::Site], layout: &Layout) -> u32 {
    let highest_used = sites
        .iter()
        .flat_map(|s| {
            s.reads
                .iter()
                .chain(&s.writes)
                .chain(&s.loads)
                .chain(&s.stores)
        })
        .copied()
        .chain([layout.highest])
        .max()
        .unwrap_or(layout.highest);
    u32::from(highest_used) + COUNT_EXTRA
}

/// The kernel's new register count, and its shared size grown by the spill area.
pub(super) fn set_resources(
    out: &mut Cubin,
    kernel: &str,
    registers: u32,
    area: &Area,
    static_shared: u64,
    opts: &Options,
) -> Result<(), TransformError> {
    out.set_register_count(kernel, registers)?;
    out.raise_maxreg_count(kernel, registers)?;
    if area.added > 0 {
        out.set_shared_size(kernel, static_shared + area.added)?;
        area.enforce(out, kernel, opts)?;
    }
    Ok(())
}

/// Registers renumbered by the compaction (original → new), kernel and sub-functions alike.
pub(super) fn renumbering(analysis: &Analysis, layout: &Layout) -> BTreeMap<u8, u8> {
    analysis
        .groups
        .iter()
        .filter_map(|g| Some((g, *layout.kept.get(&g.start)?)))
        .flat_map(|(g, to)| (0..g.size).map(move |o| (g.start + o, to + o)))
        .filter(|(a, b)| a != b)
        .collect()
}
