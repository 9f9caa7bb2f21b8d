//! The shared spill stack across device calls (docs/papers.md §Orion, §ICS'14): where
//! each function's frame of spill slots starts, where each of its variables sits inside it,
//! and which live variables a caller moves out of the callee's way around each call.
//!
//! * **Stacked** frames: a callee's frame starts above the whole frame of every caller
//!   (`base(g) = max base(f) + M_f`), no moves. What ptxas does with local memory.
//! * **Compressed** (Orion's compressible stack): a callee's frame starts above the
//!   variables its caller keeps live across the call (`B_k` of them at call `k`), so the
//!   stack grows by the inter-procedure max-live instead of the sum of frames. The live
//!   variables that sit at or above the callee's base are moved below it before the call
//!   and back after it. Where each variable sits is chosen to minimise those moves: the
//!   cost of putting variable `i` at slot `j` is `W_ij = Σ_k [i live at k ∧ j ≥ B_k]`
//!   (Theorem 1), and the layout is a minimum-cost perfect matching of variables to slots
//!   (Kuhn–Munkres). A callee called from several places gets one base, the highest its
//!   call sites need, so every call of it has the same (possibly larger) bound.
//!
//! Pure data in, data out: the transform collects frames and liveness, this module decides.

use pathfinding::kuhn_munkres::kuhn_munkres;
use pathfinding::matrix::Matrix;

/// One call site of a frame's function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    /// Index of the callee's frame.
    pub(crate) callee: usize,
    /// Variables of the caller live across the call (their values must survive it).
    pub(crate) live: Vec<usize>,
}

/// One function's spill variables.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frame {
    /// Variables (32-bit words) of the function.
    pub(crate) vars: usize,
    /// Its calls of other frames, in address order.
    pub(crate) calls: Vec<Call>,
}

/// How frames share the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Stacked,
    Compressed,
    /// Compressed bases, but every variable left at its position in frame order (ptxas'
    /// word order): the moves Kuhn–Munkres saves, for the report's comparison and tests.
    CompressedInOrder,
}

/// A variable moved around a call: from its slot to a free one below the callee's base
/// before the call, and back after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub(crate) var: usize,
    /// Position (inside the caller's frame) it waits at during the call.
    pub(crate) to: u32,
}

/// The decided layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// First slot of each frame.
    pub(crate) base: Vec<u32>,
    /// Position of each variable inside its frame (`base + pos` is its slot).
    pub(crate) pos: Vec<Vec<u32>>,
    /// Per frame, per call (as in [`Frame::calls`]): the variables moved around it.
    pub moves: Vec<Vec<Vec<Move>>>,
    /// Slots of the whole stack.
    pub(crate) slots: u32,
}

impl Layout {
    /// Variables moved, over all calls (each costs a load and a store before the call and
    /// again after it).
    pub(crate) fn move_count(&self) -> usize {
        self.moves.iter().flatten().map(Vec::len).sum()
    }
}

/// Lay out `frames` for a call graph rooted at `entry` (callers before callees in `order`,
/// every frame reachable from the entry listed).
pub(crate) fn layout(frames: &[Frame], order: &[usize], mode: Mode) -> Layout {
    let n = frames.len();
    let mut base = vec![0u32; n];
    for &f in order {
        for c in &frames[f].calls {
            let need = match mode {
                Mode::Stacked => frames[f].vars,
                Mode::Compressed | Mode::CompressedInOrder => c.live.len(),
            } as u32;
            base[c.callee] = base[c.callee].max(base[f] + need);
        }
    }
    let mut pos = Vec::with_capacity(n);
    let mut moves = Vec::with_capacity(n);
    for (f, fr) in frames.iter().enumerate() {
        let bounds: Vec<u32> = fr.calls.iter().map(|c| base[c.callee] - base[f]).collect();
        let p = match mode {
            Mode::Stacked | Mode::CompressedInOrder => (0..fr.vars as u32).collect(),
            Mode::Compressed => best_positions(fr, &bounds),
        };
        moves.push(moves_for(fr, &bounds, &p));
        pos.push(p);
    }
    let slots = (0..n)
        .map(|f| base[f] + frames[f].vars as u32)
        .max()
        .unwrap_or(0);
    Layout {
        base,
        pos,
        moves,
        slots,
    }
}

/// `W_ij`: moves caused by putting variable `i` at position `j`.
fn cost(fr: &Frame, bounds: &[u32], i: usize, j: u32) -> i64 {
    fr.calls
        .iter()
        .zip(bounds)
        .filter(|(c, b)| j >= **b && c.live.contains(&i))
        .count() as i64
}

/// The positions minimising the total moves (Kuhn–Munkres on `-W`); ties go to the
/// solver's first optimum, which is deterministic.
fn best_positions(fr: &Frame, bounds: &[u32]) -> Vec<u32> {
    let m = fr.vars;
    if m == 0 {
        return Vec::new();
    }
    let mut w = Matrix::new(m, m, 0i64);
    for i in 0..m {
        for j in 0..m {
            w[(i, j)] = -cost(fr, bounds, i, j as u32);
        }
    }
    let (_, assign) = kuhn_munkres(&w);
    assign.into_iter().map(|j| j as u32).collect()
}

