//! Operand tables, per architecture family: for each opcode and modifier, which operands are
//! written and read and how many registers each covers. Data, not code; an opcode or form not
//! here is unknown and its registers are pinned.
//!
//! Checked against `nvdisasm -plr` (its per-register use/assign columns and live counts) on
//! the kernels of `tests/kernels/sass/` for sm_75, sm_80, sm_86, sm_89 and sm_90.

use super::ir::{Instr, Operand, OperandKind, Role};

/// Architecture families whose operand rules differ (a fact of [`crate::arch`]).
pub use crate::arch::Family;

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
    pub mnemonic: &'static str,
    pub with: &'static [&'static str],
    pub dests: Dests,
    pub widths: Widths,
}

const fn r(
    mnemonic: &'static str,
    with: &'static [&'static str],
    dests: Dests,
    widths: Widths,
) -> Rule {
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
    r("IMAD", &["WIDE"], First, List(&[2, 1, 1, 2])),
    r("IMAD", &["HI"], First, List(&[1, 1, 1, 2])),
    r("IMAD", &[], First, One),
    r("UIMAD", &["WIDE"], First, List(&[2, 1, 1, 2])),
    r("UIMAD", &[], First, One),
    r("IADD3", &[], First, One),
    r("UIADD3", &[], First, One),
    r("IADD", &[], First, One),
    r("VIADD", &[], First, One),
    r("VIADDMNMX", &[], First, One),
    r("VIMNMX", &[], First, One),
    r("VIMNMX3", &[], First, One),
    r("IABS", &[], First, One),
    r("IMNMX", &[], First, One),
    r("UIMNMX", &[], First, One),
    r("LEA", &[], First, One),
    r("ULEA", &[], First, One),
    r("LOP3", &[], First, One),
    r("ULOP3", &[], First, One),
    r("LOP", &[], First, One),
    r("ULOP", &[], First, One),
    r("SHF", &[], First, One),
    r("USHF", &[], First, One),
    r("SHL", &[], First, One),
    r("SHR", &[], First, One),
    r("USHL", &[], First, One),
    r("USHR", &[], First, One),
    r("PRMT", &[], First, One),
    r("UPRMT", &[], First, One),
    r("SGXT", &[], First, One),
    r("USGXT", &[], First, One),
    r("BMSK", &[], First, One),
    r("UBMSK", &[], First, One),
    r("BREV", &[], First, One),
    r("UBREV", &[], First, One),
    r("FLO", &[], First, One),
    r("UFLO", &[], First, One),
    r("POPC", &[], First, One),
    r("UPOPC", &[], First, One),
    r("IDP", &[], First, One),
    r("VABSDIFF", &[], First, One),
    r("VABSDIFF4", &[], First, One),
    r("SEL", &[], First, One),
    r("USEL", &[], First, One),
    r("FSEL", &[], First, One),
    r("MOV", &[], First, One),
    r("UMOV", &[], First, One),
    r("S2R", &[], First, One),
    r("S2UR", &[], First, One),
    r("CS2R", &["32"], First, One),
    r("CS2R", &[], First, List(&[2])),
    r("R2UR", &[], First, One),
    r("R2P", &[], First, One),
    r("P2R", &[], First, One),
    r("UP2UR", &[], First, One),
    r("PLOP3", &[], Two, One),
    r("UPLOP3", &[], Two, One),
    r("ISETP", &[], Two, One),
    r("UISETP", &[], Two, One),
    r("FSETP", &[], Two, One),
    r("HSETP2", &[], Two, One),
    r("DSETP", &[], Two, All2),
    r("PSETP", &[], Two, One),
    r("FSET", &[], First, One),
    r("ISET", &[], First, One),
    r("FCHK", &[], OneDest, One),
    r("LEPC", &[], First, List(&[2])),
    r("VOTE", &[], AllButLast, One),
    r("VOTEU", &[], AllButLast, One),
    r("MATCH", &["U64"], First, List(&[1, 2])),
    r("MATCH", &[], First, One),
    r("REDUX", &[], First, One),
    r("SHFL", &[], First, One),
    r("BMOV", &["64"], First, List(&[2, 2])),
    r("BMOV", &[], First, One),
    // Floating point.
    r("FADD", &[], First, One),
    r("FMUL", &[], First, One),
    r("FFMA", &[], First, One),
    r("FMNMX", &[], First, One),
    r("FSWZADD", &[], First, One),
    r("MUFU", &[], First, One),
    r("HADD2", &[], First, One),
    r("HMUL2", &[], First, One),
    r("HFMA2", &[], First, One),
    r("HMNMX2", &[], First, One),
    r("DADD", &[], First, All2),
    r("DMUL", &[], First, All2),
    r("DFMA", &[], First, All2),
    r("DMNMX", &[], First, All2),
    r("F2F", &[], First, Convert),
    r("F2I", &[], First, Convert),
    r("I2F", &[], First, Convert),
    r("I2FP", &[], First, One),
    r("F2IP", &[], First, One),
    r("F2FP", &[], First, One),
    r("FRND", &[], First, Convert),
    r("I2I", &[], First, One),
    // Tensor cores: D, A, B, C.
    r("HMMA", &["16816", "F32"], First, List(&[4, 4, 2, 4])),
    r("HMMA", &["16816", "F16"], First, List(&[2, 4, 2, 2])),
    // TF32 m16n8k8: A four registers, B two (nvdisasm -plr).
    r("HMMA", &["1688", "F32", "TF32"], First, List(&[4, 4, 2, 4])),
    r("HMMA", &["1688", "F32"], First, List(&[4, 2, 1, 4])),
    r("HMMA", &["1688", "F16"], First, List(&[2, 2, 1, 2])),
    r("IMMA", &["16832"], First, List(&[4, 4, 2, 4])),
    r("IMMA", &["16816"], First, List(&[4, 2, 1, 4])),
    r("IMMA", &["8816"], First, List(&[2, 1, 1, 2])),
    r("IMMA", &["8832"], First, List(&[2, 1, 1, 2])),
    // D and C are two doubles (four registers), A and B one (nvdisasm -plr).
    r("DMMA", &["884"], First, List(&[4, 2, 2, 4])),
    r("DMMA", &["8x8x4"], First, List(&[4, 2, 2, 4])),
    // Memory.
    r("LDG", &[], First, Mem),
    r("LD", &[], First, Mem),
    r("LDS", &[], First, Mem),
    r("LDL", &[], First, Mem),
    r("LDC", &[], First, Mem),
    r("ULDC", &[], First, Mem),
    // ldmatrix: `.M88.4`/`.MT88.4` write four registers, `.2` two, `.1` one.
    r("LDSM", &["4"], First, List(&[4, 1])),
    r("LDSM", &["2"], First, List(&[2, 1])),
    r("LDSM", &[], First, One),
    r("STG", &[], NoDest, Mem),
    r("ST", &[], NoDest, Mem),
    r("STS", &[], NoDest, Mem),
    // stmatrix: the data is four, two or one registers, after the address.
    r("STSM", &["4"], NoDest, List(&[1, 4])),
    r("STSM", &["2"], NoDest, List(&[1, 2])),
    r("STSM", &[], NoDest, One),
    r("STL", &[], NoDest, Mem),
    r("ATOMG", &[], First, Mem),
    r("ATOM", &[], First, Mem),
    r("ATOMS", &[], First, Mem),
    r("RED", &[], NoDest, Mem),
    r("REDG", &[], NoDest, Mem),
    r("LDGSTS", &[], NoDest, One),
    r("LDGDEPBAR", &[], NoDest, One),
    r("DEPBAR", &[], NoDest, One),
    r("CCTL", &[], NoDest, One),
    r("MEMBAR", &[], NoDest, One),
    r("ERRBAR", &[], NoDest, One),
    r("CGAERRBAR", &[], NoDest, One),
    r("FENCE", &[], NoDest, One),
    // Control.
    r("BRA", &[], NoDest, One),
    r("BRX", &[], NoDest, List(&[2])),
    r("JMP", &[], NoDest, One),
    r("JMX", &[], NoDest, List(&[2])),
    r("CALL", &[], NoDest, List(&[2])),
    r("RET", &[], NoDest, List(&[2])),
    r("EXIT", &[], NoDest, One),
    r("BSSY", &[], NoDest, One),
    r("BSYNC", &[], NoDest, One),
    r("BREAK", &[], NoDest, One),
    r("WARPSYNC", &[], NoDest, One),
    r("BAR", &[], NoDest, One),
    r("NOP", &[], NoDest, One),
    r("YIELD", &[], NoDest, One),
    r("NANOSLEEP", &[], NoDest, One),
    r("BPT", &[], NoDest, One),
    r("KILL", &[], NoDest, One),
];

