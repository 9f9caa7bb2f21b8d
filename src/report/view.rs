//! What the page shows of one kernel's code, computed from kept cubins: the SASS listing of
//! the variant that ships, live general registers per instruction (before and after the
//! change), local-memory accesses (spills, local arrays) and the shared accesses the
//! spill2smem rewrite put in their place, basic blocks and natural loops.
//!
//! "Before" is the spill2smem candidate as ptxas made it when the rewrite was chosen (so
//! the listing can highlight exactly what the rewrite changed), else ptxas's own choice (a
//! different budget: the whole code differs, so nothing is highlighted).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::analysis::{Cfg, Liveness};
use crate::sass::decode::{self, Decoded};
use crate::sass::ir::{Function, Instr};
use crate::sass::opcode::Op;

/// Per-instruction flags in the listing.
pub const CHANGED: u8 = 1;
/// `LDL`/`STL`: a spill, a refill or a local array.
pub const LOCAL: u8 = 2;
/// An `LDS`/`STS` the rewrite put in place of a spill (demoted to shared memory).
pub const DEMOTED: u8 = 4;
/// Inside a natural loop.
pub const LOOP: u8 = 8;

/// One version of the kernel's code, for the register-pressure chart.
#[derive(Debug, Clone)]
pub struct Code {
    pub(crate) label: String,
    /// Live general registers at each instruction (what `nvdisasm -plr` counts).
    pub(crate) live: Vec<u32>,
    /// Indices of local-memory accesses.
    pub(crate) local: Vec<usize>,
    /// Indices of demoted (rewritten) shared accesses.
    pub(crate) demoted: Vec<usize>,
    /// (index, count) of the first instruction with the most live registers.
    pub(crate) max_live: (usize, u32),
}

#[derive(Debug, Clone)]
pub struct Block {
    /// Instructions `first..end`.
    pub first: usize,
    pub(crate) end: usize,
    /// Successor blocks (indices into [`KernelView::blocks`]).
    pub(crate) succ: Vec<usize>,
    /// Loops around it.
    pub(crate) depth: u32,
}

#[derive(Debug, Clone)]
pub struct Loop {
    /// Header block (index into [`KernelView::blocks`]).
    pub(crate) header: usize,
    /// The instruction span the body covers (ptxas lays loops out contiguously).
    pub first: usize,
    pub(crate) last: usize,
    pub(crate) blocks: usize,
    pub(crate) instrs: usize,
    /// Loops around the header, this one included (1 = outermost).
    pub(crate) depth: u32,
}

#[derive(Debug, Clone)]
pub struct KernelView {
    /// Section offset of the first instruction.
    pub(crate) start: u64,
    /// Listing text and flags of the code that ships.
    pub(crate) lines: Vec<String>,
    pub(crate) flags: Vec<u8>,
    pub(crate) after: Code,
    pub(crate) before: Option<Code>,
    /// Whether `before` is the same code before the spill2smem rewrite.
    pub(crate) rewritten: bool,
    pub(crate) blocks: Vec<Block>,
    pub(crate) loops: Vec<Loop>,
}

/// Decodes each cubin once (several kernels share one) with the toolkit's nvdisasm.
pub struct Decoder {
    nvdisasm: PathBuf,
    done: HashMap<PathBuf, Rc<Decoded>>,
}

impl Decoder {
    pub fn new(nvdisasm: PathBuf) -> Decoder {
        Decoder {
            nvdisasm,
            done: HashMap::new(),
        }
    }

    /// Kernel `name` of the cubin at `path`.
    pub fn function(&mut self, path: &Path, name: &str) -> Result<Function, String> {
        let d = match self.done.get(path) {
            Some(d) => d.clone(),
            None => {
                let d = Rc::new(
                    decode::decode_file(&self.nvdisasm, path)
                        .map_err(|e| format!("{}: {e}", path.display()))?,
                );
                self.done.insert(path.to_path_buf(), d.clone());
                d
            }
        };
        d.functions
            .iter()
            .find(|f| f.name == name)
            .cloned()
            .ok_or_else(|| format!("{}: no function {name}", path.display()))
    }
}

/// The listing line of an instruction: `@!P0 LDS.64 R4, [R2+0x10]`.
pub fn text(ins: &Instr) -> String {
    let mut s = String::new();
    if let Some(p) = ins.predicate.filter(|p| !p.is_true()) {
        let neg = if p.negated { "!" } else { "" };
        let file = if p.uniform { "UP" } else { "P" };
        let idx = if p.index == 7 {
            "T".to_string()
        } else {
            p.index.to_string()
        };
        s += &format!("@{neg}{file}{idx} ");
    }
    s += ins.opcode.as_str();
    let ops: Vec<&str> = ins.operands.iter().map(|o| o.text.as_str()).collect();
    if !ops.is_empty() {
        s += " ";
        s += &ops.join(", ");
    }
    s
}

