//! Operand tables, per architecture family: for each opcode and modifier, which operands are
//! written and read and how many registers each covers. Data, not code; an opcode or form not
//! here is unknown and its registers are pinned.
//!
//! Checked against `nvdisasm -plr` (its per-register use/assign columns and live counts) on
//! the kernels of `tests/kernels/sass/` for sm_75, sm_80, sm_86, sm_89 and sm_90.

use super::ir::{Instr, Operand, OperandKind, Role};
use super::opcode::{Op, Opcode};
use crate::arch::Family;

/// How an opcode's leading operands are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dests {
    /// Nothing written (stores, branches, barriers).
    None,
    /// Leading predicates (`PT` of `SHFL`, `ATOMG.CAS`), then the first register, then the
    /// predicates right after it (`IADD3 R0, P0, ...`, `LEA R0, P0, ...`).
    First,
    /// The first operand only (`FCHK P0, R3, R4`).
    One,
    /// The first two operands (predicates of `ISETP`, `PLOP3`).
    Two,
    /// All but the last (`VOTE.ANY R0, PT, P0` and `VOTE.ALL P1, P0` read only the last
    /// predicate; checked against `nvdisasm -plr`'s PRED column).
    AllButLast,
}

/// Register width of each operand position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Widths {
    /// Every register operand is 32-bit.
    One,
    /// Every register operand is a 64-bit pair (`DADD`, `DFMA`, `DSETP`).
    All2,
    /// Data width from `.64`/`.128` on the data operands (loads, stores, atomics).
    Mem,
    /// Conversions: destination and source width from the type modifiers.
    Convert,
    /// Explicit widths per operand position, in order (`IMAD.WIDE`, MMA); only register
    /// operands take theirs.
    List(&'static [u8]),
}

/// One rule: mnemonic (without modifiers), optional modifiers that must all be present, and
/// what the operands are.
pub struct Rule {
    pub(crate) mnemonic: Op,
    pub(crate) with: &'static [&'static str],
    pub(crate) dests: Dests,
    pub(crate) widths: Widths,
}

const fn r(mnemonic: Op, with: &'static [&'static str], dests: Dests, widths: Widths) -> Rule {
    Rule {
        mnemonic,
        with,
        dests,
        widths,
    }
}

use Dests::{AllButLast, First, None as NoDest, One as OneDest, Two};
use Widths::{All2, Convert, List, Mem, One};

