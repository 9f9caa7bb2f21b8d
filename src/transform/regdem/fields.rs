//! Where an instruction's general registers lie in its 128 bits, so they can be renamed by
//! patching: the destination in bits 16-23 and sources in 24-31, 32-39 and 64-71
//! (reference/sass_formats.md §6.1). Bits 32-39 hold a register only in some forms: an
//! immediate, a constant-bank operand or a uniform register may sit there instead (§6.1, ALU
//! forms 2-7; `desc[URx]` of `LDG`, the UR of `STS [R+UR]`). A field is taken as a register
//! only when nothing else the decoder printed can be there; an instruction whose registers
//! cannot all be placed unambiguously is *pinned*: its registers keep their numbers. The
//! checker re-reads the result through nvdisasm, so a wrong guess is rejected, never shipped.

use crate::sass::encode::{self, RegField};
use crate::sass::ir::{Instr, OperandKind, RZ};

/// The fields of one instruction that hold a general register, with the register.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegFields {
    pub fields: Vec<(RegField, u8)>,
    /// Not every register could be placed: rename nothing.
    pub pinned: bool,
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
pub fn reg_fields(ins: &Instr) -> RegFields {
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
    let no_a = ins.base() == "MOV";
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
pub fn rename(raw: u128, fields: &RegFields, f: impl Fn(u8) -> u8) -> u128 {
    fields
        .fields
        .iter()
        .fold(raw, |w, &(field, r)| encode::set_reg(w, field, f(r)))
}
