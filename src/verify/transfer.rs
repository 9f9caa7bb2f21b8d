//! The transfer functions: each rewritten instruction becomes a [`Step`], a list of [`Op`]s
//! over the abstract [`State`]; [`GuardRun`] applies the steps of a block in order, meeting
//! the paths of guarded runs, and [`apply_ops`] is the effect of one step (its needs checked
//! in the final pass).

use super::state::{Loc, Set, State, Sym, show};

/// A need of one step that the state does not meet: the reason of a [`super::Check::Values`]
/// rejection. `holds` is what the location holds, as the message shows it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Unmet {
    /// `loc` must hold `sym` for `what` (the operand).
    #[error("{loc} holds {holds} but {what} needs {sym}")]
    Need {
        loc: Loc,
        holds: String,
        what: String,
        sym: Sym,
    },
    #[error("an indexed local load needs the whole frame, which is unknown")]
    FrameUnknown,
    #[error("an indexed local load may read {loc}, which holds {holds} (needs orig {loc})")]
    FrameWord { loc: Loc, holds: String },
    #[error("inserted spill store through {base}, which holds {holds} (needs the spill base)")]
    NoSpillBase { base: Loc, holds: String },
    #[error("inserted local store while R1 holds {holds} (needs orig R1)")]
    NoFrame { holds: String },
}

#[derive(Debug, Clone)]
pub(super) enum Op {
    /// `loc` must hold `sym` (what: the operand, for the message).
    Need {
        loc: Loc,
        sym: Sym,
        what: String,
    },
    /// Every tracked local word must hold its own original value.
    NeedFrame,
    /// Copy the sets of the sources into the destinations (sources read first).
    Copy {
        pairs: Vec<(Loc, Loc)>,
        guarded: bool,
    },
    /// A spill-area copy that depends on `base` holding `SBase` (inserted `LDS`/`STS`).
    BaseCopy {
        base: Loc,
        pairs: Vec<(Loc, Loc)>,
        guarded: bool,
        store: bool,
    },
    /// An inserted `LDL`/`STL [R1+imm]`: a copy while `R1` holds `Orig(R1)`.
    FrameCopy {
        pairs: Vec<(Loc, Loc)>,
        guarded: bool,
        store: bool,
    },
    /// Empty `clear`; then each `(W, rewritten W)`: `Orig(W)` leaves every location and
    /// joins the rewritten one (when `keep_if_held`, only if it held `Orig(W)` before).
    Write {
        clear: Vec<Loc>,
        defs: Vec<(Loc, Option<Loc>)>,
        keep_if_held: bool,
    },
    ClearShared,
    SetBase(Loc),
    /// The original move's symbol effect.
    Rename {
        pairs: Vec<(Loc, Loc)>,
        guarded: bool,
    },
    ClobberFrame,
    ResetFrame,
    /// The kernel's frame is new: [`State::fresh_frame`] with the claim's passed words.
    FreshFrame(Vec<(i64, i64)>),
    ShiftFrame(i64),
    /// Propagate the state to the block at this instruction index (internal call-jump).
    JumpTo(usize),
}

#[derive(Debug, Clone, Default)]
pub(super) struct Step {
    pub(super) ops: Vec<Op>,
    /// Under a guard: the effects happen on one path and not on the other; the result is
    /// the meet of both.
    pub(super) guarded: bool,
    /// The guard (predicate and sense) of a guarded step, and whether the instruction writes
    /// that predicate: consecutive steps under one unchanged guard run or skip together, so
    /// their effects are met once, after the last (a wide spill split in two, for one).
    pub(super) guard: Option<(Loc, bool)>,
    pub(super) writes_guard: bool,
    pub(super) is_move: bool,
    pub(super) shared_move: bool,
    pub(super) is_call: bool,
}

/// Steps applied in order within a block. A guarded step's effects happen on one path only:
/// the state becomes the meet of both. Consecutive steps under the same guard, whose
/// predicate none of them rewrites, all run or all skip: the state follows the path that
/// runs them (`taken`), and meets the path that skips them (`skipped`) once the run ends.
#[derive(Default)]
pub(super) struct GuardRun {
    /// The guard of the run in progress, the state where it began, and whether its last
    /// step wrote the predicate (the run ends there).
    pub(super) open: Option<((Loc, bool), State, bool)>,
}

impl GuardRun {
    /// Apply `step`; the instruction indices it jumps to (with `st` the state on the path
    /// that jumps). With `check`, a failed requirement is an error (the reason).
    pub(super) fn apply(
        &mut self,
        step: &Step,
        st: &mut State,
        check: bool,
    ) -> Result<Vec<usize>, Unmet> {
        let continues = match (&self.open, step.guard) {
            (Some((g, _, wrote)), Some(h)) => *g == h && !wrote,
            _ => false,
        };
        if !continues {
            self.end(st);
        }
        if !step.guarded {
            return apply_ops(&step.ops, st, check);
        }
        let Some(g) = step.guard else {
            // A guard the state cannot name (not a predicate register): this step alone.
            let mut taken = st.clone();
            let jumps = apply_ops(&step.ops, &mut taken, check)?;
            st.meet(&taken);
            return Ok(jumps);
        };
        match &mut self.open {
            Some((_, _, wrote)) => *wrote = step.writes_guard,
            None => self.open = Some((g, st.clone(), step.writes_guard)),
        }
        apply_ops(&step.ops, st, check)
    }