/// What must be equal for an instruction to count as unchanged: its text, except that a
/// branch's target moves when code is inserted before it.
fn key(ins: &Instr) -> String {
    if ins.target.is_some() || !ins.targets.is_empty() || ins.callee.is_some() {
        format!("{:?} {}", ins.predicate, ins.opcode)
    } else {
        text(ins)
    }
}

fn code(f: &Function, label: &str, demoted: Vec<usize>) -> Code {
    let cfg = Cfg::build(f);
    let live = Liveness::compute(f, &cfg);
    let counts: Vec<u32> = (0..f.instrs.len()).map(|i| live.count(i)).collect();
    let max_live = counts
        .iter()
        .enumerate()
        .fold((0, 0), |m, (i, &c)| if c > m.1 { (i, c) } else { m });
    Code {
        label: label.to_string(),
        local: f
            .instrs
            .iter()
            .enumerate()
            .filter(|(_, i)| matches!(i.op(), Op::Ldl | Op::Stl))
            .map(|(i, _)| i)
            .collect(),
        demoted,
        live: counts,
        max_live,
    }
}

/// The view of `after` (the code that ships), with `before` for comparison. With
/// `rewritten`, `before` is the same variant before the spill2smem rewrite, and the
/// instructions that differ are flagged.
pub fn kernel_view(
    after: &Function,
    after_label: &str,
    before: Option<(&Function, &str)>,
    rewritten: bool,
) -> KernelView {
    let n = after.instrs.len();
    let mut flags = vec![0u8; n];
    for (i, ins) in after.instrs.iter().enumerate() {
        if matches!(ins.op(), Op::Ldl | Op::Stl) {
            flags[i] |= LOCAL;
        }
    }
    let mut demoted = Vec::new();
    if let (true, Some((b, _))) = (rewritten, before) {
        let old: Vec<String> = b.instrs.iter().map(key).collect();
        let new: Vec<String> = after.instrs.iter().map(key).collect();
        for (i, c) in changed(&old, &new).into_iter().enumerate() {
            if c {
                flags[i] |= CHANGED;
                if matches!(after.instrs[i].op(), Op::Lds | Op::Sts) {
                    flags[i] |= DEMOTED;
                    demoted.push(i);
                }
            }
        }
    }
    let cfg = Cfg::build(after);
    let mut nodes: Vec<_> = cfg.blocks().collect();
    nodes.sort_by_key(|(_, b)| b.first);
    let pos: HashMap<_, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i))
        .collect();
    let found = cfg.loops();
    let mut blocks: Vec<Block> = nodes
        .iter()
        .map(|(id, b)| Block {
            first: b.first,
            end: b.end,
            succ: cfg
                .successors(*id)
                .filter_map(|s| pos.get(&s).copied())
                .collect(),
            depth: found.iter().filter(|l| l.body.contains(id)).count() as u32,
        })
        .collect();
    for b in &mut blocks {
        b.succ.sort_unstable();
        b.succ.dedup();
        if b.depth > 0 {
            for f in &mut flags[b.first..b.end] {
                *f |= LOOP;
            }
        }
    }
    let mut loops: Vec<Loop> = found
        .iter()
        .filter_map(|l| {
            let spans = l
                .body
                .iter()
                .filter_map(|id| pos.get(id))
                .map(|&i| &blocks[i]);
            let first = spans.clone().map(|b| b.first).min()?;
            let last = spans.clone().map(|b| b.end).max()?.saturating_sub(1);
            Some(Loop {
                header: pos[&l.header],
                first,
                last,
                blocks: l.body.len(),
                instrs: spans.map(|b| b.end - b.first).sum(),
                depth: found.iter().filter(|o| o.body.contains(&l.header)).count() as u32,
            })
        })
        .collect();
    loops.sort_by_key(|l| (l.first, l.depth));
    KernelView {
        start: after.start,
        lines: after.instrs.iter().map(text).collect(),
        flags,
        after: code(after, after_label, demoted),
        before: before.map(|(b, label)| code(b, label, Vec::new())),
        rewritten,
        blocks,
        loops,
    }
}

