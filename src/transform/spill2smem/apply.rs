//! The rewrite applied to a copy of the cubin: the code re-laid out and patched, then the
//! kernel's resources (registers, shared memory, local frame, launch bound) set to match.

use std::collections::BTreeSet;

use super::SP;
use super::code::{Insertion, Moved};
use super::words::{Access, shared_word};
use crate::cubin::{Cubin, FunctionInfo, OffsetMap};
use crate::sass::encode;
use crate::sass::ir::Function;
use crate::sass::relayout::{self, Relayout};
use crate::transform::area::{Area, Options};
use crate::transform::{TransformError, not_applicable};

/// A copy of `cubin` with `insertions` in `kernel`'s code, each access in `accesses`
/// rewritten in place to its shared form, and their spill annotations dropped.
pub(super) fn rewrite_code(
    cubin: &Cubin,
    kernel: &str,
    section: usize,
    insertions: &[Insertion],
    accesses: &[Access],
    base: u8,
) -> Result<(Cubin, Relayout), TransformError> {
    let mut out = cubin.clone();
    let relaid = relayout::insert(&mut out, kernel, insertions)?;
    let mut code = out.elf().sections[section].data.clone();
    for a in accesses {
        let at =
            relaid.map.map(a.offset).ok_or_else(|| {
                not_applicable(format!("spill at {:#x} lost in re-layout", a.offset))
            })? as usize;
        let w = encode::to_bytes(shared_word(a, 0, base));
        code.get_mut(at..at + 16)
            .ok_or_else(|| not_applicable("re-layout moved a spill outside the section"))?
            .copy_from_slice(&w);
    }
    out.replace_text(kernel, code, &OffsetMap::new())?;
    let new_spills: Vec<u64> = accesses
        .iter()
        .filter_map(|a| relaid.map.map(a.offset))
        .collect();
    out.drop_spill_annotations(kernel, &new_spills)?;
    Ok((out, relaid))
}

/// Nothing left in local memory: release the frame the driver reserves per thread. The
/// bytes released; 0 where some local memory is still used.
pub(super) fn release_frame(
    out: &mut Cubin,
    funcs: &[&Function],
    moved: &Moved,
    info: &FunctionInfo,
) -> Result<u32, TransformError> {
    if moved.kept_local != 0 || !frame_unused(funcs, &moved.accesses) {
        return Ok(0);
    }
    let bytes = info
        .frame_size
        .unwrap_or(0)
        .max(info.min_stack.unwrap_or(0));
    for f in funcs {
        out.set_stack_size(&f.name, 0)?;
    }
    Ok(bytes)
}

/// The kernel's new register count (and the limit recorded beside it), its static shared
/// memory grown by the area, and the launch bound the area assumes.
pub(super) fn set_resources(
    out: &mut Cubin,
    kernel: &str,
    info: &FunctionInfo,
    registers: u32,
    area: &Area,
    opts: &Options,
) -> Result<(), TransformError> {
    out.set_register_count(kernel, registers)?;
    out.raise_maxreg_count(kernel, registers)?;
    out.set_shared_size(kernel, info.static_shared + area.added)?;
    area.enforce(out, kernel, opts)
}

/// Whether the section needs no local frame once `accesses` are in shared memory: nothing
/// else reads the stack pointer (a local access, a frame address taken) but its own
/// updates, and no call leaves the section (an external callee, such as `vprintf`, may use
/// the stack).
fn frame_unused(funcs: &[&Function], accesses: &[Access]) -> bool {
    let moved: BTreeSet<u64> = accesses.iter().map(|a| a.offset).collect();
    let names: BTreeSet<&str> = funcs.iter().map(|f| f.name.as_str()).collect();
    funcs.iter().flat_map(|f| f.instrs.iter()).all(|i| {
        let leaves = i.is_call()
            && (i.has_mod("ABS")
                || !i.gpr_reads().is_empty()
                || i.callee.as_deref().is_some_and(|c| !names.contains(c)));
        let sp_use = i.gpr_reads().contains(&SP)
            && !moved.contains(&i.offset)
            // The frame's own allocation (`IADD3 R1, R1, -size`).
            && !(i.gpr_writes().contains(&SP) && i.gpr_reads().iter().all(|&r| r == SP));
        !leaves && !sp_use
    })
}
