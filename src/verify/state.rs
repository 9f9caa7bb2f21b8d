//! The abstract state of the checker: for each location, the set of symbols (original
//! values) it is known to hold.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A place that holds a 32-bit value in the rewritten program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Loc {
    /// General register R0-R254.
    R(u8),
    /// Predicate P0-P6.
    P(u8),
    /// Uniform register UR0-UR62.
    Ur(u8),
    /// Uniform predicate UP0-UP6.
    Up(u8),
    /// Local-memory word at this byte offset from the (original program's current) `R1`.
    Local(i64),
    /// The current thread's spill word at `[base + imm]`.
    Shared(i64),
}

impl Loc {
    pub(crate) fn is_local(self) -> bool {
        matches!(self, Loc::Local(_))
    }
    pub(crate) fn is_shared(self) -> bool {
        matches!(self, Loc::Shared(_))
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Loc::R(r) => write!(f, "R{r}"),
            Loc::P(p) => write!(f, "P{p}"),
            Loc::Ur(u) => write!(f, "UR{u}"),
            Loc::Up(p) => write!(f, "UP{p}"),
            Loc::Local(k) if k < 0 => write!(f, "local[R1-{:#x}]", -k),
            Loc::Local(k) => write!(f, "local[R1+{k:#x}]"),
            Loc::Shared(k) => write!(f, "shared[base+{k:#x}]"),
        }
    }
}

/// What a location may be known to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Sym {
    /// The value this location of the original program holds at the same point.
    Orig(Loc),
    /// The per-thread base of the spill area.
    SBase,
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sym::Orig(l) => write!(f, "orig {l}"),
            Sym::SBase => f.write_str("the spill base"),
        }
    }
}

pub type Set = BTreeSet<Sym>;

/// Location → symbols. A location not in `map` holds its default: `{Orig(L)}` for registers,
/// `{Orig(L)}` or `∅` for local words (per `local_default`), `∅` for shared words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    map: BTreeMap<Loc, Set>,
    /// Untracked local words hold their own original value (false after the frame was
    /// renamed by an unknown `R1` write).
    local_default: bool,
}

impl State {
    /// Every register and local word holds its own original value; shared words nothing.
    pub fn entry() -> State {
        State {
            map: BTreeMap::new(),
            local_default: true,
        }
    }

    fn default_of(&self, l: Loc) -> Set {
        match l {
            Loc::Shared(_) => Set::new(),
            Loc::Local(_) if !self.local_default => Set::new(),
            _ => Set::from([Sym::Orig(l)]),
        }
    }

    fn is_default(&self, l: Loc, s: &Set) -> bool {
        match l {
            Loc::Shared(_) => s.is_empty(),
            Loc::Local(_) if !self.local_default => s.is_empty(),
            _ => s.len() == 1 && s.contains(&Sym::Orig(l)),
        }
    }

    pub fn get(&self, l: Loc) -> Set {
        self.map
            .get(&l)
            .cloned()
            .unwrap_or_else(|| self.default_of(l))
    }

    pub fn holds(&self, l: Loc, s: Sym) -> bool {
        match self.map.get(&l) {
            Some(set) => set.contains(&s),
            None => match l {
                Loc::Shared(_) => false,
                Loc::Local(_) if !self.local_default => false,
                _ => s == Sym::Orig(l),
            },
        }
    }

    pub fn set(&mut self, l: Loc, s: Set) {
        if self.is_default(l, &s) {
            self.map.remove(&l);
        } else {
            self.map.insert(l, s);
        }
    }

    /// Every location that holds `s`.
    pub fn holders(&self, s: Sym) -> Vec<Loc> {
        let mut out: Vec<Loc> = self
            .map
            .iter()
            .filter(|(_, set)| set.contains(&s))
            .map(|(l, _)| *l)
            .collect();
        if let Sym::Orig(own) = s
            && !self.map.contains_key(&own)
            && self.holds(own, s)
        {
            out.push(own);
        }
        out
    }

    /// Remove `s` from every location.
    pub fn remove_everywhere(&mut self, s: Sym) {
        for l in self.holders(s) {
            let mut set = self.get(l);
            set.remove(&s);
            self.set(l, set);
        }
    }

    pub fn add(&mut self, l: Loc, s: Sym) {
        let mut set = self.get(l);
        if set.insert(s) {
            self.set(l, set);
        }
    }

    /// Intersection (the join at control-flow merges). True when `self` changed.
    pub fn meet(&mut self, o: &State) -> bool {
        let before = self.clone();
        let keys: BTreeSet<Loc> = self.map.keys().chain(o.map.keys()).copied().collect();
        let a = self.clone();
        self.local_default = a.local_default && o.local_default;
        self.map.clear();
        // Local words not mentioned by either side: defaults intersect per the flag above.
        for l in keys {
            let s: Set = a.get(l).intersection(&o.get(l)).copied().collect();
            self.set(l, s);
        }
        *self != before
    }

