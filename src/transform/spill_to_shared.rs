//! Spill → shared (docs/papers.md §ICS'14; docs/DESIGN.md §Spill to shared): every register
//! spill ptxas left in local memory (`STL/LDL [R1+imm]` marked SpillRefill) gets a per-thread
//! shared-memory slot and is rewritten in place (`STL→STS`, `LDL→LDS`, new base register and
//! offset), and a prologue at the kernel's entry computes the base register.
//!
//! * **Slots.** Each function of the kernel's section (the kernel and the sub-functions ptxas
//!   put in its `.text`) has its own frame of 32-bit slots, one per local-memory word its
//!   spills touch. Where the frames sit along the call tree is [`super::stack`]'s choice:
//!   Orion's compressible stack by default, stacked frames on request (docs/papers.md
//!   §Orion). Recursion is refused.
//! * **Layout.** Slot-major, one 32-bit word per thread per slot: slot `s` of the thread with
//!   linear index `t` is at `area + s × stride + 4t`, `stride` = threads per block × 4, so a
//!   warp's access to one slot is conflict-free. The area lies after the kernel's static and
//!   dynamic shared memory (`area = S + c[0x0][0x2c]`, reference §7.2 option 1), and the
//!   static section grows by `slots × stride` so every launch allocates it. The threads per
//!   block come from `.reqntid` or `__launch_bounds__`; where they are an assumption (the
//!   block-size setting, or 1024 with nothing declared) the kernel gets them as its launch
//!   bound (`EIATTR_MAX_THREADS`), so the driver refuses a larger launch. A 64-bit (128-bit)
//!   spill becomes two (four) 32-bit accesses: the original instruction carries the first
//!   word and the others are inserted right after it. Where the area for every word would
//!   pass the static limit, only the hottest words move (`partial`: a partial move, issue
//!   23) and the others keep their local accesses and frame.
//! * **Base register.** One register above every register the section uses holds
//!   `4t + c[0x0][0x2c]` (plus the CTA's rank in the cluster `<< 24` on sm_90, as ptxas forms
//!   shared addresses there; [`super::prologue`]); `S + s × stride` goes in each access's
//!   immediate. The kernel's register count becomes that register + 3, the allocation rule
//!   ptxas follows (highest register + 3).
//!
//! Untouched instructions keep their bits and control fields; a rewritten access keeps its
//! predicate, data register, control field (both forms are scoreboarded memory operations)
//! and drops only its operand-reuse flags. Local arrays (addresses not `R1+imm`) stay in
//! local memory. What the rewrite claims (offset map, inserted instructions, base register,
//! stride) is returned for the checker; nothing here proves it.

use std::collections::{BTreeMap, BTreeSet};

use super::area::{Area, Options};
use super::prologue::{self, Shape};
use super::section::{call_order, split_at_symbols};
use super::stack::{self, Mode};
use super::{TransformError, not_applicable};

mod partial;
mod seam;
use crate::analysis::Cfg;
use crate::arch::ShaderModel;
use crate::cubin::{Cubin, OffsetMap};
use crate::sass::Op;
use crate::sass::control::Control;
use crate::sass::encode::{self, RegField};
use crate::sass::ir::{Function, Instr, OperandKind, RZ};
use crate::sass::relayout;
pub(crate) use seam::SpillToShared;

/// The stack pointer.
const SP: u8 = 1;

