//! The functions of one text section, each on its own. nvdisasm lists a kernel's local
//! sub-functions (`$kernel$callee`) inside the kernel's code; the rewrites cut at the
//! cubin's function symbols ([`cut`]), the translation checker, which sees no cubin, at the
//! entries its `CALL`s name ([`split_sub_functions`]) and after the code reachable from each
//! entry ([`split_orphans`]). One cutter for both, so a function looks the same to a rewrite
//! and to its check.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::sass::Op;
use crate::sass::encode;
use crate::sass::ir::{Function, Instr, OperandKind};

/// Why a section's functions cannot be cut apart (the checker's rejection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitError {
    pub(crate) function: String,
    pub(crate) offset: u64,
    pub(crate) reason: String,
}

fn fail<T>(f: &Function, offset: u64, reason: String) -> Result<T, SplitError> {
    Err(SplitError {
        function: f.name.clone(),
        offset,
        reason,
    })
}

/// `f` cut into functions at `starts` (offset, name, whether a kernel; the first at
/// `f.start`, ascending), with `instrs` (`f`'s instructions, possibly annotated) as their
/// code. Each piece keeps `f`'s section and register count and the marked offsets inside it.
pub fn cut(f: &Function, instrs: &[Instr], starts: &[(u64, String, bool)]) -> Vec<Function> {
    let mut out = Vec::with_capacity(starts.len());
    for (k, (start, name, kernel)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(f.end(), |c| c.0);
        let (a, b) = (
            ((start - f.start) / 16) as usize,
            ((end - f.start) / 16) as usize,
        );
        out.push(Function {
            name: name.clone(),
            section: f.section,
            start: *start,
            instrs: instrs[a..b].to_vec(),
            kernel: *kernel,
            regs: f.regs,
            abi_regs: f.abi_regs,
            abi_files: f.abi_files,
            marked: f
                .marked
                .iter()
                .copied()
                .filter(|&o| o >= *start && o < end)
                .collect(),
        });
    }
    out
}

/// Ends control flow unconditionally.
fn no_fall_through(ins: &Instr) -> bool {
    matches!(
        ins.op(),
        Op::Bra | Op::Brx | Op::Jmp | Op::Jmx | Op::Exit | Op::Ret | Op::Kill
    ) && ins.always()
}

/// Cut each function at the entries of the named callees it contains, so that every
/// sub-function is a function of its own (name = the callee's name; calls get their
/// `target`), then cut off code no entry reaches ([`split_orphans`]).
pub fn split_sub_functions(fs: &[Function]) -> Result<Vec<Function>, SplitError> {
    let known: BTreeSet<&str> = fs.iter().map(|f| f.name.as_str()).collect();
    let mut out = Vec::new();
    for f in fs {
        let (entries, targets) = callee_entries(f, &known)?;
        if entries.is_empty() {
            out.extend(split_orphans(f.clone()));
            continue;
        }
        let mut instrs = f.instrs.clone();
        for (i, t) in targets {
            instrs[i].target = Some(t);
        }
        let mut starts: Vec<(u64, String, bool)> = vec![(f.start, f.name.clone(), f.kernel)];
        starts.extend(entries.into_iter().map(|(t, n)| (t, n, false)));
        for piece in cut(f, &instrs, &starts) {
            out.extend(split_orphans(piece));
        }
    }
    Ok(out)
}

/// Entry offset → name of the section-local callees `f` calls by name (read from the raw
/// bits of each `CALL`, in the branch-offset form `f`'s own branches use), and the target
/// of each such call (instruction index → entry).
#[allow(clippy::type_complexity)]
fn callee_entries(
    f: &Function,
    known: &BTreeSet<&str>,
) -> Result<(BTreeMap<u64, String>, HashMap<usize, u64>), SplitError> {
    let form = split_form(f);
    let mut entries: BTreeMap<u64, String> = BTreeMap::new();
    let mut targets: HashMap<usize, u64> = HashMap::new();
    for (i, ins) in f.instrs.iter().enumerate() {
        let Some(c) = &ins.callee else { continue };
        if !ins.is_call() || known.contains(c.as_str()) || ins.has_mod("ABS") {
            continue;
        }
        let inside = |t: &u64| *t != ins.offset + 16 && *t > f.start && f.index_of(*t).is_some();
        let cands: Vec<u64> = match form {
            Some(split) => encode::direct_target(if split { 90 } else { 80 }, ins.offset, ins.raw)
                .into_iter()
                .collect(),
            None => [80, 90]
                .iter()
                .filter_map(|&sm| encode::direct_target(sm, ins.offset, ins.raw))
                .collect(),
        };
        let cands: BTreeSet<u64> = cands.into_iter().filter(inside).collect();
        let t = match cands.len() {
            0 => continue, // an external callee (relocated): unknown code
            1 => *cands.first().expect("one"),
            _ => return fail(f, ins.offset, format!("cannot tell where `{c}` starts")),
        };
        if let Some(other) = entries.get(&t)
            && other != c
        {
            return fail(
                f,
                ins.offset,
                format!("`{c}` and `{other}` both start at {t:#x}"),
            );
        }
        if entries.values().any(|n| n == c) && !entries.contains_key(&t) {
            return fail(
                f,
                ins.offset,
                format!("calls of `{c}` go to different offsets"),
            );
        }
        entries.insert(t, c.clone());
        targets.insert(i, t);
    }
    Ok((entries, targets))
}

