//! How many bytes one thread's memory instruction moves, from the instruction's bits alone
//! (the predictor reads variants through `raw`, which decodes no modifiers). Loads and stores
//! to global, local and shared memory and the generic `LD`/`ST` keep their access size in bits
//! 73-75 on sm_75 to sm_120: 0/1 `.U8`/`.S8`, 2/3 `.U16`/`.S16`, 4 32-bit, 5 `.64`, 6/7
//! `.128` (`tests/decode/sass_predict.rs` checks this against nvdisasm's modifiers on every
//! architecture). Other memory instructions (atomics, `LDSM`, `LDGSTS`, bulk copies) are
//! counted as one 32-bit word per thread.

use super::ir::Instr;
use super::opcode::Op;

/// Bytes one thread moves with `ins` (a memory instruction; 4 for any other).
pub fn bytes_per_thread(ins: &Instr) -> u32 {
    match ins.op() {
        Op::Ldg | Op::Stg | Op::Ldl | Op::Stl | Op::Lds | Op::Sts | Op::Ld | Op::St => {
            size_field(ins.raw)
        }
        _ => 4,
    }
}

fn size_field(raw: u128) -> u32 {
    match (raw >> 73) & 7 {
        0 | 1 => 1,
        2 | 3 => 2,
        4 => 4,
        5 => 8,
        _ => 16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_field() {
        // STL.128 [R1+0x1a0], R20 on sm_90 (0x0001a01401007387 / size 6 at bit 73).
        let word = |size: u128| 0x387 | (size << 73);
        assert_eq!(size_field(word(6)), 16);
        assert_eq!(size_field(word(5)), 8);
        assert_eq!(size_field(word(4)), 4);
        assert_eq!(size_field(word(3)), 2);
        assert_eq!(size_field(word(1)), 1);
    }
}