/// What the rewrite did and claims.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub(crate) kernel: String,
    /// Index of the kernel's text section.
    pub section: usize,
    /// Original section offset → rewritten offset of every original instruction.
    pub map: OffsetMap,
    /// Rewritten offsets of the inserted instructions (prologue and split accesses).
    pub inserted: Vec<u64>,
    /// The register holding the per-thread base of the spill area.
    pub base_reg: u8,
    /// Rewritten offset of the prologue's last instruction (the base is set after it).
    pub base_defined_at: u64,
    /// Bytes between slots (threads × 4).
    pub stride: u32,
    /// Slots in the area (all frames).
    pub slots: u32,
    /// Offset of slot 0 from the base register (the static shared size before the rewrite).
    pub area_offset: u32,
    /// Shared bytes per block the area adds.
    pub shared_added: u64,
    /// Spill instructions rewritten (original instructions).
    pub spills: usize,
    /// Spill instructions left in local memory: those of the words a partial move keeps
    /// there ([`Partial`]).
    pub kept_local: usize,
    /// Bytes those instructions move (as `ptxas -v` counts spill stores and loads).
    pub kept_local_bytes: u64,
    /// Frame words passed between functions (`[R1+k]`, byte offset) and the shared
    /// immediate (`[base + imm]`) that holds each instead, for the checker's claim.
    pub passed: Vec<(i64, i64)>,
    /// Variables moved out of a callee's way around calls (compressible stack).
    pub moves: usize,
    /// Bytes of local frame released (the frame and stack sizes set to 0: nothing is left
    /// in local memory); 0 when some local memory is still used.
    pub frame_released: u32,
    /// Slots stacked frames would have needed (for the report's comparison).
    pub stacked_slots: u32,
    /// The frames the stack laid out (one per function of the section, as cut at its
    /// symbols) and the layout chosen.
    pub frames: Vec<stack::Frame>,
    pub layout: stack::Layout,
    /// Register count after the rewrite.
    pub registers: u32,
    pub options: Options,
    /// Set when the area for every spill word did not fit: only the hottest moved.
    pub partial: Option<Partial>,
}

/// A partial move (issue 23): the spill words that did not fit the area stay in local
/// memory, their accesses untouched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partial {
    /// Spill words given shared slots, of `words` in all.
    pub words_moved: usize,
    pub words: usize,
    /// Bytes of spill words left in local memory (4 per word).
    pub local_bytes: u64,
    /// Those words (byte offsets from `R1`), ascending.
    pub kept: Vec<i64>,
    /// Slots moving every word would have needed.
    pub full_slots: u32,
}

/// One rewritten access.
struct Access {
    offset: u64,
    raw: u128,
    load: bool,
    /// Shared immediates, one per 32-bit word.
    imms: Vec<u32>,
}

