//! Which spill words get shared slots (issue 23, partial moves): all of them where the area
//! fits; otherwise the hottest by loop-weighted access count
//! ([`crate::analysis::loops::loop_weights`], RegDem's weighting, docs/papers.md §RegDem), as
//! many as fit, and the rest stay in local memory with their original `STL/LDL [R1+imm]`.
//!
//! A word is moved everywhere or kept local everywhere: the section has one frame, so
//! `[R1+k]` is the same word in every function, and the words one access touches (a 64- or
//! 128-bit spill) move together (a *unit*). Words passed between functions follow the same
//! rule: a kept one stays in the frame where the original code leaves it. The slots a
//! choice needs come from the same stack layout as the full rewrite ([`SlotPlan`]).

use std::collections::{BTreeMap, BTreeSet};

use super::liveness::{CallSite, WordLiveness};
use crate::analysis::loops::loop_weights;
use crate::sass::ir::{Function, Instr};
use crate::transform::stack::{self, Mode};

/// The slots of the words moved to shared memory.
pub(super) struct SlotPlan {
    /// Per function: its own (not passed) moved word → variable index in its frame.
    pub(super) vars: Vec<BTreeMap<i64, usize>>,
    pub(super) frames: Vec<stack::Frame>,
    pub(super) lay: stack::Layout,
    /// Moved words passed between functions → their slot (below every frame).
    pub(super) passed_slot: BTreeMap<i64, u32>,
    /// Slots in the area.
    pub(super) slots: u32,
}

impl SlotPlan {
    /// The slot of word `w` of function `fi`; `None`: the word stays in local memory.
    pub(super) fn slot(&self, fi: usize, w: i64) -> Option<u32> {
        let c0 = self.passed_slot.len() as u32;
        match self.vars[fi].get(&w) {
            Some(&v) => Some(c0 + self.lay.base[fi] + self.lay.pos[fi][v]),
            None => self.passed_slot.get(&w).copied(),
        }
    }

    /// Slots stacked frames would have needed (the report's comparison).
    pub(super) fn stacked_slots(&self, order: &[usize]) -> u32 {
        self.passed_slot.len() as u32 + stack::layout(&self.frames, order, Mode::Stacked).slots
    }
}

