//! The kernel's section as the rewrite sees it: its functions and their spills, and the
//! checks that they fit the one-frame model (every `[R1+k]` is the same word everywhere).

use std::collections::BTreeSet;

use super::{SP, Spill};
use crate::arch::Sm;
use crate::cubin::{Cubin, FunctionInfo};
use crate::sass::Op;
use crate::sass::ir::{Function, Instr, OperandKind};
use crate::transform::{TransformError, not_applicable};

/// The functions of the kernel's section (the kernel and the sub-functions ptxas put in its
/// `.text`), by start offset.
pub(super) struct Section<'a> {
    pub(super) funcs: Vec<&'a Function>,
    /// Index of the kernel in `funcs`.
    pub(super) entry: usize,
}

/// The spills of the section.
pub(super) struct Spills<'a> {
    /// Offsets of the annotated spill instructions.
    pub(super) offsets: Vec<u64>,
    /// Per function: the frame words (byte offset / 4) its spills touch.
    pub(super) words_of: Vec<BTreeSet<i64>>,
    pub(super) list: Vec<Spill<'a>>,
    /// Every spill word of the section.
    pub(super) all_words: BTreeSet<i64>,
}

/// What the cubin says about `kernel`, refused where the rewrite does not apply.
pub(super) fn kernel_info(cubin: &Cubin, kernel: &str) -> Result<FunctionInfo, TransformError> {
    let sm = cubin.arch();
    if !Sm::of(sm).model().rewrites {
        return Err(not_applicable(format!("sm_{sm} code is not rewritten")));
    }
    let info = cubin
        .function_info(kernel)
        .ok_or_else(|| not_applicable(format!("no function `{kernel}`")))?;
    if !info.is_kernel {
        return Err(not_applicable(format!("`{kernel}` is not a kernel")));
    }
    Ok(info)
}

/// The functions of the section (`owned`: cut at its symbols), the kernel first in the
/// code and every instruction known to the operand tables.
pub(super) fn section<'a>(
    owned: &'a [Function],
    kernel: &str,
) -> Result<Section<'a>, TransformError> {
    let mut funcs: Vec<&Function> = owned.iter().collect();
    funcs.sort_by_key(|f| f.start);
    let entry = funcs
        .iter()
        .position(|f| f.name == kernel)
        .ok_or_else(|| not_applicable("the kernel's code was not decoded"))?;
    if funcs[entry].start != 0 {
        return Err(not_applicable("the kernel does not start its section"));
    }
    if let Some(f) = funcs.iter().find(|f| f.instrs.iter().any(|i| i.unknown)) {
        return Err(not_applicable(format!(
            "`{}` has an instruction the operand tables do not cover",
            f.name
        )));
    }
    Ok(Section { funcs, entry })
}

/// The spills of text section `section`: (function index, instruction) for every annotated
/// offset, each an `STL/LDL [R1+imm]` of whole aligned words.
pub(super) fn spills<'a>(
    cubin: &Cubin,
    section: usize,
    sec: &Section<'a>,
) -> Result<Spills<'a>, TransformError> {
    let funcs = &sec.funcs;
    let offsets = cubin.spill_offsets(section);
    if offsets.is_empty() {
        return Err(not_applicable("no spills"));
    }
    let mut words_of: Vec<BTreeSet<i64>> = vec![BTreeSet::new(); funcs.len()];
    let mut list: Vec<Spill<'a>> = Vec::new();
    for &off in &offsets {
        let fi = funcs
            .iter()
            .position(|f| f.index_of(off).is_some())
            .ok_or_else(|| {
                not_applicable(format!("spill annotation at {off:#x} outside the code"))
            })?;
        let f: &'a Function = funcs[fi];
        let ins = &f.instrs[f.index_of(off).unwrap_or_default()];
        let (imm, width) = spill_access(ins).ok_or_else(|| {
            not_applicable(format!(
                "spill at {off:#x} is not `STL/LDL [R1+imm]`: {}",
                ins.opcode
            ))
        })?;
        for k in 0..i64::from(width) {
            words_of[fi].insert(imm / 4 + k);
        }
        list.push((fi, ins, imm, width));
    }
    let all_words: BTreeSet<i64> = words_of.iter().flatten().copied().collect();
    Ok(Spills {
        offsets,
        words_of,
        list,
        all_words,
    })
}

/// ptxas gives the whole section one frame: sub-functions address the kernel's `R1`
/// without moving it, so `[R1+k]` is the same word in every function. Refuse a section
/// that moves it elsewhere than the kernel's frame setup.
pub(super) fn check_one_frame(sec: &Section) -> Result<(), TransformError> {
    if let Some((f, ins)) = sec.funcs.iter().enumerate().find_map(|(fi, f)| {
        f.instrs
            .iter()
            .find(|i| i.gpr_writes().contains(&SP) && !(fi == sec.entry && is_frame_setup(f, i)))
            .map(|i| (f, i))
    }) {
        return Err(not_applicable(format!(
            "`{}` moves the stack pointer at {:#x}",
            f.name, ins.offset
        )));
    }
    Ok(())
}

/// A local access at R1+imm that is not a spill must not share a word with one.
pub(super) fn check_words_apart(sec: &Section, spills: &Spills) -> Result<(), TransformError> {
    for f in &sec.funcs {
        for ins in &f.instrs {
            if spills.offsets.contains(&ins.offset) {
                continue;
            }
            if let Some((imm, width)) = r1_access(ins)
                && (0..i64::from(width)).any(|k| spills.all_words.contains(&(imm / 4 + k)))
            {
                return Err(not_applicable(format!(
                    "`{}` at {:#x}: a non-spill local access shares a spill slot",
                    f.name, ins.offset
                )));
            }
        }
    }
    Ok(())
}

/// `(imm, words)` of an `STL/LDL [R1+imm]` (`.64`: 2 words, `.128`: 4).
pub(super) fn r1_access(ins: &Instr) -> Option<(i64, u32)> {
    if !matches!(ins.op(), Op::Stl | Op::Ldl) {
        return None;
    }
    let addr = ins.operands.iter().find_map(|o| match o.kind {
        OperandKind::Addr {
            reg,
            ureg: None,
            desc: None,
            imm,
            ..
        } => Some((reg, imm)),
        _ => None,
    })?;
    if addr.0 != Some(SP) {
        return None;
    }
    let width = if ins.has_mod("128") {
        4
    } else if ins.has_mod("64") {
        2
    } else if ins
        .modifiers()
        .any(|m| matches!(m, "U8" | "S8" | "U16" | "S16"))
    {
        return None;
    } else {
        1
    };
    Some((addr.1, width))
}

/// A spill the transform can name: an R1-relative access of whole aligned words.
fn spill_access(ins: &Instr) -> Option<(i64, u32)> {
    r1_access(ins).filter(|(imm, width)| *imm >= 0 && imm % (4 * i64::from(*width)) == 0)
}

/// The kernel's frame setup at entry (`MOV R1, c[0x0][0x28]`, `IADD3 R1, R1, -size`): the
/// only writes of the stack pointer the one-frame model allows.
fn is_frame_setup(f: &Function, ins: &Instr) -> bool {
    let before_any_access = f
        .instrs
        .iter()
        .take_while(|i| i.offset < ins.offset)
        .all(|i| r1_access(i).is_none() && !i.is_call() && !i.is_branch());
    before_any_access && ins.always()
}
