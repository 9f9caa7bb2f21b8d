//! Instruction semantics in the checker's own terms: which locations an instruction reads
//! and writes, which instructions are spill moves, stack-pointer updates, stores or calls,
//! and how wide a memory access is. Read from the decoded IR ([`crate::sass::ir`]) only;
//! nothing here is shared with `transform/`, so the checker cannot inherit a rewrite's
//! blind spot.

use std::collections::HashMap;

use super::regset::NP;
use super::state::Loc;
use crate::sass::Op;
use crate::sass::ir::{Function, Instr, Operand, OperandKind, RZ};

pub(super) fn regs_of(kind: &OperandKind, width: u8) -> Vec<Loc> {
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
pub(super) fn addr_regs(kind: &OperandKind) -> Vec<Loc> {
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
pub(super) fn op_reads(op: &Operand, unknown: bool) -> Vec<Loc> {
    let mut out = addr_regs(&op.kind);
    if op.role.reads() || unknown {
        out.extend(regs_of(&op.kind, if unknown { 4 } else { op.width }));
    }
    out
}

pub(super) fn op_writes(op: &Operand, unknown: bool) -> Vec<Loc> {
    if op.role.writes() || unknown {
        regs_of(&op.kind, if unknown { 4 } else { op.width })
    } else {
        Vec::new()
    }
}

pub(super) fn guard_loc(ins: &Instr) -> Option<Loc> {
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
pub(super) fn reads_writes(ins: &Instr) -> (Vec<Loc>, Vec<Loc>) {
    let mut r: Vec<Loc> = guard_loc(ins).into_iter().collect();
    let mut w = Vec::new();
    for op in &ins.operands {
        r.extend(op_reads(op, ins.unknown));
        w.extend(op_writes(op, ins.unknown));
    }
    (r, w)
}

/// Operand text with register numbers and `.reuse` removed (`-|R3|.H1` → `-|R#|.H1`).
pub(super) fn shape(text: &str) -> String {
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
pub(super) fn transfers_control(ins: &Instr) -> bool {
    matches!(
        ins.op(),
        Op::Bra
            | Op::Brx
            | Op::Jmp
            | Op::Jmx
            | Op::Call
            | Op::Ret
            | Op::Exit
            | Op::Kill
            | Op::Bssy
            | Op::Bsync
            | Op::Break
            | Op::Warpsync
            | Op::Bar
            | Op::Bpt
            | Op::Bmov
            | Op::Lepc
    )
}

pub(super) fn is_nop(ins: &Instr) -> bool {
    ins.op() == Op::Nop
}

/// Ends control flow unconditionally.
pub(super) fn no_fall_through(ins: &Instr) -> bool {
    matches!(
        ins.op(),
        Op::Bra | Op::Brx | Op::Jmp | Op::Jmx | Op::Exit | Op::Ret | Op::Kill
    ) && ins.always()
}

pub(super) fn sub_word(ins: &Instr) -> bool {
    ins.modifiers()
        .any(|m| matches!(m, "U8" | "S8" | "U16" | "S16"))
}

/// `[R1+imm]` with nothing else.
pub(super) fn r1_imm(op: &Operand) -> Option<i64> {
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

pub(super) fn addr_of(ins: &Instr) -> Option<&Operand> {
    ins.operands
        .iter()
        .find(|o| matches!(o.kind, OperandKind::Addr { .. }))
}

pub(super) fn data_of(ins: &Instr) -> Option<&Operand> {
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
pub(super) struct Move {
    pub(super) store: bool,
    pub(super) imm: i64,
    pub(super) reg: u8,
    pub(super) width: u8,
}

pub(super) fn as_move(ins: &Instr) -> Option<Move> {
    let store = match ins.op() {
        Op::Stl => true,
        Op::Ldl => false,
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
    // `STL[.64|.128] [R1+x], RZ`: ptxas spills a zero (a zeroed FP64 or vector accumulator).
    // RZ reads as zero at every width, so every word gets RZ's own (constant) symbol, which
    // it holds in both programs.
    let zero = reg == RZ && store;
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
pub(super) fn words(imm: i64, bytes: i64) -> Vec<i64> {
    let first = imm.div_euclid(4).wrapping_mul(4);
    let last = imm
        .saturating_add(bytes.clamp(1, 16) - 1)
        .div_euclid(4)
        .wrapping_mul(4);
    let n = (last.wrapping_sub(first) / 4).clamp(0, 4);
    (0..=n).map(|k| first.wrapping_add(4 * k)).collect()
}

pub(super) fn access_bytes(ins: &Instr) -> i64 {
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
pub(super) fn may_store_local(ins: &Instr) -> bool {
    if ins.unknown {
        return true;
    }
    match ins.op() {
        Op::Stl => addr_of(ins).and_then(r1_imm).is_none(),
        Op::St | Op::Atom | Op::Red | Op::Sust | Op::Sured | Op::Suatom => true,
        _ => false,
    }
}

/// Per function: may it (or a function it calls, transitively) store to local memory
/// through anything but `[R1+imm]` (a pointer into a caller's escaped frame): an instruction
/// [`may_store_local`], or a call other than a direct call of a function of `fs` that may
/// not. A direct call of one that may not leaves a caller's escaped frame as it was, but for
/// the words its summary says it writes through `R1`.
pub(super) fn pointer_stores(fs: &[Function], names: &HashMap<&str, usize>) -> Vec<bool> {
    let mut out: Vec<bool> = fs
        .iter()
        .map(|f| {
            f.instrs.iter().any(|i| {
                may_store_local(i)
                    || (i.is_call()
                        && !matches!(
                            call_kind(i, f, names),
                            CallKind::Direct(_) | CallKind::Jump(_)
                        ))
            })
        })
        .collect();
    loop {
        let mut changed = false;
        for (g, f) in fs.iter().enumerate() {
            if !out[g]
                && f.instrs.iter().any(|i| {
                    i.is_call() && matches!(call_kind(i, f, names), CallKind::Direct(c) if out[c])
                })
            {
                out[g] = true;
                changed = true;
            }
        }
        if !changed {
            return out;
        }
    }
}

/// Does the frame address escape: `R1` read other than as `[R1+imm]` of a local access,
/// by an `R1` update, or by a call.
pub(super) fn escapes(f: &Function) -> bool {
    f.instrs.iter().any(|ins| {
        if ins.is_call() || ins.op() == Op::Ret {
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
        let local = matches!(ins.op(), Op::Ldl | Op::Stl);
        ins.operands.iter().any(|o| match o.kind {
            OperandKind::Addr { reg: Some(1), .. } => !(local && r1_imm(o).is_some()),
            _ => regs_of(&o.kind, o.width).contains(&Loc::R(1)) && o.role.reads(),
        }) || guard_loc(ins) == Some(Loc::R(1))
    })
}

/// `IADD3 R1, R1, imm, RZ` / `IADD R1, R1, imm` / `VIADD R1, R1, imm`: the delta.
pub(super) fn sp_adjust(ins: &Instr) -> Option<i64> {
    if !matches!(ins.op(), Op::Iadd3 | Op::Iadd | Op::Viadd)
        || ins.modifiers().next().is_some()
        || !ins.always()
    {
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
pub(super) fn stack_init(ins: &Instr) -> bool {
    let (reads, writes) = reads_writes(ins);
    ins.always()
        && writes == [Loc::R(1)]
        && reads.is_empty()
        && matches!(ins.op(), Op::Mov | Op::Imad | Op::Ldc)
        && ins
            .operands
            .iter()
            .any(|o| matches!(o.kind, OperandKind::Const { .. }))
}

/// Whether `ins` writes memory by its opcode (stores, atomics, reductions, surface writes,
/// `LDGSTS`): an inserted instruction may only be a spill-slot `STS` or a frame `STL`.
pub(super) fn writes_memory(ins: &Instr) -> bool {
    let base = ins.base();
    base.starts_with("ST")
        || base.starts_with("ATOM")
        || base.starts_with("RED")
        || matches!(base, "LDGSTS" | "SUST" | "SURED" | "SUATOM")
}

/// Whether `ins`'s immediates and labels are code addresses (targets, self-relative
/// offsets, `LEPC` labels), which may differ from the original's: targets are checked by
/// the correspondence, the rest trusted (module doc, "Assumptions").
pub(super) fn code_operands(ins: &Instr) -> bool {
    matches!(
        ins.op(),
        Op::Bra | Op::Brx | Op::Jmp | Op::Jmx | Op::Call | Op::Ret | Op::Bssy | Op::Lepc
    )
}

/// Whether `ins` may write memory of any kind.
pub(super) fn stores(ins: &Instr) -> bool {
    let b = ins.base();
    b.starts_with("ST") || b.starts_with("ATOM") || b.starts_with("RED") || may_store_local(ins)
}

pub(super) fn parse_imm32(t: &str) -> Option<i64> {
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

pub(super) fn parse_hex(t: &str) -> Option<u64> {
    u64::from_str_radix(t.strip_prefix("0x")?, 16).ok()
}

/// How a `CALL` is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CallKind {
    /// A function of the section.
    Direct(usize),
    /// `CALL.REL.NOINC` to a label inside the function: a jump.
    Jump(u64),
    /// `CALL.REL Rx`: any sub-function of the section.
    Indirect,
    /// `CALL.ABS`, an external callee: unknown code.
    Unknown,
}

pub(super) fn call_kind(ins: &Instr, f: &Function, names: &HashMap<&str, usize>) -> CallKind {
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

pub(super) fn hexo(o: Option<u64>) -> String {
    o.map_or_else(|| "nowhere".to_string(), |t| format!("{t:#x}"))
}

pub(super) fn operands_text(ins: &Instr) -> String {
    ins.operands
        .iter()
        .map(|o| o.text.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
