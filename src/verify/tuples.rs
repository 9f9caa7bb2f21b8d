//! Register tuples must be aligned: an operand covering two registers starts at an even
//! register, one covering three or four at a multiple of four (the hardware's register-pair
//! and quad rule; `LDSM.16.M88.4 R15` is not an instruction the GPU can run, whatever its
//! data flow). Checked on the rewritten code of every section, independently of the values;
//! ptxas' own code satisfies it on every test kernel and arch (tests/oracles/oracle.rs).

use super::Rejection;
use crate::sass::ir::{Function, Instr, OperandKind, RZ};

/// The first misaligned tuple of `ins`, as (register file prefix, first register, width).
pub(crate) fn misaligned(ins: &Instr) -> Option<(&'static str, u8, u8)> {
    let bad = |r: u8, w: u8| match w {
        2 => !r.is_multiple_of(2),
        3 | 4 => !r.is_multiple_of(4),
        _ => false,
    };
    ins.operands.iter().find_map(|op| match op.kind {
        OperandKind::Reg(r) if r != RZ && bad(r, op.width) => Some(("R", r, op.width)),
        OperandKind::UReg(u) if u != 63 && bad(u, op.width) => Some(("UR", u, op.width)),
        OperandKind::Addr {
            reg: Some(r),
            reg_width,
            ..
        } if r != RZ && bad(r, reg_width) => Some(("R", r, reg_width)),
        OperandKind::Addr {
            ureg: Some(u),
            ureg_width,
            ..
        } if u != 63 && bad(u, ureg_width) => Some(("UR", u, ureg_width)),
        _ => None,
    })
}

/// Reject the first instruction of `functions` with a misaligned tuple.
pub fn check(functions: &[Function]) -> Result<(), Rejection> {
    for f in functions {
        for ins in &f.instrs {
            if let Some((file, r, w)) = misaligned(ins) {
                return Err(Rejection {
                    function: f.name.clone(),
                    offset: ins.offset,
                    check: super::Check::Tuples,
                    reason: format!(
                        "`{}` names a {w}-register tuple at {file}{r}, which is not aligned",
                        ins.opcode
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sass::operands::test_instr as ins;

    #[test]
    fn quads_pairs_and_singles() {
        assert_eq!(
            misaligned(&ins("LDSM.16.M88.4", "R15, [R6]")),
            Some(("R", 15, 4))
        );
        assert_eq!(
            misaligned(&ins("LDSM.16.M88.4", "R14, [R6]")),
            Some(("R", 14, 4))
        );
        assert_eq!(misaligned(&ins("LDSM.16.M88.4", "R12, [R6]")), None);
        assert_eq!(
            misaligned(&ins("LDSM.16.MT88.2", "R3, [R6]")),
            Some(("R", 3, 2))
        );
        assert_eq!(misaligned(&ins("DADD", "R4, R6, R9")), Some(("R", 9, 2)));
        assert_eq!(
            misaligned(&ins("LDG.E.64", "R4, [R3.64]")),
            Some(("R", 3, 2))
        );
        assert_eq!(misaligned(&ins("MOV", "R3, R5")), None);
        assert_eq!(misaligned(&ins("HMMA.16816.F32", "R8, R4, R2, RZ")), None);
    }
}
