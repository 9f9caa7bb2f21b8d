//! Encoding: patching register, predicate and immediate fields in the raw 128 bits, and
//! swapping opcodes within a family (STL↔STS, LDL↔LDS), and the PC-relative fields of
//! branches and calls (docs/sass.md §Fields the encoder patches, §Branches and calls).
//!
//! An instruction is the little-endian `u128` of its 16 bytes; bit *n* is bit *n* of that
//! integer. Everything not named by a setter is kept bit for bit, control field included.

use std::fmt;

use crate::arch::Sm;

/// `BRA` (bits 0-11).
pub(crate) const OP_BRA: u16 = 0x947;
/// `BRA.U` on sm_100+ (uniform predicate form).
pub(crate) const OP_BRA_U: u16 = 0x547;
/// `CALL.REL` to an immediate target.
pub const OP_CALL_REL: u16 = 0x944;
/// `CALL.REL Rx imm`: indirect call, the register holds a section offset.
pub(crate) const OP_CALL_REL_REG: u16 = 0x344;
/// `CALL.ABS` (absolute, from a register: nothing to re-encode).
pub(crate) const OP_CALL_ABS: u16 = 0x343;
/// `RET.REL Rx`.
pub(crate) const OP_RET_REL: u16 = 0x950;
/// `BRX Rx`.
pub(crate) const OP_BRX: u16 = 0x949;
/// `BRXU URx` (uniform register form of BRX).
pub(crate) const OP_BRXU: u16 = 0x958;
/// `BSSY Bx, target`.
pub(crate) const OP_BSSY: u16 = 0x945;
/// `EXIT`.
pub const OP_EXIT: u16 = 0x94d;
/// `LEPC Rd, label` (sm_90+): `Rd` = absolute address of `label`, the immediate at bits
/// 24-31 being `label` minus the next pc (`LEPC R20, `(.L_x_4)` before `CALL.ABS.NOINC` to
/// vprintf: the return point).
pub const OP_LEPC: u16 = 0x94e;
/// `LEPC Rd` (sm_75-89): `Rd` = absolute address of the LEPC itself; ptxas adds
/// `MOV Rx, <return offset>` minus `MOV Ry, <LEPC offset>` to it.
pub(crate) const OP_LEPC_REG: u16 = 0x34e;
/// `NOP`.
pub const OP_NOP: u16 = 0x918;
/// `MOV Rd, imm32`.
pub const OP_MOV_IMM: u16 = 0x802;
/// `STL [Ra+imm24], Rb`.
pub const OP_STL: u16 = 0x387;
/// `STS [Ra+imm24], Rb`.
pub(crate) const OP_STS: u16 = 0x388;
/// `LDL Rd, [Ra+imm24]`.
pub const OP_LDL: u16 = 0x983;
/// `LDS Rd, [Ra+imm24]`.
pub(crate) const OP_LDS: u16 = 0x984;

/// The NOP ptxas pads sections with (stall 0, no scoreboards, yield bit clear).
pub(crate) const NOP_PADDING: u128 = (0x000f_c000_0000_0000u128 << 64) | 0x0000_0000_0000_7918;

/// A NOP with stall `stall` (1-15), no scoreboards, no wait, and the yield bit (109) set as
/// ptxas sets it on most real code (§6.3), for inserting into real code.
pub fn nop(stall: u8) -> u128 {
    set_bits(
        set_bits(NOP_PADDING, 105, 4, u64::from(stall.clamp(1, 15))),
        109,
        1,
        1,
    )
}

/// An instruction as 16 little-endian bytes → `u128`.
pub fn from_bytes(b: [u8; 16]) -> u128 {
    u128::from_le_bytes(b)
}

/// `u128` → 16 little-endian bytes.
pub fn to_bytes(w: u128) -> [u8; 16] {
    w.to_le_bytes()
}

/// `n` bits (≤ 64) at bit `lo`.
pub fn get_bits(w: u128, lo: u32, n: u32) -> u64 {
    debug_assert!(n <= 64 && lo + n <= 128);
    ((w >> lo) & mask(n)) as u64
}

/// `w` with the `n` bits (≤ 64) at bit `lo` replaced by the low `n` bits of `v`.
pub fn set_bits(w: u128, lo: u32, n: u32, v: u64) -> u128 {
    debug_assert!(n <= 64 && lo + n <= 128);
    let m = mask(n) << lo;
    (w & !m) | ((u128::from(v) << lo) & m)
}

fn mask(n: u32) -> u128 {
    if n >= 128 {
        u128::MAX
    } else {
        (1u128 << n) - 1
    }
}

