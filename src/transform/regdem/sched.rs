//! Control bits for demoted accesses (RegDem's Figure 3, docs/papers.md §RegDem;
//! docs/sass.md §Control bits). Inserted `LDS`/`STS` are variable-latency: each gets a
//! scoreboard chosen by the barrier tracker, and the instructions that depend on them wait for
//! it.
//!
//! * A load before instruction `k` (or hoisted earlier in the block) writes a value register
//!   `k` reads: its write scoreboard is added to `k`'s wait mask. It first waits for any
//!   pending read of that register.
//! * A store after `k` reads the value register `k` wrote: it waits for `k`'s write
//!   scoreboard, or `k`'s stall is raised to the fixed latency of its class
//!   ([`crate::arch::latency::fixed_latency`]). Its read scoreboard is recorded for the
//!   register, and the next instruction that writes the register waits for it.
//! * An original variable-latency instruction reading a value register gets a read
//!   scoreboard when it had none (ptxas chose none because the original register was not
//!   overwritten soon; the value register is), recorded the same way.
//! * Nothing of ours is left pending across a block boundary: at a branch target and at every
//!   control or synchronisation instruction, the instruction waits for all our scoreboards.
//!
//! The tracker (Figure 3): a free scoreboard first (not pending in the original code at that
//! point, from a forward dataflow over the CFG, and not in flight for us); else one the
//! consumer already waits for (no added stall); else one only our stores hold (released a few
//! cycles after issue); else any. Scoreboards a `DEPBAR` counts on are never used: one more
//! operation on them would change what the count means.

use std::collections::BTreeMap;

use petgraph::Direction;

use super::refusal::Refusal;
use crate::analysis::Cfg;
use crate::arch::OpClass;
use crate::arch::latency::fixed_latency;
use crate::sass::Op;
use crate::sass::control::{Control, SCOREBOARDS};
use crate::sass::ir::Function;

/// Cycles an inserted `LDS`/`STS` stalls before the next instruction issues (as ptxas
/// separates consecutive shared-memory operations).
pub(crate) const ACCESS_STALL: u8 = 2;

/// What the scheduler needs per original instruction.
#[derive(Debug, Clone, Default)]
pub(crate) struct Site {
    /// Value registers loaded before it.
    pub(crate) loads: Vec<u8>,
    /// The instruction that reads each load (this one, or a later one of the block when the
    /// load was hoisted).
    pub(crate) load_for: Vec<usize>,
    /// Value registers stored after it.
    pub(crate) stores: Vec<u8>,
    /// Value registers it reads / writes (renamed demoted registers).
    pub(crate) reads: Vec<u8>,
    pub(crate) writes: Vec<u8>,
}

/// New control words.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    pub(crate) original: Vec<Control>,
    pub(crate) loads: Vec<Vec<Control>>,
    pub(crate) stores: Vec<Vec<Control>>,
}

const ALL: u8 = (1 << SCOREBOARDS) - 1;

fn bit(sb: u8) -> u8 {
    1 << sb
}

fn sets(c: Control) -> u8 {
    c.write_sb.map_or(0, bit) | c.read_sb.map_or(0, bit)
}