/// Whether `f` uses the split branch-offset form (sm_90), judged by its direct branches
/// whose targets nvdisasm printed.
fn split_form(f: &Function) -> Option<bool> {
    f.instrs.iter().find_map(|ins| {
        let t = ins.target?;
        if ins.op() != Op::Bra {
            return None;
        }
        let plain = encode::direct_target(80, ins.offset, ins.raw) == Some(t);
        let split = encode::direct_target(90, ins.offset, ins.raw) == Some(t);
        (plain != split).then_some(split)
    })
}

/// Instruction indices of `f` reachable from index `from` (fall-through, branch and jump
/// tables, internal call-jumps; calls return).
fn reach(f: &Function, from: usize) -> Vec<bool> {
    let n = f.instrs.len();
    let mut seen = vec![false; n];
    let mut stack = vec![from];
    while let Some(i) = stack.pop() {
        if i >= n || seen[i] {
            continue;
        }
        seen[i] = true;
        let ins = &f.instrs[i];
        if !no_fall_through(ins) {
            stack.push(i + 1);
        }
        let jumps = matches!(ins.op(), Op::Bra | Op::Brx | Op::Jmp | Op::Jmx)
            || (ins.is_call()
                && ins.callee.is_none()
                && !ins.has_mod("ABS")
                && !ins
                    .operands
                    .iter()
                    .any(|o| matches!(o.kind, OperandKind::Reg(_))));
        if jumps {
            for t in ins.target.iter().chain(&ins.targets) {
                if let Some(j) = f.index_of(*t) {
                    stack.push(j);
                }
            }
        }
    }
    seen
}

/// Code after the last instruction reachable from a function's entry that is not padding:
/// local sub-functions only called through pointers (`CALL.REL Rx`), which nvdisasm lists
/// inside the kernel's code too. Each becomes a function `<name>@<k>` (the range reachable
/// from its first instruction), so that it is checked as a sub-function.
pub fn split_orphans(f: Function) -> Vec<Function> {
    let n = f.instrs.len();
    if n == 0 {
        return vec![f];
    }
    let seen = reach(&f, 0);
    let last = seen.iter().rposition(|&s| s).unwrap_or(0);
    let mut cuts = vec![0usize];
    let mut i = last + 1;
    while i < n {
        if f.instrs[i].op() == Op::Nop {
            i += 1;
            continue;
        }
        let r = reach(&f, i);
        let end = r.iter().rposition(|&s| s).unwrap_or(i).max(i);
        cuts.push(i);
        i = end + 1;
    }
    if cuts.len() == 1 {
        return vec![f];
    }
    let starts: Vec<(u64, String, bool)> = cuts
        .iter()
        .enumerate()
        .map(|(k, &a)| {
            let name = if k == 0 {
                f.name.clone()
            } else {
                format!("{}@{k}", f.name)
            };
            (f.start + 16 * a as u64, name, k == 0 && f.kernel)
        })
        .collect();
    cut(&f, &f.instrs, &starts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sass::operands::test_instr;

    fn function(start: u64, code: &[(&str, &str)]) -> Function {
        let instrs = code
            .iter()
            .enumerate()
            .map(|(k, (op, ops))| {
                let mut i = test_instr(op, ops);
                i.offset = start + 16 * k as u64;
                i
            })
            .collect();
        Function {
            name: "k".into(),
            section: 3,
            start,
            instrs,
            kernel: true,
            regs: Some(24),
            abi_regs: None,
            abi_files: None,
            marked: vec![start + 0x10, start + 0x50],
        }
    }

    #[test]
    fn cut_keeps_section_registers_and_the_marks_inside_each_piece() {
        let f = function(0x100, &[("MOV", "R2, R3"); 6]);
        let starts = [
            (0x100, "k".to_string(), true),
            (0x140, "c".to_string(), false),
        ];
        let parts = cut(&f, &f.instrs, &starts);
        let got: Vec<_> = parts
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.start,
                    p.instrs.len(),
                    p.kernel,
                    p.marked.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("k", 0x100, 4, true, vec![0x110]),
                ("c", 0x140, 2, false, vec![0x150])
            ]
        );
        assert!(parts.iter().all(|p| p.section == 3 && p.regs == Some(24)));
        assert_eq!(parts[1].instrs[0].offset, 0x140);
    }

    #[test]
    fn code_no_entry_reaches_becomes_a_function_of_its_own() {
        let f = function(
            0,
            &[
                ("MOV", "R2, R3"),
                ("EXIT", ""),
                ("NOP", ""),
                ("MOV", "R4, R5"),
                ("EXIT", ""),
                ("NOP", ""),
            ],
        );
        let parts = split_orphans(f);
        let got: Vec<_> = parts
            .iter()
            .map(|p| (p.name.as_str(), p.start, p.instrs.len(), p.kernel))
            .collect();
        assert_eq!(got, [("k", 0, 3, true), ("k@1", 0x30, 3, false)]);
        // A function whose code is all reachable stays whole.
        let whole = function(0, &[("MOV", "R2, R3"), ("EXIT", "")]);
        assert_eq!(split_orphans(whole.clone()).len(), 1);
        assert_eq!(split_sub_functions(&[whole]).unwrap().len(), 1);
    }
}
