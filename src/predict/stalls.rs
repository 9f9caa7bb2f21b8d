//! The static stall model (docs/DESIGN.md §Prediction and selection; RegDem §4, docs/papers.md
//! §RegDem): how many cycles a warp of one kernel variant spends, and how many bytes it moves,
//! read from the variant's SASS.
//!
//! Per instruction, with `w` the weight of its loop nest ([`LOOP_FACTOR`] per level):
//! - **latency**: the stall count in its control field (at least one cycle, the issue
//!   itself), plus, for each scoreboard it waits on, what is left of the producer's latency
//!   after the cycles that have passed since the producer issued: RegDem's barrier tracker.
//!   A memory producer's latency is the level its data comes from ([`Latencies`]: global data
//!   from DRAM, local data from wherever the variant's spills are placed, shared memory); the
//!   others are per-class figures. Trackers are cleared at branches and branch targets: ptxas
//!   releases scoreboards before control flow, so a wait never spans blocks.
//! - **issue**: the cycles the instruction occupies its scheduler's pipe,
//!   `MAX_THROUGHPUT / throughput(class)` (RegDem's equation 2 without its occupancy factor,
//!   which enters in [`super::price`]).
//! - **bytes**: what a warp of 32 threads moves to or from global, local and shared memory,
//!   the access size read from the instruction ([`crate::sass::access`]).
//! - the share of latency and issue that local-memory instructions take (their own stalls and
//!   issue, and the waits on their scoreboards): what a lower budget's spills add
//!   ([`super::coherence`]).
//! - a `CALL` adds the callee's totals (once per call site, recursion counted once).

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::analysis::loops::loop_weights;
use crate::arch::OpClass;
use crate::arch::latency::{MAX_THROUGHPUT, READ_RELEASE, scoreboard_latency, throughput};
use crate::sass::access::bytes_per_thread;
use crate::sass::control::SCOREBOARDS;
use crate::sass::ir::Function;

/// Threads per warp: a warp-wide access moves this many times one thread's bytes.
const WARP: f64 = 32.0;

/// Load-to-use cycles of the memory levels a variant's accesses come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latencies {
    /// Global (and texture) data: no reuse is visible in the SASS, so DRAM's.
    pub global: f64,
    /// Local data, where the variant's frame is placed at its occupancy.
    pub local: f64,
    pub shared: f64,
}

impl Latencies {
    fn of(&self, class: OpClass) -> f64 {
        match class {
            OpClass::Global | OpClass::Texture => self.global,
            OpClass::Local => self.local,
            OpClass::Shared => self.shared,
            c => scoreboard_latency(c),
        }
    }
}

/// Loop-weighted bytes one warp moves, per memory space.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Traffic {
    pub global: f64,
    pub local: f64,
    pub shared: f64,
}

/// The latency and issue cycles spent on one kind of instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spent {
    pub latency: f64,
    pub issue: f64,
}

/// Totals for one function, per warp, loop-weighted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Cost {
    /// Cycles the warp spends waiting or issuing, if it had its scheduler to itself.
    pub latency: f64,
    /// Cycles the warp occupies its scheduler's pipes.
    pub(crate) issue: f64,
    /// Loop-weighted local-memory (spill and local array) instructions.
    pub local_accesses: f64,
    /// Loop-weighted instructions.
    pub(crate) instructions: f64,
    /// What local-memory instructions take of `latency` and `issue`.
    pub local: Spent,
    /// Loop-weighted bytes per warp.
    pub bytes: Traffic,
}

impl Cost {
    fn add(&mut self, o: &Cost, times: f64) {
        self.latency += o.latency * times;
        self.issue += o.issue * times;
        self.local_accesses += o.local_accesses * times;
        self.instructions += o.instructions * times;
        self.local.latency += o.local.latency * times;
        self.local.issue += o.local.issue * times;
        self.bytes.global += o.bytes.global * times;
        self.bytes.local += o.bytes.local * times;
        self.bytes.shared += o.bytes.shared * times;
    }
}

