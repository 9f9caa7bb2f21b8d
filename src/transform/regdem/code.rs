//! What regdem starts from: the kernel and its budget, the functions of its text
//! section and what they refuse, and the sub-functions renumbered with the kernel (never
//! demoted: nothing is inserted into them).

use std::collections::BTreeSet;

use super::live::Effect;
use super::{COUNT_EXTRA, calls, fields, sched, select};
use crate::arch::Sm;
use crate::cubin::Cubin;
use crate::sass::Op;
use crate::sass::ir::{Function, RZ};
use crate::transform::area::Options;
use crate::transform::section::{call_order, split_at_symbols};
use crate::transform::{TransformError, not_applicable};

/// The kernel to demote and its budget.
pub(super) struct Kernel {
    pub(super) sm: u32,
    /// The register count to reach.
    pub(super) target: u32,
    pub(super) section: usize,
    /// ptxas's register count.
    pub(super) registers: u32,
    pub(super) static_shared: u64,
}

impl Kernel {
    /// `kernel` of `cubin` with the budget of `opts`, or why it is not demoted.
    pub(super) fn check(
        cubin: &Cubin,
        kernel: &str,
        opts: &Options,
    ) -> Result<Kernel, TransformError> {
        let sm = cubin.arch();
        if !Sm::of(sm).model().rewrites {
            return Err(not_applicable(format!("sm_{sm} code is not rewritten")));
        }
        let target = opts
            .max_registers
            .ok_or_else(|| not_applicable("no target register budget"))?;
        let info = cubin
            .function_info(kernel)
            .ok_or_else(|| not_applicable(format!("no function `{kernel}`")))?;
        if !info.is_kernel {
            return Err(not_applicable(format!("`{kernel}` is not a kernel")));
        }
        let registers = info.registers.unwrap_or(0);
        if registers <= target {
            return Err(not_applicable(format!(
                "already at {registers} registers, within the target of {target}"
            )));
        }
        if target < 8 {
            return Err(not_applicable(format!(
                "target of {target} registers is too low"
            )));
        }
        Ok(Kernel {
            sm,
            target,
            section: info.text_section,
            registers,
            static_shared: info.static_shared,
        })
    }

    /// The highest register the layout may use (the count is the highest + 3).
    pub(super) fn highest_allowed(&self) -> Result<u8, TransformError> {
        Ok(u8::try_from(self.target - COUNT_EXTRA)
            .map_err(|_| not_applicable("target above 255 registers"))?
            .min(RZ - 1))
    }
}

/// The functions of `kernel`'s text section (split at their symbols, by start), the
/// kernel's index among them and the call order from it. Refused: recursion, instructions
/// the operand tables do not cover, calls leaving the section or through a register.
pub(super) fn kernel_section(
    cubin: &Cubin,
    functions: &[Function],
    kernel: &str,
    section: usize,
) -> Result<(Vec<Function>, usize, Vec<usize>), TransformError> {
    let mut owned = split_at_symbols(cubin, section, functions);
    owned.sort_by_key(|f| f.start);
    let funcs: Vec<&Function> = owned.iter().collect();
    let entry = funcs
        .iter()
        .position(|f| f.name == kernel && f.start == 0)
        .ok_or_else(|| {
            not_applicable("the kernel's code was not decoded at its section's start")
        })?;
    let (order, _) = call_order(&funcs, entry)?;
    let names: BTreeSet<&str> = funcs.iter().map(|g| g.name.as_str()).collect();
    for g in &funcs {
        if let Some(i) = g.instrs.iter().find(|i| i.unknown) {
            return Err(not_applicable(format!(
                "`{}` at {:#x} is not covered by the operand tables",
                i.opcode, i.offset
            )));
        }
        // Code outside the section (`vprintf`) or entered through a register would see
        // the renumbered registers: only calls of the section's own functions are handled.
        if let Some(i) = g.instrs.iter().find(|i| {
            i.is_call()
                && (i.has_mod("ABS")
                    || !i.gpr_reads().is_empty()
                    || i.callee.as_deref().is_some_and(|c| !names.contains(c)))
        }) {
            return Err(not_applicable(format!(
                "calls: `{}` at {:#x} calls code outside the kernel's section or through a register",
                i.opcode, i.offset
            )));
        }
    }
    Ok((owned, entry, order))
}

/// The kernel's section as the rewrite uses it.
pub(super) struct Code<'a> {
    pub(super) funcs: Vec<&'a Function>,
    pub(super) entry: usize,
    /// What each function of `funcs` does to its caller's registers.
    pub(super) effects: Vec<Effect>,
    /// Sub-functions: renumbered with the kernel, never demoted.
    pub(super) callees: select::Callees<'a>,
    /// Scoreboards a callee's `DEPBAR` counts on: they stay untouched too.
    pub(super) callee_depbars: u8,
}

impl<'a> Code<'a> {
    /// The section's functions `owned` (from [`kernel_section`]), or why they are refused.
    pub(super) fn of(
        cubin: &Cubin,
        section: usize,
        owned: &'a [Function],
        entry: usize,
        order: &[usize],
    ) -> Result<Code<'a>, TransformError> {
        let funcs: Vec<&Function> = owned.iter().collect();
        if !cubin.spill_offsets(section).is_empty()
            || funcs
                .iter()
                .flat_map(|g| g.instrs.iter())
                .any(|i| matches!(i.op(), Op::Stl | Op::Ldl))
        {
            return Err(not_applicable(
                "the kernel uses local memory (spills or arrays); demote its spills first",
            ));
        }
        let others: Vec<usize> = (0..funcs.len()).filter(|&i| i != entry).collect();
        let effects = calls::effects(&funcs, order);
        let callees = select::Callees {
            code: others
                .iter()
                .map(|&i| {
                    (
                        funcs[i],
                        funcs[i].instrs.iter().map(fields::reg_fields).collect(),
                    )
                })
                .collect(),
            calls: calls::called(funcs[entry], &funcs, &effects)
                .into_iter()
                .map(|(k, e)| (k, (e.reads.clone(), e.writes.clone())))
                .collect(),
        };
        let mut callee_depbars = 0u8;
        for &i in &others {
            callee_depbars |= sched::depbar_scoreboards(funcs[i]).map_err(not_applicable)?;
        }
        Ok(Code {
            funcs,
            entry,
            effects,
            callees,
            callee_depbars,
        })
    }

    /// The kernel's own code.
    pub(super) fn kernel(&self) -> &'a Function {
        self.funcs[self.entry]
    }

    /// Registers any sub-function names (never lent as value registers).
    pub(super) fn in_callees(&self) -> BTreeSet<u8> {
        self.callees
            .code
            .iter()
            .flat_map(|(c, _)| c.instrs.iter())
            .flat_map(|i| i.gpr_reads().into_iter().chain(i.gpr_writes()))
            .collect()
    }
}
