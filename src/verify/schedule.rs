//! The scheduling check for inserted shared-memory accesses (docs/DESIGN.md §The translation
//! checker): reads the control bits of the rewritten code as decoded by nvdisasm and proves,
//! for every inserted `LDS` and `STS` named in the claim, that no hazard remains. Independent
//! of the transform: it sees only the decoded instructions and the offsets of the inserted
//! accesses.
//!
//! * `LDS Rd`: carries a write scoreboard `w`; walking forward in straight-line code, `w` is
//!   waited for (by the reader itself or earlier) before any instruction reads or writes
//!   `Rd`, and before control leaves the block (a control or synchronisation instruction, a
//!   branch target).
//! * `STS Rv`: its data is ready: the closest earlier writer of `Rv` in the block either set a
//!   write scoreboard that is waited for by the `STS` or an instruction between, or is a
//!   fixed-latency instruction whose stall counts up to the `STS` cover its latency (the data
//!   table [`crate::arch::latency::fixed_latency`]). It carries a read scoreboard `r`, and
//!   `r` is waited for before any later instruction writes `Rv` and before control leaves the
//!   block.
//! * Both: the address register is written by nothing after the first inserted access (it
//!   holds the per-thread base for the whole kernel), and no access uses a scoreboard that a
//!   `DEPBAR` of the function counts on.

use std::collections::BTreeSet;

use crate::arch::OpClass;
use crate::arch::latency::fixed_latency;
use crate::sass::Op;
use crate::sass::ir::{Function, Instr, OperandKind, RZ};

pub use super::schedule_error::{Hazard, ScheduleError};

/// What was proved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScheduleProof {
    pub loads: usize,
    pub stores: usize,
    /// Other inserted instructions (prologue arithmetic, moves).
    pub(crate) other: usize,
    /// Inserted halves of a split wide spill access, under the original's own schedule.
    pub(crate) inherited: usize,
}

fn leaves_block(i: &Instr) -> bool {
    matches!(i.class(), OpClass::Control | OpClass::Sync) || i.is_call()
}

fn reads(i: &Instr, r: u8) -> bool {
    i.gpr_reads().contains(&r)
}

fn writes(i: &Instr, r: u8) -> bool {
    i.gpr_writes().contains(&r)
}

fn waits(i: &Instr, sb: u8) -> bool {
    i.ctrl.wait_mask & (1 << sb) != 0
}

/// `(data register, address register)` of a 32-bit `LDS Rd, [Ra+imm]` / `STS [Ra+imm], Rv`.
fn access(i: &Instr) -> Option<(u8, u8)> {
    let mods: Vec<&str> = i.modifiers().collect();
    if !matches!(
        (i.op(), mods.as_slice()),
        (Op::Lds, [] | ["U"]) | (Op::Sts, [])
    ) {
        return None;
    }
    let addr = i.operands.iter().find_map(|o| match o.kind {
        OperandKind::Addr {
            reg: Some(r),
            ureg: None,
            desc: None,
            ..
        } => Some(r),
        _ => None,
    })?;
    let data = i.operands.iter().find_map(|o| match o.kind {
        OperandKind::Reg(r) if r != RZ => Some(r),
        _ => None,
    })?;
    Some((data, addr))
}

