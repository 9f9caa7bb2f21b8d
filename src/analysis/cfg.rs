//! Basic blocks and control-flow edges of one function, natural loops, the call graph.
//!
//! Blocks begin at the function's first instruction, at every branch target (`BRA`, `BRX`
//! tables, `BSSY` reconvergence points) and after every instruction that transfers control
//! (`BRA`, `BRX`, `EXIT`, `RET`, direct `CALL`, `BREAK`, predicated or not), and at the
//! instructions the function's `.nv.info` attributes name ([`Function::marked`]: every EXIT,
//! the warp-wide and cooperative-group instructions ptxas lists, `BRX`, `CALL.ABS` to
//! syscalls, 128-bit loads with unused bytes, spills), which nvdisasm labels. Compared with the blocks `nvdisasm -bbcfg` prints in
//! tests/decode/sass_decode.rs, which leaves out unreachable blocks (the `BRA` to itself after the
//! last `EXIT`).

use std::collections::{BTreeSet, HashMap};

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

use crate::sass::ir::{Function, Instr, OperandKind};
use crate::sass::opcode::Op;

/// Instructions `first..end` (indices into the function's `instrs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub first: usize,
    pub(crate) end: usize,
}

impl Block {
    /// One past the block's last instruction.
    pub fn end(&self) -> usize {
        self.end
    }
}

/// Why control goes from one block to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Edge {
    FallThrough,
    Branch,
    /// A `CALL` returns to the next instruction.
    CallReturn,
}

#[derive(Debug, Clone)]
pub struct Cfg {
    pub(crate) graph: DiGraph<Block, Edge>,
    /// Block of each instruction.
    pub(crate) block_of: Vec<NodeIndex>,
    /// The entry block.
    pub(crate) entry: NodeIndex,
}

fn ends_block(ins: &Instr) -> bool {
    match ins.op() {
        Op::Bra | Op::Brx | Op::Jmp | Op::Jmx | Op::Exit | Op::Ret | Op::Break | Op::Kill => true,
        // A call through a register (`CALL.REL.NOINC R6`) does not end nvdisasm's block; one
        // to a function, to an address or to a label in this function (`@!P0 CALL.REL.NOINC
        // `(.L_x_7)`, whose `target` is set) does.
        Op::Call => ins.callee.is_some() || ins.has_mod("ABS") || ins.target.is_some(),
        _ => false,
    }
}

/// Whether a branch's own operands make it conditional, whatever its guard: `BRA.DIV UR4`,
/// `BRA.CONV ~URZ` (taken or not by the warp's convergence) and `@P0 BRA P1` (taken where
/// both hold). nvdisasm has what the next instruction needs live through them.
pub(crate) fn conditional_form(ins: &Instr) -> bool {
    ins.op() == Op::Bra
        && (ins.has_mod("DIV")
            || ins.has_mod("CONV")
            || ins.operands.iter().any(|o| match o.kind {
                OperandKind::Pred { index, negated } | OperandKind::UPred { index, negated } => {
                    index != 7 || negated
                }
                _ => false,
            }))
}

/// Whether control can go on to the next instruction.
fn falls_through(ins: &Instr) -> bool {
    match ins.op() {
        Op::Bra | Op::Brx | Op::Jmp | Op::Jmx | Op::Exit | Op::Ret | Op::Kill => {
            !ins.always() || conditional_form(ins)
        }
        _ => true,
    }
}

impl Cfg {
    pub fn build(f: &Function) -> Cfg {
        let n = f.instrs.len();
        let mut leaders = BTreeSet::new();
        if n > 0 {
            leaders.insert(0);
        }
        // nvdisasm labels every instruction an attribute names (Function::marked), and a
        // label starts a block.
        leaders.extend(f.marked.iter().filter_map(|&o| f.index_of(o)));
        for (i, ins) in f.instrs.iter().enumerate() {
            for t in ins.target.iter().chain(&ins.targets) {
                if ins.callee.is_none()
                    && let Some(j) = f.index_of(*t)
                {
                    leaders.insert(j);
                }
            }
            if ends_block(ins) && i + 1 < n {
                leaders.insert(i + 1);
            }
        }
        let starts: Vec<usize> = leaders.into_iter().collect();
        let mut graph = DiGraph::new();
        let mut block_of = vec![NodeIndex::new(0); n];
        let mut node_at = HashMap::new();
        for (k, &s) in starts.iter().enumerate() {
            let e = starts.get(k + 1).copied().unwrap_or(n);
            let id = graph.add_node(Block { first: s, end: e });
            node_at.insert(s, id);
            for b in &mut block_of[s..e] {
                *b = id;
            }
        }
        for id in graph.node_indices().collect::<Vec<_>>() {
            let b = graph[id];
            let last = &f.instrs[b.end - 1];
            if falls_through(last) && b.end < n {
                let kind = if last.is_call() {
                    Edge::CallReturn
                } else {
                    Edge::FallThrough
                };
                graph.add_edge(id, node_at[&b.end], kind);
            }
            if matches!(last.op(), Op::Bra | Op::Brx | Op::Jmp | Op::Jmx) {
                for t in last.target.iter().chain(&last.targets) {
                    if let Some(j) = f.index_of(*t)
                        && let Some(&to) = node_at.get(&j)
                    {
                        graph.add_edge(id, to, Edge::Branch);
                    }
                }
            }
        }
        Cfg {
            entry: NodeIndex::new(0),
            graph,
            block_of,
        }
    }

    /// Whether block `b` is reachable from the entry.
    pub fn reachable(&self) -> Vec<bool> {
        let mut seen = vec![false; self.graph.node_count()];
        let mut dfs = petgraph::visit::Dfs::new(&self.graph, self.entry);
        while let Some(b) = dfs.next(&self.graph) {
            seen[b.index()] = true;
        }
        seen
    }

    /// Blocks in address order.
    pub fn blocks(&self) -> impl Iterator<Item = (NodeIndex, Block)> + '_ {
        self.graph.node_indices().map(|i| (i, self.graph[i]))
    }

    pub(crate) fn successors(&self, b: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph.edges(b).map(|e| e.target())
    }

    /// Natural loops: one per back edge (an edge whose target dominates its source).
    pub(crate) fn loops(&self) -> Vec<Loop> {
        if self.graph.node_count() == 0 {
            return Vec::new();
        }
        let dom = petgraph::algo::dominators::simple_fast(&self.graph, self.entry);
        let mut out = Vec::new();
        for e in self.graph.edge_references() {
            let (from, head) = (e.source(), e.target());
            let dominates = dom
                .dominators(from)
                .is_some_and(|mut d| d.any(|x| x == head));
            if !dominates {
                continue;
            }
            let mut body = BTreeSet::from([head]);
            let mut stack = vec![from];
            while let Some(b) = stack.pop() {
                if body.insert(b) {
                    stack.extend(
                        self.graph
                            .neighbors_directed(b, petgraph::Direction::Incoming),
                    );
                }
            }
            out.push(Loop {
                header: head,
                latch: from,
                body,
            });
        }
        out
    }
}

/// A natural loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loop {
    pub(crate) header: NodeIndex,
    pub(crate) latch: NodeIndex,
    pub(crate) body: BTreeSet<NodeIndex>,
}