    /// All shared words hold nothing.
    pub fn clear_shared(&mut self) {
        self.map.retain(|l, _| !l.is_shared());
    }

    /// A store that may hit any word of the frame, done identically by both programs: a
    /// local word keeps its own original value if it had it, loses everything else; no other
    /// location keeps an original local value.
    pub fn clobber_frame(&mut self) {
        let keys: Vec<Loc> = self.map.keys().copied().collect();
        for l in keys {
            let mut set = self.get(l);
            if l.is_local() {
                set.retain(|s| *s == Sym::Orig(l));
            } else {
                set.retain(|s| !matches!(s, Sym::Orig(Loc::Local(_))));
            }
            self.set(l, set);
        }
    }

    /// The original program's `R1` changed by an unknown amount: local words are renamed, so
    /// nothing is known about them and no original local value is held anywhere.
    pub fn reset_frame(&mut self) {
        self.map.retain(|l, _| !l.is_local());
        self.local_default = false;
        let keys: Vec<Loc> = self.map.keys().copied().collect();
        for l in keys {
            let mut set = self.get(l);
            set.retain(|s| !matches!(s, Sym::Orig(Loc::Local(_))));
            self.set(l, set);
        }
    }

    /// A kernel's frame has just been created (its stack pointer loaded from the constant
    /// bank, nothing stored since the kernel began): every word of it holds the same
    /// arbitrary value in both programs, so each holds its own original value; what was
    /// known of the old frame goes. Each `(k, imm)` of `passed` (a word the rewrite keeps in
    /// the spill word `imm` instead, never written yet) starts in the spill word instead.
    pub fn fresh_frame(&mut self, passed: &[(i64, i64)]) {
        self.reset_frame();
        self.local_default = true;
        for &(k, imm) in passed {
            self.set(Loc::Local(k), Set::new());
            self.set(Loc::Shared(imm), Set::from([Sym::Orig(Loc::Local(k))]));
        }
    }

    /// The original program's `R1` moved by `delta` bytes: the word that was `Local(j)` is
    /// now `Local(j - delta)`, in locations and in symbols alike.
    pub fn shift_frame(&mut self, delta: i64) {
        let ren = |l: Loc| match l {
            Loc::Local(j) => Loc::Local(j.wrapping_sub(delta)),
            other => other,
        };
        let old = std::mem::take(&mut self.map);
        for (l, set) in old {
            let set: Set = set
                .into_iter()
                .map(|s| match s {
                    Sym::Orig(x) => Sym::Orig(ren(x)),
                    other => other,
                })
                .collect();
            self.set(ren(l), set);
        }
    }

    /// Words of the frame the state says something about (explicit entries).
    pub fn local_words(&self) -> Vec<Loc> {
        self.map.keys().copied().filter(|l| l.is_local()).collect()
    }

    /// Whether untracked local words hold their own original value.
    pub fn local_default(&self) -> bool {
        self.local_default
    }
}

/// `{a, b}` for messages.
pub fn show(set: &Set) -> String {
    if set.is_empty() {
        return "nothing known".to_string();
    }
    let v: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    format!("{{{}}}", v.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_meet() {
        let mut a = State::entry();
        assert!(a.holds(Loc::R(3), Sym::Orig(Loc::R(3))));
        assert!(!a.holds(Loc::Shared(0), Sym::Orig(Loc::R(3))));
        a.set(Loc::Shared(0), Set::from([Sym::Orig(Loc::R(3))]));
        assert_eq!(a.holders(Sym::Orig(Loc::R(3))).len(), 2);
        let b = State::entry();
        let mut c = a.clone();
        assert!(c.meet(&b));
        assert_eq!(c, State::entry());
        a.remove_everywhere(Sym::Orig(Loc::R(3)));
        assert!(a.get(Loc::R(3)).is_empty());
        assert!(a.holders(Sym::Orig(Loc::R(3))).is_empty());
    }

    #[test]
    fn frame_shift_renames_words_and_symbols() {
        let mut a = State::entry();
        a.set(Loc::Local(8), Set::from([Sym::Orig(Loc::R(5))]));
        a.add(Loc::R(5), Sym::Orig(Loc::Local(8)));
        a.shift_frame(-8);
        assert!(a.holds(Loc::Local(16), Sym::Orig(Loc::R(5))));
        assert!(a.holds(Loc::R(5), Sym::Orig(Loc::Local(16))));
        assert!(a.holds(Loc::Local(8), Sym::Orig(Loc::Local(8))));
        a.reset_frame();
        assert!(!a.holds(Loc::Local(8), Sym::Orig(Loc::Local(8))));
        assert!(!a.holds(Loc::R(5), Sym::Orig(Loc::Local(16))));
    }
}
