//! Where an instruction's general registers lie in its 128 bits, so they can be renamed by
//! patching: the destination in bits 16-23 and sources in 24-31, 32-39 and 64-71
//! (docs/sass.md §Fields). Bits 32-39 hold a register only in some forms: an
//! immediate, a constant-bank operand or a uniform register may sit there instead (ALU
//! forms 2-7; `desc[URx]` of `LDG`, the UR of `STS [R+UR]`). A field is taken as a register
//! only when nothing else the decoder printed can be there; an instruction whose registers
//! cannot all be placed unambiguously is *pinned*: its registers keep their numbers. The
//! checker re-reads the result through nvdisasm, so a wrong guess is rejected, never shipped.

use crate::sass::Op;
use crate::sass::encode::{self, RegField};
use crate::sass::ir::{Instr, OperandKind, RZ};

/// The fields of one instruction that hold a general register, with the register.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RegFields {
    pub(crate) fields: Vec<(RegField, u8)>,
    /// Not every register could be placed: rename nothing.
    pub(crate) pinned: bool,
}

/// The base registers (first of each tuple) the instruction names, RZ excluded, with
/// whether each is written (destination field) or read.
fn bases(ins: &Instr) -> (Vec<u8>, Vec<u8>) {
    let mut written = Vec::new();
    let mut read = Vec::new();
    for o in &ins.operands {
        match &o.kind {
            OperandKind::Reg(r) if *r != RZ => {
                if o.role.writes() {
                    written.push(*r);
                }
                if o.role.reads() {
                    read.push(*r);
                }
            }
            OperandKind::Addr { reg: Some(r), .. } | OperandKind::Const { reg: Some(r), .. }
                if *r != RZ =>
            {
                read.push(*r)
            }
            _ => {}
        }
    }
    (written, read)
}

/// Numbers of the uniform registers the instruction names (a GPR field holding one of these
/// may be that uniform register instead).
fn uniform_numbers(ins: &Instr) -> Vec<u8> {
    let mut out = Vec::new();
    for o in &ins.operands {
        match &o.kind {
            OperandKind::UReg(u) => out.push(*u),
            OperandKind::Addr { ureg, desc, .. } => out.extend(ureg.iter().chain(desc.iter())),
            OperandKind::Const { ureg: Some(u), .. } => out.push(*u),
            _ => {}
        }
    }
    out
}

/// The register fields of `ins`.
pub(crate) fn reg_fields(ins: &Instr) -> RegFields {
    let (written, read) = bases(ins);
    let uniform = uniform_numbers(ins);
    let memory = ins
        .operands
        .iter()
        .any(|o| matches!(o.kind, OperandKind::Addr { .. }));
    // ALU form (bits 9-11): bits 32-39 are the B register only in form 1; in the others
    // they hold an immediate, a constant-bank offset or a uniform register (§6.1).
    let alu_b_is_reg = (encode::opcode(ins.raw) >> 9) & 7 == 1;
    // `MOV Rd, Rs` has no A operand; ptxas leaves 0 in its bits.
    let no_a = ins.op() == Op::Mov;
    let mut fields = Vec::new();
    let mut colliding: Vec<u8> = Vec::new();
    let d = encode::reg(ins.raw, RegField::Dst);
    if d != RZ && written.contains(&d) {
        fields.push((RegField::Dst, d));
    }
    for f in [RegField::A, RegField::B, RegField::C] {
        let v = encode::reg(ins.raw, f);
        if v == RZ || !read.contains(&v) || (f == RegField::A && no_a) {
            continue;
        }
        if f == RegField::B && !memory && !alu_b_is_reg {
            continue;
        }
        // Uniform operands sit in bits 32-39 or 64-71 (§6.1, §6.4), never in 24-31.
        if f != RegField::A && uniform.contains(&v) {
            colliding.push(v);
        } else {
            fields.push((f, v));
        }
    }
    // A field holding a number that is both a uniform register and a general register of the
    // instruction is the uniform register when that general register already sits in a sure
    // field (`LDG R47, desc[UR6][R6.64]`: R6 in bits 24-31, UR6 in 32-39); otherwise it
    // cannot be told apart.
    let ambiguous = colliding
        .iter()
        .any(|&v| !fields.iter().any(|&(f, r)| r == v && f != RegField::Dst));
    let placed = |r: u8, dst: bool| {
        fields
            .iter()
            .any(|&(f, v)| v == r && ((f == RegField::Dst) == dst))
    };
    let pinned = ambiguous
        || written.iter().any(|&r| !placed(r, true))
        || read.iter().any(|&r| !placed(r, false));
    RegFields { fields, pinned }
}