fn sign_extend(v: u64, n: u32) -> i64 {
    let shift = 64 - n;
    ((v << shift) as i64) >> shift
}

/// Bits 0-11.
pub fn opcode(w: u128) -> u16 {
    get_bits(w, 0, 12) as u16
}

/// `w` with bits 0-11 replaced.
pub(crate) fn set_opcode(w: u128, op: u16) -> u128 {
    set_bits(w, 0, 12, u64::from(op & 0xfff))
}

/// A register operand slot (§6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegField {
    /// Bits 16-23 (destination).
    Dst,
    /// Bits 24-31 (source A; address register of loads and stores).
    A,
    /// Bits 32-39 (source B; store data).
    B,
    /// Bits 64-71 (source C; the B GPR of ALU forms 2/3/7).
    C,
}

impl RegField {
    /// The first bit of the 8-bit field.
    pub(crate) fn lo(self) -> u32 {
        match self {
            RegField::Dst => 16,
            RegField::A => 24,
            RegField::B => 32,
            RegField::C => 64,
        }
    }
}

/// The register number in `field` (255 = RZ).
pub fn reg(w: u128, field: RegField) -> u8 {
    get_bits(w, field.lo(), 8) as u8
}

/// `w` with `field` set to register `r` (255 = RZ).
pub fn set_reg(w: u128, field: RegField, r: u8) -> u128 {
    set_bits(w, field.lo(), 8, u64::from(r))
}

/// Guard predicate: `(index 0-7, negated)`; `(7, false)` = always.
pub fn guard(w: u128) -> (u8, bool) {
    (get_bits(w, 12, 3) as u8, get_bits(w, 15, 1) == 1)
}

/// `w` with guard `@[!]P<pred>` (7 = PT).
pub fn set_guard(w: u128, pred: u8, negated: bool) -> u128 {
    set_bits(
        set_bits(w, 12, 3, u64::from(pred & 7)),
        15,
        1,
        u64::from(negated),
    )
}

/// Bits 32-63.
pub fn imm32(w: u128) -> u32 {
    get_bits(w, 32, 32) as u32
}

/// `w` with bits 32-63 replaced.
pub fn set_imm32(w: u128, v: u32) -> u128 {
    set_bits(w, 32, 32, u64::from(v))
}

/// Swap a local access for the shared one or back (STL↔STS, LDL/LDL.LU↔LDS), keeping
/// predicate, registers, offset, width and control; bits 84-86 (eviction / `.LU`) are
/// cleared for the shared forms and set to 1 (normal eviction) for the local ones (§6.4).
/// `None` for any other opcode.
pub fn swap_local_shared(w: u128) -> Option<u128> {
    let (op, cache) = match opcode(w) {
        OP_STL => (OP_STS, 0),
        OP_STS => (OP_STL, 1),
        OP_LDL => (OP_LDS, 0),
        OP_LDS => (OP_LDL, 1),
        _ => return None,
    };
    Some(set_bits(set_opcode(w, op), 84, 3, cache))
}

/// How a PC-relative field is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RelKind {
    /// Target = next pc + delta: `BRA`, `BRA.U`, `CALL.REL` (immediate), in the per-arch
    /// plain or split form.
    Direct,
    /// `BSSY`: target = next pc + delta, plain 32 bits at 32-63 on every arch.
    Bssy,
    /// Register + immediate, where the immediate is minus the instruction's own next pc
    /// (`BRX`, `BRXU`, `RET.REL`, indirect `CALL.REL Rx`): the field moves with the
    /// instruction, not with a target.
    RegisterBased,
}

/// Bit 85 set on `RET` (and `BRX`) makes it absolute: `RET.ABS.NODEC R20 0x0` (`-G` code,
/// the register holds an address relocated with the function symbol) instead of
/// `RET.REL.NODEC`.
pub(crate) const ABS_BIT: u32 = 85;

/// The PC-relative kind of `w`, if any.
pub fn rel_kind(w: u128) -> Option<RelKind> {
    match opcode(w) {
        OP_BRA | OP_BRA_U | OP_CALL_REL => Some(RelKind::Direct),
        OP_BSSY => Some(RelKind::Bssy),
        OP_BRX | OP_BRXU | OP_RET_REL if get_bits(w, ABS_BIT, 1) == 1 => None,
        OP_BRX | OP_BRXU | OP_RET_REL | OP_CALL_REL_REG => Some(RelKind::RegisterBased),
        _ => None,
    }
}

/// A field value that does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError(pub String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EncodeError {}

/// True where sm_`sm` uses the split branch form (§6.5: sm_90 and later).
pub(crate) fn split_form(sm: u32) -> bool {
    Sm::of(sm).model().split_branch_offsets
}