/// Scoreboards possibly pending (set and not yet waited for) before each instruction.
pub(crate) fn pending_before(f: &Function) -> Vec<u8> {
    let cfg = Cfg::build(f);
    let blocks: Vec<_> = cfg.blocks().collect();
    let mut out: BTreeMap<usize, u8> = blocks.iter().map(|(b, _)| (b.index(), 0)).collect();
    let step = |m: u8, c: Control| (m & !c.wait_mask) | sets(c);
    let input = |b: petgraph::graph::NodeIndex, out: &BTreeMap<usize, u8>| {
        cfg.graph
            .neighbors_directed(b, Direction::Incoming)
            .fold(0u8, |m, p| m | out[&p.index()])
    };
    loop {
        let mut changed = false;
        for (b, blk) in &blocks {
            let m = f.instrs[blk.first..blk.end]
                .iter()
                .fold(input(*b, &out), |m, i| step(m, i.ctrl));
            if out[&b.index()] != m {
                out.insert(b.index(), m);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut before = vec![0u8; f.instrs.len()];
    for (b, blk) in &blocks {
        let mut m = input(*b, &out);
        for (slot, ins) in before[blk.first..blk.end]
            .iter_mut()
            .zip(&f.instrs[blk.first..blk.end])
        {
            *slot = m;
            m = step(m, ins.ctrl);
        }
    }
    before
}

/// The scoreboards `DEPBAR`s of `f` count on; `Err` when one cannot be read.
pub(crate) fn depbar_scoreboards(f: &Function) -> Result<u8, Refusal> {
    let mut m = 0u8;
    for ins in f.instrs.iter().filter(|i| i.op() == Op::Depbar) {
        let mut found = false;
        for o in &ins.operands {
            if let Some(d) = o
                .text
                .strip_prefix("SB")
                .and_then(|d| d.chars().next())
                .and_then(|c| c.to_digit(10))
                .filter(|&d| d < u32::from(SCOREBOARDS))
            {
                m |= bit(d as u8);
                found = true;
            }
        }
        if !found {
            return Err(Refusal::DepbarUnread(ins.offset));
        }
    }
    Ok(m)
}

struct Tracker {
    forbidden: u8,
    /// Our operations in flight, by scoreboard.
    ours: u8,
    /// Value register → read scoreboards (mask) of operations still reading it.
    reading: BTreeMap<u8, u8>,
}

impl Tracker {
    fn choose(&self, orig_pending: u8, consumer_waits: u8) -> Option<u8> {
        let allowed = ALL & !self.forbidden;
        let lowest = |m: u8| (m != 0).then(|| m.trailing_zeros() as u8);
        lowest(allowed & !orig_pending & !self.ours)
            .or_else(|| lowest(allowed & consumer_waits))
            .or_else(|| lowest(allowed & self.ours & !orig_pending))
            .or_else(|| lowest(allowed))
    }

    /// An instruction waiting on `mask` has issued: those scoreboards are clear.
    fn waited(&mut self, mask: u8) {
        self.ours &= !mask;
        for m in self.reading.values_mut() {
            *m &= !mask;
        }
        self.reading.retain(|_, m| *m != 0);
    }

    /// A writer of `v` must wait for its pending read.
    fn war(&mut self, v: u8) -> u8 {
        self.reading.remove(&v).unwrap_or(0)
    }

    fn read_by(&mut self, v: u8, sb: u8) {
        *self.reading.entry(v).or_default() |= bit(sb);
    }
}

/// Whether `class` reads its sources at issue (fixed-latency ALU).
fn reads_at_issue(class: OpClass) -> bool {
    matches!(class, OpClass::Int | OpClass::Fp32)
}

/// Control words for the original instructions (`flush[k]`: a block boundary or control
/// instruction) and the inserted accesses of each site. `forbidden`: scoreboards never to
/// use besides those `f`'s own `DEPBAR`s count on (its callees' `DEPBAR`s).
pub(crate) fn schedule(
    sm: u32,
    f: &Function,
    sites: &[Site],
    flush: &[bool],
    forbidden: u8,
) -> Result<Schedule, Refusal> {
    let pending = pending_before(f);
    let mut t = Tracker {
        forbidden: depbar_scoreboards(f)? | forbidden,
        ours: 0,
        reading: BTreeMap::new(),
    };
    if t.forbidden == ALL {
        return Err(Refusal::NoFreeScoreboard);
    }
    let none = || Refusal::NoScoreboard;
    let access = |wait: u8| Control {
        stall: ACCESS_STALL,
        yield_bit: true,
        wait_mask: wait,
        ..Control::default()
    };
    let mut original = Vec::with_capacity(f.instrs.len());
    let mut loads = Vec::with_capacity(f.instrs.len());
    let mut awaited = vec![0u8; f.instrs.len()];
    let mut stores = Vec::with_capacity(f.instrs.len());
    for (k, ins) in f.instrs.iter().enumerate() {
        let site = &sites[k];
        let mut kc = ins.ctrl;
        // Inserted code and renamed operands invalidate what the reuse cache holds. The
        // control bits say what is reused (nvdisasm prints `R11.reuse.COL` on `IMMA`, not
        // a `.reuse` suffix the operands show).
        kc.reuse = 0;
        // At a block boundary nothing of ours stays pending: the first instruction there
        // (the first load, when loads go before k: a branch into k enters through them)
        // waits for all of it.
        let mut flush_mask = if flush[k] { t.ours } else { 0 };
        if site.loads.is_empty() {
            kc.wait_mask |= flush_mask;
            flush_mask = 0;
        }
        // Loads before k.
        let mut lc = Vec::new();
        if !site.loads.is_empty() {
            t.waited(flush_mask);
            let sb = t.choose(pending[k], kc.wait_mask).ok_or_else(none)?;
            for (&v, &consumer) in site.loads.iter().zip(&site.load_for) {
                let mut c = access(t.war(v) | std::mem::take(&mut flush_mask));
                c.write_sb = Some(sb);
                t.waited(c.wait_mask);
                lc.push(c);
                awaited[consumer] |= bit(sb);
            }
            t.ours |= bit(sb);
        }
        // k waits for the loads it reads (placed before it or hoisted earlier).
        kc.wait_mask |= awaited[k];
        // k: waits for pending reads of what it overwrites.
        for &v in &site.writes {
            kc.wait_mask |= t.war(v);
        }
        t.waited(kc.wait_mask);
        let class = ins.class();
        if !site.reads.is_empty() && !reads_at_issue(class) {
            let s = match kc.read_sb {
                Some(s) => s,
                None => t.choose(pending[k] & !kc.wait_mask, 0).ok_or_else(none)?,
            };
            kc.read_sb = Some(s);
            t.ours |= bit(s);
            for &v in &site.reads {
                t.read_by(v, s);
            }
        }
        // Stores after k.
        let mut sc = Vec::new();
        if !site.stores.is_empty() {
            let wait = match kc.write_sb {
                Some(w) => bit(w),
                None => {
                    let lat = fixed_latency(sm, class).ok_or_else(|| Refusal::LatencyUnknown {
                        opcode: ins.opcode.clone(),
                        at: ins.offset,
                    })?;
                    kc.stall = kc.stall.max(lat);
                    0
                }
            };
            let after = (pending[k] & !kc.wait_mask) | sets(kc);
            let r = t.choose(after, 0).ok_or_else(none)?;
            for &v in &site.stores {
                let mut c = access(wait);
                c.read_sb = Some(r);
                sc.push(c);
                t.read_by(v, r);
            }
            t.ours |= bit(r);
        }
        if !lc.is_empty()
            || !sc.is_empty()
            || (k + 1 < sites.len() && !sites[k + 1].loads.is_empty())
        {
            kc.stall = kc.stall.max(1);
        }
        original.push(kc);
        loads.push(lc);
        stores.push(sc);
    }
    Ok(Schedule {
        original,
        loads,
        stores,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tracker_prefers_free_then_waited_then_ours() {
        let t = Tracker {
            forbidden: 0b000001,
            ours: 0b000100,
            reading: BTreeMap::new(),
        };
        // SB0 is counted by a DEPBAR, SB1 pending in the original, SB2 ours: SB3 is free.
        assert_eq!(t.choose(0b000010, 0), Some(3));
        // Nothing free: one the consumer waits for anyway.
        assert_eq!(t.choose(0b111010, 0b010000), Some(4));
        // Else one only our own operations hold.
        assert_eq!(t.choose(0b111010, 0), Some(2));
        let all = Tracker {
            forbidden: ALL,
            ours: 0,
            reading: BTreeMap::new(),
        };
        assert_eq!(all.choose(0, 0), None);
    }

    #[test]
    fn reads_are_tracked_per_register_until_waited() {
        let mut t = Tracker {
            forbidden: 0,
            ours: 0,
            reading: BTreeMap::new(),
        };
        t.read_by(10, 2);
        t.read_by(10, 3);
        t.read_by(11, 3);
        t.waited(bit(3));
        assert_eq!(t.war(10), bit(2));
        assert_eq!(t.war(11), 0);
        assert_eq!(t.war(10), 0);
    }
}
