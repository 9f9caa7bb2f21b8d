//! The per-thread base of a spill area, proved (docs/DESIGN.md §Thread shape and block size):
//! the register a rewrite addresses its shared slots through holds, for every thread of every
//! block the launch can have, an address whose slots lie inside the area the rewrite added and
//! are disjoint from every other thread's.
//!
//! Independent of the transforms: the proof reads the decoded instructions of the rewritten
//! kernel from its entry to [`SpillBase::defined_at`] and derives the base's value itself,
//! as a polynomial over the thread's index and the block's shape:
//!
//! * **Atoms**: `tid.x/y/z` (`S2R SR_TID.X/Y/Z`), `ntid.x/y/z` (`c[0x0][0x0/0x4/0x8]`), the
//!   dynamic shared size `D` (`c[0x0][0x2c]`), the CTA's rank in its cluster (`S2R
//!   SR_CgaCtaId`); sm_75-90, docs/sass.md §Shared memory and the constant bank.
//! * **Arithmetic**, exact modulo 2^32 (a ring homomorphism, so a polynomial with 32-bit
//!   coefficients is the register's value): `MOV`, `IMAD` (plain, `.MOV`, `.SHL`, `.IADD`,
//!   `.U32`), `IADD3`, `IADD`, `VIADD`, `LEA` and `SHF.L.U32` by an immediate, `LDC` and
//!   register copies; negated register operands. Any other write, a write under a guard, or a
//!   read of a value that is not ready (a variable-latency result whose scoreboard was not
//!   waited for, a fixed-latency one before its stall cycles have passed) leaves the
//!   register unknown, and a base that depends on an unknown value is not proved; nor is
//!   one still in flight when the original code starts.
//! * The code from the entry to the definition must be straight-line: no control transfer in
//!   it and no branch into it.
//!
//! The value must be `D + Q(tid, ntid)` (plus `rank << 24` on sm_90, as ptxas forms shared
//! addresses there, and nothing else), with `Q` affine in the thread index:
//! `K + a·tid.x + b·tid.y + c·tid.z` with `K`, `a`, `b`, `c` polynomials in `ntid`. For every
//! block shape the launch allows ([`Launch`]: exactly `.reqntid`'s, else every `(nx, ny, nz)`
//! with `nx·ny·nz` at most the bound and `nz ≤ 64`), the offsets `Q` take are shown to be
//! multiples of 4 in `[0, stride − 4]` and pairwise different: `K`, `a`, `b`, `c` are
//! multiples of 4 and, over the dimensions of extent above 1 ordered by `|coefficient|`, each
//! coefficient exceeds what the smaller ones span (mixed radix). Then slot `s` of thread
//! `t`, `[base + area + s·stride]`, is a word of `[area + D, area + D + slots·stride)` no
//! other thread's slot touches; that range lies after the program's own static and dynamic
//! shared memory (`area` ≥ the static size before the rewrite) and inside what every launch
//! allocates (`area + slots·stride` ≤ the static size after it).

use std::collections::BTreeMap;

use super::SpillBase;
pub use super::base_error::{AtProblem, BaseError, ValueProblem};
use crate::arch::Sm;
use crate::arch::latency::fixed_latency;
use crate::cubin::Cubin;
use crate::sass::Op;
use crate::sass::ir::{Function, Instr, OperandKind, RZ};

/// The most threads a block may have on sm_75-90, and its largest z extent.
const HW_MAX_THREADS: u32 = 1024;
const HW_MAX_Z: u32 = 64;

/// What every launch of the rewritten kernel is known to satisfy, read from the cubins (not
/// from the transform).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub(crate) sm: u32,
    /// `EIATTR_REQNTID`: the only block shape the driver launches.
    pub(crate) reqntid: Option<[u32; 3]>,
    /// Threads per block at most: the product of `EIATTR_MAX_THREADS` (the driver refuses
    /// more), else the hardware's 1024.
    pub(crate) max_threads: u32,
    /// Static shared bytes of the kernel before the rewrite (its own variables; its dynamic
    /// shared memory starts there).
    pub(crate) shared_before: u64,
    /// Static shared bytes after the rewrite (what every launch allocates besides the
    /// dynamic size).
    pub(crate) shared_after: u64,
}

