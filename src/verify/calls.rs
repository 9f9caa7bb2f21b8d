//! The effect of a call's image (module doc, "Calls"): a direct call needs its callee's
//! live-in and gets its writes back by the callee's summary; an indirect or unknown call
//! needs everything it may read and keeps no spill value; a call-jump flows to its target.

use std::collections::BTreeMap;

use super::claim::{Check, Rejection, reject};
use super::regset::RegLocs;
use super::section::Section;
use super::semantics::{CallKind, call_kind};
use super::state::{Loc, Sym};
use super::transfer::Op;
use crate::sass::ir::Instr;

impl<'a> Section<'a> {
    pub(super) fn call_ops(
        &self,
        fk: usize,
        a: &Instr,
        r: &Instr,
        guarded: bool,
        ops: &mut Vec<Op>,
    ) -> Result<(), Rejection> {
        let f = &self.orig[fk];
        let kind = call_kind(a, f, &self.names);
        let need_base = |ops: &mut Vec<Op>| {
            if let Some(b) = &self.claim.base {
                ops.push(Op::Need {
                    loc: Loc::R(b.reg),
                    sym: Sym::SBase,
                    what: "the base register, at a call".into(),
                });
            }
        };
        let need_all = |ops: &mut Vec<Op>, set: &RegLocs, what: &str| {
            for l in set.iter() {
                ops.push(Op::Need {
                    loc: self.at_boundary(l),
                    sym: Sym::Orig(l),
                    what: what.to_string(),
                });
            }
        };
        match kind {
            CallKind::Jump(t) => {
                let rt = r.target.and_then(|t| self.rew[fk].index_of(t));
                let Some(j) = rt else {
                    return reject(
                        Check::Calls,
                        &f.name,
                        r.offset,
                        format!("call to {t:#x} has no image"),
                    );
                };
                ops.push(Op::JumpTo(j));
            }
            CallKind::Direct(c) => {
                need_base(ops);
                let s = &self.summaries[c];
                need_all(
                    ops,
                    &s.live_in,
                    &format!("live into `{}`, at the call", self.orig[c].name),
                );
                match &s.live_in_local {
                    Some(ws) => {
                        for &w in ws {
                            let passed = self.claim.passed.iter().find(|p| p.0 == w);
                            ops.push(Op::Need {
                                loc: passed.map_or(Loc::Local(w), |p| Loc::Shared(p.1)),
                                sym: Sym::Orig(Loc::Local(w)),
                                what: format!(
                                    "the frame word `{}` reads, at the call",
                                    self.orig[c].name
                                ),
                            });
                        }
                    }
                    None => ops.push(Op::NeedFrame),
                }
                let mut clear: Vec<Loc> = s.rew_writes.iter().collect();
                clear.extend(s.rew_shared.words.iter().map(|&w| Loc::Shared(w)));
                if s.rew_shared.all {
                    ops.push(Op::ClearShared);
                }
                let mut defs: Vec<(Loc, Option<Loc>)> = s
                    .orig_writes
                    .iter()
                    .map(|l| (l, Some(self.at_boundary(l))))
                    .collect();
                // The caller's frame words the callee writes: returned where the rewrite
                // keeps them (the callee's return checked it).
                match (&s.orig_local_writes, &s.rew_local_writes) {
                    (Some(o), Some(r)) => {
                        clear.extend(r.iter().map(|&w| Loc::Local(w)));
                        let returned: BTreeMap<i64, Loc> =
                            self.returned_words(s).into_iter().collect();
                        defs.extend(
                            o.iter()
                                .map(|&w| (Loc::Local(w), returned.get(&w).copied())),
                        );
                    }
                    _ => ops.push(Op::ResetFrame),
                }
                ops.push(Op::Write {
                    clear,
                    defs,
                    keep_if_held: guarded,
                });
                // A callee that stores through no pointer cannot reach the escaped frame.
                if self.escapes[fk] && self.pointer_stores[c] {
                    ops.push(Op::ClobberFrame);
                }
            }
            CallKind::Indirect | CallKind::Unknown => {
                let mut writes = RegLocs::below(self.count[fk]);
                let mut rew = writes;
                if kind == CallKind::Indirect {
                    need_base(ops);
                    for (g, s) in self.summaries.iter().enumerate() {
                        if self.orig[g].start > 0 {
                            need_all(
                                ops,
                                &s.live_in,
                                &format!("live into `{}`, at an indirect call", self.orig[g].name),
                            );
                            writes.union_with(&s.orig_writes);
                            rew.union_with(&s.rew_writes);
                        }
                    }
                }
                // Code outside the section sees the rewrite's own numbers.
                for l in RegLocs::below(self.count[fk]).iter() {
                    ops.push(Op::Need {
                        loc: l,
                        sym: Sym::Orig(l),
                        what: "a register an unknown callee may read".into(),
                    });
                }
                ops.push(Op::ClearShared);
                ops.push(Op::Write {
                    clear: rew.iter().collect(),
                    defs: writes.iter().map(|l| (l, Some(l))).collect(),
                    keep_if_held: guarded,
                });
                if self.escapes[fk] {
                    ops.push(Op::ClobberFrame);
                }
            }
        }
        Ok(())
    }
}
