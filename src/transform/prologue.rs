//! The spill-area prologue: the instructions inserted at a kernel's entry that compute, once
//! per thread, the base register of its shared spill slots (docs/DESIGN.md §Spill area
//! placement; docs/sass.md §Shared memory and the constant bank):
//!
//! ```text
//! base = (linear thread index × 4) + dynamic shared size      (c[0x0][0x2c], sm_75-90)
//!        [ + (CTA id in the cluster << 24) ]                  (sm_90, as ptxas forms
//!                                                              shared addresses there)
//! ```
//!
//! The static size and the slot offsets are folded into each access's immediate, so one
//! register holds everything per thread. Slot `s` of a thread is then `[base + S + s×stride]`
//! with `stride` = threads per block × 4: slot-major, one 32-bit word per thread per slot, so
//! a warp's accesses to one slot hit 32 different banks (RegDem's equation 1, docs/papers.md
//! §RegDem).
//!
//! Instructions are built from fixed words (opcode, form and modifier bits as ptxas 13.5
//! emits them, checked by disassembly in the tests) with the registers patched in. Control
//! bits are conservative: the `S2R` results are waited for on scoreboards 0-2 before use,
//! every fixed-latency producer stalls long enough for its consumer, and nothing is left
//! pending when the original code starts (its first instructions assume no scoreboard is
//! in flight, as at entry).

use crate::arch::Sm;
use crate::sass::control::Control;
use crate::sass::encode::{self, RegField};

/// `S2R` special-register numbers (bits 72-79).
const SR_TID_X: u8 = 0x21;
const SR_TID_Y: u8 = 0x22;
const SR_TID_Z: u8 = 0x23;
const SR_CGA_CTA_ID: u8 = 0x88;

/// `S2R R0, SR_TID.Y` (sm_75-90), control cleared.
const S2R: u128 = word(0x0000_0000_0000_7919, 0x0000_0000_0000_2200);
/// `IMAD R0, R0, c[0x0][0x0], R0`.
const IMAD_CBANK: u128 = word(0x0000_0000_0000_7a24, 0x0000_0000_078e_0200);
/// `LEA R0, R0, c[0x0][0x0], 0x2`.
const LEA_CBANK_X4: u128 = word(0x0000_0000_0000_7a11, 0x0000_0000_078e_10ff);
/// `LEA R0, R0, R0, 0x18` (register form).
const LEA_REG_X24: u128 = word(0x0000_0000_0000_7211, 0x0000_0000_078e_c0ff);

/// Driver constants (constant bank 0, sm_75-90; reference §9).
const CB_NTID_X: u32 = 0x0;
const CB_NTID_Y: u32 = 0x4;
const CB_DYNAMIC_SMEM: u32 = 0x2c;

const fn word(lo: u64, hi: u64) -> u128 {
    (hi as u128) << 64 | lo as u128
}

fn with_control(w: u128, c: Control) -> u128 {
    encode::set_bits(w, 105, 23, u64::from(c.to_bits()))
}

fn s2r(dst: u8, sr: u8, sb: u8) -> u128 {
    let w = encode::set_bits(
        encode::set_reg(S2R, RegField::Dst, dst),
        72,
        8,
        u64::from(sr),
    );
    with_control(
        w,
        Control {
            stall: 1,
            yield_bit: true,
            write_sb: Some(sb),
            ..Control::default()
        },
    )
}

/// `c[0x0][off]` in bits 40-53 (offset / 4) and 54-58 (bank 0).
fn with_cbank(w: u128, off: u32) -> u128 {
    encode::set_bits(encode::set_bits(w, 40, 14, u64::from(off / 4)), 54, 5, 0)
}

/// A fixed-latency ALU instruction whose result the next instruction reads: stall for
/// the longest ALU latency of sm_75-90 (6 cycles; reference §6.3), after waiting for `wait`.
fn alu(w: u128, wait: u8) -> u128 {
    with_control(
        w,
        Control {
            stall: 6,
            yield_bit: true,
            wait_mask: wait,
            ..Control::default()
        },
    )
}

fn imad_cbank(dst: u8, a: u8, cb: u32, c: u8, wait: u8) -> u128 {
    let w = encode::set_reg(IMAD_CBANK, RegField::Dst, dst);
    let w = encode::set_reg(w, RegField::A, a);
    let w = encode::set_reg(w, RegField::C, c);
    alu(with_cbank(w, cb), wait)
}

/// What the prologue needs to know about the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Target architecture (75-90).
    pub(crate) sm: u32,
    /// The block is known to be one-dimensional (`REQNTID` with y = z = 1; `MAX_THREADS`
    /// bounds only the thread count): the linear index is `SR_TID.X`.
    pub(crate) one_d: bool,
}

/// The inserted instructions, their registers and the index of the one after which the base
/// register holds the base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prologue {
    pub(crate) words: Vec<[u8; 16]>,
    pub(crate) base: u8,
    /// Registers the prologue writes besides `base` (dead at a kernel's entry).
    pub(crate) temps: Vec<u8>,
}

/// The prologue computing `base` in register `base`, using `t0` and `t1` as temporaries
/// (all three distinct, none R1, all below 255).
pub fn spill_base(shape: Shape, base: u8, t0: u8, t1: u8) -> Prologue {
    let mut w: Vec<u128> = Vec::new();
    // The linear index ends up in t0.
    let lin = t0;
    if shape.one_d {
        w.push(s2r(t0, SR_TID_X, 0));
    } else {
        // t0 = tid.z; t1 = tid.y; t0 = t0 * ntid.y + t1; t1 = tid.x; t0 = t0 * ntid.x + t1
        w.push(s2r(t0, SR_TID_Z, 0));
        w.push(s2r(t1, SR_TID_Y, 1));
        w.push(imad_cbank(t0, t0, CB_NTID_Y, t1, 0b011));
        w.push(s2r(t1, SR_TID_X, 2));
        w.push(imad_cbank(t0, t0, CB_NTID_X, t1, 0b100));
    }
    // base = lin * 4 + dynamic shared size
    let wait_x = if shape.one_d { 0b001 } else { 0 };
    let lea = encode::set_reg(LEA_CBANK_X4, RegField::Dst, base);
    let lea = encode::set_reg(lea, RegField::A, lin);
    w.push(alu(with_cbank(lea, CB_DYNAMIC_SMEM), wait_x));
    let mut temps = vec![t0];
    if !shape.one_d {
        temps.push(t1);
    }
    if Sm::of(shape.sm).model().shared_cluster_rank {
        // base = (CTA id in the cluster << 24) + base
        w.push(s2r(t1, SR_CGA_CTA_ID, 3));
        let lea = encode::set_reg(LEA_REG_X24, RegField::Dst, base);
        let lea = encode::set_reg(lea, RegField::A, t1);
        let lea = encode::set_reg(lea, RegField::B, base);
        w.push(alu(lea, 0b1000));
        if !temps.contains(&t1) {
            temps.push(t1);
        }
    }
    Prologue {
        words: w.into_iter().map(encode::to_bytes).collect(),
        base,
        temps,
    }
}