/// Rules for sm_75 to sm_90; the first that matches wins (more specific rules first).
pub static RULES: &[Rule] = &[
    // Integer and logic.
    r(Op::Imad, &["WIDE"], First, List(&[2, 1, 1, 2])),
    r(Op::Imad, &["HI"], First, List(&[1, 1, 1, 2])),
    r(Op::Imad, &[], First, One),
    r(Op::Uimad, &["WIDE"], First, List(&[2, 1, 1, 2])),
    r(Op::Uimad, &[], First, One),
    r(Op::Iadd3, &[], First, One),
    r(Op::Uiadd3, &[], First, One),
    r(Op::Iadd, &[], First, One),
    r(Op::Viadd, &[], First, One),
    r(Op::Viaddmnmx, &[], First, One),
    r(Op::Vimnmx, &[], First, One),
    r(Op::Vimnmx3, &[], First, One),
    r(Op::Iabs, &[], First, One),
    r(Op::Imnmx, &[], First, One),
    r(Op::Uimnmx, &[], First, One),
    r(Op::Lea, &[], First, One),
    r(Op::Ulea, &[], First, One),
    r(Op::Lop3, &[], First, One),
    r(Op::Ulop3, &[], First, One),
    r(Op::Lop, &[], First, One),
    r(Op::Ulop, &[], First, One),
    r(Op::Shf, &[], First, One),
    r(Op::Ushf, &[], First, One),
    r(Op::Shl, &[], First, One),
    r(Op::Shr, &[], First, One),
    r(Op::Ushl, &[], First, One),
    r(Op::Ushr, &[], First, One),
    r(Op::Prmt, &[], First, One),
    r(Op::Uprmt, &[], First, One),
    r(Op::Sgxt, &[], First, One),
    r(Op::Usgxt, &[], First, One),
    r(Op::Bmsk, &[], First, One),
    r(Op::Ubmsk, &[], First, One),
    r(Op::Brev, &[], First, One),
    r(Op::Ubrev, &[], First, One),
    r(Op::Flo, &[], First, One),
    r(Op::Uflo, &[], First, One),
    r(Op::Popc, &[], First, One),
    r(Op::Upopc, &[], First, One),
    r(Op::Idp, &[], First, One),
    r(Op::Vabsdiff, &[], First, One),
    r(Op::Vabsdiff4, &[], First, One),
    r(Op::Sel, &[], First, One),
    r(Op::Usel, &[], First, One),
    r(Op::Fsel, &[], First, One),
    r(Op::Mov, &[], First, One),
    r(Op::Umov, &[], First, One),
    r(Op::S2r, &[], First, One),
    r(Op::S2ur, &[], First, One),
    r(Op::Cs2r, &["32"], First, One),
    r(Op::Cs2r, &[], First, List(&[2])),
    r(Op::R2ur, &[], First, One),
    r(Op::R2p, &[], First, One),
    r(Op::P2r, &[], First, One),
    r(Op::Up2ur, &[], First, One),
    r(Op::Plop3, &[], Two, One),
    r(Op::Uplop3, &[], Two, One),
    r(Op::Isetp, &[], Two, One),
    r(Op::Uisetp, &[], Two, One),
    r(Op::Fsetp, &[], Two, One),
    r(Op::Hsetp2, &[], Two, One),
    r(Op::Dsetp, &[], Two, All2),
    r(Op::Psetp, &[], Two, One),
    r(Op::Fset, &[], First, One),
    r(Op::Iset, &[], First, One),
    r(Op::Fchk, &[], OneDest, One),
    r(Op::Lepc, &[], First, List(&[2])),
    r(Op::Vote, &[], AllButLast, One),
    r(Op::Voteu, &[], AllButLast, One),
    r(Op::Match, &["U64"], First, List(&[1, 2])),
    r(Op::Match, &[], First, One),
    r(Op::Redux, &[], First, One),
    r(Op::Shfl, &[], First, One),
    r(Op::Bmov, &["64"], First, List(&[2, 2])),
    r(Op::Bmov, &[], First, One),
    // Floating point.
    r(Op::Fadd, &[], First, One),
    r(Op::Fmul, &[], First, One),
    r(Op::Ffma, &[], First, One),
    r(Op::Fmnmx, &[], First, One),
    r(Op::Fswzadd, &[], First, One),
    r(Op::Mufu, &[], First, One),
    r(Op::Hadd2, &[], First, One),
    r(Op::Hmul2, &[], First, One),
    r(Op::Hfma2, &[], First, One),
    r(Op::Hmnmx2, &[], First, One),
    r(Op::Dadd, &[], First, All2),
    r(Op::Dmul, &[], First, All2),
    r(Op::Dfma, &[], First, All2),
    r(Op::Dmnmx, &[], First, All2),
    r(Op::F2f, &[], First, Convert),
    r(Op::F2i, &[], First, Convert),
    r(Op::I2f, &[], First, Convert),
    r(Op::I2fp, &[], First, One),
    r(Op::F2ip, &[], First, One),
    r(Op::F2fp, &[], First, One),
    r(Op::Frnd, &[], First, Convert),
    r(Op::I2i, &[], First, One),
    // Tensor cores: D, A, B, C.
    r(Op::Hmma, &["16816", "F32"], First, List(&[4, 4, 2, 4])),
    r(Op::Hmma, &["16816", "F16"], First, List(&[2, 4, 2, 2])),
    // TF32 m16n8k8: A four registers, B two (nvdisasm -plr).
    r(
        Op::Hmma,
        &["1688", "F32", "TF32"],
        First,
        List(&[4, 4, 2, 4]),
    ),
    // TF32 m16n8k4 (wmma m16n16k8 with precision::tf32): A two registers, B one.
    r(
        Op::Hmma,
        &["1684", "F32", "TF32"],
        First,
        List(&[4, 2, 1, 4]),
    ),
    r(Op::Hmma, &["1688", "F32"], First, List(&[4, 2, 1, 4])),
    r(Op::Hmma, &["1688", "F16"], First, List(&[2, 2, 1, 2])),
    r(Op::Imma, &["16832"], First, List(&[4, 4, 2, 4])),
    r(Op::Imma, &["16816"], First, List(&[4, 2, 1, 4])),
    r(Op::Imma, &["8816"], First, List(&[2, 1, 1, 2])),
    r(Op::Imma, &["8832"], First, List(&[2, 1, 1, 2])),
    // D and C are two doubles (four registers), A and B one (nvdisasm -plr).
    r(Op::Dmma, &["884"], First, List(&[4, 2, 2, 4])),
    r(Op::Dmma, &["8x8x4"], First, List(&[4, 2, 2, 4])),
    // Memory.
    r(Op::Ldg, &[], First, Mem),
    r(Op::Ld, &[], First, Mem),
    r(Op::Lds, &[], First, Mem),
    r(Op::Ldl, &[], First, Mem),
    r(Op::Ldc, &[], First, Mem),
    r(Op::Uldc, &[], First, Mem),
    // ldmatrix: `.M88.4`/`.MT88.4` write four registers, `.2` two, `.1` one.
    r(Op::Ldsm, &["4"], First, List(&[4, 1])),
    r(Op::Ldsm, &["2"], First, List(&[2, 1])),
    r(Op::Ldsm, &[], First, One),
    r(Op::Stg, &[], NoDest, Mem),
    r(Op::St, &[], NoDest, Mem),
    r(Op::Sts, &[], NoDest, Mem),
    // stmatrix: the data is four, two or one registers, after the address.
    r(Op::Stsm, &["4"], NoDest, List(&[1, 4])),
    r(Op::Stsm, &["2"], NoDest, List(&[1, 2])),
    r(Op::Stsm, &[], NoDest, One),
    r(Op::Stl, &[], NoDest, Mem),
    r(Op::Atomg, &[], First, Mem),
    r(Op::Atom, &[], First, Mem),
    r(Op::Atoms, &[], First, Mem),
    r(Op::Red, &[], NoDest, Mem),
    r(Op::Redg, &[], NoDest, Mem),
    r(Op::Ldgsts, &[], NoDest, One),
    r(Op::Ldgdepbar, &[], NoDest, One),
    r(Op::Depbar, &[], NoDest, One),
    r(Op::Cctl, &[], NoDest, One),
    r(Op::Membar, &[], NoDest, One),
    r(Op::Errbar, &[], NoDest, One),
    r(Op::Cgaerrbar, &[], NoDest, One),
    r(Op::Fence, &[], NoDest, One),
    // Control.
    r(Op::Bra, &[], NoDest, One),
    r(Op::Brx, &[], NoDest, List(&[2])),
    r(Op::Jmp, &[], NoDest, One),
    r(Op::Jmx, &[], NoDest, List(&[2])),
    r(Op::Call, &[], NoDest, List(&[2])),
    r(Op::Ret, &[], NoDest, List(&[2])),
    r(Op::Exit, &[], NoDest, One),
    r(Op::Bssy, &[], NoDest, One),
    r(Op::Bsync, &[], NoDest, One),
    r(Op::Break, &[], NoDest, One),
    r(Op::Warpsync, &[], NoDest, One),
    r(Op::Bar, &[], NoDest, One),
    // `B2R.RESULT R5`, `B2R.RESULT RZ, P0`: a barrier reduction's result (nvdisasm -plr).
    r(Op::B2r, &[], First, One),
    r(Op::Nop, &[], NoDest, One),
    r(Op::Yield, &[], NoDest, One),
    r(Op::Nanosleep, &[], NoDest, One),
    r(Op::Bpt, &[], NoDest, One),
    r(Op::Kill, &[], NoDest, One),
];