impl Launch {
    /// The launch facts of `kernel` from the cubin before and after the rewrite.
    pub fn read(before: &Cubin, after: &Cubin, kernel: &str) -> Option<Launch> {
        let old = before.function_info(kernel)?;
        let new = after.function_info(kernel)?;
        let product = |d: [u32; 3]| d.iter().try_fold(1u32, |a, &x| a.checked_mul(x.max(1)));
        let max_threads = new
            .reqntid
            .and_then(product)
            .or_else(|| new.max_threads.and_then(product))
            .unwrap_or(HW_MAX_THREADS)
            .min(HW_MAX_THREADS);
        Some(Launch {
            sm: after.arch(),
            reqntid: new.reqntid,
            max_threads,
            shared_before: old.static_shared,
            shared_after: new.static_shared,
        })
    }
}

/// What was proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseProof {
    /// Block shapes checked.
    pub shapes: usize,
    /// The base as derived, for messages (`4·tid.x + 4·ntid.x·tid.y + … + D`).
    pub(crate) base: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    TidX,
    TidY,
    TidZ,
    NtidX,
    NtidY,
    NtidZ,
    Dyn,
    Rank,
}

impl Atom {
    fn name(self) -> &'static str {
        match self {
            Atom::TidX => "tid.x",
            Atom::TidY => "tid.y",
            Atom::TidZ => "tid.z",
            Atom::NtidX => "ntid.x",
            Atom::NtidY => "ntid.y",
            Atom::NtidZ => "ntid.z",
            Atom::Dyn => "D",
            Atom::Rank => "rank",
        }
    }

    fn is_tid(self) -> bool {
        matches!(self, Atom::TidX | Atom::TidY | Atom::TidZ)
    }
}

/// A polynomial over the atoms with coefficients modulo 2^32 (monomial: sorted atoms).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Poly(BTreeMap<Vec<Atom>, u32>);