/// For each line of `new`, whether it is not matched in `old` by a shortest edit script
/// (Myers' O((N+M)D) algorithm, after the common prefix and suffix; the trace keeps only the
/// diagonals each step reached, O(D²) memory). A rewrite changes few lines, so D is small;
/// past `MAX_D` edits the lines are aligned greedily instead ([`aligned_greedily`]).
pub fn changed(old: &[String], new: &[String]) -> Vec<bool> {
    const MAX_D: usize = 2000;
    let mut out = vec![false; new.len()];
    let pre = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suf = old[pre..]
        .iter()
        .rev()
        .zip(new[pre..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let a = &old[pre..old.len() - suf];
    let b = &new[pre..new.len() - suf];
    if b.is_empty() {
        return out;
    }
    let matched = myers(a, b, MAX_D).unwrap_or_else(|| aligned_greedily(a, b));
    for (j, m) in matched.into_iter().enumerate() {
        out[pre + j] = !m;
    }
    out
}

/// Which lines of `b` a shortest edit script from `a` keeps; `None` past `max_d` edits.
fn myers(a: &[String], b: &[String], max_d: usize) -> Option<Vec<bool>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let off = n + m + 1;
    let mut v = vec![0isize; 2 * off as usize + 1];
    // trace[d]: v before step d, diagonals -d-1..=d+1 (index k + d + 1).
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let mut done = false;
    for d in 0..=(n + m).min(max_d as isize) {
        trace.push(v[(off - d - 1) as usize..=(off + d + 1) as usize].to_vec());
        let mut k = -d;
        while k <= d {
            let i = (k + off) as usize;
            let mut x = if k == -d || (k != d && v[i - 1] < v[i + 1]) {
                v[i + 1]
            } else {
                v[i - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[i] = x;
            if x >= n && y >= m {
                done = true;
                break;
            }
            k += 2;
        }
        if done {
            break;
        }
    }
    if !done {
        return None;
    }
    // Walk the trace back: diagonal moves are matches, the rest insertions or deletions.
    let (mut x, mut y) = (n, m);
    let mut matched = vec![false; b.len()];
    for d in (0..trace.len() as isize).rev() {
        let t = &trace[d as usize];
        let at = |k: isize| t[(k + d + 1) as usize];
        let k = x - y;
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let (prev_x, prev_y) = if d == 0 {
            (0, 0)
        } else {
            (at(prev_k), at(prev_k) - prev_k)
        };
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            matched[y as usize] = true;
        }
        x = prev_x;
        y = prev_y;
    }
    Some(matched)
}

/// Which lines of `b` match `a` when walking both in order: equal lines match; where they
/// differ, the lines of `b` up to the next one equal to `a`'s current line (within the length
/// difference) are insertions, else the two lines are one replaced line. This is exactly the
/// shape of an in-place rewrite with an inserted prologue, at O(N) cost.
fn aligned_greedily(a: &[String], b: &[String]) -> Vec<bool> {
    let mut matched = vec![false; b.len()];
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            matched[j] = true;
            i += 1;
            j += 1;
            continue;
        }
        let spare = (b.len() - j).saturating_sub(a.len() - i);
        match (1..=spare.min(64)).find(|&t| b[j + t] == a[i]) {
            Some(t) => j += t,
            None => {
                i += 1;
                j += 1;
            }
        }
    }
    matched
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn changed_lines() {
        let f = |a: &str, b: &str| -> String {
            changed(&lines(a), &lines(b))
                .iter()
                .map(|&c| if c { '1' } else { '0' })
                .collect()
        };
        assert_eq!(f("a b c", "a b c"), "000");
        // An inserted prologue and a replaced spill.
        assert_eq!(f("a b STL c LDL d", "a p q b STS c LDS d"), "01101010");
        assert_eq!(f("x", "y"), "1");
        assert_eq!(f("a b", "a b c"), "001");
        assert_eq!(f("a b c d", "d"), "0");
        // Two shortest scripts: either b or c is new.
        assert!(["0100", "0010"].contains(&f("a c b d e", "a b c d").as_str()));
        // Every line of new is marked or matched in order: a long random case stays exact on
        // the matched count (the LCS length).
        let old: Vec<String> = (0..3000).map(|i| (i * 7 % 13).to_string()).collect();
        let mut new = old.clone();
        new.insert(10, "x".into());
        new[2000] = "y".into();
        let c = changed(&old, &new);
        assert_eq!(c.iter().filter(|&&x| x).count(), 2);
        assert!(c[10] && c[2000]);
        // Past the edit limit, the greedy alignment: a prologue and in-place replacements.
        let old: Vec<String> = (0..20_000).map(|i| format!("i{i}")).collect();
        let mut new: Vec<String> = ["p0", "p1"].iter().map(|s| s.to_string()).collect();
        new.extend(old.iter().cloned());
        for k in (100..20_000).step_by(7) {
            new[k + 2] = format!("s{k}");
        }
        let c = changed(&old, &new);
        let want: Vec<bool> = (0..new.len())
            .map(|j| j < 2 || (j >= 102 && (j - 102) % 7 == 0))
            .collect();
        assert_eq!(c, want);
    }
}