/// The rule for a parsed opcode, if any ([`Op::Other`] has none).
pub fn rule_for(_family: Family, opcode: &Opcode) -> Option<&'static Rule> {
    let op = opcode.op();
    RULES
        .iter()
        .find(|r| r.mnemonic == op && r.with.iter().all(|w| opcode.has_mod(w)))
}

/// Parse nvdisasm's operand text (`R2, [R4.64+0x10], c[0x0][0x160]`) into operands, all
/// `Read` with width 1; [`apply`] gives roles and widths.
pub fn parse(text: &str) -> Option<Vec<Operand>> {
    split_top(text)
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(parse_one)
        .collect()
}

fn split_top(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => {
                depth -= 1;
                // `LDGSTS [R7][R2.64]`: two addresses with no comma between them (but
                // `desc[UR4][R2.64]` and `c[0x0][0x10]` are one operand each).
                if depth == 0
                    && c == ']'
                    && text[start..].trim_start().starts_with('[')
                    && text[i + 1..].starts_with('[')
                {
                    out.push(text[start..=i].trim());
                    start = i + 1;
                }
            }
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out
}

fn num(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = match s.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => s.parse().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// `R12` → 12, `RZ` → 255.
fn reg(s: &str) -> Option<u8> {
    if s == "RZ" {
        return Some(255);
    }
    s.strip_prefix('R')?.parse().ok()
}

fn ureg(s: &str) -> Option<u8> {
    if s == "URZ" {
        return Some(63);
    }
    s.strip_prefix("UR")?.parse().ok()
}

fn parse_one(text: &str) -> Option<Operand> {
    let mut reuse = false;
    let mut core = text.trim();
    if let Some(c) = core.strip_suffix(".reuse") {
        reuse = true;
        core = c;
    }
    let kind = parse_kind(core)?;
    Some(Operand {
        kind,
        role: Role::Read,
        width: 1,
        reuse,
        text: text.trim().to_string(),
    })
}

fn parse_kind(core: &str) -> Option<OperandKind> {
    // Memory: [..], desc[UR][..], c[..][..], cx[..][..].
    if let Some(rest) = core.strip_prefix("desc[") {
        let (d, addr) = rest.split_once(']')?;
        let desc = ureg(d.trim())?;
        let mut k = parse_addr(addr.trim().strip_prefix('[')?.strip_suffix(']')?)?;
        if let OperandKind::Addr { desc: dd, .. } = &mut k {
            *dd = Some(desc);
        }
        return Some(k);
    }
    if let Some(inner) = core.strip_prefix('[').and_then(|c| c.strip_suffix(']')) {
        return parse_addr(inner);
    }
    for prefix in ["c[", "cx["] {
        if let Some(rest) = core.strip_prefix(prefix) {
            let (bank, rest) = rest.split_once(']')?;
            let inner = rest.trim().strip_prefix('[')?.strip_suffix(']')?;
            let mut offset = 0;
            let mut r = None;
            let mut u = None;
            for part in inner.split('+') {
                let part = part.trim();
                if part.is_empty() {
                    continue;
                }
                if let Some(x) = ureg(part) {
                    u = Some(x);
                } else if let Some(x) = reg(part) {
                    r = Some(x);
                } else {
                    offset += num(part)?;
                }
            }
            return Some(OperandKind::Const {
                bank: bank.to_string(),
                offset,
                reg: r,
                ureg: u,
            });
        }
    }
    // Strip the unary decorations: -R, |R|, ~R, !P, -|R|.
    let neg = core.starts_with('!');
    let stripped = core.trim_start_matches(['-', '~', '!', '|']);
    let stripped = stripped.trim_end_matches('|');
    // Register with a suffix (.H1, .B2, .F32, .reuse already gone, .X4).
    let name = stripped.split('.').next().unwrap_or(stripped);
    if let Some(r) = reg(name) {
        return Some(OperandKind::Reg(r));
    }
    if let Some(u) = ureg(name) {
        return Some(OperandKind::UReg(u));
    }
    if name == "PT" {
        return Some(OperandKind::Pred {
            index: 7,
            negated: neg,
        });
    }
    if name == "UPT" {
        return Some(OperandKind::UPred {
            index: 7,
            negated: neg,
        });
    }
    if let Some(i) = name.strip_prefix("UP").and_then(|n| n.parse().ok()) {
        return Some(OperandKind::UPred {
            index: i,
            negated: neg,
        });
    }
    if let Some(i) = name.strip_prefix('P').and_then(|n| n.parse().ok()) {
        return Some(OperandKind::Pred {
            index: i,
            negated: neg,
        });
    }
    if let Some(i) = name.strip_prefix('B').and_then(|n| n.parse().ok()) {
        return Some(OperandKind::Barrier(i));
    }
    if core.starts_with("SR") || core == "PR" || core == "UPR" {
        return Some(OperandKind::SpecialReg(core.to_string()));
    }
    let c0 = core.chars().next()?;
    if c0.is_ascii_digit()
        || matches!(c0, '-' | '+')
        || core.contains("INF")
        || core.contains("NAN")
    {
        return Some(OperandKind::Imm(core.to_string()));
    }
    let label = core.trim_start_matches('`').trim_start_matches('(');
    let label = label.trim_end_matches(')');
    Some(OperandKind::Label(label.to_string()))
}

fn parse_addr(inner: &str) -> Option<OperandKind> {
    let mut r = None;
    let mut width = 1;
    let mut u = None;
    let mut imm = 0;
    // `R2.64+UR4+-0x10` / `R2.U32+0x8` / `-0x4` / `UR4`
    let mut parts = Vec::new();
    let mut cur = String::new();
    for c in inner.chars() {
        if c == '+' {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    parts.push(cur);
    for part in parts {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let name = part.split('.').next().unwrap_or(part);
        if let Some(x) = ureg(name) {
            u = Some(x);
        } else if let Some(x) = reg(name) {
            r = Some(x);
            if part.ends_with(".64") {
                width = 2;
            }
        } else {
            imm += num(part)?;
        }
    }
    Some(OperandKind::Addr {
        reg: r,
        reg_width: width,
        ureg: u,
        ureg_width: 1,
        desc: None,
        imm,
    })
}

fn is_reg(k: &OperandKind) -> bool {
    matches!(k, OperandKind::Reg(_) | OperandKind::UReg(_))
}

fn is_pred(k: &OperandKind) -> bool {
    matches!(k, OperandKind::Pred { .. } | OperandKind::UPred { .. })
}

fn negated(k: &OperandKind) -> bool {
    matches!(
        k,
        OperandKind::Pred { negated: true, .. } | OperandKind::UPred { negated: true, .. }
    )
}

/// Width in registers of the data of a memory opcode: 1, 2 (`.64`) or 4 (`.128`).
fn mem_width(opcode: &Opcode) -> u8 {
    let mods: Vec<&str> = opcode.modifiers().collect();
    if mods.contains(&"128") {
        4
    } else if mods.contains(&"64") || mods.contains(&"F64") {
        2
    } else {
        1
    }
}

/// Destination and source widths of a conversion from its type modifiers.
fn convert_widths(opcode: &Opcode) -> (u8, u8) {
    let types: Vec<&str> = opcode
        .modifiers()
        .filter(|m| {
            matches!(
                *m,
                "F16" | "F32" | "F64" | "S8" | "U8" | "S16" | "U16" | "S32" | "U32" | "S64" | "U64"
            )
        })
        .collect();
    let is64 = |t: &str| t.ends_with("64");
    let float = |t: &str| t.starts_with('F');
    match opcode.op() {
        // F2I.<int dst>.<float src>: either may be missing (S32, F32 by default).
        Op::F2i => {
            let d = types.iter().find(|t| !float(t)).is_some_and(|t| is64(t));
            let s = types.iter().find(|t| float(t)).is_some_and(|t| is64(t));
            (1 + d as u8, 1 + s as u8)
        }
        Op::I2f => {
            let d = types.iter().find(|t| float(t)).is_some_and(|t| is64(t));
            let s = types.iter().find(|t| !float(t)).is_some_and(|t| is64(t));
            (1 + d as u8, 1 + s as u8)
        }
        // F2F.<dst>.<src>; FRND.F64 both.
        _ => {
            let d = types.first().is_some_and(|t| is64(t));
            let s = types.get(1).map_or(d, |t| is64(t));
            (1 + d as u8, 1 + s as u8)
        }
    }
}

/// Give the operands of `ins` their roles and widths from the table; false when no rule
/// covers it (operands stay `Read`, width 1, and the instruction is unknown).
pub fn apply(family: Family, ins: &mut Instr) -> bool {
    let Some(rule) = rule_for(family, &ins.opcode) else {
        return false;
    };
    let ops = &mut ins.operands;
    // Roles.
    let mut ndst = 0usize;
    match rule.dests {
        Dests::None => {}
        Dests::One => ndst = 1.min(ops.len()),
        Dests::Two => ndst = 2.min(ops.len()),
        Dests::AllButLast => ndst = ops.len().saturating_sub(1),
        Dests::First => {
            let mut i = 0;
            while i < ops.len() && is_pred(&ops[i].kind) {
                i += 1;
            }
            if i < ops.len()
                && (is_reg(&ops[i].kind) || matches!(ops[i].kind, OperandKind::Barrier(_)))
            {
                i += 1;
                while i < ops.len() && is_pred(&ops[i].kind) && !negated(&ops[i].kind) {
                    // IADD3/LEA carry-out and VOTE's predicate follow the register, but a
                    // trailing predicate *input* of a two-operand form (`SEL R, R, R, P`) is
                    // at the end, never right after the destination.
                    i += 1;
                }
            } else if i < ops.len() && matches!(ops[i].kind, OperandKind::SpecialReg(_)) {
                // R2P PR, R0, 0x7f
                i += 1;
            }
            ndst = i;
        }
    }
    for (i, op) in ops.iter_mut().enumerate() {
        if i < ndst {
            op.role = Role::Write;
        }
    }
    // Widths over register operands (R/UR, in order).
    let regs: Vec<usize> = (0..ops.len()).filter(|&i| is_reg(&ops[i].kind)).collect();
    match rule.widths {
        Widths::One => {}
        Widths::All2 => {
            for &i in &regs {
                ops[i].width = 2;
            }
        }
        Widths::List(ws) => {
            // By operand position, predicates not counted: `IMAD.WIDE R2, R4, 0x4, R2` and
            // `IMAD.WIDE.U32 R10, P0, R2, 0x10, R8` have their addend pair at position 3.
            for (op, &w) in ops.iter_mut().filter(|o| !is_pred(&o.kind)).zip(ws) {
                if is_reg(&op.kind) {
                    op.width = w;
                }
            }
        }
        Widths::Convert => {
            let (d, s) = convert_widths(&ins.opcode);
            for &i in &regs {
                ops[i].width = if ops[i].role.writes() { d } else { s };
            }
        }
        Widths::Mem => {
            let w = mem_width(&ins.opcode);
            for &i in &regs {
                ops[i].width = w;
            }
            // `.E`: a 64-bit generic/global address even where sm_75 prints `[R2]`; its
            // uniform part is a pair too (`RED.E.ADD [UR4], R4`, `LDG.E.U8 R0, [R4.64+UR4]`:
            // `nvdisasm -plr` shows UR4 and UR5 read).
            if ins.opcode.has_mod("E") {
                for op in ops.iter_mut() {
                    // `[R7.U32+UR4]`: a 32-bit register offset from a uniform pair.
                    let offset32 = op.text.contains(".U32");
                    if let OperandKind::Addr {
                        reg,
                        reg_width,
                        ureg,
                        ureg_width,
                        ..
                    } = &mut op.kind
                    {
                        if reg.is_some() && !offset32 {
                            *reg_width = 2;
                        }
                        if ureg.is_some() {
                            *ureg_width = 2;
                        }
                    }
                }
            }
        }
    }
    true
}

/// An sm_75-89 instruction at offset 0 with `ops` given their roles and widths by the
/// table, for unit tests.
#[cfg(test)]
pub(crate) fn test_instr(opcode: &str, ops: &str) -> Instr {
    let mut i = Instr {
        offset: 0,
        raw: 0,
        opcode: opcode.into(),
        predicate: None,
        operands: parse(ops).expect("parses"),
        ctrl: super::control::Control::default(),
        target: None,
        targets: Vec::new(),
        callee: None,
        unknown: false,
    };
    i.unknown = !apply(Family::Turing, &mut i);
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ins(opcode: &str, ops: &str) -> Instr {
        test_instr(opcode, ops)
    }

    #[test]
    fn parses_operand_forms() {
        let ops =
            parse("R2.reuse, -|R3|, c[0x0][0x160], desc[UR4][R2.64+0x10], !P0, 0x1f").unwrap();
        assert_eq!(ops[0].kind, OperandKind::Reg(2));
        assert!(ops[0].reuse);
        assert_eq!(ops[1].kind, OperandKind::Reg(3));
        assert!(matches!(
            ops[2].kind,
            OperandKind::Const { offset: 0x160, .. }
        ));
        assert!(matches!(
            ops[3].kind,
            OperandKind::Addr {
                reg: Some(2),
                reg_width: 2,
                desc: Some(4),
                imm: 0x10,
                ..
            }
        ));
        assert_eq!(
            ops[4].kind,
            OperandKind::Pred {
                index: 0,
                negated: true
            }
        );
        assert_eq!(ops[5].kind, OperandKind::Imm("0x1f".into()));
        // LDGSTS prints its two addresses with no comma.
        assert_eq!(parse("[R7][R2.64]").unwrap().len(), 2);
    }

    #[test]
    fn roles_and_widths() {
        let i = ins("IMAD.WIDE.U32", "R2, R4, 0x4, R6");
        assert_eq!(i.gpr_writes(), vec![2, 3]);
        assert_eq!(i.gpr_reads(), vec![4, 6, 7]);
        let i = ins("IMAD.WIDE.U32", "R10, P0, R2, 0x10, R8");
        assert_eq!(i.gpr_reads(), vec![2, 8, 9]);
        let i = ins("LDG.E.128.SYS", "R4, [R2]");
        assert_eq!(i.gpr_writes(), vec![4, 5, 6, 7]);
        assert_eq!(i.gpr_reads(), vec![2, 3]);
        let i = ins("STG.E.64", "[R2.64], R4");
        assert!(i.gpr_writes().is_empty());
        assert_eq!(i.gpr_reads(), vec![2, 3, 4, 5]);
        let i = ins("DFMA", "R4, R6, R8, R4");
        assert_eq!(i.gpr_writes(), vec![4, 5]);
        let i = ins("F2F.F64.F32", "R4, R3");
        assert_eq!((i.gpr_writes(), i.gpr_reads()), (vec![4, 5], vec![3]));
        let i = ins("I2F.U64", "R4, R2");
        assert_eq!((i.gpr_writes(), i.gpr_reads()), (vec![4], vec![2, 3]));
        let i = ins("ISETP.GE.AND", "P0, PT, R4, c[0x0][0x170], PT");
        assert!(i.gpr_writes().is_empty());
        let i = ins("HMMA.16816.F32", "R4, R8, R12, R4");
        assert_eq!(i.gpr_reads(), vec![8, 9, 10, 11, 12, 13, 4, 5, 6, 7]);
        assert!(ins("FOO.BAR", "R1").unknown);
        let i = ins("FCHK", "P0, R3, R4");
        assert!(i.gpr_writes().is_empty());
    }

    /// Tuple widths found wrong against `nvdisasm -plr` (tests/oracles/oracle.rs checks them all).
    #[test]
    fn tuple_widths_from_the_oracle() {
        let i = ins("LDSM.16.M88.4", "R8, [R6]");
        assert_eq!(
            (i.gpr_writes(), i.gpr_reads()),
            (vec![8, 9, 10, 11], vec![6])
        );
        let i = ins("LDSM.16.MT88.2", "R2, [R6+0x200]");
        assert_eq!(i.gpr_writes(), vec![2, 3]);
        assert_eq!(ins("LDSM.16.M88", "R2, [R6]").gpr_writes(), vec![2]);
        let i = ins("STSM.16.MT88.4", "[R2], R4");
        assert_eq!(i.gpr_reads(), vec![2, 4, 5, 6, 7]);
        let i = ins("DMMA.884", "R4, R8, R10, R4");
        assert_eq!(i.gpr_writes(), vec![4, 5, 6, 7]);
        assert_eq!(i.gpr_reads(), vec![8, 9, 10, 11, 4, 5, 6, 7]);
        let i = ins("HMMA.1688.F32.TF32", "R4, R8, R12, R4");
        assert_eq!(i.gpr_reads(), vec![8, 9, 10, 11, 12, 13, 4, 5, 6, 7]);
        let i = ins("HMMA.1684.F32.TF32", "R12, R16, R2, R12");
        assert_eq!(i.gpr_reads(), vec![16, 17, 2, 12, 13, 14, 15]);
        assert_eq!(i.gpr_writes(), vec![12, 13, 14, 15]);
        let i = ins("RED.E.ADD.STRONG.GPU", "[UR4], R4");
        assert!(matches!(
            i.operands[0].kind,
            OperandKind::Addr {
                ureg: Some(4),
                ureg_width: 2,
                ..
            }
        ));
    }
}
