//! The translation checker (docs/DESIGN.md §The translation checker): proves that a rewritten
//! text section computes what the original computes, in the manner of regalloc2's checker.
//!
//! # What is checked
//!
//! A transform rewrites one text section (a kernel and the sub-functions in its
//! `.text.<kernel>` section) and states a [`Claim`]: where every original instruction went
//! (`map`), which instructions it inserted, and the spill area it uses ([`SpillBase`]). The
//! checker sees only the decoded functions of both versions and the claim; it never runs
//! transform code.
//!
//! nvdisasm lists a kernel's local sub-functions (`$kernel$callee`) inside the kernel's
//! code; the checker first cuts every function at the entries of the callees it calls by
//! name (the `CALL.REL` targets, read from the raw bits in the form the function's own
//! branches use), so each sub-function is checked as a function of its own.
//!
//! 1. **Correspondence.** Every original instruction has exactly one image in the rewritten
//!    function of the same name (two originals on one offset, an image outside its function
//!    or on an inserted offset are rejected; only trailing NOP padding may vanish, and NOPs
//!    may appear). Code after the last instruction reachable from a function's entry (local
//!    functions only called through pointers) is cut off as functions `<name>@<k>`. The
//!    first instruction that is not inserted is the image of the original's first; after the
//!    image of an instruction that can fall through, the next instruction that is not
//!    inserted is the image of its successor; branch, `BSSY`, `BRX` and internal `CALL`
//!    targets are the images of the original targets (a `BRA`/`JMP` may instead enter a run
//!    of inserted instructions that falls straight into the image of its original target:
//!    code inserted to run on every path into it); direct calls name the same callee.
//!    (A `CALL.REL.NOINC` to a label of the function itself, ptxas' loop-exit idiom, is a
//!    jump: its state flows to the target.)
//!    Inserted instructions may not transfer control, synchronise, store to memory other
//!    than a spill slot, or be unknown to the operand tables. So the rewritten code runs
//!    the original instructions in the original order, with inserted straight-line code
//!    between them.
//! 2. **Values** (abstract interpretation over the CFG of each rewritten function, from
//!    [`Cfg::build`]). Symbols: `Orig(L)`, "the value location `L` of the original program
//!    holds at this point", and `SBase`. Locations: `R0`-`R254`, `P0`-`P6`, `UR0`-`UR62`,
//!    `UP0`-`UP6`, local words `Local(k)` (byte offset `k` from the original's current `R1`)
//!    and spill words `Shared(imm)` (`[base.reg + imm]` of the current thread). The state
//!    maps each location to the symbols it is known to hold; it starts with every register
//!    and local word holding its own symbol and no spill word holding anything (plus `SBase`
//!    in `base.reg` on entry to a sub-function), joins by intersection (unreached blocks are
//!    ⊤) and is iterated to a fixed point; then one more pass in address order checks.
//!    * *Inserted instructions* only move values: register copies (`MOV`, `IMAD.MOV.U32 Rd,
//!      RZ, RZ, Rs`), `LDS/STS [base.reg + imm]` while `base.reg` holds `SBase`, `LDL/STL
//!      [R1 + imm]` while `R1` holds `Orig(R1)`; every other write empties its destinations;
//!      the instruction at `base.defined_at` leaves `{SBase}` in `base.reg`.
//!    * *Guards*: the effects of a guarded instruction (inserted or original; the image must
//!      keep the guard's sense and its predicate must hold the original's) are applied to a
//!      copy of the state, which is then met with the state before: what holds on both paths.
//!      Consecutive instructions under the same guard, none of which writes its predicate,
//!      run or skip together: they are applied in turn and met once, after the last (a
//!      guarded wide spill split into two stores, for one).
//!    * *Spill moves* (the original is `STL/LDL [R1+imm]`, any width, `.LU` included): the
//!      image is an `STL/LDL [R1+imm']` or an `STS/LDS [base.reg+imm']` (checked: `R1` holds
//!      `Orig(R1)`, or `base.reg` holds `SBase` and `imm'` names a slot) and copies the sets
//!      of the words it moves (fewer words when a wide spill is split, the rest moved by
//!      inserted instructions); then the original move renames symbols: `Orig(dst)` leaves
//!      every location and joins every location that holds `Orig(src)`.
//!    * *Every other original instruction*: the image has the same opcode, guard and operands
//!      up to register numbers; every location the original reads (registers of all files
//!      with their widths, address and constant-bank index registers, the guard, `PR`) must
//!      hold its `Orig` symbol in the image's corresponding location; then what the image
//!      writes is emptied and each written original location's symbol moves to the image's
//!      corresponding location. Unknown instructions must be bit-identical; all their
//!      register operands (four registers wide) count as read and written; an instruction
//!      whose operands nvdisasm printed in a form not parsed is rejected. Immediates must be
//!      equal except branch targets (checked by the map) and return addresses (below).
//!    * *Calls* use summaries of the section's functions, computed callees first (recursion
//!      is rejected): the registers the original callee may write (`OrigWrites`), the
//!      locations the rewritten callee may write (`RewWrites`, spill words included), and the
//!      original callee's live-in, frame words included (ptxas' sub-functions share the
//!      kernel's frame and read what the caller stored there, such as a spilled return
//!      address; a callee that moves `R1` or indexes the frame needs every tracked frame
//!      word; a word the claim lists in `passed` is needed in its spill word instead, and
//!      a sub-function starts with it there when the section has no indirect call). At a
//!      call, the live-in must hold its symbols and `base.reg` `SBase`; then `RewWrites` is emptied and each `OrigWrites` location gets its symbol
//!      back. This is licensed by the callee's own check, which at every `RET` requires each
//!      `OrigWrites` location to hold its symbol (and counts the `RET` as reading them, so
//!      the live-in covers paths that do not write them). Calls the section cannot resolve
//!      (`CALL.ABS`, external callees) may read and write every register, predicate and
//!      uniform register below the function's register count and every spill word: all of
//!      those must hold their symbols before, and spill values do not survive. An indirect
//!      `CALL.REL Rx` may enter any sub-function of the section: it needs every
//!      sub-function's live-in and `SBase`, and each sub-function must write no register its
//!      original does not. So the base register should be at or above the register count
//!      (where ptxas' callees never write), and inserted code should not leave registers
//!      below it changed across an unresolved call.
//!    * *Renumbering* ([`Claim::renamed`], register demotion's compaction): one numbering
//!      for the whole section. At a direct call the callee's live-in must hold its symbols
//!      in their renumbered registers, and its writes get their symbols there; a
//!      sub-function starts with its live-in there and must return its writes there; a
//!      kernel starts with each register's entry value in its renumbered register (see
//!      the assumptions). A direct call kills, in the liveness, the registers its original
//!      callee writes on every path to its returns. Refused with indirect calls and in
//!      functions that are not kernels (their callers are outside the section).
//!    * *Frames shared with callees*: ptxas' sub-functions that do not move `R1` use their
//!      caller's frame. The words such a callee may write (`STL [R1+imm]`, through its own
//!      callees too) leave, at each call, every location that held their old value; those the
//!      rewrite keeps where the caller looks (in the frame, or in the claim's passed spill
//!      word) get their new value there, which the callee's returns must hold. A callee that
//!      moves `R1` writes none of its caller's words (see the assumptions).
//!    * *A kernel's new frame*: after the kernel loads `R1` from the constant bank (and
//!      allocates its frame), when nothing before it in its entry block stores, calls or
//!      branches and nothing branches back into that block, every frame word holds its own
//!      value, and each passed word (never stored yet) is in its spill word instead.
//!    * `R1` writes: `IADD3/IADD/VIADD R1, R1, imm` renames the frame's words by `imm`; any
//!      other write of `R1` forgets everything about the frame. Original sub-word or
//!      register-indexed `[R1+...]` accesses read or write their words in place (a load
//!      needs them to hold their own value). A move's image through `R1` at another offset,
//!      and an inserted `STL`, may only use frame words the original function uses, and only
//!      where the frame address does not escape.
//!    * A spill-area access is one 32-bit word: `[base.reg + imm]` with no index or scale,
//!      `imm` a multiple of `stride` below `slots × stride` (a wider access would touch the
//!      next thread's words).
//!
//! # Assumptions (what is trusted, not proved)
//!
//! * A kernel's new frame (and its spill area, before anything is stored to it) holds
//!   arbitrary values, the same in both programs where they keep a word in the same place;
//!   a word of it read before being written sees such a value in either program.
//! * No general register, predicate or uniform register holds a defined value at a
//!   kernel's entry (ptxas loads `R1` from the constant bank before using it): a read of
//!   one before any write sees an arbitrary value, so a rewrite that starts with those
//!   values renumbered behaves as the original could with other arbitrary values.
//! * The instruction at `base.defined_at` computes the per-thread base of an area of
//!   `slots × stride` bytes of shared memory that lies after the program's static and
//!   dynamic shared memory and that no other thread's base overlaps (slot-major, one word
//!   per thread per slot, `stride` = threads per block × 4). Not assumed by the callers
//!   that ship rewrites: [`base::prove`] proves it from the rewritten kernel's prologue for
//!   every block shape the launch can have (`tune::proven` runs it after this check).
//! * The program's own shared-memory accesses stay inside its static + dynamic shared
//!   memory, so they never touch the spill area (program shared memory, global memory and
//!   local memory through registers other than `R1` are not modelled).
//! * Every `[R1+imm]` access is treated as a move, but only the words of ptxas' spill slots
//!   (the `STL/LDL` that `EIATTR_ANNOTATIONS` marks SpillRefill) may leave local memory: a
//!   frame word the rewrite no longer keeps in local memory is never *read* through another
//!   register (a local array element read through a pointer would see the stale word; the
//!   checker does not model those loads). The transform must take its slots from the
//!   annotations, as docs/DESIGN.md §Spill to shared says.
//! * *Stores* through other registers are handled soundly where the frame address can have
//!   escaped: if the original function reads `R1` anywhere but as the base of a local
//!   access, in its own `R1` updates and in calls, every store that may reach local memory
//!   (`STL` through another register or an index, generic `ST`/`ATOM`/`RED`, unknown
//!   instructions, calls) is taken to overwrite any frame word in both programs alike: a
//!   word keeps only its own original value, and no other location keeps an original frame
//!   value. Where `R1` does not escape, no other register can address the frame (frame
//!   addresses are assumed to be derived from `R1`).
//! * Callees keep the ABI: `R1` is restored and a callee's frame lies below the caller's
//!   `R1`, so the caller's local words survive a call (unless the caller's frame address
//!   escaped, see above). Calls outside the section (`vprintf`) use no register at or above
//!   the function's register count.
//! * A return address materialised as an immediate (the `MOV` before `CALL.REL.NOINC`, and
//!   the `LEPC` arithmetic of `printf` calls) is only ever used as a code address: the
//!   checker accepts an immediate that differs from the original's when the original's is a
//!   return point (the offset after a `CALL`) and the new one is the offset right after
//!   that call's image, or the original's is an `LEPC` offset and the new one its image.
//!   `LEPC` labels and `RET`/`BRX`/`CALL Rx` self-relative immediates are not compared.
//! * The decoded operand roles and widths ([`crate::sass::operands`]) are right; an
//!   instruction they do not cover is "unknown" and handled as above.

pub mod base;
pub mod oracle;
pub mod plr;
pub mod schedule;
mod state;
pub mod tuples;

pub use state::{Loc, Sym};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use petgraph::graph::NodeIndex;

use crate::analysis::Cfg;
use crate::cubin::OffsetMap;
use crate::sass::encode;
use crate::sass::ir::{Function, Instr, Operand, OperandKind, RZ};
use state::{Set, State, show};

/// What a transform claims about its rewrite of one text section.
#[derive(Debug, Clone, Default)]
pub struct Claim {
    /// Original section offset → rewritten section offset of every original instruction
    /// (the `map` of `sass::relayout::Relayout`; the identity when nothing was inserted).
    pub map: OffsetMap,
    /// Rewritten section offsets of the inserted instructions (not images of originals).
    pub inserted: Vec<u64>,
    /// The spill area, when the rewrite uses one.
    pub base: Option<SpillBase>,
    /// Frame words a caller passes to its callees (`[R1+k]` read by a callee before it
    /// writes it, as a spilled return address) that the rewrite keeps in the spill word
    /// `[base + imm]` instead: `(k, imm)`. A call then needs the spill word to hold the
    /// frame word's value, and a callee starts with it there.
    pub passed: Vec<(i64, i64)>,
    /// General registers the rewrite renumbered across the whole section (register
    /// demotion's compaction): original `R<r>` is rewritten `R<renamed[r]>` wherever
    /// functions meet. A call needs each register live into its callee in the renumbered
    /// place and leaves what the callee writes there; a sub-function starts with its
    /// live-in there and must return its writes there. Registers not listed keep their
    /// numbers. Not allowed in sections with indirect calls.
    pub renamed: BTreeMap<u8, u8>,
}

