//! `spill2smem` (docs/papers.md §ICS'14; docs/DESIGN.md §spill2smem): every register
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

use super::TransformError;
use super::area::Options;
use super::section::split_at_symbols;
use super::stack;
use crate::cubin::{Cubin, OffsetMap};
use crate::sass::ir::{Function, Instr};

mod apply;
mod code;
mod liveness;
mod partial;
mod place;
mod scan;
mod seam;
mod words;
pub(crate) use seam::Spill2Smem;

/// The stack pointer.
const SP: u8 = 1;

/// One spill access: its function (index in the section), the instruction, its `R1`
/// offset and how many 32-bit words it moves.
type Spill<'a> = (usize, &'a Instr, i64, u32);

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

/// Rewrite `kernel`'s spills in `cubin` (unchanged on error). `functions` are the decoded
/// functions of the cubin as it is (any order; those of the kernel's section are used).
pub(crate) fn spill2smem(
    cubin: &mut Cubin,
    functions: &[Function],
    kernel: &str,
    opts: Options,
) -> Result<Rewrite, TransformError> {
    // What the section holds, and whether it fits the one-frame model.
    let info = scan::kernel_info(cubin, kernel)?;
    let section = info.text_section;
    let owned = split_at_symbols(cubin, section, functions);
    let sec = scan::section(&owned, kernel)?;
    let spills = scan::spills(cubin, section, &sec)?;
    scan::check_one_frame(&sec)?;
    scan::check_words_apart(&sec, &spills)?;
    // Where the words go: frames along the call tree, the area, the base register.
    let calls = liveness::calls(&sec, &spills)?;
    let placed = place::slots(&sec, &spills, &calls, info.static_shared, &opts)?;
    let regs = place::registers(&sec, info.registers, &opts)?;
    // The new code: shared accesses, the prologue, split words and stack moves.
    let moved = code::accesses(&spills, &placed)?;
    let mut new = code::prologue_and_splits(cubin.arch(), &opts, &regs, &moved.accesses);
    new.list.extend(code::stack_moves(
        &sec, &spills, &calls, &placed, regs.base,
    )?);
    // Into a copy of the cubin, which replaces the original only when all went well.
    let (mut out, relaid) = apply::rewrite_code(
        cubin,
        kernel,
        section,
        &new.list,
        &moved.accesses,
        regs.base,
    )?;
    let frame_released = apply::release_frame(&mut out, &sec.funcs, &moved, &info)?;
    apply::set_resources(&mut out, kernel, &info, regs.count, &placed.area, &opts)?;
    let base_defined_at = relaid.inserted.get(new.prologue - 1).copied().unwrap_or(0);
    *cubin = out;

    let place::Placement {
        plan,
        area,
        partial,
        stacked_slots,
    } = placed;
    Ok(Rewrite {
        kernel: kernel.to_string(),
        section,
        map: relaid.map,
        inserted: relaid.inserted,
        base_reg: regs.base,
        base_defined_at,
        stride: area.stride,
        slots: plan.slots,
        area_offset: area.offset,
        shared_added: area.added,
        spills: moved.accesses.len(),
        kept_local: moved.kept_local,
        kept_local_bytes: moved.kept_local_bytes,
        passed: plan
            .passed_slot
            .iter()
            .map(|(&w, &sl)| (4 * w, i64::from(area.imm(sl))))
            .collect(),
        moves: plan.lay.move_count(),
        frame_released,
        stacked_slots,
        frames: plan.frames,
        layout: plan.lay,
        registers: regs.count,
        partial,
        options: opts,
    })
}