/// The signed byte value of the PC-relative field of `w` (relative to the next pc), or
/// `None` when `w` has none. Plain form (sm_75-89): bits 34-81 in words of 4 bytes; split
/// form (sm_90+): `(delta >> 2) & 0xff` in bits 16-23 and `delta >> 10` in bits 34-81;
/// `BSSY`: 32 bits at 32-63 on every arch.
pub fn rel_delta(sm: u32, w: u128) -> Option<i64> {
    Some(match rel_kind(w)? {
        RelKind::Bssy => get_bits(w, 32, 32) as u32 as i32 as i64,
        RelKind::Direct | RelKind::RegisterBased => {
            if split_form(sm) {
                (sign_extend(get_bits(w, 34, 48), 48) << 10) | ((get_bits(w, 16, 8) as i64) << 2)
            } else {
                // Bits 32-33 are flags (bit 32 on sm_75 `BRA.U`), not part of the offset.
                sign_extend(get_bits(w, 34, 48), 48) << 2
            }
        }
    })
}

/// `w` with its PC-relative field set to `delta` bytes, every other bit kept (bits 32-33 of
/// the plain form and 32-33 of the split form are flags). Errors when `w` has no such
/// field, `delta` is not a multiple of 4, or it does not fit.
pub fn set_rel_delta(sm: u32, w: u128, delta: i64) -> Result<u128, EncodeError> {
    let kind = rel_kind(w).ok_or_else(|| {
        EncodeError(format!(
            "opcode {:#05x} has no PC-relative field",
            opcode(w)
        ))
    })?;
    if delta % 4 != 0 {
        return Err(EncodeError(format!(
            "branch offset {delta:#x} is not a multiple of 4"
        )));
    }
    match kind {
        RelKind::Bssy => {
            let v = i32::try_from(delta)
                .map_err(|_| EncodeError(format!("BSSY offset {delta:#x} exceeds 32 bits")))?;
            Ok(set_bits(w, 32, 32, u64::from(v as u32)))
        }
        RelKind::Direct | RelKind::RegisterBased => {
            if split_form(sm) {
                let hi = delta >> 10;
                if !(-(1i64 << 47)..(1i64 << 47)).contains(&hi) {
                    return Err(EncodeError(format!("branch offset {delta:#x} too large")));
                }
                let w = set_bits(w, 16, 8, ((delta >> 2) & 0xff) as u64);
                Ok(set_bits(w, 34, 48, hi as u64))
            } else {
                if !(-(1i64 << 49)..(1i64 << 49)).contains(&delta) {
                    return Err(EncodeError(format!("branch offset {delta:#x} too large")));
                }
                Ok(set_bits(w, 34, 48, (delta >> 2) as u64))
            }
        }
    }
}

/// The section offset a direct branch, call or BSSY at `pc` goes to (`None` for other
/// instructions and for register-based ones).
pub fn direct_target(sm: u32, pc: u64, w: u128) -> Option<u64> {
    match rel_kind(w)? {
        RelKind::Direct | RelKind::Bssy => {
            pc.checked_add(16)?.checked_add_signed(rel_delta(sm, w)?)
        }
        RelKind::RegisterBased => None,
    }
}

/// `w` (at `pc`) re-encoded to go to `target`.
pub fn set_direct_target(sm: u32, pc: u64, w: u128, target: u64) -> Result<u128, EncodeError> {
    let next = pc as i128 + 16;
    let delta = i64::try_from(target as i128 - next)
        .map_err(|_| EncodeError(format!("target {target:#x} out of range")))?;
    set_rel_delta(sm, w, delta)
}

