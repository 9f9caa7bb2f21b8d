//! Dense sets of register-file locations (`R`, `P`, `UR`, `UP`) for the callee summaries
//! and the liveness, and the spill words a function may write.

use std::collections::BTreeSet;

use super::state::Loc;
use crate::sass::ir::RZ;

pub(super) const NP: usize = 7;
pub(super) const NUR: usize = 63;

/// A set of register-file locations (R, P, UR, UP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct RegLocs(pub(super) [u64; 6]);

impl RegLocs {
    pub(super) fn index(l: Loc) -> Option<usize> {
        match l {
            Loc::R(r) if r < RZ => Some(r as usize),
            Loc::P(p) if (p as usize) < NP => Some(255 + p as usize),
            Loc::Ur(u) if (u as usize) < NUR => Some(262 + u as usize),
            Loc::Up(p) if (p as usize) < NP => Some(325 + p as usize),
            _ => None,
        }
    }
    pub(super) fn loc(i: usize) -> Loc {
        match i {
            0..255 => Loc::R(i as u8),
            255..262 => Loc::P((i - 255) as u8),
            262..325 => Loc::Ur((i - 262) as u8),
            _ => Loc::Up((i - 325) as u8),
        }
    }
    pub(super) fn insert(&mut self, l: Loc) {
        if let Some(i) = Self::index(l) {
            self.0[i / 64] |= 1 << (i % 64);
        }
    }
    pub(super) fn union_with(&mut self, o: &RegLocs) -> bool {
        let before = *self;
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a |= b;
        }
        *self != before
    }
    pub(super) fn iter(&self) -> impl Iterator<Item = Loc> + '_ {
        (0..332)
            .filter(|&i| self.0[i / 64] & (1 << (i % 64)) != 0)
            .map(Self::loc)
    }
    /// `R0..R(count-1)` and every predicate, uniform register and uniform predicate.
    pub(super) fn below(count: u32) -> RegLocs {
        let mut s = RegLocs::default();
        for r in 0..count.min(255) {
            s.insert(Loc::R(r as u8));
        }
        for p in 0..NP as u8 {
            s.insert(Loc::P(p));
            s.insert(Loc::Up(p));
        }
        for u in 0..NUR as u8 {
            s.insert(Loc::Ur(u));
        }
        s
    }
}

/// Shared words a function may write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SharedWrites {
    pub(super) all: bool,
    pub(super) words: BTreeSet<i64>,
}

impl SharedWrites {
    pub(super) fn union_with(&mut self, o: &SharedWrites) {
        self.all |= o.all;
        self.words.extend(&o.words);
    }
}