/// Rewrite `kernel`'s spills in `cubin` (unchanged on error). `functions` are the decoded
/// functions of the cubin as it is (any order; those of the kernel's section are used).
pub(crate) fn spill_to_shared(
    cubin: &mut Cubin,
    functions: &[Function],
    kernel: &str,
    opts: Options,
) -> Result<Rewrite, TransformError> {
    let sm = cubin.arch();
    if !ShaderModel::of(sm).rewrites {
        return Err(not_applicable(format!("sm_{sm} code is not rewritten")));
    }
    let info = cubin
        .function_info(kernel)
        .ok_or_else(|| not_applicable(format!("no function `{kernel}`")))?;
    if !info.is_kernel {
        return Err(not_applicable(format!("`{kernel}` is not a kernel")));
    }
    let section = info.text_section;
    let owned = split_at_symbols(cubin, section, functions);
    let mut funcs: Vec<&Function> = owned.iter().collect();
    funcs.sort_by_key(|f| f.start);
    let entry = funcs
        .iter()
        .position(|f| f.name == kernel)
        .ok_or_else(|| not_applicable("the kernel's code was not decoded"))?;
    if funcs[entry].start != 0 {
        return Err(not_applicable("the kernel does not start its section"));
    }
    if let Some(f) = funcs.iter().find(|f| f.instrs.iter().any(|i| i.unknown)) {
        return Err(not_applicable(format!(
            "`{}` has an instruction the operand tables do not cover",
            f.name
        )));
    }

    // Spills per function: (function index, instruction) for every annotated offset.
    let spill_offsets = cubin.spill_offsets(section);
    if spill_offsets.is_empty() {
        return Err(not_applicable("no spills"));
    }
    let mut words_of: Vec<BTreeSet<i64>> = vec![BTreeSet::new(); funcs.len()];
    let mut spills: Vec<(usize, &Instr, i64, u32)> = Vec::new();
    for &off in &spill_offsets {
        let fi = funcs
            .iter()
            .position(|f| f.index_of(off).is_some())
            .ok_or_else(|| {
                not_applicable(format!("spill annotation at {off:#x} outside the code"))
            })?;
        let ins = &funcs[fi].instrs[funcs[fi].index_of(off).unwrap_or_default()];
        let (imm, width) = spill_access(ins).ok_or_else(|| {
            not_applicable(format!(
                "spill at {off:#x} is not `STL/LDL [R1+imm]`: {}",
                ins.opcode
            ))
        })?;
        for k in 0..i64::from(width) {
            words_of[fi].insert(imm / 4 + k);
        }
        spills.push((fi, ins, imm, width));
    }
    // ptxas gives the whole section one frame: sub-functions address the kernel's `R1`
    // without moving it, so `[R1+k]` is the same word in every function.
    if let Some((f, ins)) = funcs.iter().enumerate().find_map(|(fi, f)| {
        f.instrs
            .iter()
            .find(|i| i.gpr_writes().contains(&SP) && !(fi == entry && is_frame_setup(f, i)))
            .map(|i| (f, i))
    }) {
        return Err(not_applicable(format!(
            "`{}` moves the stack pointer at {:#x}",
            f.name, ins.offset
        )));
    }
    let all_words: BTreeSet<i64> = words_of.iter().flatten().copied().collect();
    // A local access at R1+imm that is not a spill must not share a word with one.
    for f in &funcs {
        for ins in &f.instrs {
            if spill_offsets.contains(&ins.offset) {
                continue;
            }
            if let Some((imm, width)) = r1_access(ins)
                && (0..i64::from(width)).any(|k| all_words.contains(&(imm / 4 + k)))
            {
                {
                    return Err(not_applicable(format!(
                        "`{}` at {:#x}: a non-spill local access shares a spill slot",
                        f.name, ins.offset
                    )));
                }
            }
        }
    }

    // Frames: the words each function keeps in shared memory, their liveness across calls,
    // and where the stack puts them.
    let (order, callees) = call_order(&funcs, entry)?;
    if let Some(i) = (0..funcs.len()).find(|&i| !order.contains(&i) && !words_of[i].is_empty()) {
        return Err(not_applicable(format!(
            "`{}` spills but is not called from the kernel",
            funcs[i].name
        )));
    }
    let index: BTreeMap<&str, usize> = funcs
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect();
    let live = word_liveness(&funcs, &order, &index, &spill_offsets);
    let cross = cross_words(&funcs, &order, &callees, &live, &words_of, &spills);
    // Every word in shared memory where the area fits; else the hottest, as many as fit
    // (issue 23, partial moves: the rest keep their local accesses).
    let plan = |local: &BTreeSet<i64>, mode: Mode| {
        partial::slot_plan(&words_of, &cross, &live, &order, local, mode)
    };
    let mut slots_plan = plan(&BTreeSet::new(), opts.stack);
    let mut part = None;
    let area = match Area::plan(&opts, info.static_shared, slots_plan.slots) {
        Ok(area) => area,
        Err(full) => {
            // The compressed layout's slot count does not depend on where variables sit:
            // the in-order layout sizes each try without the matching.
            let sizing = match opts.stack {
                Mode::Compressed => Mode::CompressedInOrder,
                m => m,
            };
            let units = partial::units(&partial::spill_heat(&funcs, &order, &live.calls, &spills));
            let fits = |local: &BTreeSet<i64>| {
                Area::plan(&opts, info.static_shared, plan(local, sizing).slots).is_ok()
            };
            let Some(local) = partial::choose(&units, fits) else {
                return Err(not_applicable(format!("not one spill word fits: {full}")));
            };
            slots_plan = plan(&local, opts.stack);
            part = Some(Partial {
                words_moved: all_words.len() - local.len(),
                words: all_words.len(),
                local_bytes: 4 * local.len() as u64,
                kept: local.iter().map(|w| 4 * w).collect(),
                full_slots: plan(&BTreeSet::new(), sizing).slots,
            });
            Area::plan(&opts, info.static_shared, slots_plan.slots)?
        }
    };
    let stacked_slots = slots_plan.stacked_slots(&order);
    let partial::SlotPlan {
        frames,
        lay,
        passed_slot,
        slots,
        ..
    } = &slots_plan;
    let (slots, c0) = (*slots, passed_slot.len() as u32);
    let slot = |fi: usize, w: i64| slots_plan.slot(fi, w);
    let (stride, shared_added, area_offset) = (area.stride, area.added, area.offset);

    // Registers: the base above everything the section names; two temporaries at entry.
    let highest = funcs
        .iter()
        .flat_map(|f| f.instrs.iter())
        .flat_map(|i| i.gpr_reads().into_iter().chain(i.gpr_writes()))
        .filter(|&r| r != RZ)
        .max()
        .unwrap_or(0);
    let base_reg = highest
        .checked_add(1)
        .filter(|&r| r < RZ - 3)
        .ok_or_else(|| not_applicable("no free register"))?;
    let (t0, t1) = if base_reg > 3 {
        (0, 2)
    } else {
        (base_reg + 1, base_reg + 2)
    };
    let registers = (u32::from(base_reg.max(t1)) + 3).max(info.registers.unwrap_or(0));
    // By default the kernel keeps its register allocation class (counts are allocated in
    // units of 8), so the rewrite never changes occupancy through registers nor exceeds a
    // launch-bounds cap ptxas met.
    let current = info.registers.unwrap_or(0);
    let limit = opts
        .max_registers
        .unwrap_or(current.div_ceil(8) * 8)
        .min(255);
    if registers > limit {
        return Err(not_applicable(format!(
            "the base register needs {registers} registers, above the limit of {limit}"
        )));
    }

    // The accesses (those of words carrying values between functions stay local).
    let accesses: Vec<Access> = spills
        .iter()
        .filter_map(|&(fi, ins, imm, width)| {
            Some(Access {
                offset: ins.offset,
                raw: ins.raw,
                load: ins.op() == Op::Ldl,
                imms: (0..i64::from(width))
                    .map(|k| Some(area.imm(slot(fi, imm / 4 + k)?)))
                    .collect::<Option<Vec<u32>>>()?,
            })
        })
        .collect();
    let kept_local = spills.len() - accesses.len();
    let moved: BTreeSet<u64> = accesses.iter().map(|a| a.offset).collect();
    let kept_local_bytes = spills
        .iter()
        .filter(|s| !moved.contains(&s.1.offset))
        .map(|s| 4 * u64::from(s.3))
        .sum();
    if accesses.is_empty() {
        return Err(not_applicable(
            "every spill carries a value between functions (kept in local memory)",
        ));
    }

    // Insert the prologue and the extra words of split accesses, then patch in place.
    let pro = prologue::spill_base(
        Shape {
            sm,
            one_d: opts.one_d,
        },
        base_reg,
        t0,
        t1,
    );
    let mut insertions: Vec<(u64, Vec<[u8; 16]>)> = vec![(0, pro.words.clone())];
    for a in &accesses {
        if a.imms.len() > 1 {
            let extra = (1..a.imms.len())
                .map(|k| encode::to_bytes(shared_word(a, k, base_reg)))
                .collect();
            insertions.push((a.offset + 16, extra));
        }
    }
    // Compressible stack: live variables in a callee's way move below its base around the
    // call (a load and a store through the scratch register before, and back after).
    let scratch = base_reg + 1;
    let templates = move_templates(&spills);
    for (fi, f) in funcs.iter().enumerate() {
        for (k, c) in live.calls[fi].iter().enumerate() {
            let ms = &lay.moves[fi][k];
            if ms.is_empty() {
                continue;
            }
            let (ld, st) =
                templates.ok_or_else(|| not_applicable("no spill load and store to copy"))?;
            let call = &f.instrs[c.at];
            if funcs
                .iter()
                .flat_map(|g| g.instrs.iter())
                .any(|i| i.target == Some(call.offset))
            {
                return Err(not_applicable(format!(
                    "the call at {:#x} is a branch target: moves before it would be skipped",
                    call.offset
                )));
            }
            let home = |m: &stack::Move| area.imm(c0 + lay.base[fi] + lay.pos[fi][m.var]);
            let away = |m: &stack::Move| area.imm(c0 + lay.base[fi] + m.to);
            let copy = |from: u32, to: u32| {
                [
                    encode::to_bytes(move_word(ld, scratch, base_reg, from, true)),
                    encode::to_bytes(move_word(st, scratch, base_reg, to, false)),
                ]
            };
            // Each run of moves ends in a NOP that waits for the last store to have read
            // `scratch`: a callee (or the code after) may write it at once.
            let before = ms
                .iter()
                .flat_map(|m| copy(home(m), away(m)))
                .chain([drain()])
                .collect();
            let after = ms
                .iter()
                .flat_map(|m| copy(away(m), home(m)))
                .chain([drain()])
                .collect();
            insertions.push((call.offset, before));
            insertions.push((call.offset + 16, after));
        }
    }
    let mut out = cubin.clone();
    let relaid = relayout::insert(&mut out, kernel, &insertions)?;
    let mut code = out.elf().sections[section].data.clone();
    for a in &accesses {
        let at =
            relaid.map.map(a.offset).ok_or_else(|| {
                not_applicable(format!("spill at {:#x} lost in re-layout", a.offset))
            })? as usize;
        let w = encode::to_bytes(shared_word(a, 0, base_reg));
        code.get_mut(at..at + 16)
            .ok_or_else(|| not_applicable("re-layout moved a spill outside the section"))?
            .copy_from_slice(&w);
    }
    out.replace_text(kernel, code, &OffsetMap::new())?;
    let new_spills: Vec<u64> = accesses
        .iter()
        .filter_map(|a| relaid.map.map(a.offset))
        .collect();
    out.drop_spill_annotations(kernel, &new_spills)?;
    // Nothing left in local memory: release the frame the driver reserves per thread.
    let frame_released = if kept_local == 0 && frame_unused(&funcs, &accesses) {
        let bytes = info
            .frame_size
            .unwrap_or(0)
            .max(info.min_stack.unwrap_or(0));
        for f in &funcs {
            out.set_stack_size(&f.name, 0)?;
        }
        bytes
    } else {
        0
    };
    out.set_register_count(kernel, registers)?;
    out.raise_maxreg_count(kernel, registers)?;
    out.set_shared_size(kernel, info.static_shared + shared_added)?;
    area.enforce(&mut out, kernel, &opts)?;

    let base_defined_at = relaid
        .inserted
        .get(pro.words.len() - 1)
        .copied()
        .unwrap_or(0);
    *cubin = out;
    Ok(Rewrite {
        kernel: kernel.to_string(),
        section,
        map: relaid.map,
        inserted: relaid.inserted,
        base_reg,
        base_defined_at,
        stride,
        slots,
        area_offset,
        shared_added,
        spills: accesses.len(),
        kept_local,
        kept_local_bytes,
        passed: passed_slot
            .iter()
            .map(|(&w, &sl)| (4 * w, i64::from(area.imm(sl))))
            .collect(),
        moves: lay.move_count(),
        frame_released,
        stacked_slots,
        frames: frames.clone(),
        layout: lay.clone(),
        registers,
        partial: part,
        options: opts,
    })
}