/// Check every access at `offsets` (rewritten section offsets) in `functions` (the rewritten
/// functions of the section) for architecture `sm`.
pub fn check(
    sm: u32,
    functions: &[Function],
    offsets: &[u64],
) -> Result<ScheduleProof, ScheduleError> {
    let mut proof = ScheduleProof::default();
    for &off in offsets {
        let f = functions
            .iter()
            .find(|f| f.index_of(off).is_some())
            .ok_or(ScheduleError::NoInstruction { offset: off })?;
        let k = f.index_of(off).unwrap_or_default();
        let ins = &f.instrs[k];
        let fail = |hazard: Hazard| ScheduleError::Access {
            opcode: ins.opcode.clone(),
            offset: off,
            ctrl: ins.ctrl,
            hazard: Box::new(hazard),
        };
        let (data, addr) = access(ins).ok_or_else(|| fail(Hazard::NotAnAccess))?;
        let targets: BTreeSet<u64> = f
            .instrs
            .iter()
            .flat_map(|i| i.target.into_iter().chain(i.targets.iter().copied()))
            .collect();
        let depbar = depbar_mask(f);
        let used = ins.ctrl.write_sb.map_or(0, |s| 1 << s) | ins.ctrl.read_sb.map_or(0, |s| 1 << s);
        if used & depbar != 0 {
            return Err(fail(Hazard::DepbarScoreboard));
        }
        if let Some(w) = f.instrs[k + 1..].iter().find(|i| writes(i, addr)) {
            return Err(fail(Hazard::AddressOverwritten { addr, at: w.offset }));
        }
        // Forward walk: `sb` must be waited for before `hazard` or the block's end.
        let forward = |sb: u8, hazard: &dyn Fn(&Instr) -> bool| -> Result<(), ScheduleError> {
            for j in &f.instrs[k + 1..] {
                if waits(j, sb) {
                    return Ok(());
                }
                if hazard(j) {
                    return Err(fail(Hazard::NotWaited {
                        at: j.offset,
                        opcode: j.opcode.clone(),
                        sb,
                    }));
                }
                if targets.contains(&j.offset) || leaves_block(j) {
                    return Err(fail(Hazard::PendingAtBlockEnd { sb, at: j.offset }));
                }
            }
            Err(fail(Hazard::NeverWaited { sb }))
        };
        if ins.op() == Op::Lds {
            let w = ins
                .ctrl
                .write_sb
                .ok_or_else(|| fail(Hazard::NoWriteScoreboard))?;
            forward(w, &|j: &Instr| reads(j, data) || writes(j, data))?;
            proof.loads += 1;
        } else {
            // The producer of the data, in this block.
            let mut stalls: u32 = 0;
            let mut waited: u8 = ins.ctrl.wait_mask;
            let mut producer = None;
            for j in f.instrs[..k].iter().rev() {
                stalls += u32::from(j.ctrl.stall.max(1));
                if writes(j, data) {
                    producer = Some(j);
                    break;
                }
                waited |= j.ctrl.wait_mask;
                if targets.contains(&j.offset) || leaves_block(j) {
                    break;
                }
            }
            let p = producer.ok_or_else(|| fail(Hazard::NoProducer { reg: data }))?;
            match p.ctrl.write_sb {
                Some(w) if waited & (1 << w) != 0 => {}
                Some(sb) => return Err(fail(Hazard::DataNotWaited { at: p.offset, sb })),
                None => {
                    let needs = fixed_latency(sm, p.class()).ok_or_else(|| {
                        fail(Hazard::DataLatencyUnknown {
                            opcode: p.opcode.clone(),
                        })
                    })?;
                    if stalls < u32::from(needs) {
                        return Err(fail(Hazard::DataTooSoon {
                            stalls,
                            opcode: p.opcode.clone(),
                            at: p.offset,
                            needs,
                        }));
                    }
                }
            }
            let r = ins
                .ctrl
                .read_sb
                .ok_or_else(|| fail(Hazard::NoReadScoreboard))?;
            forward(r, &|j: &Instr| writes(j, data))?;
            proof.stores += 1;
        }
    }
    Ok(proof)
}

/// Instructions that may read their register sources after they issue (memory, texture,
/// and anything released through a scoreboard).
fn late_reader(i: &Instr) -> bool {
    matches!(
        i.class(),
        OpClass::Global | OpClass::Local | OpClass::Shared | OpClass::Texture
    ) || i.ctrl.write_sb.is_some()
}

/// Scoreboards a `DEPBAR` of `f` counts on.
fn depbar_mask(f: &Function) -> u8 {
    f.instrs
        .iter()
        .filter(|i| i.op() == Op::Depbar)
        .flat_map(|i| i.operands.iter())
        .filter_map(|o| o.text.strip_prefix("SB")?.chars().next()?.to_digit(10))
        .fold(0, |m, d| m | (1 << d))
}

/// Variable-latency results are released through a write scoreboard; these classes have a
/// fixed latency the stall counts must cover instead (or an unknown one: refused).
fn fixed(i: &Instr) -> bool {
    i.ctrl.write_sb.is_none()
}