/// The register a register-based instruction jumps through (bits 24-31), for `RET.REL`,
/// `BRX` and indirect `CALL.REL`.
pub(crate) fn jump_register(w: u128) -> Option<u8> {
    (rel_kind(w)? == RelKind::RegisterBased).then(|| reg(w, RegField::A))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(lo: u64, hi: u64) -> u128 {
        (u128::from(hi) << 64) | u128::from(lo)
    }

    #[test]
    fn known_branch_values() {
        // sm_90 `CALL.REL.NOINC R10` at 0x190: -(0x1a0) split.
        let c = w(0xfffffffc0a987344, 0x000fea0003c3ffff);
        assert_eq!(rel_kind(c), Some(RelKind::RegisterBased));
        assert_eq!(rel_delta(90, c), Some(-0x1a0));
        assert_eq!(jump_register(c), Some(10));
        assert_eq!(set_rel_delta(90, c, -0x1a0).unwrap(), c);
        // sm_80 same call at 0x160, plain.
        let c = w(0xfffffe900a007344, 0x023fea0003c3ffff);
        assert_eq!(rel_delta(80, c), Some(-0x170));
        assert_eq!(set_rel_delta(80, c, -0x170).unwrap(), c);
        // sm_80 BSSY B6 at 0x130 → +0x40 (0x180).
        let b = w(0x0000004000067945, 0x000fe20003800000);
        assert_eq!(direct_target(80, 0x130, b), Some(0x180));
        let moved = set_direct_target(80, 0x130, b, 0x1c0).unwrap();
        assert_eq!(direct_target(80, 0x130, moved), Some(0x1c0));
        assert_eq!(moved ^ b, u128::from(0x80u64 ^ 0x40) << 32);
        // sm_90 direct call at 0x3e0 (0xfffffc00547944): negative split offset round-trips.
        let c = w(0xfffffffc00547944, 0x000fea0003c3ffff);
        let t = direct_target(90, 0x3e0, c).unwrap();
        assert_eq!(set_direct_target(90, 0x3e0, c, t).unwrap(), c);
        // sm_75 `@!P0 BRA.U 0xb0` at 0x190 (linked -G image): bit 32 is a flag.
        let bu = w(0xffffff1100008947, 0x000fea000383ffff);
        assert_eq!(direct_target(75, 0x190, bu), Some(0xb0));
        assert_eq!(set_direct_target(75, 0x190, bu, 0xb0).unwrap(), bu);
        let m = set_direct_target(75, 0x1d0, bu, 0xb0).unwrap();
        assert_eq!(get_bits(m, 32, 2), 1);
        assert_eq!(direct_target(75, 0x1d0, m), Some(0xb0));
        // RET.ABS.NODEC R20 0x0 (-G): not PC-relative.
        let r = w(0x0000000014007950, 0x000fc00003e00000);
        assert_eq!(rel_kind(r), None);
        assert_eq!(
            rel_kind(w(0xfffffffc147c7950, 0x000fec0003c3ffff)),
            Some(RelKind::RegisterBased)
        );
        // Out of range.
        assert!(set_rel_delta(80, b, 1 << 40).is_err());
        assert!(set_rel_delta(80, b, 6).is_err());
        assert!(set_rel_delta(80, NOP_PADDING, 16).is_err());
    }

    #[test]
    fn fields() {
        // FFMA R9, R9, R18, 1 (§6.1).
        let f = w(0x3f80000009097423, 0x0000_0000_0000_0012);
        assert_eq!(reg(f, RegField::Dst), 9);
        assert_eq!(reg(f, RegField::A), 9);
        assert_eq!(reg(f, RegField::C), 18);
        assert_eq!(imm32(f), 0x3f80_0000);
        let g = set_reg(f, RegField::C, 40);
        assert_eq!(reg(g, RegField::C), 40);
        assert_eq!(g ^ f, u128::from(18u64 ^ 40) << 64);
        assert_eq!(guard(f), (7, false));
        let p = set_guard(f, 2, true);
        assert_eq!(guard(p), (2, true));
        assert_eq!(set_guard(p, 7, false), f);
        assert_eq!(imm32(set_imm32(f, 0x1234)), 0x1234);
        assert_eq!(opcode(NOP_PADDING), OP_NOP);
        assert_eq!(get_bits(nop(3), 105, 4), 3);
        assert_eq!(get_bits(nop(0), 105, 4), 1);
        assert_eq!((nop(1) >> 64) as u64, 0x000f_e200_0000_0000);
        assert_eq!(to_bytes(NOP_PADDING), crate::cubin::edit::NOP);
        assert_eq!(from_bytes(to_bytes(f)), f);
    }

    #[test]
    fn local_shared_swap() {
        // STL with eviction 1 in bits 84-86.
        let stl = set_bits(w(0x0000100401007387, 0), 84, 3, 1);
        let sts = swap_local_shared(stl).unwrap();
        assert_eq!(opcode(sts), OP_STS);
        assert_eq!(get_bits(sts, 84, 3), 0);
        assert_eq!(swap_local_shared(sts).unwrap(), stl);
        let ldl_lu = set_bits(w(0x0000100401047983, 0), 84, 3, 3);
        let lds = swap_local_shared(ldl_lu).unwrap();
        assert_eq!(opcode(lds), OP_LDS);
        assert_eq!(get_bits(lds, 84, 3), 0);
        assert_eq!(set_bits(set_opcode(lds, OP_LDL), 84, 3, 3), ldl_lu);
        assert!(swap_local_shared(NOP_PADDING).is_none());
    }
}