impl Claim {
    /// Nothing moved, nothing inserted, no spill area.
    pub fn identity() -> Claim {
        Claim::default()
    }
}

/// The per-thread spill area in shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpillBase {
    /// General register that holds the per-thread base of the spill area.
    pub reg: u8,
    /// Rewritten section offset of the (inserted) instruction after which `reg` holds the base.
    pub defined_at: u64,
    /// Bytes between consecutive slot words (threads-per-block × 4); every shared access
    /// `[reg + imm]` must have `imm - area` a multiple of it and below `slots × stride`.
    pub stride: u32,
    pub slots: u32,
    /// Offset of slot 0 from the base register (the static shared size the code was
    /// compiled against: the transforms fold it into each access's immediate).
    pub area: u32,
}

/// What was proved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proof {
    /// Reachable rewritten instructions checked (final pass).
    pub instructions: usize,
    /// Functions checked.
    pub functions: usize,
    /// Images of original spill moves (`STL/LDL [R1+imm]`) checked.
    pub moves: usize,
    /// Of those, moves whose image addresses the spill area in shared memory.
    pub shared_moves: usize,
    /// Inserted instructions (in the claim).
    pub inserted: usize,
    /// Call sites checked against summaries (direct, indirect and unknown).
    pub calls: usize,
    /// Block visits until the fixed point (all functions).
    pub iterations: usize,
}

/// Why a rewrite was not proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub function: String,
    /// Rewritten section offset (0 when the problem is not at one instruction).
    pub offset: u64,
    pub reason: String,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {:#x}: {}",
            self.function,
            self.offset,
            self.reason.replace('\n', " ")
        )
    }
}

impl std::error::Error for Rejection {}

fn reject<T>(function: &str, offset: u64, reason: impl Into<String>) -> Result<T, Rejection> {
    Err(Rejection {
        function: function.to_string(),
        offset,
        reason: reason.into(),
    })
}

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
    let original = split_sub_functions(original)?;
    let rewritten = split_sub_functions(rewritten)?;
    let section = Section::new(&original, &rewritten, claim)?;
    section.run()
}

// ---------------------------------------------------------------------------------------
// Sub-functions inside a function's code.

/// Whether `f` uses the split branch-offset form (sm_90), judged by its direct branches
/// whose targets nvdisasm printed.
fn split_form(f: &Function) -> Option<bool> {
    f.instrs.iter().find_map(|ins| {
        let t = ins.target?;
        if ins.base() != "BRA" {
            return None;
        }
        let plain = encode::direct_target(80, ins.offset, ins.raw) == Some(t);
        let split = encode::direct_target(90, ins.offset, ins.raw) == Some(t);
        (plain != split).then_some(split)
    })
}

/// nvdisasm lists a kernel's local sub-functions (`$kernel$callee`) as part of the
/// kernel's code: cut each function at the entries of the named callees it contains, so
/// that every sub-function is a function of its own (name = the callee's name; calls get
/// their `target`).
fn split_sub_functions(fs: &[Function]) -> Result<Vec<Function>, Rejection> {
    let known: BTreeSet<&str> = fs.iter().map(|f| f.name.as_str()).collect();
    let mut out = Vec::new();
    for f in fs {
        let form = split_form(f);
        let mut entries: BTreeMap<u64, String> = BTreeMap::new();
        let mut targets: HashMap<usize, u64> = HashMap::new();
        for (i, ins) in f.instrs.iter().enumerate() {
            let Some(c) = &ins.callee else { continue };
            if !ins.is_call() || known.contains(c.as_str()) || ins.has_mod("ABS") {
                continue;
            }
            let inside =
                |t: &u64| *t != ins.offset + 16 && *t > f.start && f.index_of(*t).is_some();
            let cands: Vec<u64> = match form {
                Some(split) => {
                    encode::direct_target(if split { 90 } else { 80 }, ins.offset, ins.raw)
                        .into_iter()
                        .collect()
                }
                None => [80, 90]
                    .iter()
                    .filter_map(|&sm| encode::direct_target(sm, ins.offset, ins.raw))
                    .collect(),
            };
            let cands: BTreeSet<u64> = cands.into_iter().filter(inside).collect();
            let t = match cands.len() {
                0 => continue, // an external callee (relocated): unknown code
                1 => *cands.first().expect("one"),
                _ => {
                    return reject(
                        &f.name,
                        ins.offset,
                        format!("cannot tell where `{c}` starts"),
                    );
                }
            };
            if let Some(other) = entries.get(&t)
                && other != c
            {
                return reject(
                    &f.name,
                    ins.offset,
                    format!("`{c}` and `{other}` both start at {t:#x}"),
                );
            }
            if entries.values().any(|n| n == c) && !entries.contains_key(&t) {
                return reject(
                    &f.name,
                    ins.offset,
                    format!("calls of `{c}` go to different offsets"),
                );
            }
            entries.insert(t, c.clone());
            targets.insert(i, t);
        }
        if entries.is_empty() {
            out.extend(split_orphans(f.clone()));
            continue;
        }
        let mut instrs = f.instrs.clone();
        for (i, t) in targets {
            instrs[i].target = Some(t);
        }
        let mut cuts: Vec<(u64, String, bool)> = vec![(f.start, f.name.clone(), f.kernel)];
        cuts.extend(entries.into_iter().map(|(t, n)| (t, n, false)));
        for (k, (start, name, kernel)) in cuts.iter().enumerate() {
            let end = cuts.get(k + 1).map_or(f.end(), |c| c.0);
            let (a, b) = (
                ((start - f.start) / 16) as usize,
                ((end - f.start) / 16) as usize,
            );
            out.extend(split_orphans(Function {
                name: name.clone(),
                section: f.section,
                start: *start,
                instrs: instrs[a..b].to_vec(),
                kernel: *kernel,
                regs: f.regs,
                marked: f
                    .marked
                    .iter()
                    .copied()
                    .filter(|&o| o >= *start && o < end)
                    .collect(),
            }));
        }
    }
    Ok(out)
}

/// Instruction indices of `f` reachable from index `from` (fall-through, branch and jump
/// tables, internal call-jumps; calls return).
fn reach(f: &Function, from: usize) -> Vec<bool> {
    let n = f.instrs.len();
    let mut seen = vec![false; n];
    let mut stack = vec![from];
    while let Some(i) = stack.pop() {
        if i >= n || seen[i] {
            continue;
        }
        seen[i] = true;
        let ins = &f.instrs[i];
        if !no_fall_through(ins) {
            stack.push(i + 1);
        }
        let jumps = matches!(ins.base(), "BRA" | "BRX" | "JMP" | "JMX")
            || (ins.is_call()
                && ins.callee.is_none()
                && !ins.has_mod("ABS")
                && !ins
                    .operands
                    .iter()
                    .any(|o| matches!(o.kind, OperandKind::Reg(_))));
        if jumps {
            for t in ins.target.iter().chain(&ins.targets) {
                if let Some(j) = f.index_of(*t) {
                    stack.push(j);
                }
            }
        }
    }
    seen
}

/// Code after the last instruction reachable from a function's entry that is not padding:
/// local sub-functions only called through pointers (`CALL.REL Rx`), which nvdisasm lists
/// inside the kernel's code too. Each becomes a function `<name>@<k>` (the range reachable
/// from its first instruction), so that it is checked as a sub-function.
fn split_orphans(f: Function) -> Vec<Function> {
    let n = f.instrs.len();
    if n == 0 {
        return vec![f];
    }
    let seen = reach(&f, 0);
    let last = seen.iter().rposition(|&s| s).unwrap_or(0);
    let mut cuts = vec![0usize];
    let mut i = last + 1;
    while i < n {
        if is_nop(&f.instrs[i]) {
            i += 1;
            continue;
        }
        let r = reach(&f, i);
        let end = r.iter().rposition(|&s| s).unwrap_or(i).max(i);
        cuts.push(i);
        i = end + 1;
    }
    if cuts.len() == 1 {
        return vec![f];
    }
    let mut out = Vec::with_capacity(cuts.len());
    for (k, &a) in cuts.iter().enumerate() {
        let b = cuts.get(k + 1).copied().unwrap_or(n);
        out.push(Function {
            name: if k == 0 {
                f.name.clone()
            } else {
                format!("{}@{k}", f.name)
            },
            section: f.section,
            start: f.start + 16 * a as u64,
            instrs: f.instrs[a..b].to_vec(),
            kernel: k == 0 && f.kernel,
            regs: f.regs,
            marked: {
                let (lo, hi) = (f.start + 16 * a as u64, f.start + 16 * b as u64);
                f.marked
                    .iter()
                    .copied()
                    .filter(|&o| o >= lo && o < hi)
                    .collect()
            },
        });
    }
    out
}

// ---------------------------------------------------------------------------------------
// Location sets over the register files.

const NP: usize = 7;
const NUR: usize = 63;

/// A set of register-file locations (R, P, UR, UP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct RegLocs([u64; 6]);

impl RegLocs {
    fn index(l: Loc) -> Option<usize> {
        match l {
            Loc::R(r) if r < RZ => Some(r as usize),
            Loc::P(p) if (p as usize) < NP => Some(255 + p as usize),
            Loc::Ur(u) if (u as usize) < NUR => Some(262 + u as usize),
            Loc::Up(p) if (p as usize) < NP => Some(325 + p as usize),
            _ => None,
        }
    }
    fn loc(i: usize) -> Loc {
        match i {
            0..255 => Loc::R(i as u8),
            255..262 => Loc::P((i - 255) as u8),
            262..325 => Loc::Ur((i - 262) as u8),
            _ => Loc::Up((i - 325) as u8),
        }
    }
    fn insert(&mut self, l: Loc) {
        if let Some(i) = Self::index(l) {
            self.0[i / 64] |= 1 << (i % 64);
        }
    }
    fn union_with(&mut self, o: &RegLocs) -> bool {
        let before = *self;
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a |= b;
        }
        *self != before
    }
    fn iter(&self) -> impl Iterator<Item = Loc> + '_ {
        (0..332)
            .filter(|&i| self.0[i / 64] & (1 << (i % 64)) != 0)
            .map(Self::loc)
    }
    /// `R0..R(count-1)` and every predicate, uniform register and uniform predicate.
    fn below(count: u32) -> RegLocs {
        let mut s = RegLocs::default();
        for r in 0..count.min(255) {
            s.insert(Loc::R(r as u8));
        }
        for p in 0..NP as u8 {
            s.insert(Loc::P(p));
            s.insert(Loc::Up(p));
        }
        for u in 0..NUR as u8 {
            s.insert(Loc::Ur(u));
        }
        s
    }
}

/// Shared words a function may write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SharedWrites {
    all: bool,
    words: BTreeSet<i64>,
}

impl SharedWrites {
    fn union_with(&mut self, o: &SharedWrites) {
        self.all |= o.all;
        self.words.extend(&o.words);
    }
}

// ---------------------------------------------------------------------------------------
// Operand locations.

fn regs_of(kind: &OperandKind, width: u8) -> Vec<Loc> {
    let w = width.max(1);
    match *kind {
        OperandKind::Reg(r) if r != RZ => (0..w)
            .filter_map(|k| r.checked_add(k).filter(|&x| x < RZ))
            .map(Loc::R)
            .collect(),
        OperandKind::UReg(u) if u != 63 => (0..w)
            .filter_map(|k| u.checked_add(k).filter(|&x| x < 63))
            .map(Loc::Ur)
            .collect(),
        OperandKind::Pred { index, .. } if index < 7 => vec![Loc::P(index)],
        OperandKind::UPred { index, .. } if index < 7 => vec![Loc::Up(index)],
        OperandKind::SpecialReg(ref s) if s == "PR" => (0..NP as u8).map(Loc::P).collect(),
        OperandKind::SpecialReg(ref s) if s == "UPR" => (0..NP as u8).map(Loc::Up).collect(),
        _ => Vec::new(),
    }
}

/// Registers an address or constant-bank operand reads.
fn addr_regs(kind: &OperandKind) -> Vec<Loc> {
    let mut out = Vec::new();
    match *kind {
        OperandKind::Addr {
            reg,
            reg_width,
            ureg,
            ureg_width,
            desc,
            ..
        } => {
            if let Some(r) = reg {
                out.extend(regs_of(&OperandKind::Reg(r), reg_width));
            }
            if let Some(u) = ureg {
                out.extend(regs_of(&OperandKind::UReg(u), ureg_width));
            }
            if let Some(d) = desc {
                out.extend(regs_of(&OperandKind::UReg(d), 2));
            }
        }
        OperandKind::Const { reg, ureg, .. } => {
            if let Some(r) = reg {
                out.extend(regs_of(&OperandKind::Reg(r), 1));
            }
            if let Some(u) = ureg {
                out.extend(regs_of(&OperandKind::UReg(u), 1));
            }
        }
        _ => {}
    }
    out
}

/// Locations an operand reads (its registers when read, address registers always).
fn op_reads(op: &Operand, unknown: bool) -> Vec<Loc> {
    let mut out = addr_regs(&op.kind);
    if op.role.reads() || unknown {
        out.extend(regs_of(&op.kind, if unknown { 4 } else { op.width }));
    }
    out
}