/// The slots for every spill word but those in `local`: each function's own words in its
/// frame (laid out by `mode`), words in `cross` in passed slots of their own.
pub(super) fn slot_plan(
    words_of: &[BTreeSet<i64>],
    cross: &BTreeSet<i64>,
    live: &WordLiveness,
    order: &[usize],
    local: &BTreeSet<i64>,
    mode: Mode,
) -> SlotPlan {
    let vars: Vec<BTreeMap<i64, usize>> = words_of
        .iter()
        .map(|ws| {
            ws.iter()
                .filter(|w| !cross.contains(w) && !local.contains(w))
                .enumerate()
                .map(|(i, &w)| (w, i))
                .collect()
        })
        .collect();
    let frames: Vec<stack::Frame> = vars
        .iter()
        .zip(&live.calls)
        .map(|(vs, calls)| stack::Frame {
            vars: vs.len(),
            calls: calls
                .iter()
                .map(|c| stack::Call {
                    callee: c.callee,
                    live: c
                        .live_out
                        .iter()
                        .filter_map(|w| vs.get(w).copied())
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let lay = stack::layout(&frames, order, mode);
    let passed_slot: BTreeMap<i64, u32> = cross
        .difference(local)
        .enumerate()
        .map(|(i, &w)| (w, i as u32))
        .collect();
    let slots = passed_slot.len() as u32 + lay.slots;
    SlotPlan {
        vars,
        frames,
        lay,
        passed_slot,
        slots,
    }
}

/// Words one access moves together, and their heat: the loop weights of the accesses that
/// touch them, summed per word.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Unit {
    /// Word indices (byte offset / 4), ascending.
    pub(super) words: Vec<i64>,
    pub(super) heat: f64,
}

/// Group spill accesses (`(first word, words, loop weight)`) into units: words any access
/// touches together stay together (transitively).
pub(super) fn units(accesses: &[(i64, u32, f64)]) -> Vec<Unit> {
    // Union of overlapping accesses, by word: each word points at its unit's smallest word.
    let mut root: BTreeMap<i64, i64> = BTreeMap::new();
    fn find(root: &BTreeMap<i64, i64>, mut w: i64) -> i64 {
        while let Some(&r) = root.get(&w).filter(|&&r| r != w) {
            w = r;
        }
        w
    }
    for &(first, width, _) in accesses {
        for k in 0..i64::from(width) {
            root.entry(first + k).or_insert(first + k);
        }
        for k in 1..i64::from(width) {
            let (a, b) = (find(&root, first), find(&root, first + k));
            let (lo, hi) = (a.min(b), a.max(b));
            root.insert(hi, lo);
        }
    }
    let mut heat: BTreeMap<i64, f64> = BTreeMap::new();
    for &(first, width, weight) in accesses {
        for k in 0..i64::from(width) {
            *heat.entry(first + k).or_default() += weight;
        }
    }
    let mut by_root: BTreeMap<i64, Unit> = BTreeMap::new();
    for (&w, &h) in &heat {
        let u = by_root.entry(find(&root, w)).or_insert(Unit {
            words: Vec::new(),
            heat: 0.0,
        });
        u.words.push(w);
        u.heat += h;
    }
    by_root.into_values().collect()
}

/// The words to keep in local memory: units are moved hottest first (heat per word, ties to
/// the lowest word), each one kept only if the words moved so far still `fit`; every unit
/// that does not is left local. `None` when not even one unit fits.
pub(super) fn choose(
    units: &[Unit],
    mut fit: impl FnMut(&BTreeSet<i64>) -> bool,
) -> Option<BTreeSet<i64>> {
    let mut ranked: Vec<&Unit> = units.iter().collect();
    ranked.sort_by(|a, b| {
        let per_word = |u: &Unit| u.heat / u.words.len().max(1) as f64;
        per_word(b)
            .total_cmp(&per_word(a))
            .then(a.words[0].cmp(&b.words[0]))
    });
    let mut local: BTreeSet<i64> = units.iter().flat_map(|u| u.words.clone()).collect();
    let mut any = false;
    for u in ranked {
        for w in &u.words {
            local.remove(w);
        }
        if fit(&local) {
            any = true;
        } else {
            local.extend(u.words.iter().copied());
        }
    }
    any.then_some(local)
}

/// Each spill access as `(first word, words, weight)`: the heat the partial move ranks words
/// by. The weight is the loop weight of the access in its function times how often the
/// function runs per kernel entry (the loop weights of its call sites, summed over callers;
/// `order` lists callers first).
pub(super) fn spill_heat(
    funcs: &[&Function],
    order: &[usize],
    calls: &[Vec<CallSite>],
    spills: &[(usize, &Instr, i64, u32)],
) -> Vec<(i64, u32, f64)> {
    let weights: Vec<Vec<f64>> = funcs.iter().map(|f| loop_weights(f)).collect();
    let mut runs = vec![0.0; funcs.len()];
    if let Some(&entry) = order.first() {
        runs[entry] = 1.0;
    }
    for &f in order {
        for c in &calls[f] {
            runs[c.callee] += runs[f] * weights[f].get(c.at).copied().unwrap_or(1.0);
        }
    }
    spills
        .iter()
        .map(|&(fi, ins, imm, width)| {
            let w = funcs[fi]
                .index_of(ins.offset)
                .map_or(1.0, |i| weights[fi][i]);
            (imm / 4, width, w * runs[fi])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_accesses_join_their_words_and_sum_heat() {
        // A 64-bit spill of words 2-3 in a loop (weight 10) and a 32-bit reload of word 3
        // outside; word 0 alone.
        let u = units(&[(2, 2, 10.0), (3, 1, 1.0), (0, 1, 1.0)]);
        assert_eq!(
            u,
            vec![
                Unit {
                    words: vec![0],
                    heat: 1.0
                },
                Unit {
                    words: vec![2, 3],
                    heat: 21.0
                }
            ]
        );
    }

    #[test]
    fn the_hottest_words_move_first_as_many_as_fit() {
        // Words 0..5: word 4 in a doubly nested loop, 1 in a loop, 2-3 a 64-bit pair in a
        // loop, 0 and 5 outside (5 accessed twice).
        let u = units(&[
            (0, 1, 1.0),
            (1, 1, 10.0),
            (1, 1, 10.0),
            (2, 2, 10.0),
            (4, 1, 100.0),
            (5, 1, 1.0),
            (5, 1, 1.0),
        ]);
        let all: BTreeSet<i64> = (0..6).collect();
        let moved = |local: &BTreeSet<i64>| all.difference(local).count();
        // Room for 3 slots: word 4 (100), word 1 (20), then the pair (10 per word) does not
        // fit, word 5 (2) does; word 0 and the pair stay.
        let local = choose(&u, |l| moved(l) <= 3).unwrap();
        assert_eq!(local, BTreeSet::from([0, 2, 3]));
        // Room for 4: the pair fits after 4 and 1.
        let local = choose(&u, |l| moved(l) <= 4).unwrap();
        assert_eq!(local, BTreeSet::from([0, 5]));
        // Room for one word: only the hottest moves; none: nothing fits.
        let local = choose(&u, |l| moved(l) <= 1).unwrap();
        assert_eq!(local, BTreeSet::from([0, 1, 2, 3, 5]));
        assert_eq!(choose(&u, |l| moved(l) == 0), None);
    }

    #[test]
    fn equal_heat_goes_to_the_lowest_word() {
        let u = units(&[(7, 1, 10.0), (3, 1, 10.0), (5, 1, 10.0)]);
        let local = choose(&u, |l| 3 - l.len() <= 1).unwrap();
        assert_eq!(local, BTreeSet::from([5, 7]));
    }
}