/// Whether the section needs no local frame once `accesses` are in shared memory: nothing
/// else reads the stack pointer (a local access, a frame address taken) but its own
/// updates, and no call leaves the section (an external callee, such as `vprintf`, may use
/// the stack).
fn frame_unused(funcs: &[&Function], accesses: &[Access]) -> bool {
    let moved: BTreeSet<u64> = accesses.iter().map(|a| a.offset).collect();
    let names: BTreeSet<&str> = funcs.iter().map(|f| f.name.as_str()).collect();
    funcs.iter().flat_map(|f| f.instrs.iter()).all(|i| {
        let leaves = i.is_call()
            && (i.has_mod("ABS")
                || !i.gpr_reads().is_empty()
                || i.callee.as_deref().is_some_and(|c| !names.contains(c)));
        let sp_use = i.gpr_reads().contains(&SP)
            && !moved.contains(&i.offset)
            // The frame's own allocation (`IADD3 R1, R1, -size`).
            && !(i.gpr_writes().contains(&SP) && i.gpr_reads().iter().all(|&r| r == SP));
        !leaves && !sp_use
    })
}

/// `(imm, words)` of an `STL/LDL [R1+imm]` (`.64`: 2 words, `.128`: 4).
fn r1_access(ins: &Instr) -> Option<(i64, u32)> {
    if !matches!(ins.op(), Op::Stl | Op::Ldl) {
        return None;
    }
    let addr = ins.operands.iter().find_map(|o| match o.kind {
        OperandKind::Addr {
            reg,
            ureg: None,
            desc: None,
            imm,
            ..
        } => Some((reg, imm)),
        _ => None,
    })?;
    if addr.0 != Some(SP) {
        return None;
    }
    let width = if ins.has_mod("128") {
        4
    } else if ins.has_mod("64") {
        2
    } else if ins
        .modifiers()
        .any(|m| matches!(m, "U8" | "S8" | "U16" | "S16"))
    {
        return None;
    } else {
        1
    };
    Some((addr.1, width))
}