impl Poly {
    fn constant(c: u32) -> Poly {
        Poly::default().plus_term(Vec::new(), c)
    }
    fn atom(a: Atom) -> Poly {
        Poly::default().plus_term(vec![a], 1)
    }
    fn plus_term(mut self, m: Vec<Atom>, c: u32) -> Poly {
        let e = self.0.entry(m.clone()).or_insert(0);
        *e = e.wrapping_add(c);
        if *e == 0 {
            self.0.remove(&m);
        }
        self
    }
    fn add(&self, o: &Poly) -> Poly {
        o.0.iter()
            .fold(self.clone(), |p, (m, &c)| p.plus_term(m.clone(), c))
    }
    fn neg(&self) -> Poly {
        Poly(
            self.0
                .iter()
                .map(|(m, &c)| (m.clone(), c.wrapping_neg()))
                .collect(),
        )
    }
    fn mul(&self, o: &Poly) -> Poly {
        let mut out = Poly::default();
        for (ma, &ca) in &self.0 {
            for (mb, &cb) in &o.0 {
                let mut m: Vec<Atom> = ma.iter().chain(mb).copied().collect();
                m.sort();
                out = out.plus_term(m, ca.wrapping_mul(cb));
            }
        }
        out
    }
    fn shl(&self, k: u32) -> Poly {
        self.mul(&Poly::constant(1u32.checked_shl(k).unwrap_or(0)))
    }
    fn show(&self) -> String {
        if self.0.is_empty() {
            return "0".into();
        }
        self.0
            .iter()
            .map(|(m, &c)| {
                let c = c as i32;
                let names: Vec<&str> = m.iter().map(|a| a.name()).collect();
                match (c, names.is_empty()) {
                    (_, true) => format!("{c:#x}"),
                    (1, false) => names.join("·"),
                    _ => format!("{c}·{}", names.join("·")),
                }
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// A register's value: known, or why not.
type Val = Result<Poly, BaseError>;

#[derive(Debug, Clone)]
struct Reg {
    val: Val,
    /// Scoreboard a variable-latency write of it releases.
    pending: Option<u8>,
    /// Cycle from which a fixed-latency result may be read.
    ready_at: u64,
}

/// Prove `base` for the rewritten kernel `f` under `launch`.
pub fn prove(f: &Function, base: &SpillBase, launch: &Launch) -> Result<BaseProof, BaseError> {
    if !Sm::of(launch.sm).model().rewrites {
        return Err(BaseError::UnmodelledArch(launch.sm));
    }
    let value = evaluate(f, base, launch.sm)?;
    check_value(&value, base, launch)
}

/// The value of `base.reg` after the instruction at `base.defined_at`, from `f`'s entry.
fn evaluate(f: &Function, base: &SpillBase, sm: u32) -> Result<Poly, BaseError> {
    let end = f
        .index_of(base.defined_at)
        .ok_or(BaseError::NoDefinition(base.defined_at))?;
    let range = f.start..=base.defined_at;
    for i in &f.instrs {
        if let Some(t) = i
            .target
            .iter()
            .chain(&i.targets)
            .find(|&&t| t != f.start && range.contains(&t))
        {
            return Err(at(i, AtProblem::BranchesBack { target: *t }));
        }
    }
    let mut regs: BTreeMap<u8, Reg> = BTreeMap::new();
    let mut now: u64 = 0;
    for ins in &f.instrs[..=end] {
        if ins.is_branch() || ins.is_call() || ins.is_exit() || ins.op() == Op::Bssy {
            return Err(at(ins, AtProblem::TransfersControl));
        }
        for sb in ins.ctrl.waits() {
            for r in regs.values_mut() {
                if r.pending == Some(sb) {
                    r.pending = None;
                }
            }
        }
        let val = if ins.always() {
            interpret(ins, &regs, now)
        } else {
            Err(BaseError::Guarded(ins.offset))
        };
        let writes = ins.gpr_writes();
        let variable = fixed_latency(sm, ins.class()).is_none();
        for &w in &writes {
            let val = if writes.len() == 1 {
                val.clone()
            } else {
                Err(at(ins, AtProblem::Unmodelled))
            };
            let (val, pending, ready_at) = if variable {
                match ins.ctrl.write_sb {
                    Some(sb) => (val, Some(sb), now),
                    None => (Err(at(ins, AtProblem::NoScoreboard)), None, now),
                }
            } else {
                let lat = fixed_latency(sm, ins.class()).unwrap_or(0);
                (val, None, now + u64::from(lat))
            };
            regs.insert(
                w,
                Reg {
                    val,
                    pending,
                    ready_at,
                },
            );
        }
        now += u64::from(ins.ctrl.stall.max(1));
    }
    // The code after the definition may read the base at once: it must be ready then.
    match regs.get(&base.reg) {
        Some(r) if r.pending.is_some() || now < r.ready_at => Err(BaseError::NotReady {
            reg: base.reg,
            at: base.defined_at,
        }),
        Some(r) => r.val.clone(),
        None => Err(BaseError::NotWritten {
            reg: base.reg,
            at: base.defined_at,
        }),
    }
}

/// `problem` at the instruction `ins`.
fn at(ins: &Instr, problem: AtProblem) -> BaseError {
    BaseError::At {
        opcode: ins.opcode.clone(),
        at: ins.offset,
        problem,
    }
}

/// The polynomial one source operand holds.
fn operand(ins: &Instr, k: usize, regs: &BTreeMap<u8, Reg>, now: u64) -> Val {
    let here = |problem| at(ins, problem);
    let op = ins
        .operands
        .get(k)
        .ok_or_else(|| here(AtProblem::OperandMissing(k)))?;
    let text = op.text.trim_end_matches(".reuse");
    let (negated, core) = match text.strip_prefix('-') {
        Some(c) => (true, c),
        None => (false, text),
    };
    let v = match &op.kind {
        OperandKind::Reg(RZ) if core == "RZ" => Poly::default(),
        OperandKind::Reg(r) if core == format!("R{r}") => {
            let reg = regs
                .get(r)
                .ok_or_else(|| here(AtProblem::ReadsUnwritten(*r)))?;
            if let Some(sb) = reg.pending {
                return Err(here(AtProblem::ReadsPending { reg: *r, sb }));
            }
            if now < reg.ready_at {
                return Err(here(AtProblem::ReadsEarly {
                    reg: *r,
                    cycles: reg.ready_at - now,
                }));
            }
            reg.val.clone()?
        }
        OperandKind::Const {
            bank,
            offset,
            reg: None,
            ureg: None,
        } if bank == "0x0" && !negated => match offset {
            0x0 => Poly::atom(Atom::NtidX),
            0x4 => Poly::atom(Atom::NtidY),
            0x8 => Poly::atom(Atom::NtidZ),
            0x2c => Poly::atom(Atom::Dyn),
            _ => return Err(here(AtProblem::ReadsDriverConstant(*offset))),
        },
        // The sign is part of an immediate's text.
        OperandKind::Imm(s) => {
            return imm(s)
                .map(Poly::constant)
                .ok_or_else(|| here(AtProblem::NotAnInteger(s.clone())));
        }
        _ => return Err(here(AtProblem::OperandUnmodelled(op.text.clone()))),
    };
    Ok(if negated { v.neg() } else { v })
}

/// An integer immediate as nvdisasm prints it, modulo 2^32.
fn imm(s: &str) -> Option<u32> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => s.parse::<u64>().ok()?,
    };
    let v = v as u32;
    Some(if neg { v.wrapping_neg() } else { v })
}

/// The value `ins` writes to its one destination register (operand 0).
fn interpret(ins: &Instr, regs: &BTreeMap<u8, Reg>, now: u64) -> Val {
    let here = |problem| at(ins, problem);
    let unmodelled = || Err(here(AtProblem::Unmodelled));
    // Source operands, predicates (carry-outs, `PT`) skipped.
    let srcs: Vec<usize> = (1..ins.operands.len())
        .filter(|&k| {
            !matches!(
                ins.operands[k].kind,
                OperandKind::Pred { .. } | OperandKind::UPred { .. }
            )
        })
        .collect();
    let src = |n: usize| -> Val {
        let k = *srcs
            .get(n)
            .ok_or_else(|| here(AtProblem::SourceMissing(n)))?;
        operand(ins, k, regs, now)
    };
    let mods: Vec<&str> = ins.modifiers().collect();
    let only = |allowed: &[&str]| mods.iter().all(|m| allowed.contains(m));
    match ins.op() {
        Op::S2r => match ins.operands.get(1).map(|o| &o.kind) {
            Some(OperandKind::SpecialReg(s)) => match s.as_str() {
                "SR_TID.X" => Ok(Poly::atom(Atom::TidX)),
                "SR_TID.Y" => Ok(Poly::atom(Atom::TidY)),
                "SR_TID.Z" => Ok(Poly::atom(Atom::TidZ)),
                "SR_CgaCtaId" => Ok(Poly::atom(Atom::Rank)),
                _ => Err(here(AtProblem::ReadsSpecial(s.clone()))),
            },
            _ => unmodelled(),
        },
        Op::Mov if mods.is_empty() && srcs.len() == 1 => src(0),
        Op::Ldc if mods.is_empty() && srcs.len() == 1 => src(0),
        Op::Imad if only(&["MOV", "SHL", "IADD", "U32"]) && srcs.len() == 3 => {
            Ok(src(0)?.mul(&src(1)?).add(&src(2)?))
        }
        Op::Iadd3 if mods.is_empty() && srcs.len() == 3 => Ok(src(0)?.add(&src(1)?).add(&src(2)?)),
        Op::Iadd | Op::Viadd if mods.is_empty() && srcs.len() == 2 => Ok(src(0)?.add(&src(1)?)),
        Op::Lea if mods.is_empty() && srcs.len() == 3 => {
            let s = match &ins.operands[srcs[2]].kind {
                OperandKind::Imm(t) => imm(t).filter(|&s| s < 32),
                _ => None,
            }
            .ok_or_else(|| here(AtProblem::ShiftNotImmediate))?;
            Ok(src(0)?.shl(s).add(&src(1)?))
        }
        Op::Shf if mods == ["L", "U32"] && srcs.len() == 3 => {
            let s = match &ins.operands[srcs[1]].kind {
                OperandKind::Imm(t) => imm(t).filter(|&s| s < 32),
                _ => None,
            }
            .ok_or_else(|| here(AtProblem::ShiftNotImmediate))?;
            // The high half only feeds the result's bits from above 32.
            Ok(src(0)?.shl(s))
        }
        _ => unmodelled(),
    }
}

/// Every block shape a launch can have: `(nx, ny, nz)`.
fn shapes(launch: &Launch) -> Vec<[u32; 3]> {
    if let Some(d) = launch.reqntid {
        return vec![d.map(|x| x.max(1))];
    }
    let n = launch.max_threads.min(HW_MAX_THREADS);
    let mut out = Vec::new();
    for nz in 1..=n.min(HW_MAX_Z) {
        for ny in 1..=n / nz {
            for nx in 1..=n / (nz * ny) {
                out.push([nx, ny, nz]);
            }
        }
    }
    out
}

/// The value of a polynomial over `ntid` (no `tid`, `D` or rank) at shape `d`, coefficients
/// read as signed 32-bit.
fn eval(p: &Poly, d: [u32; 3]) -> i128 {
    p.0.iter()
        .map(|(m, &c)| {
            m.iter().fold(i128::from(c as i32), |acc, a| {
                acc * i128::from(match a {
                    Atom::NtidX => d[0],
                    Atom::NtidY => d[1],
                    _ => d[2],
                })
            })
        })
        .sum()
}

fn check_value(value: &Poly, base: &SpillBase, launch: &Launch) -> Result<BaseProof, BaseError> {
    let shown = value.show();
    let fail = |problem| {
        Err(BaseError::Value {
            shown: shown.clone(),
            problem,
        })
    };
    let stride = i128::from(base.stride);
    if base.stride == 0 || !base.stride.is_multiple_of(4) || base.slots == 0 {
        return fail(ValueProblem::Slots {
            slots: base.slots,
            stride: base.stride,
        });
    }
    // The area must lie after the program's own shared memory and inside the allocation.
    let end = u64::from(base.area) + u64::from(base.slots) * u64::from(base.stride);
    if u64::from(base.area) < launch.shared_before || end > launch.shared_after {
        return fail(ValueProblem::OutsideArea {
            area: base.area,
            end,
            before: launch.shared_before,
            after: launch.shared_after,
        });
    }
    // Split: D, the rank term, and Q = K + a·x + b·y + c·z.
    let mut q: [Poly; 4] = Default::default();
    let (mut dyn_coef, mut rank_coef) = (0u32, 0u32);
    for (m, &c) in &value.0 {
        let tids: Vec<&Atom> = m.iter().filter(|a| a.is_tid()).collect();
        if m.contains(&Atom::Dyn) || m.contains(&Atom::Rank) {
            if m.len() != 1 {
                return fail(ValueProblem::ScalesDynamicOrRank);
            }
            if m[0] == Atom::Dyn {
                dyn_coef = c;
            } else {
                rank_coef = c;
            }
            continue;
        }
        let rest: Vec<Atom> = m.iter().filter(|a| !a.is_tid()).copied().collect();
        let slot = match tids.as_slice() {
            [] => 0,
            [Atom::TidX] => 1,
            [Atom::TidY] => 2,
            [Atom::TidZ] => 3,
            _ => return fail(ValueProblem::NotAffine),
        };
        q[slot] = std::mem::take(&mut q[slot]).plus_term(rest, c);
    }
    if dyn_coef != 1 {
        return fail(ValueProblem::NotAfterDynamic);
    }
    let want_rank = if Sm::of(launch.sm).model().shared_cluster_rank {
        1 << 24
    } else {
        0
    };
    if rank_coef != want_rank {
        return fail(ValueProblem::Rank {
            found: rank_coef,
            want: want_rank,
            sm: launch.sm,
        });
    }
    let all = shapes(launch);
    for &d in &all {
        let shape = || format!("{}×{}×{}", d[0], d[1], d[2]);
        let k = eval(&q[0], d);
        let mut dims: Vec<(i128, i128)> = (0..3)
            .filter(|&i| d[i] > 1)
            .map(|i| (eval(&q[i + 1], d), i128::from(d[i])))
            .collect();
        if k % 4 != 0 || dims.iter().any(|(c, _)| c % 4 != 0) {
            return fail(ValueProblem::Misaligned { shape: shape() });
        }
        dims.sort_by_key(|(c, _)| c.abs());
        let mut span = 0i128;
        for &(c, n) in &dims {
            if c.abs() <= span {
                return fail(ValueProblem::SameSlot { shape: shape() });
            }
            span += c.abs() * (n - 1);
        }
        let lo = k + dims
            .iter()
            .map(|&(c, n)| (c * (n - 1)).min(0))
            .sum::<i128>();
        let hi = k + dims
            .iter()
            .map(|&(c, n)| (c * (n - 1)).max(0))
            .sum::<i128>();
        if lo < 0 || hi + 4 > stride {
            return fail(ValueProblem::OutsideRow {
                shape: shape(),
                offset: if lo < 0 { lo } else { hi },
                stride,
            });
        }
    }
    Ok(BaseProof {
        shapes: all.len(),
        base: shown,
    })
}

#[cfg(test)]
mod tests;