/// The rule for an opcode (`IMAD.WIDE.U32`), if any.
pub fn rule(_family: Family, opcode: &str) -> Option<&'static Rule> {
    let mut parts = opcode.split('.');
    let base = parts.next()?;
    let mods: Vec<&str> = parts.collect();
    RULES
        .iter()
        .find(|r| r.mnemonic == base && r.with.iter().all(|w| mods.contains(w)))
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
fn mem_width(opcode: &str) -> u8 {
    let mods: Vec<&str> = opcode.split('.').skip(1).collect();
    if mods.contains(&"128") {
        4
    } else if mods.contains(&"64") || mods.contains(&"F64") {
        2
    } else {
        1
    }
}

/// Destination and source widths of a conversion from its type modifiers.
fn convert_widths(opcode: &str) -> (u8, u8) {
    let mut parts = opcode.split('.');
    let base = parts.next().unwrap_or("");
    let types: Vec<&str> = parts
        .filter(|m| {
            matches!(
                *m,
                "F16" | "F32" | "F64" | "S8" | "U8" | "S16" | "U16" | "S32" | "U32" | "S64" | "U64"
            )
        })
        .collect();
    let is64 = |t: &str| t.ends_with("64");
    let float = |t: &str| t.starts_with('F');
    match base {
        // F2I.<int dst>.<float src>: either may be missing (S32, F32 by default).
        "F2I" => {
            let d = types.iter().find(|t| !float(t)).is_some_and(|t| is64(t));
            let s = types.iter().find(|t| float(t)).is_some_and(|t| is64(t));
            (1 + d as u8, 1 + s as u8)
        }
        "I2F" => {
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
    let Some(rule) = rule(family, &ins.opcode) else {
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
            if ins.opcode.split('.').any(|m| m == "E") {
                for op in ops.iter_mut() {
                    if let OperandKind::Addr {
                        reg,
                        reg_width,
                        ureg,
                        ureg_width,
                        ..
                    } = &mut op.kind
                    {
                        if reg.is_some() {
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

    /// Tuple widths found wrong against `nvdisasm -plr` (tests/oracle.rs checks them all).
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
