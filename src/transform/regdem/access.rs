//! The inserted demoted accesses: `LDS Rv, [Rbase+imm]` and `STS [Rbase+imm], Rv`, 32-bit,
//! unguarded, built from the words ptxas 13.5 emits for them (docs/sass.md §Fields the
//! encoder patches: opcodes 0x984/0x388, destination/data in bits 16-23/32-39, address register in
//! 24-31, signed 24-bit offset in 40-63, width 4 = 32-bit in bits 73-75) with the fields
//! patched in.

use crate::sass::control::Control;
use crate::sass::encode::{self, RegField};

/// `LDS RZ, [RZ]`, 32-bit, control cleared.
const LDS: u128 = (0x0800u128 << 64) | 0x0000_0000_ffff_7984;
/// `STS [RZ], RZ`, 32-bit, control cleared.
const STS: u128 = (0x0800u128 << 64) | 0x0000_00ff_ff00_7388;

fn finish(w: u128, base: u8, imm: u32, c: Control) -> u128 {
    let w = encode::set_reg(w, RegField::A, base);
    let w = encode::set_bits(w, 40, 24, u64::from(imm));
    encode::set_bits(w, 105, 23, u64::from(c.to_bits()))
}

/// `LDS Rv, [Rbase+imm]`.
pub(crate) fn lds(v: u8, base: u8, imm: u32, c: Control) -> u128 {
    finish(encode::set_reg(LDS, RegField::Dst, v), base, imm, c)
}

/// `STS [Rbase+imm], Rv`.
pub(crate) fn sts(v: u8, base: u8, imm: u32, c: Control) -> u128 {
    finish(encode::set_reg(STS, RegField::B, v), base, imm, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_land_where_ptxas_puts_them() {
        // ptxas: `STS [R5+0x190], R0` = 0x0001900005007388, `LDS R4, [R5+0x4b0]` =
        // 0x0004b00005047984 (sm_80, high word 0x...0800 without control).
        let c = Control::default();
        let s = sts(0, 5, 0x190, c);
        assert_eq!(s as u64, 0x0001_9000_0500_7388);
        let l = lds(4, 5, 0x4b0, c);
        assert_eq!(l as u64, 0x0004_b000_0504_7984);
        assert_eq!((l >> 64) as u64 & 0x1ff_ffff_ffff, 0x800);
    }
}
