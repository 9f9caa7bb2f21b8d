//! The translation checker (docs/DESIGN.md §The translation checker): proves that a rewritten
//! text section computes what the original computes, in the manner of regalloc2's checker
//! (value, state and driver apart).
//!
//! # What is proved
//!
//! A transform rewrites one text section (a kernel and the sub-functions in its
//! `.text.<kernel>` section) and states a [`Claim`]: where every original instruction went
//! (`map`), which instructions it inserted, and the spill area it uses ([`SpillBase`]). The
//! checker sees only the decoded functions of both versions and the claim; it never runs
//! transform code, and its instruction semantics (`semantics.rs`) share nothing with
//! `transform/`. It proves: the rewritten code runs the original instructions in the
//! original order with straight-line inserted code between them (correspondence), and at
//! every instruction the image reads, in its own locations, the values the original reads
//! (values). The answer is a [`Proof`] (counts) or a [`Rejection`] (the first failure).
//!
//! nvdisasm lists a kernel's local sub-functions (`$kernel$callee`) inside the kernel's
//! code; the checker first cuts every function at the entries of the callees it calls by
//! name (the `CALL.REL` targets, read from the raw bits in the form the function's own
//! branches use) and cuts off code its entry does not reach (functions `<name>@<k>`), with
//! [`crate::analysis::section`], so each sub-function is checked as a function of its own.
//!
//! # The lattice
//!
//! The values check is an abstract interpretation over the CFG of each rewritten function
//! ([`Cfg::build`](crate::analysis::Cfg::build)).
//!
//! * **Abstract value** ([`Sym`], `state.rs`): `Orig(L)`, "the value location `L` of the
//!   original program holds at this point", and `SBase`, the per-thread spill base.
//! * **Locations** ([`Loc`]): `R0`-`R254`, `P0`-`P6`, `UR0`-`UR62`, `UP0`-`UP6`, local words
//!   `Local(k)` (byte offset `k` from the original's current `R1`) and spill words
//!   `Shared(imm)` (`[base.reg + imm]` of the current thread).
//! * **State** (`State`, `state.rs`): each location maps to the set of symbols it is known
//!   to hold. Ordered by inclusion: more symbols is more knowledge. ⊤ is an unreached block.
//!   The entry state (`driver.rs`) has every register and local word holding its own symbol
//!   and no spill word holding anything (plus `SBase` in `base.reg` on entry to a
//!   sub-function, the claim's passed words, and renumbered registers, see below).
//! * **Join** (`State::meet`): pointwise intersection, what holds on both paths. The sets
//!   are finite and only shrink, so the iteration ends.
//! * **Transfer** (`transfer.rs`): each rewritten instruction becomes a step, a list of
//!   operations on the state; its *needs* (a location must hold a symbol) are the proof
//!   obligations. The steps are built by `steps.rs` (inserted), `moves.rs` (spill moves),
//!   `image.rs` (other originals) and `calls.rs` (calls, from the summaries of
//!   `summary.rs` and `liveness.rs`).
//! * **Driver** (`driver.rs`): the worklist iterates to a fixed point without checking; then
//!   one more pass in address order checks every need.
//!
//! # The checks
//!
//! **Correspondence** (`correspond.rs`). Every original instruction has exactly one image
//! in the rewritten function of the same name (two originals on one offset, an image outside its function
//! or on an inserted offset are rejected; only trailing NOP padding may vanish, and NOPs
//! may appear). Code after the last instruction reachable from a function's entry (local
//! functions only called through pointers) is cut off as functions `<name>@<k>`. The
//! first instruction that is not inserted is the image of the original's first; after the
//! image of an instruction that can fall through, the next instruction that is not
//! inserted is the image of its successor; branch, `BSSY`, `BRX` and internal `CALL`
//! targets are the images of the original targets (a `BRA`/`JMP` may instead enter a run
//! of inserted instructions that falls straight into the image of its original target:
//! code inserted to run on every path into it); direct calls name the same callee.
//! (A `CALL.REL.NOINC` to a label of the function itself, ptxas' loop-exit idiom, is a
//! jump: its state flows to the target.)
//! Inserted instructions may not transfer control, synchronise, store to memory other
//! than a spill slot, or be unknown to the operand tables. So the rewritten code runs
//! the original instructions in the original order, with inserted straight-line code
//! between them.
//!
//! **Values**, step by step:
//! * *Inserted instructions* only move values: register copies (`MOV`, `IMAD.MOV.U32 Rd,
//!   RZ, RZ, Rs`), `LDS/STS [base.reg + imm]` while `base.reg` holds `SBase`, `LDL/STL
//!   [R1 + imm]` while `R1` holds `Orig(R1)`; every other write empties its destinations;
//!   the instruction at `base.defined_at` leaves `{SBase}` in `base.reg`.
//! * *Guards*: the effects of a guarded instruction (inserted or original; the image must
//!   keep the guard's sense and its predicate must hold the original's) are applied to a
//!   copy of the state, which is then met with the state before: what holds on both paths.
//!   Consecutive instructions under the same guard, none of which writes its predicate,
//!   run or skip together: they are applied in turn and met once, after the last (a
//!   guarded wide spill split into two stores, for one).
//! * *Spill moves* (the original is `STL/LDL [R1+imm]`, any width, `.LU` included): the
//!   image is an `STL/LDL [R1+imm']` or an `STS/LDS [base.reg+imm']` (checked: `R1` holds
//!   `Orig(R1)`, or `base.reg` holds `SBase` and `imm'` names a slot) and copies the sets
//!   of the words it moves (fewer words when a wide spill is split, the rest moved by
//!   inserted instructions); then the original move renames symbols: `Orig(dst)` leaves
//!   every location and joins every location that holds `Orig(src)`. A store of `RZ` at
//!   any width stores zero in every word: each word, in the original and in every image
//!   word (whose data must be `RZ` too), gets `RZ`'s own symbol.
//! * *Every other original instruction*: the image has the same opcode, guard and operands
//!   up to register numbers; every location the original reads (registers of all files
//!   with their widths, address and constant-bank index registers, the guard, `PR`) must
//!   hold its `Orig` symbol in the image's corresponding location; then what the image
//!   writes is emptied and each written original location's symbol moves to the image's
//!   corresponding location. Unknown instructions must be bit-identical; all their
//!   register operands (four registers wide) count as read and written; an instruction
//!   whose operands nvdisasm printed in a form not parsed is rejected. Immediates must be
//!   equal except branch targets (checked by the map) and return addresses (below).
//! * *Calls* use summaries of the section's functions, computed callees first (recursion
//!   is rejected): the registers the original callee may write (`OrigWrites`), the
//!   locations the rewritten callee may write (`RewWrites`, spill words included), and the
//!   original callee's live-in, frame words included (ptxas' sub-functions share the
//!   kernel's frame and read what the caller stored there, such as a spilled return
//!   address; a callee that moves `R1` or indexes the frame needs every tracked frame
//!   word; a word the claim lists in `passed` is needed in its spill word instead, and
//!   a sub-function starts with it there when the section has no indirect call). At a
//!   call, the live-in must hold its symbols and `base.reg` `SBase`; then `RewWrites` is emptied and each `OrigWrites` location gets its symbol
//!   back. This is licensed by the callee's own check, which at every `RET` requires each
//!   `OrigWrites` location to hold its symbol (and counts the `RET` as reading them, so
//!   the live-in covers paths that do not write them). Calls the section cannot resolve
//!   (`CALL.ABS`, external callees) may read and write every register, predicate and
//!   uniform register below the function's register count and every spill word: all of
//!   those must hold their symbols before, and spill values do not survive. An indirect
//!   `CALL.REL Rx` may enter any sub-function of the section: it needs every
//!   sub-function's live-in and `SBase`, and each sub-function must write no register its
//!   original does not. So the base register should be at or above the register count
//!   (where ptxas' callees never write), and inserted code should not leave registers
//!   below it changed across an unresolved call.
//! * *Renumbering* ([`Claim::renamed`], regdem's compaction): one numbering
//!   for the whole section. At a direct call the callee's live-in must hold its symbols
//!   in their renumbered registers, and its writes get their symbols there; a
//!   sub-function starts with its live-in there and must return its writes there; a
//!   kernel starts with each register's entry value in its renumbered register (see
//!   the assumptions). A direct call kills, in the liveness, the registers its original
//!   callee writes on every path to its returns. Refused with indirect calls and in
//!   functions that are not kernels (their callers are outside the section).
//! * *Frames shared with callees*: ptxas' sub-functions that do not move `R1` use their
//!   caller's frame. The words such a callee may write (`STL [R1+imm]`, through its own
//!   callees too) leave, at each call, every location that held their old value; those the
//!   rewrite keeps where the caller looks (in the frame, or in the claim's passed spill
//!   word) get their new value there, which the callee's returns must hold. A callee that
//!   moves `R1` writes none of its caller's words (see the assumptions).
//! * *A kernel's new frame*: after the kernel loads `R1` from the constant bank (and
//!   allocates its frame), when nothing before it in its entry block stores, calls or
//!   branches and nothing branches back into that block, every frame word holds its own
//!   value, and each passed word (never stored yet) is in its spill word instead.
//! * `R1` writes: `IADD3/IADD/VIADD R1, R1, imm` renames the frame's words by `imm`; any
//!   other write of `R1` forgets everything about the frame. Original sub-word or
//!   register-indexed `[R1+...]` accesses read or write their words in place (a load
//!   needs them to hold their own value). A move's image through `R1` at another offset,
//!   and an inserted `STL`, may only use frame words the original function uses, and only
//!   where the frame address does not escape.
//! * A spill-area access is one 32-bit word: `[base.reg + imm]` with no index or scale,
//!   `imm` a multiple of `stride` below `slots × stride` (a wider access would touch the
//!   next thread's words).
//!
//! # Assumptions (what is trusted, and how each is proved or enforced)
//!
//! * A kernel's new frame (and its spill area, before anything is stored to it) holds
//!   arbitrary values, the same in both programs where they keep a word in the same place;
//!   a word of it read before being written sees such a value in either program.
//!   *Trusted*: the hardware's (local and shared memory start undefined).
//! * No general register, predicate or uniform register holds a defined value at a
//!   kernel's entry (ptxas loads `R1` from the constant bank before using it): a read of
//!   one before any write sees an arbitrary value, so a rewrite that starts with those
//!   values renumbered behaves as the original could with other arbitrary values.
//!   *Trusted*: the launch ABI (parameters come in the constant bank, not in registers).
//! * The instruction at `base.defined_at` computes the per-thread base of an area of
//!   `slots × stride` bytes of shared memory that lies after the program's static and
//!   dynamic shared memory and that no other thread's base overlaps (slot-major, one word
//!   per thread per slot, `stride` = threads per block × 4). Not assumed by the callers
//!   that ship rewrites: [`base::prove`] proves it from the rewritten kernel's prologue for
//!   every block shape the launch can have (`tune::proven` runs it after this check).
//!   *Proved* there, for the launches the rewritten cubins allow ([`base::Launch`], read
//!   from the cubins, not from the transform).
//! * The program's own shared-memory accesses stay inside its static + dynamic shared
//!   memory, so they never touch the spill area (program shared memory, global memory and
//!   local memory through registers other than `R1` are not modelled).
//!   *Trusted*: an access outside them is already undefined behaviour in the program.
//! * Every `[R1+imm]` access is treated as a move, but only the words of ptxas' spill slots
//!   (the `STL/LDL` that `EIATTR_ANNOTATIONS` marks SpillRefill) may leave local memory: a
//!   frame word the rewrite no longer keeps in local memory is never *read* through another
//!   register (a local array element read through a pointer would see the stale word; the
//!   checker does not model those loads). The transform must take its slots from the
//!   annotations (docs/DESIGN.md §spill2smem). *Enforced* by the transforms, not
//!   proved here.
//! * *Stores* through other registers are handled soundly where the frame address can have
//!   escaped: if the original function reads `R1` anywhere but as the base of a local
//!   access, in its own `R1` updates and in calls, every store that may reach local memory
//!   (`STL` through another register or an index, generic `ST`/`ATOM`/`RED`, unknown
//!   instructions, calls of code that may do so, `semantics::pointer_stores`: a direct call
//!   of a section function that stores through no pointer, nor calls one that does, is
//!   not one) is taken to overwrite any frame word in both programs alike: a
//!   word keeps only its own original value, and no other location keeps an original frame
//!   value. Where `R1` does not escape, no other register can address the frame (frame
//!   addresses are assumed to be derived from `R1`). *Proved* where the address escapes
//!   (`semantics::escapes`); *trusted* (derivation from `R1`) where it does not.
//! * Callees keep the ABI: `R1` is restored and a callee's frame lies below the caller's
//!   `R1`, so the caller's local words survive a call (unless the caller's frame address
//!   escaped, see above). Calls outside the section (`vprintf`) use no register at or above
//!   the function's register count. *Trusted*: the calling convention ptxas follows.
//! * A return address materialised as an immediate (the `MOV` before `CALL.REL.NOINC`, and
//!   the `LEPC` arithmetic of `printf` calls) is only ever used as a code address: the
//!   checker accepts an immediate that differs from the original's when the original's is a
//!   return point (the offset after a `CALL`) and the new one is the offset right after
//!   that call's image, or the original's is an `LEPC` offset and the new one its image.
//!   `LEPC` labels and `RET`/`BRX`/`CALL Rx` self-relative immediates are not compared.
//!   *Trusted*: how ptxas uses them.
//! * The decoded operand roles and widths ([`crate::sass::operands`]) are right; an
//!   instruction they do not cover is "unknown" and handled as above. *Checked*, not
//!   trusted, by [`oracle`]: before and after a rewrite, what the IR says each instruction
//!   reads and writes must equal what `nvdisasm -plr` marks, or the rewrite is refused
//!   (`tune::proven` runs it); register tuples are aligned ([`tuples`], run by [`check`]).
//!
//! # Layout
//!
//! * `claim.rs`: what a transform claims ([`Claim`], [`SpillBase`]) and the answer
//!   ([`Proof`], [`Rejection`]).
//! * `semantics.rs`: what each instruction reads, writes and moves, in the checker's terms.
//! * `section.rs`: the section under check (both versions, the claim, what is derived once).
//! * `mapping.rs`: images and origins; `correspond.rs`: the structural correspondence checks.
//! * `summary.rs`, `liveness.rs`, `regset.rs`: callee summaries and the liveness behind them.
//! * `state.rs`: the abstract value, the state and its join.
//! * `transfer.rs`: the operations a step applies to the state, and guarded runs.
//! * `steps.rs`, `moves.rs`, `image.rs`, `calls.rs`: each rewritten instruction's step.
//! * `driver.rs`: the entry state, the fixed point and the checking pass.
//! * Beside the values check: [`schedule`] (control bits of inserted accesses), [`base`]
//!   (the spill base), [`oracle`] and [`plr`] (operand facts against `nvdisasm -plr`),
//!   [`tuples`] (register alignment).

