//! The instruction words the rewrite writes: shared forms of the spill accesses, the stack's
//! moves and the `NOP` that ends a run of them.

use super::Spill;
use crate::sass::Op;
use crate::sass::control::Control;
use crate::sass::encode::{self, RegField};

/// One rewritten access.
pub(super) struct Access {
    pub(super) offset: u64,
    pub(super) raw: u128,
    pub(super) load: bool,
    /// Shared immediates, one per 32-bit word.
    pub(super) imms: Vec<u32>,
}

/// Word `k` of the shared form of access `a`: 32-bit, base register, immediate, data
/// register `+k`; reuse flags cleared (the operands changed).
pub(super) fn shared_word(a: &Access, k: usize, base: u8) -> u128 {
    let Some(w) = encode::swap_local_shared(a.raw) else {
        return a.raw;
    };
    let w = encode::set_bits(w, 73, 3, 4); // 32-bit
    let w = encode::set_reg(w, RegField::A, base);
    let w = encode::set_bits(w, 40, 24, u64::from(a.imms[k]));
    let data = if a.load { RegField::Dst } else { RegField::B };
    let w = encode::set_reg(w, data, encode::reg(a.raw, data).saturating_add(k as u8));
    let mut c = Control::from_bits(encode::get_bits(w, 105, 23) as u32);
    c.reuse = 0;
    encode::set_bits(w, 105, 23, u64::from(c.to_bits()))
}

/// A spill load and store of the section to build the stack's moves from (any width; the
/// move words are made 32-bit).
pub(super) fn move_templates(spills: &[Spill]) -> Option<(u128, u128)> {
    let ld = spills.iter().find(|s| s.1.op() == Op::Ldl)?.1.raw;
    let st = spills.iter().find(|s| s.1.op() == Op::Stl)?.1.raw;
    Some((ld, st))
}

/// One move instruction: `LDS scratch, [base + imm]` (`load`) or `STS [base + imm],
/// scratch`, unguarded. Scoreboard 5 orders the pair and the next pair: the load sets it
/// when it writes `scratch`, the store waits for that and sets it until it has read
/// `scratch`, and every move waits for it first. Waiting on a scoreboard ptxas' code also
/// uses only delays; nothing here leaves one unwaited for before `scratch` is reused.
pub(super) fn move_word(template: u128, scratch: u8, base: u8, imm: u32, load: bool) -> u128 {
    let w = encode::swap_local_shared(template).unwrap_or(template);
    let w = encode::set_guard(w, 7, false);
    let w = encode::set_bits(w, 73, 3, 4); // 32-bit
    let w = encode::set_reg(w, RegField::A, base);
    let w = encode::set_bits(w, 40, 24, u64::from(imm));
    let w = encode::set_reg(w, if load { RegField::Dst } else { RegField::B }, scratch);
    let c = Control {
        stall: 2,
        yield_bit: true,
        write_sb: load.then_some(MOVE_SB),
        read_sb: (!load).then_some(MOVE_SB),
        wait_mask: 1 << MOVE_SB,
        reuse: 0,
    };
    encode::set_bits(w, 105, 23, u64::from(c.to_bits()))
}

/// The scoreboard the stack's moves use.
const MOVE_SB: u8 = 5;

/// A `NOP` that waits for [`MOVE_SB`]: the end of a run of stack moves.
pub(super) fn drain() -> [u8; 16] {
    let c = Control {
        stall: 1,
        yield_bit: true,
        write_sb: None,
        read_sb: None,
        wait_mask: 1 << MOVE_SB,
        reuse: 0,
    };
    encode::to_bytes(encode::set_bits(
        encode::nop(1),
        105,
        23,
        u64::from(c.to_bits()),
    ))
}
