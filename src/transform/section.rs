//! The functions of a kernel's text section: nvdisasm lists a kernel's local sub-functions
//! (`$kernel$callee`) inside the kernel's code; the transforms need each on its own, and the
//! order of the call tree.

use std::collections::{BTreeMap, BTreeSet};

use super::{TransformError, not_applicable};
use crate::analysis::section::cut;
use crate::cubin::Cubin;
use crate::sass::ir::Function;

/// The functions of `section`, cut at every function symbol inside them: nvdisasm lists a
/// kernel's local sub-functions (`$kernel$callee`) as part of the kernel's code, and the
/// frame analysis needs each function on its own (named as its `CALL`s name it).
pub fn split_at_symbols(cubin: &Cubin, section: usize, functions: &[Function]) -> Vec<Function> {
    let symbols: BTreeMap<u64, String> = cubin
        .functions()
        .into_iter()
        .filter(|f| f.text_section == section)
        .map(|f| (f.text_offset, f.name))
        .collect();
    let mut out = Vec::new();
    for f in functions.iter().filter(|f| f.section == section) {
        let mut starts = vec![(f.start, f.name.clone(), f.kernel)];
        starts.extend(
            symbols
                .range(f.start + 1..f.end())
                .map(|(&o, n)| (o, n.clone(), false)),
        );
        out.extend(cut(f, &f.instrs, &starts));
    }
    out
}

/// The functions reachable from the kernel, callers before callees, and each function's
/// in-section callees. Recursion is refused.
pub fn call_order(
    funcs: &[&Function],
    entry: usize,
) -> Result<(Vec<usize>, Vec<BTreeSet<usize>>), TransformError> {
    let index: BTreeMap<&str, usize> = funcs
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect();
    let callees: Vec<BTreeSet<usize>> = funcs
        .iter()
        .map(|f| {
            f.instrs
                .iter()
                .filter_map(|i| i.callee.as_deref())
                .filter_map(|c| index.get(c).copied())
                .collect()
        })
        .collect();
    // Depth-first post-order from the entry; a back edge is recursion.
    let mut order = Vec::new();
    let mut state = vec![0u8; funcs.len()]; // 0 new, 1 on the stack, 2 done
    fn visit(
        v: usize,
        callees: &[BTreeSet<usize>],
        state: &mut [u8],
        order: &mut Vec<usize>,
        funcs: &[&Function],
    ) -> Result<(), TransformError> {
        state[v] = 1;
        for &c in &callees[v] {
            match state[c] {
                1 => {
                    return Err(not_applicable(format!(
                        "recursion through `{}`",
                        funcs[c].name
                    )));
                }
                0 => visit(c, callees, state, order, funcs)?,
                _ => {}
            }
        }
        state[v] = 2;
        order.push(v);
        Ok(())
    }
    visit(entry, &callees, &mut state, &mut order, funcs)?;
    order.reverse();
    Ok((order, callees))
}
