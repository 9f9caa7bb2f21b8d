//! Loop weights: how often each instruction is assumed to run per entry of its function,
//! RegDem's weighting (docs/papers.md §RegDem, its §4) shared by the stall predictor and the
//! regdem cost model. ptxas lays loops out contiguously, so a loop is the span from
//! a backward `BRA`'s target to the branch; this needs no CFG and gives the same answer on
//! both decoders (`raw` resolves only `BRA` targets, `decode` also `BSSY` and `CALL` ones,
//! which are not loops).

use crate::sass::ir::Function;
use crate::sass::opcode::Op;

/// How many times a loop body is assumed to run per entry (RegDem's `LOOP_FACTOR`); nested
/// loops multiply. Depth is capped so one deep nest cannot swamp everything else.
pub const LOOP_FACTOR: f64 = 10.0;
pub const MAX_LOOP_DEPTH: u32 = 3;

/// Loops around every instruction: one per backward `BRA` whose span covers it. A branch to
/// itself is the spin ptxas puts after the last `EXIT`, not a loop.
pub fn loop_depths(f: &Function) -> Vec<u32> {
    let mut depth = vec![0u32; f.instrs.len()];
    for (i, ins) in f.instrs.iter().enumerate() {
        if ins.op() == Op::Bra
            && let Some(t) = ins.target.and_then(|t| f.index_of(t))
            && t < i
        {
            for d in &mut depth[t..=i] {
                *d += 1;
            }
        }
    }
    depth
}

/// Loop weight of every instruction: [`LOOP_FACTOR`] to the power of its loop depth, the
/// depth capped at [`MAX_LOOP_DEPTH`].
pub(crate) fn loop_weights(f: &Function) -> Vec<f64> {
    loop_depths(f)
        .into_iter()
        .map(|d| LOOP_FACTOR.powi(d.min(MAX_LOOP_DEPTH) as i32))
        .collect()
}