/// The loop-weighted cost of `name`, its callees included, on sm_`sm` with memory producers
/// priced at `latencies`.
pub fn function_cost(
    sm: u32,
    latencies: &Latencies,
    functions: &[Function],
    name: &str,
) -> Option<Cost> {
    let by_name: HashMap<&str, &Function> =
        functions.iter().map(|f| (f.name.as_str(), f)).collect();
    let mut memo = HashMap::new();
    let mut visiting = HashSet::new();
    let at = Pricing { sm, latencies };
    cost_of(&at, &by_name, name, &mut memo, &mut visiting)
}

/// What every instruction of one walk is priced with.
struct Pricing<'a> {
    sm: u32,
    latencies: &'a Latencies,
}

/// A scoreboard in flight: the producer's latency, the cycles since it issued, and whether
/// the producer is a local-memory instruction (its waits are the spills' share).
#[derive(Clone, Copy)]
struct InFlight {
    latency: f64,
    elapsed: f64,
    local: bool,
}

fn cost_of<'a>(
    at: &Pricing<'_>,
    by_name: &HashMap<&'a str, &'a Function>,
    name: &str,
    memo: &mut HashMap<String, Cost>,
    visiting: &mut HashSet<String>,
) -> Option<Cost> {
    if let Some(c) = memo.get(name) {
        return Some(*c);
    }
    let f = *by_name.get(name)?;
    if !visiting.insert(name.to_string()) {
        // Recursion: the recursive call itself is counted as free; the body once.
        return Some(Cost::default());
    }
    let weights = loop_weights(f);
    let leaders = block_leaders(f);
    let mut total = Cost::default();
    let mut tracker: [Option<InFlight>; SCOREBOARDS as usize] = [None; SCOREBOARDS as usize];
    for (i, ins) in f.instrs.iter().enumerate() {
        let w = weights[i];
        if leaders.contains(&i) {
            tracker = [None; SCOREBOARDS as usize];
        }
        let class = ins.class();
        let local = class == OpClass::Local;
        let (mut cycles, mut local_cycles) = (0.0, 0.0);
        for b in ins.ctrl.waits() {
            if let Some(p) = tracker[usize::from(b)].take() {
                let exposed = (p.latency - p.elapsed).max(0.0);
                cycles += exposed;
                if p.local {
                    local_cycles += exposed;
                }
                advance(&mut tracker, exposed);
            }
        }
        // The producer's clock starts at its issue, so its own stall counts.
        if let Some(b) = ins.ctrl.write_sb {
            let latency = at.latencies.of(class);
            tracker[usize::from(b)] = Some(InFlight {
                latency,
                elapsed: 0.0,
                local,
            });
        }
        if let Some(b) = ins.ctrl.read_sb {
            // A write release of the same scoreboard subsumes the read release.
            if ins.ctrl.write_sb != Some(b) {
                tracker[usize::from(b)] = Some(InFlight {
                    latency: READ_RELEASE,
                    elapsed: 0.0,
                    local,
                });
            }
        }
        let stall = f64::from(ins.ctrl.stall.max(1));
        cycles += stall;
        advance(&mut tracker, stall);
        let issue = MAX_THROUGHPUT / throughput(at.sm, class);
        total.latency += cycles * w;
        total.issue += issue * w;
        total.instructions += w;
        if local {
            local_cycles += stall;
            total.local_accesses += w;
            total.local.issue += issue * w;
        }
        total.local.latency += local_cycles * w;
        let bytes = f64::from(bytes_per_thread(ins)) * WARP * w;
        match class {
            OpClass::Global | OpClass::Texture => total.bytes.global += bytes,
            OpClass::Local => total.bytes.local += bytes,
            OpClass::Shared => total.bytes.shared += bytes,
            _ => {}
        }
        if let Some(callee) = ins.callee.as_deref()
            && let Some(c) = cost_of(at, by_name, callee, memo, visiting)
        {
            total.add(&c, w);
        }
        if ins.class() == OpClass::Control {
            tracker = [None; SCOREBOARDS as usize];
        }
    }
    visiting.remove(name);
    memo.insert(name.to_string(), total);
    Some(total)
}

fn advance(tracker: &mut [Option<InFlight>], cycles: f64) {
    for p in tracker.iter_mut().flatten() {
        p.elapsed += cycles;
    }
}