/// A spill the transform can name: an R1-relative access of whole aligned words.
fn spill_access(ins: &Instr) -> Option<(i64, u32)> {
    r1_access(ins).filter(|(imm, width)| *imm >= 0 && imm % (4 * i64::from(*width)) == 0)
}

/// Word `k` of the shared form of access `a`: 32-bit, base register, immediate, data
/// register `+k`; reuse flags cleared (the operands changed).
fn shared_word(a: &Access, k: usize, base: u8) -> u128 {
    let Some(w) = encode::swap_local_shared(a.raw) else {
        return a.raw;
    };
    let w = encode::set_bits(w, 73, 3, 4); // 32-bit
    let w = encode::set_reg(w, RegField::A, base);
    let w = encode::set_bits(w, 40, 24, u64::from(a.imms[k]));
    let data = if a.load { RegField::Dst } else { RegField::B };
    let w = encode::set_reg(w, data, encode::reg(a.raw, data).saturating_add(k as u8));
    let mut c = Control::from_bits(encode::get_bits(w, 105, 23) as u32);
    c.reuse = 0;
    encode::set_bits(w, 105, 23, u64::from(c.to_bits()))
}

/// The kernel's frame setup at entry (`MOV R1, c[0x0][0x28]`, `IADD3 R1, R1, -size`): the
/// only writes of the stack pointer the one-frame model allows.
fn is_frame_setup(f: &Function, ins: &Instr) -> bool {
    let before_any_access = f
        .instrs
        .iter()
        .take_while(|i| i.offset < ins.offset)
        .all(|i| r1_access(i).is_none() && !i.is_call() && !i.is_branch());
    before_any_access && ins.always()
}