fn op_writes(op: &Operand, unknown: bool) -> Vec<Loc> {
    if op.role.writes() || unknown {
        regs_of(&op.kind, if unknown { 4 } else { op.width })
    } else {
        Vec::new()
    }
}

fn guard_loc(ins: &Instr) -> Option<Loc> {
    let p = ins.predicate?;
    if p.index >= 7 {
        return None;
    }
    Some(if p.uniform {
        Loc::Up(p.index)
    } else {
        Loc::P(p.index)
    })
}

/// Locations an instruction reads and writes by its operands and guard (calls not
/// included).
fn reads_writes(ins: &Instr) -> (Vec<Loc>, Vec<Loc>) {
    let mut r: Vec<Loc> = guard_loc(ins).into_iter().collect();
    let mut w = Vec::new();
    for op in &ins.operands {
        r.extend(op_reads(op, ins.unknown));
        w.extend(op_writes(op, ins.unknown));
    }
    (r, w)
}

/// Operand text with register numbers and `.reuse` removed (`-|R3|.H1` → `-|R#|.H1`).
fn shape(text: &str) -> String {
    let t = text.replace(".reuse", "");
    let b = t.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let prev_alnum = i > 0 && b[i - 1].is_ascii_alphanumeric();
        let mut skipped = false;
        if !prev_alnum {
            for p in [&b"UR"[..], b"UP", b"R", b"P"] {
                if b[i..].starts_with(p) {
                    let mut j = i + p.len();
                    while j < b.len() && b[j].is_ascii_digit() {
                        j += 1;
                    }
                    if j > i + p.len() {
                        out.extend_from_slice(p);
                        out.push(b'#');
                        i = j;
                        skipped = true;
                        break;
                    }
                }
            }
        }
        if !skipped {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ---------------------------------------------------------------------------------------
// Instruction classes.

/// Control transfer or synchronisation: never inserted.
fn transfers_control(ins: &Instr) -> bool {
    matches!(
        ins.base(),
        "BRA"
            | "BRX"
            | "JMP"
            | "JMX"
            | "CALL"
            | "RET"
            | "EXIT"
            | "KILL"
            | "BSSY"
            | "BSYNC"
            | "BREAK"
            | "WARPSYNC"
            | "BAR"
            | "BPT"
            | "BMOV"
            | "LEPC"
    )
}

fn is_nop(ins: &Instr) -> bool {
    ins.base() == "NOP"
}

/// Ends control flow unconditionally.
fn no_fall_through(ins: &Instr) -> bool {
    matches!(
        ins.base(),
        "BRA" | "BRX" | "JMP" | "JMX" | "EXIT" | "RET" | "KILL"
    ) && ins.always()
}

fn sub_word(ins: &Instr) -> bool {
    ins.modifiers()
        .any(|m| matches!(m, "U8" | "S8" | "U16" | "S16"))
}

/// `[R1+imm]` with nothing else.
fn r1_imm(op: &Operand) -> Option<i64> {
    match op.kind {
        OperandKind::Addr {
            reg: Some(1),
            reg_width: 1,
            ureg: None,
            ureg_width: _,
            desc: None,
            imm,
        } if !op.text.contains(".X") => Some(imm),
        _ => None,
    }
}

fn addr_of(ins: &Instr) -> Option<&Operand> {
    ins.operands
        .iter()
        .find(|o| matches!(o.kind, OperandKind::Addr { .. }))
}

fn data_of(ins: &Instr) -> Option<&Operand> {
    let want_store = ins.base().starts_with("ST");
    if want_store {
        ins.operands
            .iter()
            .rev()
            .find(|o| matches!(o.kind, OperandKind::Reg(_)))
    } else {
        ins.operands
            .first()
            .filter(|o| matches!(o.kind, OperandKind::Reg(_)))
    }
}

/// An original spill move: `STL/LDL [R1+imm]`, 32/64/128-bit, data register not RZ (but a
/// 32-bit store of RZ).
struct Move {
    store: bool,
    imm: i64,
    reg: u8,
    width: u8,
}

fn as_move(ins: &Instr) -> Option<Move> {
    let store = match ins.base() {
        "STL" => true,
        "LDL" => false,
        _ => return None,
    };
    if ins.unknown || sub_word(ins) {
        return None;
    }
    let imm = r1_imm(addr_of(ins)?)?;
    let data = data_of(ins)?;
    let OperandKind::Reg(reg) = data.kind else {
        return None;
    };
    let width = data.width.max(1);
    // `STL [R1+x], RZ`: ptxas spills a zero. RZ holds its own (constant) symbol in both
    // programs, so the word gets it like any register's value.
    let zero = reg == RZ && store && width == 1;
    if (reg == RZ && !zero) || imm % 4 != 0 || ins.operands.len() != 2 {
        return None;
    }
    if !matches!(width, 1 | 2 | 4) || (!zero && u32::from(reg) + u32::from(width) > 255) {
        return None;
    }
    Some(Move {
        store,
        imm,
        reg,
        width,
    })
}

/// Local words `[R1+imm]` of `bytes` bytes covers.
fn words(imm: i64, bytes: i64) -> Vec<i64> {
    let first = imm.div_euclid(4).wrapping_mul(4);
    let last = imm
        .saturating_add(bytes.clamp(1, 16) - 1)
        .div_euclid(4)
        .wrapping_mul(4);
    let n = (last.wrapping_sub(first) / 4).clamp(0, 4);
    (0..=n).map(|k| first.wrapping_add(4 * k)).collect()
}

fn access_bytes(ins: &Instr) -> i64 {
    let m: Vec<&str> = ins.modifiers().collect();
    if m.contains(&"U8") || m.contains(&"S8") {
        1
    } else if m.contains(&"U16") || m.contains(&"S16") {
        2
    } else if m.contains(&"128") {
        16
    } else if m.contains(&"64") {
        8
    } else {
        4
    }
}

/// May write local memory through something other than `[R1+imm]`.
fn may_store_local(ins: &Instr) -> bool {
    if ins.unknown {
        return true;
    }
    match ins.base() {
        "STL" => addr_of(ins).and_then(r1_imm).is_none(),
        "ST" | "ATOM" | "RED" | "SUST" | "SURED" | "SUATOM" => true,
        _ => false,
    }
}

/// Does the frame address escape: `R1` read other than as `[R1+imm]` of a local access,
/// by an `R1` update, or by a call.
fn escapes(f: &Function) -> bool {
    f.instrs.iter().any(|ins| {
        if ins.is_call() || ins.base() == "RET" {
            return false;
        }
        if ins.unknown {
            return ins.operands.iter().any(|o| {
                matches!(o.kind, OperandKind::Reg(1))
                    || matches!(o.kind, OperandKind::Addr { reg: Some(1), .. })
            });
        }
        let (r, w) = reads_writes(ins);
        if !r.contains(&Loc::R(1)) || w.contains(&Loc::R(1)) {
            return false;
        }
        // R1 only as the address of LDL/STL [R1+imm].
        let local = matches!(ins.base(), "LDL" | "STL");
        ins.operands.iter().any(|o| match o.kind {
            OperandKind::Addr { reg: Some(1), .. } => !(local && r1_imm(o).is_some()),
            _ => regs_of(&o.kind, o.width).contains(&Loc::R(1)) && o.role.reads(),
        }) || guard_loc(ins) == Some(Loc::R(1))
    })
}

/// `IADD3 R1, R1, imm, RZ` / `IADD R1, R1, imm` / `VIADD R1, R1, imm`: the delta.
fn sp_adjust(ins: &Instr) -> Option<i64> {
    if !matches!(ins.opcode.as_str(), "IADD3" | "IADD" | "VIADD") || !ins.always() {
        return None;
    }
    let ops = &ins.operands;
    if !matches!(ops.first()?.kind, OperandKind::Reg(1)) {
        return None;
    }
    let mut r1 = 0;
    let mut imm = None;
    for o in &ops[1..] {
        match &o.kind {
            OperandKind::Reg(1) if o.text == "R1" || o.text == "R1.reuse" => r1 += 1,
            OperandKind::Reg(RZ) => {}
            OperandKind::Pred { index: 7, negated } if !negated => {}
            OperandKind::Imm(t) => imm = Some(parse_imm32(t)?),
            _ => return None,
        }
    }
    (r1 == 1).then_some(imm?)
}

/// `R1` loaded from the constant bank (`MOV`/`IMAD.MOV.U32`/`LDC R1, c[0x0][...]`): the
/// kernel's stack pointer initialisation.
fn stack_init(ins: &Instr) -> bool {
    let (reads, writes) = reads_writes(ins);
    ins.always()
        && writes == [Loc::R(1)]
        && reads.is_empty()
        && matches!(ins.base(), "MOV" | "IMAD" | "LDC")
        && ins
            .operands
            .iter()
            .any(|o| matches!(o.kind, OperandKind::Const { .. }))
}

/// Whether `ins` may write memory of any kind.
fn stores(ins: &Instr) -> bool {
    let b = ins.base();
    b.starts_with("ST") || b.starts_with("ATOM") || b.starts_with("RED") || may_store_local(ins)
}

fn parse_imm32(t: &str) -> Option<i64> {
    let (neg, s) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let v = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => s.parse().ok()?,
    };
    let v = if !neg && v > i32::MAX as u64 && v <= u32::MAX as u64 {
        v as u32 as i32 as i64
    } else {
        v as i64
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

fn parse_hex(t: &str) -> Option<u64> {
    u64::from_str_radix(t.strip_prefix("0x")?, 16).ok()
}

/// How a `CALL` is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CallKind {
    /// A function of the section.
    Direct(usize),
    /// `CALL.REL.NOINC` to a label inside the function: a jump.
    Jump(u64),
    /// `CALL.REL Rx`: any sub-function of the section.
    Indirect,
    /// `CALL.ABS`, an external callee: unknown code.
    Unknown,
}

fn call_kind(ins: &Instr, f: &Function, names: &HashMap<&str, usize>) -> CallKind {
    if ins.has_mod("ABS") {
        return CallKind::Unknown;
    }
    if let Some(c) = &ins.callee {
        return match names.get(c.as_str()) {
            Some(&k) => CallKind::Direct(k),
            None => CallKind::Unknown,
        };
    }
    if ins
        .operands
        .iter()
        .any(|o| matches!(o.kind, OperandKind::Reg(_)))
    {
        return CallKind::Indirect;
    }
    match ins.target {
        Some(t) if f.index_of(t).is_some() => CallKind::Jump(t),
        _ => CallKind::Unknown,
    }
}

// ---------------------------------------------------------------------------------------
// Per-instruction steps.

#[derive(Debug, Clone)]
enum Op {
    /// `loc` must hold `sym` (what: the operand, for the message).
    Need {
        loc: Loc,
        sym: Sym,
        what: String,
    },
    /// Every tracked local word must hold its own original value.
    NeedFrame,
    /// Copy the sets of the sources into the destinations (sources read first).
    Copy {
        pairs: Vec<(Loc, Loc)>,
        guarded: bool,
    },
    /// A spill-area copy that depends on `base` holding `SBase` (inserted `LDS`/`STS`).
    BaseCopy {
        base: Loc,
        pairs: Vec<(Loc, Loc)>,
        guarded: bool,
        store: bool,
    },
    /// An inserted `LDL`/`STL [R1+imm]`: a copy while `R1` holds `Orig(R1)`.
    FrameCopy {
        pairs: Vec<(Loc, Loc)>,
        guarded: bool,
        store: bool,
    },
    /// Empty `clear`; then each `(W, rewritten W)`: `Orig(W)` leaves every location and
    /// joins the rewritten one (when `keep_if_held`, only if it held `Orig(W)` before).
    Write {
        clear: Vec<Loc>,
        defs: Vec<(Loc, Option<Loc>)>,
        keep_if_held: bool,
    },
    ClearShared,
    SetBase(Loc),
    /// The original move's symbol effect.
    Rename {
        pairs: Vec<(Loc, Loc)>,
        guarded: bool,
    },
    ClobberFrame,
    ResetFrame,
    /// The kernel's frame is new: [`State::fresh_frame`] with the claim's passed words.
    FreshFrame(Vec<(i64, i64)>),
    ShiftFrame(i64),
    /// Propagate the state to the block at this instruction index (internal call-jump).
    JumpTo(usize),
}

#[derive(Debug, Clone, Default)]
struct Step {
    ops: Vec<Op>,
    /// Under a guard: the effects happen on one path and not on the other; the result is
    /// the meet of both.
    guarded: bool,
    /// The guard (predicate and sense) of a guarded step, and whether the instruction writes
    /// that predicate: consecutive steps under one unchanged guard run or skip together, so
    /// their effects are met once, after the last (a wide spill split in two, for one).
    guard: Option<(Loc, bool)>,
    writes_guard: bool,
    is_move: bool,
    shared_move: bool,
    is_call: bool,
}

/// A rewritten instruction's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Image(usize),
    Inserted,
    Padding,
}

/// Summaries of one function.
#[derive(Debug, Clone, Default)]
struct Summary {
    orig_writes: RegLocs,
    rew_writes: RegLocs,
    rew_shared: SharedWrites,
    live_in: RegLocs,
    /// General registers the original writes on every path to each of its returns (an
    /// unguarded call of it kills them in the caller's liveness).
    must_writes: BTreeSet<u8>,
    /// Local words the original reads before writing them (through its callees too), as
    /// offsets from its `R1` on entry; `None` when they cannot be named (it moves `R1` or
    /// indexes the frame): then every tracked frame word must hold its own value at a call.
    /// ptxas' sub-functions share the kernel's frame, so a callee can read what its caller
    /// stored (a spilled return address): the caller must still hold it there.
    live_in_local: Option<BTreeSet<i64>>,
    /// Words of its caller's frame the function may write (`STL [R1+imm]` of a function that
    /// shares its caller's frame, as ptxas' sub-functions do, through its callees too), in
    /// the original and in the rewrite; `None` when they cannot be named (a store through
    /// `R1` with an index). A function that moves `R1` writes none (the ABI: its frame is
    /// below its caller's `R1`).
    orig_local_writes: Option<BTreeSet<i64>>,
    rew_local_writes: Option<BTreeSet<i64>>,
}

struct Section<'a> {
    orig: &'a [Function],
    rew: &'a [Function],
    claim: &'a Claim,
    inserted: BTreeSet<u64>,
    names: HashMap<&'a str, usize>,
    /// Per function: origin of each rewritten instruction.
    origins: Vec<Vec<Origin>>,
    /// Per function: rewritten index of each original instruction's image.
    images: Vec<Vec<Option<usize>>>,
    summaries: Vec<Summary>,
    escapes: Vec<bool>,
    count: Vec<u32>,
    /// The section has indirect calls (set by `summarize`).
    has_indirect: bool,
}