/// Where the predictor releases its scoreboard trackers (ptxas releases them before control
/// flow): every resolved target and the instruction after each control-class one. Coarser
/// than the CFG of [`crate::analysis::cfg`], on purpose: it needs no `.nv.info` marks, so it
/// reads the same on `raw`'s operand-less decoding.
fn block_leaders(f: &Function) -> HashSet<usize> {
    let mut leaders = HashSet::new();
    for (i, ins) in f.instrs.iter().enumerate() {
        if let Some(t) = ins.target.and_then(|t| f.index_of(t)) {
            leaders.insert(t);
        }
        if ins.class() == OpClass::Control {
            leaders.insert(i + 1);
        }
    }
    leaders
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sass::{Control, Instr, Op, Opcode};

    /// RegDem's figures: 200 cycles for global and local producers, 24 for shared.
    const REGDEM: Latencies = Latencies {
        global: 200.0,
        local: 200.0,
        shared: 24.0,
    };

    fn function_cost(sm: u32, fs: &[Function], name: &str) -> Option<Cost> {
        super::function_cost(sm, &REGDEM, fs, name)
    }

    /// An instruction at index `i` of a function starting at 0, as `raw` decodes it (the
    /// operand text only gives a branch's target or a call's callee).
    fn ins(i: u64, opcode: &str, operands: &str, ctrl: Control) -> Instr {
        let opcode = Opcode::from(opcode);
        Instr {
            offset: 16 * i,
            // A 32-bit access where the instruction moves memory (sass::access).
            raw: 4 << 73,
            predicate: None,
            target: (opcode.op() == Op::Bra)
                .then(|| u64::from_str_radix(operands.trim_start_matches("0x"), 16).ok())
                .flatten(),
            callee: (opcode.op() == Op::Call).then(|| operands.to_string()),
            opcode,
            operands: Vec::new(),
            ctrl,
            targets: Vec::new(),
            unknown: true,
        }
    }

    fn stall(n: u8) -> Control {
        Control {
            stall: n,
            yield_bit: true,
            ..Control::default()
        }
    }

    fn func(name: &str, body: Vec<(&str, &str, Control)>) -> Function {
        Function {
            name: name.into(),
            section: 0,
            start: 0,
            instrs: body
                .into_iter()
                .enumerate()
                .map(|(i, (o, a, c))| ins(i as u64, o, a, c))
                .collect(),
            kernel: true,
            regs: None,
            abi_regs: None,
            abi_files: None,
            marked: Vec::new(),
        }
    }

    #[test]
    fn stall_counts_add_up() {
        // Three dependent FFMAs at 4 cycles each: 12 cycles of latency, 3 issue slots at
        // full FP32 rate on sm_86 (128 per SM per clock), no memory traffic.
        let f = func("k", vec![("FFMA", "R0,R0,R1,R2", stall(4)); 3]);
        let c = function_cost(86, std::slice::from_ref(&f), "k").unwrap();
        assert_eq!((c.latency, c.issue, c.instructions), (12.0, 3.0, 3.0));
        assert_eq!((c.bytes, c.local), (Traffic::default(), Spent::default()));
        // On sm_80 FP32 runs at 64 per SM per clock: two cycles per warp instruction.
        assert_eq!(function_cost(80, &[f], "k").unwrap().issue, 6.0);
    }

    #[test]
    fn scoreboard_wait_on_a_global_load() {
        // LDG sets SB0 and stalls 1; an FFMA 2 cycles later waits on SB0 and stalls 4.
        let ldg = Control {
            stall: 1,
            write_sb: Some(0),
            ..stall(1)
        };
        let wait = Control {
            wait_mask: 0b1,
            ..stall(4)
        };
        let f = func(
            "k",
            vec![
                ("LDG.E", "R2,[R4.64]", ldg),
                ("IADD3", "R6,R6,0x1,RZ", stall(2)),
                ("FFMA", "R0,R2,R2,R0", wait),
            ],
        );
        let c = function_cost(90, &[f], "k").unwrap();
        // 1 + 2 cycles pass before the wait; 200 - 3 are exposed; then the FFMA's 4.
        assert_eq!(c.latency, 1.0 + 2.0 + 197.0 + 4.0);
        // Issue: LDG 128/32 = 4, IADD3 128/64 = 2, FFMA 1 (sm_90).
        assert_eq!(c.issue, 7.0);
        // A 32-bit global load moves 128 bytes per warp.
        assert_eq!(c.bytes.global, 128.0);
        // The same load from local memory (a spill reload) costs the same wait and counts
        // as a local access, whose share is its own stall, the exposed wait and its issue;
        // from shared memory the wait is 24 - 3.
        let mut lo = func(
            "k",
            vec![
                ("LDL", "R2,[R1+0x10]", ldg),
                ("IADD3", "", stall(2)),
                ("FFMA", "", wait),
            ],
        );
        let c = function_cost(90, &[lo.clone()], "k").unwrap();
        assert_eq!((c.local_accesses, c.bytes.local), (1.0, 128.0));
        assert_eq!(
            c.local,
            Spent {
                latency: 1.0 + 197.0,
                issue: 4.0
            }
        );
        // Placed in L1 (33 cycles), the wait shrinks to 30.
        let near = Latencies {
            local: 33.0,
            ..REGDEM
        };
        let c = super::function_cost(90, &near, &[lo.clone()], "k").unwrap();
        assert_eq!(c.latency, 1.0 + 2.0 + 30.0 + 4.0);
        lo.instrs[0] = ins(0, "LDS", "R2,[R3]", ldg);
        assert_eq!(
            function_cost(90, &[lo], "k").unwrap().latency,
            1.0 + 2.0 + 21.0 + 4.0
        );
    }

    #[test]
    fn waits_do_not_cross_branches() {
        // The scoreboard set before a branch is not waited on after it.
        let ldg = Control {
            write_sb: Some(1),
            ..stall(1)
        };
        let f = func(
            "k",
            vec![
                ("LDG.E", "R2,[R4.64]", ldg),
                ("BRA", "0x20", stall(5)),
                (
                    "FFMA",
                    "R0,R2,R2,R0",
                    Control {
                        wait_mask: 0b10,
                        ..stall(4)
                    },
                ),
            ],
        );
        assert_eq!(
            function_cost(86, &[f], "k").unwrap().latency,
            1.0 + 5.0 + 4.0
        );
    }

    #[test]
    fn loops_are_weighted() {
        // 0: MOV; 1-2: loop body; 3: backward branch to 1; 4: EXIT.
        let f = func(
            "k",
            vec![
                ("MOV", "R0,RZ", stall(1)),
                ("FFMA", "R0,R0,R0,R0", stall(4)),
                ("ISETP.NE.AND", "P0,PT,R0,RZ,PT", stall(2)),
                ("BRA", "0x10", stall(5)),
                ("EXIT", "", stall(5)),
            ],
        );
        assert_eq!(loop_weights(&f), vec![1.0, 10.0, 10.0, 10.0, 1.0]);
        let c = function_cost(86, &[f], "k").unwrap();
        assert_eq!(c.latency, 1.0 + 10.0 * (4.0 + 2.0 + 5.0) + 5.0);
        assert_eq!(c.instructions, 32.0);
    }

    #[test]
    fn calls_add_the_callee_and_fp64_is_slow_on_consumer_parts() {
        let callee = func(
            "$k$g",
            vec![
                ("DFMA", "R0,R0,R0,R0", stall(2)),
                ("RET.REL.NODEC", "R2 0x0", stall(5)),
            ],
        );
        let k = func(
            "k",
            vec![
                ("CALL.REL.NOINC", "$k$g", stall(1)),
                ("CALL.REL.NOINC", "$k$g", stall(1)),
                ("EXIT", "", stall(5)),
            ],
        );
        let fs = [k, callee];
        let c = function_cost(86, &fs, "k").unwrap();
        assert_eq!(c.latency, 1.0 + 1.0 + 5.0 + 2.0 * (2.0 + 5.0));
        // DFMA: 128 / 2 = 64 cycles on sm_86, 2 on sm_90.
        assert_eq!(c.issue, 3.0 + 2.0 * (64.0 + 1.0));
        assert_eq!(
            function_cost(90, &fs, "k").unwrap().issue,
            3.0 + 2.0 * (2.0 + 1.0)
        );
        // A recursive function is counted once, without looping forever.
        let rec = func(
            "r",
            vec![
                ("CALL.REL.NOINC", "r", stall(1)),
                ("RET.REL.NODEC", "R2 0x0", stall(5)),
            ],
        );
        assert_eq!(function_cost(86, &[rec], "r").unwrap().latency, 6.0);
        assert!(function_cost(86, &fs, "missing").is_none());
    }
}