pub mod base;
mod base_error;
mod calls;
mod claim;
mod correspond;
mod driver;
mod image;
mod liveness;
mod mapping;
mod moves;
pub mod oracle;
pub mod plr;
mod regset;
pub mod schedule;
mod schedule_error;
mod section;
mod semantics;
mod state;
mod steps;
mod summary;
mod transfer;
pub mod tuples;

pub use claim::{Check, Claim, Proof, Rejection, SpillBase};

use std::collections::BTreeSet;

use crate::analysis::section::{SplitError, split_sub_functions};
use crate::sass::ir::Function;
use claim::reject;
use section::Section;
use semantics::transfers_control;

/// Check `rewritten` against `original` (the decoded functions of one text section, same
/// names in the same order) under `claim`.
pub fn check(
    original: &[Function],
    rewritten: &[Function],
    claim: &Claim,
) -> Result<Proof, Rejection> {
    // Inserted control flow first: it would also change how the code splits into functions.
    let inserted: BTreeSet<u64> = claim.inserted.iter().copied().collect();
    for f in rewritten {
        for ins in &f.instrs {
            if inserted.contains(&ins.offset) && transfers_control(ins) {
                return reject(
                    Check::InsertedControl,
                    &f.name,
                    ins.offset,
                    format!(
                        "inserted `{}` transfers control or synchronises",
                        ins.opcode
                    ),
                );
            }
        }
    }
    tuples::check(rewritten)?;
    let original = split_sub_functions(original).map_err(rejection)?;
    let rewritten = split_sub_functions(rewritten).map_err(rejection)?;
    let section = Section::new(&original, &rewritten, claim)?;
    section.run()
}

fn rejection(e: SplitError) -> Rejection {
    Rejection {
        function: e.function,
        offset: e.offset,
        check: Check::Split,
        reason: e.reason,
    }
}

#[cfg(test)]
mod tests;