/// The moves positions `p` need: at each call, every live variable at or above the bound
/// goes to the lowest position below it that no live variable holds.
fn moves_for(fr: &Frame, bounds: &[u32], p: &[u32]) -> Vec<Vec<Move>> {
    fr.calls
        .iter()
        .zip(bounds)
        .map(|(c, &b)| {
            let taken: Vec<u32> = c.live.iter().map(|&i| p[i]).filter(|&q| q < b).collect();
            let mut free = (0..b).filter(|q| !taken.contains(q));
            let mut out = Vec::new();
            for &i in &c.live {
                if p[i] >= b {
                    // There are at least as many positions below the bound as live
                    // variables (b ≥ |live|), so one is free.
                    if let Some(to) = free.next() {
                        out.push(Move { var: i, to });
                    }
                }
            }
            out
        })
        .collect()
}

/// The fewest moves any placement of `fr`'s variables needs under `bounds`, by trying every
/// placement of the variables live at some call (the others cost nothing wherever they
/// go, so they fill the positions left): exhaustive, for tests on small cases.
pub fn brute_force_moves(fr: &Frame, bounds: &[u32]) -> usize {
    let mut live: Vec<usize> = fr.calls.iter().flat_map(|c| c.live.clone()).collect();
    live.sort_unstable();
    live.dedup();
    fn go(
        fr: &Frame,
        bounds: &[u32],
        live: &[usize],
        p: &mut Vec<Option<u32>>,
        used: &mut Vec<bool>,
        best: &mut usize,
    ) {
        let Some((&v, rest)) = live.split_first() else {
            let mut free = (0..fr.vars as u32).filter(|&j| !used[j as usize]);
            let full: Vec<u32> = p
                .iter()
                .map(|q| q.or_else(|| free.next()).unwrap_or(0))
                .collect();
            let total = moves_for(fr, bounds, &full).iter().map(Vec::len).sum();
            *best = (*best).min(total);
            return;
        };
        for j in 0..fr.vars {
            if !used[j] {
                used[j] = true;
                p[v] = Some(j as u32);
                go(fr, bounds, rest, p, used, best);
                p[v] = None;
                used[j] = false;
            }
        }
    }
    let mut best = usize::MAX;
    go(
        fr,
        bounds,
        &live,
        &mut vec![None; fr.vars],
        &mut vec![false; fr.vars],
        &mut best,
    );
    best
}

/// The bounds `layout` gives each call of frame `f` (`base(callee) - base(f)`).
pub fn bounds(frames: &[Frame], l: &Layout, f: usize) -> Vec<u32> {
    frames[f]
        .calls
        .iter()
        .map(|c| l.base[c.callee] - l.base[f])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(callee: usize, live: &[usize]) -> Call {
        Call {
            callee,
            live: live.to_vec(),
        }
    }

    /// Orion's Figure 6 shape: three calls with different live sets; the identity layout
    /// needs moves the matching avoids.
    #[test]
    fn matching_finds_the_fewest_moves() {
        let frames = vec![
            Frame {
                vars: 5,
                calls: vec![call(1, &[0, 4]), call(2, &[0, 1, 4]), call(3, &[1, 2])],
            },
            Frame::default(),
            Frame::default(),
            Frame::default(),
        ];
        let l = layout(&frames, &[0, 1, 2, 3], Mode::Compressed);
        let b = bounds(&frames, &l, 0);
        assert_eq!(b, vec![2, 3, 2]);
        assert_eq!(l.move_count(), brute_force_moves(&frames[0], &b));
        let ident = moves_for(&frames[0], &b, &[0, 1, 2, 3, 4]);
        assert!(ident.iter().map(Vec::len).sum::<usize>() > l.move_count());
        // Every live variable is below the bound during its call, in distinct positions.
        for (k, c) in frames[0].calls.iter().enumerate() {
            let mut at: Vec<u32> = c
                .live
                .iter()
                .map(|&i| {
                    l.moves[0][k]
                        .iter()
                        .find(|m| m.var == i)
                        .map_or(l.pos[0][i], |m| m.to)
                })
                .collect();
            assert!(at.iter().all(|&q| q < b[k]));
            at.sort_unstable();
            at.dedup();
            assert_eq!(at.len(), c.live.len());
        }
    }

    #[test]
    fn compressed_never_taller_than_stacked() {
        let frames = vec![
            Frame {
                vars: 6,
                calls: vec![call(1, &[2]), call(2, &[0, 5])],
            },
            Frame {
                vars: 4,
                calls: vec![call(2, &[1])],
            },
            Frame {
                vars: 3,
                calls: vec![],
            },
        ];
        let s = layout(&frames, &[0, 1, 2], Mode::Stacked);
        let c = layout(&frames, &[0, 1, 2], Mode::Compressed);
        assert_eq!(s.slots, 6 + 4 + 3);
        assert_eq!(s.move_count(), 0);
        // Callee 2 sits above the highest need: 0→1 (1 live) then 1→2 (1 live) = 2.
        assert_eq!(c.base, vec![0, 1, 2]);
        assert_eq!(c.slots, 6);
        for f in 0..3 {
            assert_eq!(
                c.moves[f].iter().map(Vec::len).sum::<usize>(),
                brute_force_moves(&frames[f], &bounds(&frames, &c, f))
            );
        }
    }
}