/// A call of an in-section function and the spill words live right after it.
struct CallSite {
    /// Index of the `CALL` in its function.
    at: usize,
    callee: usize,
    live_out: BTreeSet<i64>,
}

/// Spill-word liveness: the words each function reads before writing (through its callees
/// too) and, per call, the words live when it returns.
struct WordLiveness {
    live_in: Vec<BTreeSet<i64>>,
    calls: Vec<Vec<CallSite>>,
}

/// Backward liveness of the frame's spill words in every function, callees first (a call
/// reads what its callee's live-in names). Only the annotated spill accesses count: the
/// words of other local accesses are kept apart from them.
fn word_liveness(
    funcs: &[&Function],
    order: &[usize],
    index: &BTreeMap<&str, usize>,
    spills: &[u64],
) -> WordLiveness {
    let n = funcs.len();
    let mut live_in = vec![BTreeSet::new(); n];
    let mut calls: Vec<Vec<CallSite>> = (0..n).map(|_| Vec::new()).collect();
    // Transfer of one instruction, backwards.
    let step = |ins: &Instr, live: &mut BTreeSet<i64>, live_in: &[BTreeSet<i64>]| {
        if spills.contains(&ins.offset)
            && let Some((imm, width)) = r1_access(ins)
        {
            let words = (0..i64::from(width)).map(|k| imm / 4 + k);
            if ins.op() == Op::Ldl {
                live.extend(words);
            } else if ins.always() {
                for w in words {
                    live.remove(&w);
                }
            }
        }
        if let Some(c) = ins.callee.as_deref().and_then(|c| index.get(c)) {
            live.extend(live_in[*c].iter().copied());
        }
    };
    for &fi in order.iter().rev() {
        let f = funcs[fi];
        let cfg = Cfg::build(f);
        let blocks: Vec<_> = cfg.graph.node_indices().collect();
        let mut block_in: BTreeMap<_, BTreeSet<i64>> =
            blocks.iter().map(|&b| (b, BTreeSet::new())).collect();
        let block_out = |b, block_in: &BTreeMap<_, BTreeSet<i64>>| {
            cfg.successors(b)
                .flat_map(|s| block_in[&s].iter().copied())
                .collect::<BTreeSet<i64>>()
        };
        loop {
            let mut changed = false;
            for &b in blocks.iter().rev() {
                let mut live = block_out(b, &block_in);
                let blk = cfg.graph[b];
                for ins in f.instrs[blk.first..blk.end].iter().rev() {
                    step(ins, &mut live, &live_in);
                }
                if block_in[&b] != live {
                    block_in.insert(b, live);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        live_in[fi] = block_in[&cfg.entry].clone();
        let mut sites = Vec::new();
        for &b in &blocks {
            let mut live = block_out(b, &block_in);
            let blk = cfg.graph[b];
            for (i, ins) in f.instrs[blk.first..blk.end].iter().enumerate().rev() {
                if let Some(&c) = ins.callee.as_deref().and_then(|c| index.get(c)) {
                    sites.push(CallSite {
                        at: blk.first + i,
                        callee: c,
                        live_out: live.clone(),
                    });
                }
                step(ins, &mut live, &live_in);
            }
        }
        sites.sort_by_key(|c| c.at);
        calls[fi] = sites;
    }
    WordLiveness { live_in, calls }
}

/// Words that carry a value from one function to another: read by a callee before it
/// writes them (a return address the caller spilled), or live across a call whose callees
/// touch them; and words the kernel reads before any write. Each gets a slot of its own,
/// the same in every function; so do the other words of any access that touches one.
fn cross_words(
    funcs: &[&Function],
    order: &[usize],
    callees: &[BTreeSet<usize>],
    live: &WordLiveness,
    words_of: &[BTreeSet<i64>],
    spills: &[(usize, &Instr, i64, u32)],
) -> BTreeSet<i64> {
    // The kernel's own live-in too: a word read before any write (the never-stored half of
    // a wide reload) holds an arbitrary value, which the checker lets start in its slot.
    let mut cross: BTreeSet<i64> = order
        .iter()
        .flat_map(|&f| live.live_in[f].iter().copied())
        .collect();
    // Words each function and its callees touch (callees first).
    let mut touched: Vec<BTreeSet<i64>> = words_of.to_vec();
    for &f in order.iter().rev() {
        let below: Vec<i64> = callees[f]
            .iter()
            .flat_map(|&c| touched[c].iter().copied())
            .collect();
        touched[f].extend(below);
    }
    for f in 0..funcs.len() {
        for c in &live.calls[f] {
            cross.extend(c.live_out.intersection(&touched[c.callee]).copied());
        }
    }
    loop {
        let before = cross.len();
        for &(_, _, imm, width) in spills {
            let ws: Vec<i64> = (0..i64::from(width)).map(|k| imm / 4 + k).collect();
            if ws.iter().any(|w| cross.contains(w)) {
                cross.extend(ws);
            }
        }
        if cross.len() == before {
            return cross;
        }
    }
}

/// A spill load and store of the section to build the stack's moves from (any width; the
/// move words are made 32-bit).
fn move_templates(spills: &[(usize, &Instr, i64, u32)]) -> Option<(u128, u128)> {
    let ld = spills.iter().find(|s| s.1.op() == Op::Ldl)?.1.raw;
    let st = spills.iter().find(|s| s.1.op() == Op::Stl)?.1.raw;
    Some((ld, st))
}

/// One move instruction: `LDS scratch, [base + imm]` (`load`) or `STS [base + imm],
/// scratch`, unguarded. Scoreboard 5 orders the pair and the next pair: the load sets it
/// when it writes `scratch`, the store waits for that and sets it until it has read
/// `scratch`, and every move waits for it first. Waiting on a scoreboard ptxas' code also
/// uses only delays; nothing here leaves one unwaited for before `scratch` is reused.
fn move_word(template: u128, scratch: u8, base: u8, imm: u32, load: bool) -> u128 {
    let w = encode::swap_local_shared(template).unwrap_or(template);
    let w = encode::set_guard(w, 7, false);
    let w = encode::set_bits(w, 73, 3, 4); // 32-bit
    let w = encode::set_reg(w, RegField::A, base);
    let w = encode::set_bits(w, 40, 24, u64::from(imm));
    let w = encode::set_reg(w, if load { RegField::Dst } else { RegField::B }, scratch);
    let c = Control {
        stall: 2,
        yield_bit: true,
        write_sb: load.then_some(MOVE_SB),
        read_sb: (!load).then_some(MOVE_SB),
        wait_mask: 1 << MOVE_SB,
        reuse: 0,
    };
    encode::set_bits(w, 105, 23, u64::from(c.to_bits()))
}

/// The scoreboard the stack's moves use.
const MOVE_SB: u8 = 5;

/// A `NOP` that waits for [`MOVE_SB`]: the end of a run of stack moves.
fn drain() -> [u8; 16] {
    let c = Control {
        stall: 1,
        yield_bit: true,
        write_sb: None,
        read_sb: None,
        wait_mask: 1 << MOVE_SB,
        reuse: 0,
    };
    encode::to_bytes(encode::set_bits(
        encode::nop(1),
        105,
        23,
        u64::from(c.to_bits()),
    ))
}