/// Whether the data `ins` (at index `k` of `f`) reads in register `r` is ready: the closest
/// earlier writer in the block set a scoreboard waited for by `ins` or an instruction between,
/// or has a fixed latency the stall counts cover.
fn ready(sm: u32, f: &Function, k: usize, r: u8, targets: &BTreeSet<u64>) -> Result<(), Hazard> {
    let mut stalls: u32 = 0;
    let mut waited: u8 = f.instrs[k].ctrl.wait_mask;
    for j in f.instrs[..k].iter().rev() {
        stalls += u32::from(j.ctrl.stall.max(1));
        if writes(j, r) {
            return match j.ctrl.write_sb {
                Some(w) if waited & (1 << w) != 0 => Ok(()),
                Some(sb) => Err(Hazard::SourceNotWaited {
                    reg: r,
                    at: j.offset,
                    sb,
                }),
                None => {
                    let needs = fixed_latency(sm, j.class()).ok_or_else(|| {
                        Hazard::SourceLatencyUnknown {
                            opcode: j.opcode.clone(),
                            reg: r,
                        }
                    })?;
                    if stalls < u32::from(needs) {
                        Err(Hazard::SourceTooSoon {
                            reg: r,
                            stalls,
                            opcode: j.opcode.clone(),
                            at: j.offset,
                            needs,
                        })
                    } else {
                        Ok(())
                    }
                }
            };
        }
        waited |= j.ctrl.wait_mask;
        if targets.contains(&j.offset) || leaves_block(j) {
            break;
        }
    }
    Err(Hazard::NoProducer { reg: r })
}

/// Control bits of an inserted instruction other than a 32-bit spill access (the prologue's
/// `S2R`/`IMAD`/`LEA`, moves): every register it reads is ready; a variable-latency result is
/// waited for before anything reads or writes it and before the block ends; a fixed-latency
/// result's first reader in the block comes after its latency; its scoreboards are none a
/// `DEPBAR` counts on; it writes no register an earlier access is still reading.
fn check_other(sm: u32, f: &Function, k: usize, targets: &BTreeSet<u64>) -> Result<(), Hazard> {
    let ins = &f.instrs[k];
    for r in ins.gpr_reads() {
        ready(sm, f, k, r, targets)?;
    }
    let dests = ins.gpr_writes();
    // A write after a pending read (WAR): an earlier instruction of the block still reading
    // the register through its read scoreboard.
    let mut waited = ins.ctrl.wait_mask;
    for j in f.instrs[..k].iter().rev() {
        if dests.iter().any(|&d| reads(j, d)) {
            match j.ctrl.read_sb {
                Some(sb) if waited & (1 << sb) == 0 => {
                    return Err(Hazard::OverwritesPendingRead {
                        opcode: j.opcode.clone(),
                        at: j.offset,
                        sb,
                    });
                }
                // Memory and other variable-latency instructions read their sources after
                // issue: without a read scoreboard nothing orders the overwrite after it.
                None if late_reader(j) => {
                    return Err(Hazard::OverwritesLateRead {
                        opcode: j.opcode.clone(),
                        at: j.offset,
                    });
                }
                _ => {}
            }
        }
        waited |= j.ctrl.wait_mask;
        if targets.contains(&j.offset) || leaves_block(j) {
            break;
        }
    }
    if let Some(rs) = ins.ctrl.read_sb {
        let srcs = ins.gpr_reads();
        for j in &f.instrs[k + 1..] {
            if waits(j, rs) {
                break;
            }
            if srcs.iter().any(|&s| writes(j, s)) {
                return Err(Hazard::SourceOverwritten {
                    at: j.offset,
                    opcode: j.opcode.clone(),
                    sb: rs,
                });
            }
            if targets.contains(&j.offset) || leaves_block(j) {
                return Err(Hazard::PendingAtBlockEnd {
                    sb: rs,
                    at: j.offset,
                });
            }
        }
    }
    if let Some(w) = ins.ctrl.write_sb {
        for j in &f.instrs[k + 1..] {
            if waits(j, w) {
                break;
            }
            if dests.iter().any(|&d| reads(j, d) || writes(j, d)) {
                return Err(Hazard::NotWaited {
                    at: j.offset,
                    opcode: j.opcode.clone(),
                    sb: w,
                });
            }
            if targets.contains(&j.offset) || leaves_block(j) {
                return Err(Hazard::PendingAtBlockEnd {
                    sb: w,
                    at: j.offset,
                });
            }
        }
    } else if fixed(ins) {
        for (n, j) in f.instrs[k + 1..].iter().enumerate() {
            if dests.iter().any(|&d| reads(j, d)) {
                ready(
                    sm,
                    f,
                    k + 1 + n,
                    *dests.iter().find(|&&d| reads(j, d)).unwrap_or(&0),
                    targets,
                )?;
                break;
            }
            if targets.contains(&j.offset) || leaves_block(j) {
                break;
            }
        }
    }
    Ok(())
}