/// `raw` with each register field renamed by `f` (called with the old register).
pub(crate) fn rename(raw: u128, fields: &RegFields, f: impl Fn(u8) -> u8) -> u128 {
    fields
        .fields
        .iter()
        .fold(raw, |w, &(field, r)| encode::set_reg(w, field, f(r)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Family;
    use crate::sass::control::Control;
    use crate::sass::operands;

    /// An instruction from ptxas 13.5's words and nvdisasm's text of it.
    fn ins(lo: u64, hi: u64, opcode: &str, ops: &str, family: Family) -> Instr {
        let mut i = Instr {
            offset: 0,
            raw: (u128::from(hi) << 64) | u128::from(lo),
            opcode: opcode.into(),
            predicate: None,
            operands: operands::parse(ops).unwrap(),
            ctrl: Control::default(),
            target: None,
            targets: Vec::new(),
            callee: None,
            unknown: false,
        };
        i.unknown = !operands::apply(family, &mut i);
        i
    }

    #[test]
    fn registers_are_told_from_uniform_registers_and_immediates() {
        // sm_90 `LDG.E R47, desc[UR6][R6.64]`: R6 in bits 24-31, UR6 in 32-39.
        let ldg = ins(
            0x0000_0006_062f_7981,
            0x000e_a800_0c1e_1900,
            "LDG.E",
            "R47, desc[UR6][R6.64]",
            Family::Hopper,
        );
        let f = reg_fields(&ldg);
        assert!(!f.pinned, "{f:?}");
        assert_eq!(f.fields, vec![(RegField::Dst, 47), (RegField::A, 6)]);
        let w = rename(ldg.raw, &f, |r| r + 1);
        assert_eq!(encode::reg(w, RegField::Dst), 48);
        assert_eq!(encode::reg(w, RegField::A), 7);
        assert_eq!(encode::reg(w, RegField::B), 6, "the uniform register stays");
        // sm_90 `IMAD R11, R0, UR4, R11` (form 6: B is a uniform register).
        let imad = ins(
            0x0000_0004_000b_7c24,
            0x001f_e200_0f8e_020b,
            "IMAD",
            "R11, R0, UR4, R11",
            Family::Hopper,
        );
        let f = reg_fields(&imad);
        assert!(!f.pinned, "{f:?}");
        assert!(!f.fields.iter().any(|&(x, _)| x == RegField::B), "{f:?}");
        // `FFMA R11, R2, R5, 3` (form 2: the immediate in 32-63, B moved to 64-71).
        let ffma = ins(
            0x4040_0000_020b_7423,
            0x004f_e400_0000_0005,
            "FFMA",
            "R11, R2, R5, 3",
            Family::Turing,
        );
        let f = reg_fields(&ffma);
        assert_eq!(
            f.fields,
            vec![(RegField::Dst, 11), (RegField::A, 2), (RegField::C, 5)]
        );
        // `STG.E desc[UR4][R6.64+0x14], R11`: data in 32-39, UR4 in 64-71.
        let stg = ins(
            0x0000_140b_0600_7986,
            0x000f_e800_0c10_1904,
            "STG.E",
            "desc[UR4][R6.64+0x14], R11",
            Family::Hopper,
        );
        let f = reg_fields(&stg);
        assert!(!f.pinned, "{f:?}");
        assert_eq!(f.fields, vec![(RegField::A, 6), (RegField::B, 11)]);
    }

    #[test]
    fn a_register_that_cannot_be_placed_pins_the_instruction() {
        // The same STG with data R4 and UR4: bits 64-71 hold 4, which could be either.
        let stg = ins(
            0x0000_1404_0600_7986,
            0x000f_e800_0c10_1904,
            "STG.E",
            "desc[UR4][R6.64+0x14], R4",
            Family::Hopper,
        );
        let f = reg_fields(&stg);
        assert!(f.pinned || f.fields.contains(&(RegField::B, 4)), "{f:?}");
        // A register the decoder lists but no field holds.
        let mut odd = stg.clone();
        odd.raw = encode::set_reg(odd.raw, RegField::B, 9);
        assert!(reg_fields(&odd).pinned);
    }
}