    /// Close the run in progress: meet with the path that skipped it.
    pub(super) fn end(&mut self, st: &mut State) {
        if let Some((_, skipped, _)) = self.open.take() {
            st.meet(&skipped);
        }
    }
}

/// The effects of `ops` (needs checked when `check`); the instruction indices jumped to.
pub(super) fn apply_ops(ops: &[Op], st: &mut State, check: bool) -> Result<Vec<usize>, Unmet> {
    let mut jumps = Vec::new();
    for op in ops {
        match op {
            Op::Need { loc, sym, what } => {
                if check && !st.holds(*loc, *sym) {
                    return Err(Unmet::Need {
                        loc: *loc,
                        holds: show(&st.get(*loc)),
                        what: what.clone(),
                        sym: *sym,
                    });
                }
            }
            Op::NeedFrame => {
                if check {
                    if !st.local_default() {
                        return Err(Unmet::FrameUnknown);
                    }
                    for l in st.local_words() {
                        if !st.holds(l, Sym::Orig(l)) {
                            return Err(Unmet::FrameWord {
                                loc: l,
                                holds: show(&st.get(l)),
                            });
                        }
                    }
                }
            }
            Op::Copy { pairs, guarded } => copy(st, pairs, *guarded),
            Op::BaseCopy {
                base,
                pairs,
                guarded,
                store,
            } => {
                if st.holds(*base, Sym::SBase) {
                    copy(st, pairs, *guarded);
                } else if *store {
                    if check {
                        return Err(Unmet::NoSpillBase {
                            base: *base,
                            holds: show(&st.get(*base)),
                        });
                    }
                    st.clear_shared();
                } else {
                    for (d, _) in pairs {
                        st.set(*d, Set::new());
                    }
                }
            }
            Op::FrameCopy {
                pairs,
                guarded,
                store,
            } => {
                if st.holds(Loc::R(1), Sym::Orig(Loc::R(1))) {
                    copy(st, pairs, *guarded);
                } else if *store {
                    if check {
                        return Err(Unmet::NoFrame {
                            holds: show(&st.get(Loc::R(1))),
                        });
                    }
                    st.reset_frame();
                } else {
                    for (d, _) in pairs {
                        st.set(*d, Set::new());
                    }
                }
            }
            Op::Write {
                clear,
                defs,
                keep_if_held,
            } => {
                let held: Vec<bool> = defs
                    .iter()
                    .map(|(w, r)| r.is_some_and(|r| st.holds(r, Sym::Orig(*w))))
                    .collect();
                for l in clear {
                    st.set(*l, Set::new());
                }
                for ((w, r), h) in defs.iter().zip(held) {
                    st.remove_everywhere(Sym::Orig(*w));
                    if let Some(r) = r
                        && (!keep_if_held || h)
                    {
                        st.add(*r, Sym::Orig(*w));
                    }
                }
            }
            Op::ClearShared => st.clear_shared(),
            Op::SetBase(l) => {
                st.remove_everywhere(Sym::SBase);
                st.set(*l, Set::from([Sym::SBase]));
            }
            Op::Rename { pairs, guarded } => {
                let holders: Vec<Vec<Loc>> = pairs
                    .iter()
                    .map(|(_, s)| st.holders(Sym::Orig(*s)))
                    .collect();
                for ((d, _), hs) in pairs.iter().zip(holders) {
                    let sym = Sym::Orig(*d);
                    if *guarded {
                        for l in st.holders(sym) {
                            if !hs.contains(&l) {
                                let mut s = st.get(l);
                                s.remove(&sym);
                                st.set(l, s);
                            }
                        }
                    } else {
                        st.remove_everywhere(sym);
                        for l in hs {
                            st.add(l, sym);
                        }
                    }
                }
            }
            Op::ClobberFrame => st.clobber_frame(),
            Op::ResetFrame => st.reset_frame(),
            Op::FreshFrame(passed) => st.fresh_frame(passed),
            Op::ShiftFrame(d) => st.shift_frame(*d),
            Op::JumpTo(j) => jumps.push(*j),
        }
    }
    Ok(jumps)
}

/// Copy the sets of the sources to the destinations (all sources read first); a guarded
/// copy keeps what old and new have in common.
pub(super) fn copy(st: &mut State, pairs: &[(Loc, Loc)], guarded: bool) {
    let vals: Vec<Set> = pairs.iter().map(|(_, s)| st.get(*s)).collect();
    for ((d, _), v) in pairs.iter().zip(vals) {
        let v = if guarded {
            st.get(*d).intersection(&v).copied().collect()
        } else {
            v
        };
        st.set(*d, v);
    }
}