/// An inserted 32-bit piece of a wide spill access split in 32-bit words: next to the image
/// of the original wide access, with nothing between but other inserted pieces of the same
/// access (a 128-bit access has three after its image), each the same kind of access (load
/// or store) under the same guard, with the original's control bits exactly, moving data
/// registers the original moved (or `RZ`, where the original stores `RZ`). Such a run issues
/// no earlier than the original would have (the instructions before keep their stalls) and
/// ends at, or starts right after, its image: every scoreboard the original set is set by
/// each piece too, every wait the original made each piece makes, and every later wait the
/// original needed comes after the whole run and covers it.
fn split_half(
    f: &Function,
    k: usize,
    inserted: &BTreeSet<u64>,
    origin: &std::collections::BTreeMap<u64, &Instr>,
) -> bool {
    let ins = &f.instrs[k];
    let kind = |i: &Instr| match i.op() {
        Op::Lds | Op::Ldl => Some(true),
        Op::Sts | Op::Stl => Some(false),
        _ => None,
    };
    let Some(load) = kind(ins) else { return false };
    let data = |i: &Instr| -> BTreeSet<u8> {
        if load {
            i.gpr_writes().into_iter().collect()
        } else {
            i.operands
                .iter()
                .filter_map(|o| match o.kind {
                    OperandKind::Reg(r) if r != RZ => Some((r, o.width.max(1))),
                    _ => None,
                })
                .flat_map(|(r, w)| (r..r.saturating_add(w)).filter(|&x| x < RZ))
                .collect()
        }
    };
    // A store of RZ (half of a wide zero spill): no register to be ready or overwritten.
    let zero = |i: &Instr| {
        !load
            && i.operands
                .iter()
                .any(|o| matches!(o.kind, OperandKind::Reg(RZ)))
            && data(i).is_empty()
    };
    // `piece` is an inserted piece of the wide access `o`.
    let piece_of = |piece: &Instr, o: &Instr| {
        let mine = data(piece);
        kind(piece) == Some(load)
            && piece.predicate == o.predicate
            && piece.ctrl.write_sb == o.ctrl.write_sb
            && piece.ctrl.read_sb == o.ctrl.read_sb
            && piece.ctrl.wait_mask | o.ctrl.wait_mask == piece.ctrl.wait_mask
            && piece.ctrl.reuse == 0
            && ((!mine.is_empty() && mine.is_subset(&data(o))) || (zero(piece) && zero(o)))
    };
    // Each way, over the run of inserted instructions, to the first original one: it must be
    // the image of a wide access of this kind and every instruction of the run a piece of it.
    let before = f.instrs[..k].iter().rev();
    let after = f.instrs.get(k + 1..).unwrap_or_default().iter();
    let sides: [Box<dyn Iterator<Item = &Instr>>; 2] = [Box::new(before), Box::new(after)];
    sides.into_iter().any(|mut side| {
        let mut run = Vec::new();
        let Some(n) = side.find(|n| {
            let original = !inserted.contains(&n.offset);
            if !original {
                run.push(*n);
            }
            original
        }) else {
            return false;
        };
        let Some(o) = origin.get(&n.offset) else {
            return false;
        };
        kind(o) == Some(load)
            && kind(n) == Some(load)
            && n.predicate == ins.predicate
            && piece_of(ins, o)
            && run.iter().all(|p| piece_of(p, o))
    })
}