fn func_at(fs: &[Function], off: u64) -> Option<(usize, &Function, usize)> {
    fs.iter()
        .enumerate()
        .find_map(|(k, f)| f.index_of(off).map(|i| (k, f, i)))
}

impl<'a> Section<'a> {
    /// Where original location `l` is at a function boundary of the rewrite.
    fn at_boundary(&self, l: Loc) -> Loc {
        match l {
            Loc::R(r) => Loc::R(self.claim.renamed.get(&r).copied().unwrap_or(r)),
            other => other,
        }
    }

    fn new(
        orig: &'a [Function],
        rew: &'a [Function],
        claim: &'a Claim,
    ) -> Result<Section<'a>, Rejection> {
        let first = orig.first().map_or("", |f| f.name.as_str());
        if orig.len() != rew.len() {
            return reject(
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
                    &a.name,
                    0,
                    format!("rewritten function is `{}`, not `{}`", b.name, a.name),
                );
            }
        }
        let mut names = HashMap::new();
        for (k, f) in orig.iter().enumerate() {
            if names.insert(f.name.as_str(), k).is_some() {
                return reject(&f.name, 0, "function listed twice");
            }
        }
        let mut inserted = BTreeSet::new();
        for &o in &claim.inserted {
            if !inserted.insert(o) {
                return reject(first, o, "offset listed twice as inserted");
            }
            if func_at(rew, o).is_none() {
                return reject(
                    first,
                    o,
                    "inserted offset is not an instruction of any rewritten function",
                );
            }
        }
        if let Some(b) = &claim.base {
            let Some((_, f, _)) = func_at(rew, b.defined_at) else {
                return reject(
                    first,
                    b.defined_at,
                    "base.defined_at is not an instruction of the section",
                );
            };
            if !inserted.contains(&b.defined_at) {
                return reject(
                    &f.name,
                    b.defined_at,
                    "base.defined_at is not an inserted instruction",
                );
            }
            if b.reg == 1 || b.reg == RZ {
                return reject(
                    &f.name,
                    b.defined_at,
                    format!("R{} cannot be the base", b.reg),
                );
            }
            if b.stride == 0 || b.stride % 4 != 0 || b.slots == 0 {
                return reject(
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
                    &owner.name,
                    0,
                    "a spill area in a section not owned by a kernel",
                );
            }
        }
        // Images.
        let mut origins: Vec<Vec<Origin>> = Vec::with_capacity(rew.len());
        let mut images: Vec<Vec<Option<usize>>> = Vec::with_capacity(orig.len());
        let mut taken: HashMap<u64, (usize, u64)> = HashMap::new();
        for (fk, (a, b)) in orig.iter().zip(rew).enumerate() {
            let mut img = vec![None; a.instrs.len()];
            for (k, ins) in a.instrs.iter().enumerate() {
                let Some(m) = claim.map.map(ins.offset) else {
                    return reject(
                        &a.name,
                        0,
                        format!(
                            "the map gives no image of the original at {:#x}",
                            ins.offset
                        ),
                    );
                };
                let Some(i) = b.index_of(m) else {
                    if is_nop(ins) {
                        continue;
                    }
                    return reject(
                        &a.name,
                        m,
                        format!(
                            "image of the original at {:#x} is outside the rewritten function",
                            ins.offset
                        ),
                    );
                };
                if inserted.contains(&m) {
                    return reject(
                        &a.name,
                        m,
                        format!(
                            "offset is both inserted and the image of the original at {:#x}",
                            ins.offset
                        ),
                    );
                }
                if let Some((_, other)) = taken.insert(m, (fk, ins.offset)) {
                    return reject(
                        &a.name,
                        m,
                        format!(
                            "the originals at {other:#x} and {:#x} map to one offset",
                            ins.offset
                        ),
                    );
                }
                img[k] = Some(i);
            }
            // Only trailing padding may lose its image (re-padding at the section's end).
            if let Some(k) = img.iter().position(Option::is_none)
                && let Some(j) = img[k..].iter().position(Option::is_some)
            {
                return reject(
                    &a.name,
                    a.instrs[k].offset,
                    format!(
                        "the NOP at {:#x} has no image but the original at {:#x} after it has",
                        a.instrs[k].offset,
                        a.instrs[k + j].offset
                    ),
                );
            }
            let mut org = vec![Origin::Padding; b.instrs.len()];
            for (k, i) in img.iter().enumerate() {
                if let Some(i) = *i {
                    org[i] = Origin::Image(k);
                }
            }
            for (i, ins) in b.instrs.iter().enumerate() {
                if org[i] == Origin::Padding {
                    if inserted.contains(&ins.offset) {
                        org[i] = Origin::Inserted;
                    } else if !is_nop(ins) {
                        return reject(
                            &b.name,
                            ins.offset,
                            format!(
                                "`{}` is neither the image of an original nor inserted",
                                ins.opcode
                            ),
                        );
                    }
                }
            }
            origins.push(org);
            images.push(img);
        }
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
            count: orig.iter().map(|f| f.regs.unwrap_or(255)).collect(),
            has_indirect: false,
        };
        for fk in 0..orig.len() {
            s.correspondence(fk)?;
        }
        s.summarize()?;
        Ok(s)
    }

    fn map(&self, off: u64) -> Option<u64> {
        self.claim.map.map(off)
    }

    /// A `BRA`/`JMP` whose rewritten target is inserted code that runs straight into the
    /// image of the original target (code inserted to run on every path into a branch
    /// target): the inserted instructions are straight-line moves, analysed on the rewritten
    /// CFG like any other path, so entering them first changes nothing the values check does
    /// not see. Other kinds of targets (`BSSY` reconvergence points, calls) must be images.
    fn enters_before_image(&self, fk: usize, ins: &Instr, target: Option<u64>) -> bool {
        if !matches!(ins.base(), "BRA" | "JMP") {
            return false;
        }
        let (Some(t), Some(ot)) = (target, ins.target) else {
            return false;
        };
        let (Some(i), Some(k)) = (self.rew[fk].index_of(t), self.orig[fk].index_of(ot)) else {
            return false;
        };
        if !matches!(self.origins[fk][i], Origin::Inserted) {
            return false;
        }
        // Straight-line inserted instructions (no control transfer) up to the image.
        let mut j = i;
        while let Some(Origin::Inserted) = self.origins[fk].get(j) {
            if self.rew[fk].instrs[j].is_branch() || self.rew[fk].instrs[j].is_exit() {
                return false;
            }
            j += 1;
        }
        matches!(self.origins[fk].get(j), Some(Origin::Image(kk)) if *kk == k)
    }

    /// The next rewritten index at or after `i` that is not inserted or padding.
    fn next_image(&self, fk: usize, mut i: usize) -> Option<(usize, usize)> {
        let org = &self.origins[fk];
        while i < org.len() {
            if let Origin::Image(k) = org[i] {
                return Some((i, k));
            }
            i += 1;
        }
        None
    }

    /// Structural correspondence of one function (see the module doc, item 1).
    fn correspondence(&self, fk: usize) -> Result<(), Rejection> {
        let (a, b) = (&self.orig[fk], &self.rew[fk]);
        let name = &a.name;
        if a.instrs.is_empty() {
            return Ok(());
        }
        match self.next_image(fk, 0) {
            Some((_, 0)) => {}
            Some((i, k)) => {
                return reject(
                    name,
                    b.instrs[i].offset,
                    format!(
                        "the function now starts at the image of the original at {:#x}",
                        a.instrs[k].offset
                    ),
                );
            }
            None => return reject(name, b.start, "no image of the original entry"),
        }
        for (k, ins) in a.instrs.iter().enumerate() {
            let Some(i) = self.images[fk][k] else {
                continue;
            };
            let r = &b.instrs[i];
            // Fall-through.
            if !no_fall_through(ins) && k + 1 < a.instrs.len() && self.images[fk][k + 1].is_some() {
                match self.next_image(fk, i + 1) {
                    Some((_, kk)) if kk == k + 1 => {}
                    Some((j, kk)) => {
                        return reject(
                            name,
                            b.instrs[j].offset,
                            format!(
                                "after the image of {:#x} comes the image of {:#x}, not of {:#x}",
                                ins.offset,
                                a.instrs[kk].offset,
                                a.instrs[k + 1].offset
                            ),
                        );
                    }
                    None => {
                        return reject(
                            name,
                            r.offset,
                            format!("the image of {:#x} falls off the function", ins.offset),
                        );
                    }
                }
            }
            // Targets.
            let base = ins.base();
            let direct = matches!(base, "BRA" | "BSSY" | "JMP")
                || (base == "CALL"
                    && matches!(
                        call_kind(ins, a, &self.names),
                        CallKind::Jump(_) | CallKind::Unknown
                    )
                    && ins.callee.is_none());
            if direct && ins.target != r.target {
                let want = ins.target.and_then(|t| self.map(t));
                if ins.target.is_none()
                    || (r.target != want && !self.enters_before_image(fk, ins, r.target))
                {
                    return reject(
                        name,
                        r.offset,
                        format!(
                            "`{}` goes to {} but the original's target {} maps to {}",
                            r.opcode,
                            hexo(r.target),
                            hexo(ins.target),
                            hexo(want)
                        ),
                    );
                }
            }
            if matches!(base, "BRA" | "JMP") && ins.target.is_none_or(|t| a.index_of(t).is_none()) {
                return reject(
                    name,
                    r.offset,
                    format!("`{}` has no target inside the function", ins.opcode),
                );
            }
            if matches!(base, "BRX" | "JMX") {
                if ins.targets.is_empty() {
                    return reject(name, r.offset, "jump table with no known targets");
                }
                let want: Vec<Option<u64>> = ins.targets.iter().map(|&t| self.map(t)).collect();
                let got: Vec<Option<u64>> = r.targets.iter().map(|&t| Some(t)).collect();
                if want != got {
                    return reject(
                        name,
                        r.offset,
                        "jump-table targets are not the images of the original targets",
                    );
                }
                if ins.targets.iter().any(|&t| a.index_of(t).is_none()) {
                    return reject(name, r.offset, "jump-table target outside the function");
                }
            }
            if ins.callee != r.callee {
                return reject(
                    name,
                    r.offset,
                    format!(
                        "calls `{}` instead of `{}`",
                        r.callee.as_deref().unwrap_or("?"),
                        ins.callee.as_deref().unwrap_or("?")
                    ),
                );
            }
        }
        // Inserted instructions.
        for (i, r) in b.instrs.iter().enumerate() {
            if self.origins[fk][i] != Origin::Inserted {
                continue;
            }
            let base = r.base();
            if r.unknown {
                return reject(
                    name,
                    r.offset,
                    format!("inserted `{}` is not in the operand tables", r.opcode),
                );
            }
            if transfers_control(r) {
                return reject(
                    name,
                    r.offset,
                    format!("inserted `{}` transfers control or synchronises", r.opcode),
                );
            }
            let store_ok = match base {
                "STS" => self.base_slot(r).is_some(),
                "STL" => self.inserted_local_ok(fk, r),
                _ => true,
            };
            let stores = base.starts_with("ST")
                || base.starts_with("ATOM")
                || base.starts_with("RED")
                || matches!(base, "LDGSTS" | "SUST" | "SURED" | "SUATOM");
            if stores && !(store_ok && matches!(base, "STS" | "STL")) {
                return reject(
                    name,
                    r.offset,
                    format!(
                        "inserted `{} {}` stores to memory that is not a spill slot",
                        r.opcode,
                        operands_text(r)
                    ),
                );
            }
        }
        Ok(())
    }

    /// `[base.reg + imm]`, 32-bit, `imm` a slot: the slot's offset.
    fn base_slot(&self, r: &Instr) -> Option<i64> {
        let b = self.claim.base.as_ref()?;
        let a = addr_of(r)?;
        let OperandKind::Addr {
            reg: Some(reg),
            reg_width: 1,
            ureg: None,
            ureg_width: _,
            desc: None,
            imm,
        } = a.kind
        else {
            return None;
        };
        let stride = i64::from(b.stride);
        let ok = reg == b.reg
            && !a.text.contains(".X")
            && access_bytes(r) == 4
            && !sub_word(r)
            && imm >= i64::from(b.area)
            && (imm - i64::from(b.area)) % stride == 0
            && imm - i64::from(b.area) < stride * i64::from(b.slots)
            && r.operands.len() == 2;
        ok.then_some(imm)
    }

    /// Why a `[base.reg + ...]` access is not a slot access, for messages.
    fn slot_problem(&self, r: &Instr) -> String {
        let Some(b) = self.claim.base.as_ref() else {
            return "no spill area is claimed".into();
        };
        let Some(a) = addr_of(r) else {
            return "no address".into();
        };
        match a.kind {
            OperandKind::Addr { reg, imm, .. } if reg == Some(b.reg) => {
                if access_bytes(r) != 4 {
                    format!(
                        "a {}-byte access to the per-thread spill words",
                        access_bytes(r)
                    )
                } else {
                    format!(
                        "offset {imm:#x} is not a slot (stride {:#x}, {} slots)",
                        b.stride, b.slots
                    )
                }
            }
            _ => format!("address `{}` is not based on R{}", a.text, b.reg),
        }
    }

    /// An inserted `STL [R1+imm]` may only write words the original function uses itself,
    /// in a function whose frame address does not escape.
    fn inserted_local_ok(&self, fk: usize, r: &Instr) -> bool {
        let Some(imm) = addr_of(r).and_then(r1_imm) else {
            return false;
        };
        !self.escapes[fk] && !sub_word(r) && self.frame_words_ok(fk, imm, access_bytes(r))
    }

    /// Every word of `[R1+imm]`, `bytes` wide, is one the original function itself
    /// accesses through `[R1+imm]`.
    fn frame_words_ok(&self, fk: usize, imm: i64, bytes: i64) -> bool {
        let used: BTreeSet<i64> = self.orig[fk]
            .instrs
            .iter()
            .filter(|i| matches!(i.base(), "LDL" | "STL"))
            .filter_map(|i| {
                let imm = addr_of(i).and_then(r1_imm)?;
                Some(words(imm, access_bytes(i)))
            })
            .flatten()
            .collect();
        words(imm, bytes).iter().all(|w| used.contains(w))
    }

    // -----------------------------------------------------------------------------------
    // Summaries.

    fn summarize(&mut self) -> Result<(), Rejection> {
        let n = self.orig.len();
        // Callees first; recursion rejected.
        let mut order = Vec::new();
        let mut mark = vec![0u8; n];
        for k in 0..n {
            self.visit(k, &mut mark, &mut order)?;
        }
        let subs: Vec<usize> = (0..n).filter(|&k| self.orig[k].start > 0).collect();
        let has_indirect = self.orig.iter().enumerate().any(|(k, f)| {
            f.instrs.iter().any(|i| {
                i.is_call() && call_kind(i, &self.orig[k], &self.names) == CallKind::Indirect
            })
        });
        self.has_indirect = has_indirect;
        if !self.claim.renamed.is_empty() {
            if has_indirect {
                return reject(
                    &self.orig[0].name,
                    0,
                    "registers renumbered across functions in a section with indirect calls",
                );
            }
            // A function called from outside the section sees its callers' numbering.
            if let Some(f) = self.orig.iter().find(|f| f.start == 0 && !f.kernel) {
                return reject(
                    &f.name,
                    0,
                    "registers renumbered in a function that is not a kernel",
                );
            }
        }
        for &k in &order {
            let s = self.summary_of(k, has_indirect.then_some(&subs[..]));
            self.summaries[k] = s;
        }
        // An indirect call may enter any sub-function: each must write no register its
        // original does not (so the caller's other registers survive).
        if has_indirect {
            for &k in &subs {
                let s = &self.summaries[k];
                let mut extra = s.rew_writes;
                for l in s.orig_writes.iter() {
                    if let Some(i) = RegLocs::index(l) {
                        extra.0[i / 64] &= !(1 << (i % 64));
                    }
                }
                if let Some(l) = extra.iter().next() {
                    return reject(
                        &self.orig[k].name,
                        0,
                        format!(
                            "may be called indirectly, and its rewrite writes {l}, which the original does not"
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    fn visit(&self, k: usize, mark: &mut [u8], order: &mut Vec<usize>) -> Result<(), Rejection> {
        match mark[k] {
            2 => return Ok(()),
            1 => {
                return reject(
                    &self.orig[k].name,
                    0,
                    "recursion (the function reaches a call to itself) is not supported",
                );
            }
            _ => {}
        }
        mark[k] = 1;
        for f in [&self.orig[k], &self.rew[k]] {
            for ins in &f.instrs {
                if ins.is_call()
                    && let CallKind::Direct(c) = call_kind(ins, f, &self.names)
                {
                    if mark[c] == 1 {
                        return reject(
                            &f.name,
                            ins.offset,
                            format!("recursive call of `{}` is not supported", self.orig[c].name),
                        );
                    }
                    self.visit(c, mark, order)?;
                }
            }
        }
        mark[k] = 2;
        order.push(k);
        Ok(())
    }

    /// Summaries of function `k` (its callees' are done). `subs`: the sub-functions an
    /// indirect call may enter, when the section has indirect calls.
    fn summary_of(&self, k: usize, subs: Option<&[usize]>) -> Summary {
        let unknown_writes = RegLocs::below(self.count[k]);
        let mut s = Summary::default();
        // Writes.
        for (f, rew) in [(&self.orig[k], false), (&self.rew[k], true)] {
            let mut w = RegLocs::default();
            let mut sh = SharedWrites::default();
            for ins in &f.instrs {
                let (_, ws) = reads_writes(ins);
                for l in ws {
                    w.insert(l);
                }
                if rew
                    && ins.base() == "STS"
                    && let Some(imm) = self.sts_word(ins)
                {
                    sh.words.insert(imm);
                }
                if ins.is_call() {
                    match call_kind(ins, f, &self.names) {
                        CallKind::Direct(c) => {
                            let cs = &self.summaries[c];
                            w.union_with(if rew { &cs.rew_writes } else { &cs.orig_writes });
                            sh.union_with(&cs.rew_shared);
                        }
                        CallKind::Jump(_) => {}
                        CallKind::Indirect | CallKind::Unknown => {
                            w.union_with(&unknown_writes);
                            if rew {
                                // Registers above the count may be written by a rewritten
                                // sub-function entered indirectly.
                                for &g in subs.unwrap_or(&[]) {
                                    if g != k {
                                        w.union_with(&self.summaries[g].rew_writes);
                                    }
                                }
                            }
                            sh.all = true;
                        }
                    }
                }
            }
            if rew {
                s.rew_writes = w;
                s.rew_shared = sh;
            } else {
                s.orig_writes = w;
            }
        }
        s.must_writes = self.must_writes(k);
        s.live_in = self.live_in(k, &s.orig_writes, subs);
        s.orig_local_writes = self.local_writes(k, false);
        s.rew_local_writes = self.local_writes(k, true);
        let returned: BTreeSet<i64> = self
            .returned_words(&s)
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        s.live_in_local = self.live_in_local(k, Some(&returned));
        s
    }

    /// Frame words live into original function `k` (backward over its CFG: `LDL [R1+imm]`
    /// reads its words, an unguarded whole-word `STL [R1+imm]` writes them, a direct call
    /// reads its callee's). `None` if `k` writes `R1`, accesses the frame through `R1` with
    /// an index, or calls a function whose words are unknown.
    fn live_in_local(&self, k: usize, ret_reads: Option<&BTreeSet<i64>>) -> Option<BTreeSet<i64>> {
        let f = &self.orig[k];
        if f.instrs.is_empty() {
            return Some(BTreeSet::new());
        }
        type UseDef = (BTreeSet<i64>, BTreeSet<i64>, Option<usize>);
        let mut ud: Vec<UseDef> = Vec::with_capacity(f.instrs.len());
        for ins in &f.instrs {
            let (_, ws) = reads_writes(ins);
            if ws.contains(&Loc::R(1)) {
                return None;
            }
            let mut uses = BTreeSet::new();
            let mut defs = BTreeSet::new();
            let mut jump = None;
            if matches!(ins.base(), "LDL" | "STL") {
                let a = addr_of(ins)?;
                if let OperandKind::Addr { reg: Some(1), .. } = a.kind {
                    let imm = r1_imm(a)?;
                    let ws = words(imm, access_bytes(ins));
                    if ins.base() == "LDL" {
                        uses.extend(ws);
                    } else if ins.always() && !sub_word(ins) {
                        defs.extend(ws);
                    }
                }
            }
            if ins.is_call() {
                match call_kind(ins, f, &self.names) {
                    CallKind::Direct(c) => uses.extend(self.summaries[c].live_in_local.clone()?),
                    CallKind::Jump(t) => jump = f.index_of(t),
                    CallKind::Indirect | CallKind::Unknown => {}
                }
            }
            // A return hands back the caller's words the function may write: on a path
            // that does not write one, it must still hold what it held at entry.
            if ins.base() == "RET" {
                uses.extend(ret_reads.into_iter().flatten().copied());
            }
            ud.push((uses, defs, jump));
        }
        let cfg = Cfg::build(f);
        let mut live_in: Vec<BTreeSet<i64>> = vec![BTreeSet::new(); f.instrs.len()];
        let blocks: Vec<_> = cfg.blocks().collect();
        loop {
            let mut changed = false;
            for &(id, b) in blocks.iter().rev() {
                let mut live = BTreeSet::new();
                for s in cfg.successors(id) {
                    live.extend(live_in[cfg.graph[s].first].iter().copied());
                }
                for i in (b.first..b.end).rev() {
                    let (u, d, j) = &ud[i];
                    if let Some(j) = j {
                        live.extend(live_in[*j].iter().copied());
                    }
                    for w in d {
                        live.remove(w);
                    }
                    live.extend(u.iter().copied());
                    if live != live_in[i] {
                        live_in[i] = live.clone();
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        Some(live_in.swap_remove(0))
    }

    /// [`Summary::orig_local_writes`] / `rew_local_writes` of function `k` (callees'
    /// summaries done). Whether it keeps its own frame is the original's structure (the ABI
    /// assumption): a rewrite that writes `R1` where the original does not gets no pass for
    /// the frame words it stores.
    fn local_writes(&self, k: usize, rew: bool) -> Option<BTreeSet<i64>> {
        if self.orig[k]
            .instrs
            .iter()
            .any(|i| !i.is_call() && reads_writes(i).1.contains(&Loc::R(1)))
        {
            return Some(BTreeSet::new());
        }
        let f = if rew { &self.rew[k] } else { &self.orig[k] };
        let mut out = BTreeSet::new();
        for ins in &f.instrs {
            if ins.base() == "STL" {
                let a = addr_of(ins)?;
                if let OperandKind::Addr { reg: Some(1), .. } = a.kind {
                    out.extend(words(r1_imm(a)?, access_bytes(ins)));
                }
            }
            if ins.is_call() {
                match call_kind(ins, f, &self.names) {
                    CallKind::Direct(c) => {
                        let s = &self.summaries[c];
                        out.extend(
                            if rew {
                                &s.rew_local_writes
                            } else {
                                &s.orig_local_writes
                            }
                            .clone()?,
                        );
                    }
                    CallKind::Indirect => return None,
                    CallKind::Jump(_) | CallKind::Unknown => {}
                }
            }
        }
        Some(out)
    }

    /// Where the rewrite keeps the caller's frame word `w` at a function boundary: its spill
    /// word when the claim passes it there, else the word itself.
    fn passed_loc(&self, w: i64) -> Loc {
        self.claim
            .passed
            .iter()
            .find(|p| p.0 == w)
            .map_or(Loc::Local(w), |p| Loc::Shared(p.1))
    }

    /// The caller's frame words a function hands back, with where: those it may write that
    /// the claim passes in a spill word, or that the rewrite still writes in the frame. (A
    /// word the rewrite moved elsewhere is the function's own: its new value is claimed
    /// nowhere after a call.)
    fn returned_words(&self, s: &Summary) -> Vec<(i64, Loc)> {
        let (Some(o), Some(r)) = (&s.orig_local_writes, &s.rew_local_writes) else {
            return Vec::new();
        };
        o.iter()
            .filter_map(|&w| {
                let at = self.passed_loc(w);
                (at != Loc::Local(w) || r.contains(&w)).then_some((w, at))
            })
            .collect()
    }

    /// The word an `STS [reg+imm]` writes when `reg` is the claimed base (any offset; for
    /// summaries).
    fn sts_word(&self, ins: &Instr) -> Option<i64> {
        let b = self.claim.base.as_ref()?;
        match addr_of(ins)?.kind {
            OperandKind::Addr {
                reg: Some(r), imm, ..
            } if r == b.reg => Some(imm),
            _ => None,
        }
    }

    /// General registers original function `k` writes on every path to its returns
    /// (through its direct callees' too); none without a return.
    fn must_writes(&self, k: usize) -> BTreeSet<u8> {
        let f = &self.orig[k];
        let cfg = Cfg::build(f);
        let call_defs: BTreeMap<usize, BTreeSet<u8>> = f
            .instrs
            .iter()
            .enumerate()
            .filter_map(|(i, ins)| match call_kind(ins, f, &self.names) {
                CallKind::Direct(c) if ins.is_call() => {
                    Some((i, self.summaries[c].must_writes.clone()))
                }
                _ => None,
            })
            .collect();
        let defined = crate::analysis::must_defined(f, &cfg, &call_defs);
        let mut out: Option<BTreeSet<u8>> = None;
        for (i, ins) in f.instrs.iter().enumerate() {
            if ins.base() == "RET" {
                out = Some(match out {
                    None => defined[i].clone(),
                    Some(o) => o.intersection(&defined[i]).copied().collect(),
                });
            }
        }
        out.unwrap_or_default()
    }

    /// Registers live into original function `k` (backward, over its CFG; a `RET` reads
    /// `orig_writes`; calls read their callee's live-in, unknown calls everything below the
    /// count; guarded writes kill nothing, an unguarded direct call what its callee writes
    /// on every path).
    fn live_in(&self, k: usize, orig_writes: &RegLocs, subs: Option<&[usize]>) -> RegLocs {
        let f = &self.orig[k];
        if f.instrs.is_empty() {
            return RegLocs::default();
        }
        let cfg = Cfg::build(f);
        let n = f.instrs.len();
        let ud: Vec<(RegLocs, RegLocs, Option<usize>)> = f
            .instrs
            .iter()
            .map(|ins| {
                let (r, w) = reads_writes(ins);
                let mut uses = RegLocs::default();
                for l in r {
                    uses.insert(l);
                }
                let mut defs = RegLocs::default();
                let mut jump = None;
                if ins.is_call() {
                    match call_kind(ins, f, &self.names) {
                        CallKind::Direct(c) => {
                            uses.union_with(&self.summaries[c].live_in);
                            if ins.always() {
                                for &r in &self.summaries[c].must_writes {
                                    defs.insert(Loc::R(r));
                                }
                            }
                        }
                        CallKind::Jump(t) => jump = f.index_of(t),
                        CallKind::Indirect => {
                            uses.union_with(&RegLocs::below(self.count[k]));
                            for &g in subs.unwrap_or(&[]) {
                                if g != k {
                                    uses.union_with(&self.summaries[g].live_in);
                                }
                            }
                        }
                        CallKind::Unknown => {
                            uses.union_with(&RegLocs::below(self.count[k]));
                        }
                    }
                } else {
                    if ins.base() == "RET" {
                        uses.union_with(orig_writes);
                    }
                    if ins.always() {
                        for l in w {
                            defs.insert(l);
                        }
                    }
                }
                (uses, defs, jump)
            })
            .collect();
        let mut live_in = vec![RegLocs::default(); n];
        let blocks: Vec<_> = cfg.blocks().collect();
        loop {
            let mut changed = false;
            for &(id, b) in blocks.iter().rev() {
                let mut live = RegLocs::default();
                for s in cfg.successors(id) {
                    let first = cfg.graph[s].first;
                    live.union_with(&live_in[first]);
                }
                for i in (b.first..b.end).rev() {
                    let (u, d, j) = &ud[i];
                    if let Some(j) = j {
                        let t = live_in[*j];
                        live.union_with(&t);
                    }
                    for l in d.iter() {
                        if let Some(x) = RegLocs::index(l) {
                            live.0[x / 64] &= !(1 << (x % 64));
                        }
                    }
                    live.union_with(u);
                    if live != live_in[i] {
                        live_in[i] = live;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        live_in[0]
    }

    // -----------------------------------------------------------------------------------
    // Steps.

    fn steps(&self, fk: usize, proof: &mut Proof) -> Result<Vec<Step>, Rejection> {
        let b = &self.rew[fk];
        let mut out = Vec::with_capacity(b.instrs.len());
        for (i, r) in b.instrs.iter().enumerate() {
            let mut step = match self.origins[fk][i] {
                Origin::Padding => Step::default(),
                Origin::Inserted => self.inserted_step(fk, r),
                Origin::Image(k) => self.image_step(fk, k, r)?,
            };
            if step.guarded {
                step.guard = guard_loc(r).zip(r.predicate.map(|p| p.negated));
            }
            // A call may write any predicate: it ends a run too.
            step.writes_guard = step
                .guard
                .is_some_and(|(g, _)| r.is_call() || reads_writes(r).1.contains(&g));
            out.push(step);
        }
        if let Some(end) = self.frame_setup_end(fk) {
            out[end].ops.push(Op::FreshFrame(self.fresh_passed()));
        }
        let _ = proof;
        Ok(out)
    }

    /// In a kernel, the rewritten index after which its frame is new: the last stack-pointer
    /// write of the leading run of its entry block (which nothing branches to) that stores
    /// nothing, calls nothing and transfers no control, provided that run loads the stack
    /// pointer from the constant bank (as an image of the original's load).
    fn frame_setup_end(&self, fk: usize) -> Option<usize> {
        let (o, r) = (&self.orig[fk], &self.rew[fk]);
        if !(o.kernel && o.start == 0) || r.instrs.is_empty() {
            return None;
        }
        let cfg = Cfg::build(r);
        if cfg
            .graph
            .neighbors_directed(cfg.entry, petgraph::Direction::Incoming)
            .next()
            .is_some()
        {
            return None;
        }
        let mut init = false;
        let mut end = None;
        for (i, ins) in r.instrs.iter().enumerate() {
            if cfg.block_of[i] != cfg.entry
                || ins.unknown
                || ins.is_call()
                || transfers_control(ins)
                || stores(ins)
            {
                break;
            }
            let (reads, writes) = reads_writes(ins);
            if !writes.contains(&Loc::R(1)) {
                if reads.contains(&Loc::R(1)) {
                    break;
                }
                continue;
            }
            let image = matches!(self.origins[fk][i], Origin::Image(_));
            if image && stack_init(ins) {
                init = true;
            } else if !(init && image && sp_adjust(ins).is_some()) {
                break;
            }
            end = Some(i);
        }
        end.filter(|_| init)
    }

    /// The claim's passed words, each with a spill word of its own (a word shared by two
    /// could not start out equal to both).
    fn fresh_passed(&self) -> Vec<(i64, i64)> {
        let p = &self.claim.passed;
        p.iter()
            .filter(|(k, imm)| p.iter().all(|(k2, i2)| i2 != imm || k2 == k))
            .copied()
            .collect()
    }

    fn inserted_step(&self, fk: usize, r: &Instr) -> Step {
        let guarded = false;
        let mut ops = Vec::new();
        let base = self.claim.base.as_ref();
        let (_, writes) = reads_writes(r);
        let regs: Vec<u8> = r
            .operands
            .iter()
            .filter_map(|o| match o.kind {
                OperandKind::Reg(x) => Some(x),
                _ => None,
            })
            .collect();
        let copy = match (r.opcode.as_str(), regs.as_slice(), r.operands.len()) {
            ("MOV", [d, s], 2) if *d != RZ && *s != RZ => Some((*d, *s)),
            ("IMAD.MOV.U32", [d, RZ, RZ, s], 4) if *d != RZ && *s != RZ => Some((*d, *s)),
            _ => None,
        };
        if let Some((d, s)) = copy {
            ops.push(Op::Copy {
                pairs: vec![(Loc::R(d), Loc::R(s))],
                guarded,
            });
        } else if matches!(r.base(), "LDS" | "STS")
            && let Some(slot) = self.base_slot(r)
            && let Some(OperandKind::Reg(d)) = data_of(r).map(|o| &o.kind)
            && *d != RZ
        {
            let store = r.base() == "STS";
            let (dst, src) = if store {
                (Loc::Shared(slot), Loc::R(*d))
            } else {
                (Loc::R(*d), Loc::Shared(slot))
            };
            ops.push(Op::BaseCopy {
                base: Loc::R(base.map_or(0, |b| b.reg)),
                pairs: vec![(dst, src)],
                guarded,
                store,
            });
        } else if r.base() == "STS" {
            // Structurally checked: an STS that is not a slot access was rejected; an
            // STS of RZ to a slot empties it.
            if let Some(slot) = self.base_slot(r) {
                ops.push(Op::BaseCopy {
                    base: Loc::R(base.map_or(0, |b| b.reg)),
                    pairs: vec![],
                    guarded,
                    store: true,
                });
                ops.push(Op::Write {
                    clear: vec![Loc::Shared(slot)],
                    defs: vec![],
                    keep_if_held: false,
                });
            }
        } else if matches!(r.base(), "LDL" | "STL")
            && let Some(imm) = addr_of(r).and_then(r1_imm)
            && let Some(OperandKind::Reg(d)) = data_of(r).map(|o| &o.kind)
            && *d != RZ
            && !sub_word(r)
        {
            let store = r.base() == "STL";
            let n = (access_bytes(r) / 4).max(1);
            let pairs = (0..n)
                .map(|w| {
                    let reg = Loc::R(d.saturating_add(w as u8));
                    let word = Loc::Local(imm.wrapping_add(4 * w));
                    if store { (word, reg) } else { (reg, word) }
                })
                .collect();
            ops.push(Op::FrameCopy {
                pairs,
                guarded,
                store,
            });
        } else {
            let mut clear = writes;
            if r.base() == "STL"
                && let Some(imm) = addr_of(r).and_then(r1_imm)
            {
                clear.extend(words(imm, access_bytes(r)).into_iter().map(Loc::Local));
            }
            ops.push(Op::Write {
                clear,
                defs: vec![],
                keep_if_held: false,
            });
        }
        if let Some(b) = base
            && b.defined_at == r.offset
        {
            let (_, ws) = reads_writes(r);
            ops.push(Op::Write {
                clear: ws,
                defs: vec![],
                keep_if_held: false,
            });
            ops.push(Op::SetBase(Loc::R(b.reg)));
        }
        let _ = fk;
        Step {
            ops,
            guarded: !r.always(),
            ..Step::default()
        }
    }

    fn image_step(&self, fk: usize, k: usize, r: &Instr) -> Result<Step, Rejection> {
        let a = &self.orig[fk].instrs[k];
        let name = &self.rew[fk].name;
        if let Some(m) = as_move(a) {
            return self.move_step(fk, name, a, &m, r);
        }
        let mut ops = Vec::new();
        let mut step = Step::default();
        // Same instruction up to register numbers.
        if a.unknown {
            if a.raw != r.raw {
                return reject(
                    name,
                    r.offset,
                    format!(
                        "`{}` is not in the operand tables, so its image must be bit-identical",
                        a.opcode
                    ),
                );
            }
            if a.operands.is_empty() && !is_nop(a) {
                return reject(
                    name,
                    r.offset,
                    format!("`{}`: operands not parsed, effects unknown", a.opcode),
                );
            }
        }
        if a.opcode != r.opcode {
            return reject(
                name,
                r.offset,
                format!(
                    "the original `{}` at {:#x} became `{}`",
                    a.opcode, a.offset, r.opcode
                ),
            );
        }
        let ga = a.predicate.filter(|p| !p.is_true());
        let gr = r.predicate.filter(|p| !p.is_true());
        match (ga, gr) {
            (None, None) => {}
            (Some(p), Some(q))
                if p.negated == q.negated
                    && p.uniform == q.uniform
                    && (p.index >= 7) == (q.index >= 7) => {}
            _ => {
                return reject(
                    name,
                    r.offset,
                    format!("guard of the original at {:#x} changed", a.offset),
                );
            }
        }
        if let (Some(la), Some(lr)) = (guard_loc(a), guard_loc(r)) {
            ops.push(Op::Need {
                loc: lr,
                sym: Sym::Orig(la),
                what: "the guard".into(),
            });
        }
        if a.operands.len() != r.operands.len() {
            return reject(
                name,
                r.offset,
                format!(
                    "`{}` has {} operands, the original {}",
                    r.opcode,
                    r.operands.len(),
                    a.operands.len()
                ),
            );
        }
        let control = matches!(
            a.base(),
            "BRA" | "BRX" | "JMP" | "JMX" | "CALL" | "RET" | "BSSY" | "LEPC"
        );
        let mut wpairs: Vec<(Loc, Option<Loc>)> = Vec::new();
        let mut rew_writes: Vec<Loc> = Vec::new();
        for (n, (oa, or)) in a.operands.iter().zip(&r.operands).enumerate() {
            if std::mem::discriminant(&oa.kind) != std::mem::discriminant(&or.kind)
                || oa.role != or.role
                || oa.width != or.width
            {
                return reject(
                    name,
                    r.offset,
                    format!(
                        "operand {} is `{}`, the original's `{}`",
                        n + 1,
                        or.text,
                        oa.text
                    ),
                );
            }
            let same_shape = shape(&oa.text) == shape(&or.text);
            let imm_ok = match (&oa.kind, &or.kind) {
                (OperandKind::Imm(x), OperandKind::Imm(y)) if x != y => {
                    control || self.return_address(fk, x, y)
                }
                (OperandKind::Label(x), OperandKind::Label(y)) if x != y => control,
                _ => same_shape,
            };
            if !imm_ok
                || (!same_shape && !matches!(oa.kind, OperandKind::Imm(_) | OperandKind::Label(_)))
            {
                return reject(
                    name,
                    r.offset,
                    format!(
                        "operand {} is `{}`, the original's `{}`",
                        n + 1,
                        or.text,
                        oa.text
                    ),
                );
            }
            // RZ/PT stay themselves.
            let ra = op_reads(oa, a.unknown);
            let rr = op_reads(or, a.unknown);
            let wa = op_writes(oa, a.unknown);
            let wr = op_writes(or, a.unknown);
            if ra.len() != rr.len() || wa.len() != wr.len() {
                return reject(
                    name,
                    r.offset,
                    format!(
                        "operand {} is `{}`, the original's `{}`",
                        n + 1,
                        or.text,
                        oa.text
                    ),
                );
            }
            for (la, lr) in ra.iter().zip(&rr) {
                ops.push(Op::Need {
                    loc: *lr,
                    sym: Sym::Orig(*la),
                    what: format!("operand {} (`{}`)", n + 1, oa.text),
                });
            }
            for (la, lr) in wa.iter().zip(&wr) {
                wpairs.push((*la, Some(*lr)));
                rew_writes.push(*lr);
            }
        }
        step.guarded = ga.is_some();
        let guarded = false;
        // Local words through [R1+imm] that are not spill moves (sub-word, odd offsets).
        let mut frame_ops = Vec::new();
        if matches!(a.base(), "LDL" | "STL")
            && let Some(oa) = addr_of(a)
        {
            match r1_imm(oa) {
                Some(imm) => {
                    for w in words(imm, access_bytes(a)) {
                        if a.base() == "LDL" {
                            ops.push(Op::Need {
                                loc: Loc::Local(w),
                                sym: Sym::Orig(Loc::Local(w)),
                                what: "the local word it loads".into(),
                            });
                        } else {
                            wpairs.push((Loc::Local(w), Some(Loc::Local(w))));
                            rew_writes.push(Loc::Local(w));
                        }
                    }
                }
                None => {
                    if matches!(oa.kind, OperandKind::Addr { reg: Some(1), .. }) {
                        if a.base() == "LDL" {
                            ops.push(Op::NeedFrame);
                        } else {
                            frame_ops.push(Op::ClobberFrame);
                        }
                    }
                }
            }
        }
        if may_store_local(a)
            && self.escapes[fk]
            && !frame_ops.iter().any(|o| matches!(o, Op::ClobberFrame))
        {
            frame_ops.push(Op::ClobberFrame);
        }
        // A store of whole words (same data, checked) makes them equal in both programs; a
        // sub-word or misaligned one keeps the rest of the word as it was.
        let partial_local = a.base() == "STL"
            && (sub_word(a) || addr_of(a).and_then(r1_imm).is_none_or(|imm| imm % 4 != 0));
        if a.is_call() {
            step.is_call = true;
            self.call_ops(fk, a, r, guarded, &mut ops)?;
        } else {
            ops.push(Op::Write {
                clear: rew_writes,
                defs: wpairs,
                keep_if_held: partial_local,
            });
        }
        ops.extend(frame_ops);
        // R1 updates.
        let (_, wa) = reads_writes(a);
        if !a.is_call() && wa.contains(&Loc::R(1)) {
            match sp_adjust(a) {
                Some(d) => ops.push(Op::ShiftFrame(d)),
                None => ops.push(Op::ResetFrame),
            }
        }
        // RET: what the original writes must be right.
        if a.base() == "RET" {
            for l in self.summaries[fk].orig_writes.iter() {
                ops.push(Op::Need {
                    loc: self.at_boundary(l),
                    sym: Sym::Orig(l),
                    what: "a location the function writes, at its return".into(),
                });
            }
            if self.orig[fk].start > 0 {
                for (w, at) in self.returned_words(&self.summaries[fk]) {
                    ops.push(Op::Need {
                        loc: at,
                        sym: Sym::Orig(Loc::Local(w)),
                        what: "a word of its caller's frame the function writes, at its return"
                            .into(),
                    });
                }
            }
            if self.orig[fk].start == 0 {
                for l in self.summaries[fk].rew_writes.iter() {
                    ops.push(Op::Need {
                        loc: l,
                        sym: Sym::Orig(l),
                        what:
                            "a location the rewrite writes, at the return of an exported function"
                                .into(),
                    });
                }
            }
        }
        step.ops = ops;
        Ok(step)
    }

    /// An immediate that differs: allowed if it is a return address or `LEPC` offset of
    /// the section, mapped. The address may lie in another function: ptxas materialises
    /// the return address of a function with one call site inside the callee itself.
    fn return_address(&self, fk: usize, x: &str, y: &str) -> bool {
        let (Some(x), Some(y)) = (parse_hex(x), parse_hex(y)) else {
            return false;
        };
        let Some((f, i)) = std::iter::once(&self.orig[fk])
            .chain(self.orig.iter())
            .find_map(|f| Some((f, f.index_of(x)?)))
        else {
            return false;
        };
        if f.instrs[i].base() == "LEPC" {
            return self.map(x) == Some(y);
        }
        // A return lands right after the call's image (on inserted code, if any).
        i > 0
            && f.instrs[i - 1].is_call()
            && self.map(x - 16).and_then(|m| m.checked_add(16)) == Some(y)
    }

    fn call_ops(
        &self,
        fk: usize,
        a: &Instr,
        r: &Instr,
        guarded: bool,
        ops: &mut Vec<Op>,
    ) -> Result<(), Rejection> {
        let f = &self.orig[fk];
        let kind = call_kind(a, f, &self.names);
        let need_base = |ops: &mut Vec<Op>| {
            if let Some(b) = &self.claim.base {
                ops.push(Op::Need {
                    loc: Loc::R(b.reg),
                    sym: Sym::SBase,
                    what: "the base register, at a call".into(),
                });
            }
        };
        let need_all = |ops: &mut Vec<Op>, set: &RegLocs, what: &str| {
            for l in set.iter() {
                ops.push(Op::Need {
                    loc: self.at_boundary(l),
                    sym: Sym::Orig(l),
                    what: what.to_string(),
                });
            }
        };
        match kind {
            CallKind::Jump(t) => {
                let rt = r.target.and_then(|t| self.rew[fk].index_of(t));
                let Some(j) = rt else {
                    return reject(&f.name, r.offset, format!("call to {t:#x} has no image"));
                };
                ops.push(Op::JumpTo(j));
            }
            CallKind::Direct(c) => {
                need_base(ops);
                let s = &self.summaries[c];
                need_all(
                    ops,
                    &s.live_in,
                    &format!("live into `{}`, at the call", self.orig[c].name),
                );
                match &s.live_in_local {
                    Some(ws) => {
                        for &w in ws {
                            let passed = self.claim.passed.iter().find(|p| p.0 == w);
                            ops.push(Op::Need {
                                loc: passed.map_or(Loc::Local(w), |p| Loc::Shared(p.1)),
                                sym: Sym::Orig(Loc::Local(w)),
                                what: format!(
                                    "the frame word `{}` reads, at the call",
                                    self.orig[c].name
                                ),
                            });
                        }
                    }
                    None => ops.push(Op::NeedFrame),
                }
                let mut clear: Vec<Loc> = s.rew_writes.iter().collect();
                clear.extend(s.rew_shared.words.iter().map(|&w| Loc::Shared(w)));
                if s.rew_shared.all {
                    ops.push(Op::ClearShared);
                }
                let mut defs: Vec<(Loc, Option<Loc>)> = s
                    .orig_writes
                    .iter()
                    .map(|l| (l, Some(self.at_boundary(l))))
                    .collect();
                // The caller's frame words the callee writes: returned where the rewrite
                // keeps them (the callee's return checked it).
                match (&s.orig_local_writes, &s.rew_local_writes) {
                    (Some(o), Some(r)) => {
                        clear.extend(r.iter().map(|&w| Loc::Local(w)));
                        let returned: BTreeMap<i64, Loc> =
                            self.returned_words(s).into_iter().collect();
                        defs.extend(
                            o.iter()
                                .map(|&w| (Loc::Local(w), returned.get(&w).copied())),
                        );
                    }
                    _ => ops.push(Op::ResetFrame),
                }
                ops.push(Op::Write {
                    clear,
                    defs,
                    keep_if_held: guarded,
                });
                if self.escapes[fk] {
                    ops.push(Op::ClobberFrame);
                }
            }
            CallKind::Indirect | CallKind::Unknown => {
                let mut writes = RegLocs::below(self.count[fk]);
                let mut rew = writes;
                if kind == CallKind::Indirect {
                    need_base(ops);
                    for (g, s) in self.summaries.iter().enumerate() {
                        if self.orig[g].start > 0 {
                            need_all(
                                ops,
                                &s.live_in,
                                &format!("live into `{}`, at an indirect call", self.orig[g].name),
                            );
                            writes.union_with(&s.orig_writes);
                            rew.union_with(&s.rew_writes);
                        }
                    }
                }
                // Code outside the section sees the rewrite's own numbers.
                for l in RegLocs::below(self.count[fk]).iter() {
                    ops.push(Op::Need {
                        loc: l,
                        sym: Sym::Orig(l),
                        what: "a register an unknown callee may read".into(),
                    });
                }
                ops.push(Op::ClearShared);
                ops.push(Op::Write {
                    clear: rew.iter().collect(),
                    defs: writes.iter().map(|l| (l, Some(l))).collect(),
                    keep_if_held: guarded,
                });
                if self.escapes[fk] {
                    ops.push(Op::ClobberFrame);
                }
            }
        }
        Ok(())
    }

    fn move_step(
        &self,
        fk: usize,
        name: &str,
        a: &Instr,
        m: &Move,
        r: &Instr,
    ) -> Result<Step, Rejection> {
        let mut ops = Vec::new();
        let mut step = Step {
            is_move: true,
            ..Step::default()
        };
        let want = if m.store {
            ["STL", "STS"]
        } else {
            ["LDL", "LDS"]
        };
        let rb = r.base();
        if !want.contains(&rb) {
            return reject(
                name,
                r.offset,
                format!(
                    "the spill move `{} {}` at {:#x} became `{} {}`",
                    a.opcode,
                    operands_text(a),
                    a.offset,
                    r.opcode,
                    operands_text(r)
                ),
            );
        }
        let ga = a.predicate.filter(|p| !p.is_true());
        let gr = r.predicate.filter(|p| !p.is_true());
        match (ga, gr) {
            (None, None) => {}
            (Some(p), Some(q))
                if p.negated == q.negated
                    && p.uniform == q.uniform
                    && (p.index >= 7) == (q.index >= 7) => {}
            _ => {
                return reject(
                    name,
                    r.offset,
                    format!("guard of the spill move at {:#x} changed", a.offset),
                );
            }
        }
        if let (Some(la), Some(lr)) = (guard_loc(a), guard_loc(r)) {
            ops.push(Op::Need {
                loc: lr,
                sym: Sym::Orig(la),
                what: "the guard".into(),
            });
        }
        step.guarded = ga.is_some();
        let guarded = false;
        let Some(OperandKind::Reg(rd)) = data_of(r).map(|o| &o.kind) else {
            return reject(
                name,
                r.offset,
                "the spill move's image has no data register",
            );
        };
        let rd = *rd;
        let rw = (access_bytes(r) / 4).max(1);
        let zero = rd == RZ && m.reg == RZ && rw == 1;
        if (rd == RZ && !zero) || sub_word(r) || rw > i64::from(m.width) || r.operands.len() != 2 {
            return reject(
                name,
                r.offset,
                format!(
                    "the spill move's image `{} {}` does not move the original's words",
                    r.opcode,
                    operands_text(r)
                ),
            );
        }
        let (shared, addr_words): (bool, Vec<Loc>) = if rb.ends_with('S') {
            let Some(slot) = self.base_slot(r) else {
                return reject(
                    name,
                    r.offset,
                    format!(
                        "`{} {}`: {}",
                        r.opcode,
                        operands_text(r),
                        self.slot_problem(r)
                    ),
                );
            };
            let b = self.claim.base.as_ref().map_or(0, |b| b.reg);
            ops.push(Op::Need {
                loc: Loc::R(b),
                sym: Sym::SBase,
                what: "the spill area's base register".into(),
            });
            (true, vec![Loc::Shared(slot)])
        } else {
            let Some(imm) = addr_of(r).and_then(r1_imm) else {
                return reject(
                    name,
                    r.offset,
                    format!(
                        "the spill move's image `{} {}` is not an [R1+imm] access",
                        r.opcode,
                        operands_text(r)
                    ),
                );
            };
            // Another frame word: only one the original function uses itself (never
            // outside the frame).
            if imm != m.imm && (self.escapes[fk] || !self.frame_words_ok(fk, imm, access_bytes(r)))
            {
                return reject(
                    name,
                    r.offset,
                    format!(
                        "the spill move's image `{} {}` moves to another frame word (one the original never uses, or in a frame whose address escapes)",
                        r.opcode,
                        operands_text(r)
                    ),
                );
            }
            ops.push(Op::Need {
                loc: Loc::R(1),
                sym: Sym::Orig(Loc::R(1)),
                what: "the stack pointer of a local spill access".into(),
            });
            (
                false,
                (0..rw)
                    .map(|w| Loc::Local(imm.wrapping_add(4 * w)))
                    .collect(),
            )
        };
        let pairs: Vec<(Loc, Loc)> = addr_words
            .iter()
            .enumerate()
            .map(|(w, &mem)| {
                let reg = Loc::R(rd.saturating_add(w as u8));
                if m.store { (mem, reg) } else { (reg, mem) }
            })
            .collect();
        if pairs
            .iter()
            .any(|(d, s)| *d == Loc::R(RZ) || (*s == Loc::R(RZ) && (m.reg != RZ || rw != 1)))
        {
            return reject(name, r.offset, "register pair runs past R254");
        }
        ops.push(Op::Copy { pairs, guarded });
        // The original's symbol effect.
        let sym_pairs: Vec<(Loc, Loc)> = (0..m.width)
            .map(|w| {
                let reg = Loc::R(m.reg + w);
                let mem = Loc::Local(m.imm.wrapping_add(4 * i64::from(w)));
                if m.store { (mem, reg) } else { (reg, mem) }
            })
            .collect();
        ops.push(Op::Rename {
            pairs: sym_pairs,
            guarded,
        });
        step.shared_move = shared;
        step.ops = ops;
        Ok(step)
    }

    // -----------------------------------------------------------------------------------
    // The analysis.

    fn run(&self) -> Result<Proof, Rejection> {
        let mut proof = Proof {
            inserted: self.inserted.len(),
            ..Proof::default()
        };
        for fk in 0..self.rew.len() {
            self.run_function(fk, &mut proof)?;
            proof.functions += 1;
        }
        Ok(proof)
    }

    fn entry_state(&self, fk: usize) -> State {
        let mut s = State::entry();
        if !self.claim.renamed.is_empty() {
            // A sub-function's live-in arrives renumbered (each call site checked it); a
            // kernel's registers hold arbitrary values at entry, so any numbering of them
            // is one the original could have started with.
            let touched: BTreeSet<u8> = self
                .claim
                .renamed
                .iter()
                .flat_map(|(&a, &b)| [a, b])
                .collect();
            for &x in &touched {
                s.set(Loc::R(x), Set::new());
            }
            for &x in &touched {
                s.add(self.at_boundary(Loc::R(x)), Sym::Orig(Loc::R(x)));
            }
        }
        if let Some(b) = &self.claim.base
            && self.orig[fk].start > 0
        {
            s.add(Loc::R(b.reg), Sym::SBase);
            // What every direct call of this function checked it receives (indirect calls
            // check nothing of the kind, so a section with them gets nothing here).
            if !self.has_indirect
                && let Some(ws) = &self.summaries[fk].live_in_local
            {
                for &(k, imm) in &self.claim.passed {
                    if ws.contains(&k) {
                        s.add(Loc::Shared(imm), Sym::Orig(Loc::Local(k)));
                    }
                }
            }
        }
        s
    }

    fn run_function(&self, fk: usize, proof: &mut Proof) -> Result<(), Rejection> {
        let f = &self.rew[fk];
        if f.instrs.is_empty() {
            return Ok(());
        }
        let steps = self.steps(fk, proof)?;
        let cfg = Cfg::build(f);
        let nb = cfg.graph.node_count();
        let mut ins: Vec<Option<State>> = vec![None; nb];
        ins[cfg.entry.index()] = Some(self.entry_state(fk));
        let mut work: BTreeSet<usize> = BTreeSet::from([cfg.entry.index()]);
        let mut visits = 0usize;
        while let Some(bi) = work.pop_first() {
            visits += 1;
            let id = NodeIndex::new(bi);
            let Some(mut st) = ins[bi].clone() else {
                continue;
            };
            let block = cfg.graph[id];
            let mut out: Vec<(usize, State)> = Vec::new();
            let mut run = GuardRun::default();
            for step in &steps[block.first..block.end] {
                let jumps = run.apply(step, &mut st, false).unwrap_or_default();
                for j in jumps {
                    out.push((cfg.block_of[j].index(), st.clone()));
                }
            }
            run.end(&mut st);
            for s in cfg.successors(id) {
                out.push((s.index(), st.clone()));
            }
            for (to, s) in out {
                let changed = match &mut ins[to] {
                    slot @ None => {
                        *slot = Some(s);
                        true
                    }
                    Some(cur) => cur.meet(&s),
                };
                if changed {
                    work.insert(to);
                }
            }
        }
        proof.iterations += visits;
        // The checking pass, in address order.
        let mut order: Vec<(usize, NodeIndex)> =
            cfg.blocks().map(|(id, b)| (b.first, id)).collect();
        order.sort();
        for (_, id) in order {
            let Some(mut st) = ins[id.index()].clone() else {
                continue;
            };
            let block = cfg.graph[id];
            let mut run = GuardRun::default();
            for (step, ins) in steps[block.first..block.end]
                .iter()
                .zip(&f.instrs[block.first..block.end])
            {
                if let Err(reason) = run.apply(step, &mut st, true) {
                    return reject(&f.name, ins.offset, reason);
                }
                proof.instructions += 1;
                proof.moves += usize::from(step.is_move);
                proof.shared_moves += usize::from(step.shared_move);
                proof.calls += usize::from(step.is_call);
            }
        }
        Ok(())
    }
}

/// Steps applied in order within a block. A guarded step's effects happen on one path only:
/// the state becomes the meet of both. Consecutive steps under the same guard, whose
/// predicate none of them rewrites, all run or all skip: the state follows the path that
/// runs them (`taken`), and meets the path that skips them (`skipped`) once the run ends.
#[derive(Default)]
struct GuardRun {
    /// The guard of the run in progress, the state where it began, and whether its last
    /// step wrote the predicate (the run ends there).
    open: Option<((Loc, bool), State, bool)>,
}

impl GuardRun {
    /// Apply `step`; the instruction indices it jumps to (with `st` the state on the path
    /// that jumps). With `check`, a failed requirement is an error (the reason).
    fn apply(&mut self, step: &Step, st: &mut State, check: bool) -> Result<Vec<usize>, String> {
        let continues = match (&self.open, step.guard) {
            (Some((g, _, wrote)), Some(h)) => *g == h && !wrote,
            _ => false,
        };
        if !continues {
            self.end(st);
        }
        if !step.guarded {
            return apply_ops(&step.ops, st, check);
        }
        let Some(g) = step.guard else {
            // A guard the state cannot name (not a predicate register): this step alone.
            let mut taken = st.clone();
            let jumps = apply_ops(&step.ops, &mut taken, check)?;
            st.meet(&taken);
            return Ok(jumps);
        };
        match &mut self.open {
            Some((_, _, wrote)) => *wrote = step.writes_guard,
            None => self.open = Some((g, st.clone(), step.writes_guard)),
        }
        apply_ops(&step.ops, st, check)
    }

    /// Close the run in progress: meet with the path that skipped it.
    fn end(&mut self, st: &mut State) {
        if let Some((_, skipped, _)) = self.open.take() {
            st.meet(&skipped);
        }
    }
}

/// The effects of `ops` (needs checked when `check`); the instruction indices jumped to.
fn apply_ops(ops: &[Op], st: &mut State, check: bool) -> Result<Vec<usize>, String> {
    let mut jumps = Vec::new();
    for op in ops {
        match op {
            Op::Need { loc, sym, what } => {
                if check && !st.holds(*loc, *sym) {
                    return Err(format!(
                        "{loc} holds {} but {what} needs {sym}",
                        show(&st.get(*loc))
                    ));
                }
            }
            Op::NeedFrame => {
                if check {
                    if !st.local_default() {
                        return Err(
                            "an indexed local load needs the whole frame, which is unknown".into(),
                        );
                    }
                    for l in st.local_words() {
                        if !st.holds(l, Sym::Orig(l)) {
                            return Err(format!(
                                "an indexed local load may read {l}, which holds {} (needs orig {l})",
                                show(&st.get(l))
                            ));
                        }
                    }
                }
            }
            Op::Copy { pairs, guarded } => copy(st, pairs, *guarded),
            Op::BaseCopy {
                base,
                pairs,
                guarded,
                store,
            } => {
                if st.holds(*base, Sym::SBase) {
                    copy(st, pairs, *guarded);
                } else if *store {
                    if check {
                        return Err(format!(
                            "inserted spill store through {base}, which holds {} (needs the spill base)",
                            show(&st.get(*base))
                        ));
                    }
                    st.clear_shared();
                } else {
                    for (d, _) in pairs {
                        st.set(*d, Set::new());
                    }
                }
            }
            Op::FrameCopy {
                pairs,
                guarded,
                store,
            } => {
                if st.holds(Loc::R(1), Sym::Orig(Loc::R(1))) {
                    copy(st, pairs, *guarded);
                } else if *store {
                    if check {
                        return Err(format!(
                            "inserted local store while R1 holds {} (needs orig R1)",
                            show(&st.get(Loc::R(1)))
                        ));
                    }
                    st.reset_frame();
                } else {
                    for (d, _) in pairs {
                        st.set(*d, Set::new());
                    }
                }
            }
            Op::Write {
                clear,
                defs,
                keep_if_held,
            } => {
                let held: Vec<bool> = defs
                    .iter()
                    .map(|(w, r)| r.is_some_and(|r| st.holds(r, Sym::Orig(*w))))
                    .collect();
                for l in clear {
                    st.set(*l, Set::new());
                }
                for ((w, r), h) in defs.iter().zip(held) {
                    st.remove_everywhere(Sym::Orig(*w));
                    if let Some(r) = r
                        && (!keep_if_held || h)
                    {
                        st.add(*r, Sym::Orig(*w));
                    }
                }
            }
            Op::ClearShared => st.clear_shared(),
            Op::SetBase(l) => {
                st.remove_everywhere(Sym::SBase);
                st.set(*l, Set::from([Sym::SBase]));
            }
            Op::Rename { pairs, guarded } => {
                let holders: Vec<Vec<Loc>> = pairs
                    .iter()
                    .map(|(_, s)| st.holders(Sym::Orig(*s)))
                    .collect();
                for ((d, _), hs) in pairs.iter().zip(holders) {
                    let sym = Sym::Orig(*d);
                    if *guarded {
                        for l in st.holders(sym) {
                            if !hs.contains(&l) {
                                let mut s = st.get(l);
                                s.remove(&sym);
                                st.set(l, s);
                            }
                        }
                    } else {
                        st.remove_everywhere(sym);
                        for l in hs {
                            st.add(l, sym);
                        }
                    }
                }
            }
            Op::ClobberFrame => st.clobber_frame(),
            Op::ResetFrame => st.reset_frame(),
            Op::FreshFrame(passed) => st.fresh_frame(passed),
            Op::ShiftFrame(d) => st.shift_frame(*d),
            Op::JumpTo(j) => jumps.push(*j),
        }
    }
    Ok(jumps)
}

/// Copy the sets of the sources to the destinations (all sources read first); a guarded
/// copy keeps what old and new have in common.
fn copy(st: &mut State, pairs: &[(Loc, Loc)], guarded: bool) {
    let vals: Vec<Set> = pairs.iter().map(|(_, s)| st.get(*s)).collect();
    for ((d, _), v) in pairs.iter().zip(vals) {
        let v = if guarded {
            st.get(*d).intersection(&v).copied().collect()
        } else {
            v
        };
        st.set(*d, v);
    }
}

fn hexo(o: Option<u64>) -> String {
    o.map_or_else(|| "nowhere".to_string(), |t| format!("{t:#x}"))
}

fn operands_text(ins: &Instr) -> String {
    ins.operands
        .iter()
        .map(|o| o.text.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
