//! `.nv.callgraph`, read as `cuobjdump -elf` shows it: `(i32, i32)` pairs in four lists, each
//! opened by a sentinel pair `(0, -n)` (observed with ptxas 13.5, `-rdc` and whole-program,
//! sm_80 and sm_90; `tests/decode/callgraph_real.rs` checks this reader against cuobjdump):
//! 1. `(caller, callee)` symbol indices: direct calls, to functions of the module or of
//!    another (`vprintf`, a device function of another file under `-rdc`, the device
//!    runtime's `__cudaCDP2LaunchDeviceV2` for a launch from device code);
//! 2. `(function, prototype)`: functions that may be reached without a direct call, through a
//!    pointer or a launch from device code; the second number is a prototype (an offset that
//!    `.nv.prototype` names, 0 for a kernel), not a symbol;
//! 3. `(caller, prototype)`: indirect calls, by the prototype they call through;
//! 4. `(function, symbol)`: functions whose address a function takes, a kernel it launches
//!    from device code among them.
//!
//! Only the first list is calls: a kernel launched from device code runs as a grid of its own,
//! with its own registers, so launching it puts no limit on the launcher's budget.

use std::fmt;

/// The four lists, in the section's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallGraph {
    /// `(caller, callee)`: direct calls. Pairs before any sentinel count here, as they did
    /// before the lists were known.
    pub calls: Vec<(i32, i32)>,
    /// `(function, prototype)`: reachable without a direct call.
    pub targets: Vec<(i32, i32)>,
    /// `(caller, prototype)`: indirect calls.
    pub indirect: Vec<(i32, i32)>,
    /// `(function, symbol)`: addresses taken, kernels launched from device code.
    pub references: Vec<(i32, i32)>,
}

/// Why a callgraph section did not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallGraphError {
    /// Its size is not a whole number of pairs.
    Partial(usize),
    /// A sentinel `(0, -n)` for a list not known (`n` outside 1..=4) or out of order.
    Sentinel { offset: usize, list: i32 },
}

impl fmt::Display for CallGraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallGraphError::Partial(n) => write!(f, "{n} bytes is not a whole number of pairs"),
            CallGraphError::Sentinel { offset, list } => {
                write!(f, "sentinel (0,{list}) at byte {offset} is not known")
            }
        }
    }
}

impl std::error::Error for CallGraphError {}

impl CallGraph {
    /// Read the section's bytes: the lists by their sentinels, which must come in order
    /// (each at most once).
    pub fn parse(bytes: &[u8]) -> Result<CallGraph, CallGraphError> {
        if !bytes.len().is_multiple_of(8) {
            return Err(CallGraphError::Partial(bytes.len()));
        }
        let mut g = CallGraph::default();
        let mut list = 1;
        let mut opened = 0;
        for (n, pair) in pairs(bytes).enumerate() {
            match pair {
                (0, s) if s < 0 => {
                    let next = -i64::from(s);
                    if next <= opened || next > 4 {
                        return Err(CallGraphError::Sentinel {
                            offset: n * 8,
                            list: s,
                        });
                    }
                    opened = next;
                    list = next;
                }
                p => g.list_mut(list).push(p),
            }
        }
        Ok(g)
    }

    /// The section's bytes: the four sentinels, each followed by its list.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for list in 1..=4 {
            out.extend_from_slice(&0i32.to_le_bytes());
            out.extend_from_slice(&(-(list as i32)).to_le_bytes());
            for &(a, b) in self.list(list) {
                out.extend_from_slice(&a.to_le_bytes());
                out.extend_from_slice(&b.to_le_bytes());
            }
        }
        out
    }

    /// The direct callees of symbol `caller`, in the section's order.
    pub fn callees(&self, caller: i32) -> impl Iterator<Item = i32> + '_ {
        self.calls
            .iter()
            .filter(move |&&(a, _)| a == caller)
            .map(|&(_, b)| b)
    }

    /// Every symbol index the section holds, as `(list, position in the pair)`: what a
    /// renumbering of the symbol table must rewrite (prototypes are not symbols).
    pub fn map_symbols(&mut self, f: &mut dyn FnMut(i32) -> i32) {
        for (a, b) in self.calls.iter_mut().chain(self.references.iter_mut()) {
            *a = f(*a);
            *b = f(*b);
        }
        for (a, _) in self.targets.iter_mut().chain(self.indirect.iter_mut()) {
            *a = f(*a);
        }
    }

    fn list(&self, n: i64) -> &Vec<(i32, i32)> {
        match n {
            1 => &self.calls,
            2 => &self.targets,
            3 => &self.indirect,
            _ => &self.references,
        }
    }

    fn list_mut(&mut self, n: i64) -> &mut Vec<(i32, i32)> {
        match n {
            1 => &mut self.calls,
            2 => &mut self.targets,
            3 => &mut self.indirect,
            _ => &mut self.references,
        }
    }
}

fn pairs(bytes: &[u8]) -> impl Iterator<Item = (i32, i32)> + '_ {
    bytes.chunks_exact(8).map(|c| {
        (
            i32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            i32::from_le_bytes([c[4], c[5], c[6], c[7]]),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(pairs: &[(i32, i32)]) -> Vec<u8> {
        pairs
            .iter()
            .flat_map(|&(a, b)| a.to_le_bytes().into_iter().chain(b.to_le_bytes()))
            .collect()
    }

    #[test]
    fn a_device_launch_is_no_call() {
        // ptxas 13.5, sm_90, -rdc: parent (20) launches child (19) through the device
        // runtime (21, 22); child is listed as reachable with prototype 0.
        let raw = bytes(&[
            (0, -1),
            (20, 21),
            (20, 22),
            (0, -2),
            (19, 0),
            (0, -3),
            (0, -4),
            (20, 19),
        ]);
        let g = CallGraph::parse(&raw).unwrap();
        assert_eq!(g.calls, [(20, 21), (20, 22)]);
        assert_eq!(g.callees(19).count(), 0);
        assert_eq!(g.targets, [(19, 0)]);
        assert_eq!(g.references, [(20, 19)]);
        assert_eq!(g.encode(), raw);
    }

    #[test]
    fn prototypes_are_not_renumbered() {
        let raw = bytes(&[
            (0, -1),
            (29, 26),
            (0, -2),
            (26, 477),
            (0, -3),
            (29, 477),
            (0, -4),
            (13, 28),
        ]);
        let mut g = CallGraph::parse(&raw).unwrap();
        g.map_symbols(&mut |s| s + 1);
        assert_eq!(g.calls, [(30, 27)]);
        assert_eq!(g.targets, [(27, 477)]);
        assert_eq!(g.indirect, [(30, 477)]);
        assert_eq!(g.references, [(14, 29)]);
    }

    #[test]
    fn bad_sections_are_errors() {
        assert_eq!(CallGraph::parse(&[0; 12]), Err(CallGraphError::Partial(12)));
        let twice = bytes(&[(0, -1), (0, -1)]);
        assert!(CallGraph::parse(&twice).is_err());
        assert!(CallGraph::parse(&bytes(&[(0, -5)])).is_err());
        // No sentinel at all: pairs are calls.
        assert_eq!(CallGraph::parse(&bytes(&[(2, 3)])).unwrap().calls, [(2, 3)]);
    }
}