/// The scheduling check of a whole rewrite (both transforms): every inserted instruction's
/// control bits ([`check`] for 32-bit `LDS`/`STS`, [`check_other`] for the rest), and every
/// original instruction's image keeps the original's scoreboards, waits at least for what the
/// original waited for, stalls at least as long, and sets a reuse flag only where the
/// original did and the next instruction is not an inserted one (the reuse cache would hand
/// the flagged value to an instruction the original never had after it).
pub(crate) fn check_rewrite(
    sm: u32,
    original: &[Function],
    rewritten: &[Function],
    map: &crate::cubin::OffsetMap,
    inserted: &[u64],
) -> Result<ScheduleProof, ScheduleError> {
    let ins_set: BTreeSet<u64> = inserted.iter().copied().collect();
    let find = |off: u64| -> Option<(&Function, usize)> {
        rewritten
            .iter()
            .find_map(|f| f.index_of(off).map(|k| (f, k)))
    };
    for f0 in original {
        for o in &f0.instrs {
            let Some(new) = map.map(o.offset) else {
                continue;
            };
            let Some((f, k)) = find(new) else {
                continue;
            };
            let i = &f.instrs[k];
            let (a, b) = (o.ctrl, i.ctrl);
            let fail = |hazard: Hazard| {
                Err(ScheduleError::Image {
                    opcode: i.opcode.clone(),
                    offset: new,
                    was: o.offset,
                    before: a,
                    after: b,
                    hazard: Box::new(hazard),
                })
            };
            // A scoreboard may be added where the original had none (a renamed source now
            // read late, which an inserted writer must wait for), never changed or dropped,
            // and never one a `DEPBAR` counts on.
            let kept = |x: Option<u8>, y: Option<u8>| x.is_none() || x == y;
            if !kept(a.write_sb, b.write_sb) || !kept(a.read_sb, b.read_sb) {
                return fail(Hazard::ScoreboardsChanged);
            }
            let added = [(a.write_sb, b.write_sb), (a.read_sb, b.read_sb)]
                .into_iter()
                .filter_map(|(x, y)| if x.is_none() { y } else { None })
                .fold(0u8, |m, s| m | (1 << s));
            if added & depbar_mask(f) != 0 {
                return fail(Hazard::NowDepbarScoreboard);
            }
            if a.wait_mask & !b.wait_mask != 0 {
                return fail(Hazard::WaitsLess);
            }
            if b.stall < a.stall {
                return fail(Hazard::StallsLess);
            }
            if b.reuse & !a.reuse != 0 {
                return fail(Hazard::ReuseAdded);
            }
            let next_inserted = f
                .instrs
                .get(k + 1)
                .is_some_and(|n| ins_set.contains(&n.offset));
            if b.reuse != 0 && next_inserted {
                return fail(Hazard::ReuseBeforeInserted);
            }
        }
    }
    // Rewritten offset → original instruction.
    let origin: std::collections::BTreeMap<u64, &Instr> = original
        .iter()
        .flat_map(|f0| f0.instrs.iter())
        .filter_map(|o| map.map(o.offset).map(|n| (n, o)))
        .collect();
    let mut proof = ScheduleProof::default();
    for &off in inserted {
        let (f, k) = find(off).ok_or(ScheduleError::NoInstruction { offset: off })?;
        let ins = &f.instrs[k];
        if split_half(f, k, &ins_set, &origin) {
            proof.inherited += 1;
            continue;
        }
        if access(ins).is_some() {
            let p = check(sm, rewritten, &[off])?;
            proof.loads += p.loads;
            proof.stores += p.stores;
            continue;
        }
        let targets: BTreeSet<u64> = f
            .instrs
            .iter()
            .flat_map(|i| i.target.into_iter().chain(i.targets.iter().copied()))
            .collect();
        check_other(sm, f, k, &targets).map_err(|hazard| ScheduleError::Inserted {
            opcode: ins.opcode.clone(),
            offset: off,
            ctrl: ins.ctrl,
            hazard: Box::new(hazard),
        })?;
        proof.other += 1;
    }
    Ok(proof)
}
