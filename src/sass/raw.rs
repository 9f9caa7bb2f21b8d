//! Instructions straight from a cubin's bytes, without nvdisasm, into the one IR
//! ([`super::ir`]) with no operands: the control field, the opcode's mnemonic (from
//! [`super::opcodes`]), the guard predicate, and the targets of direct branches and calls
//! decoded from their offset fields (docs/sass.md §Branches and calls). This is what the stall
//! predictor reads for every variant of a compile, where an nvdisasm run per variant would
//! cost more than the variant's ptxas run.

use super::control::Control;
use super::ir::{Function, Instr, Pred};
use super::opcode::Opcode;
use super::opcodes;
use crate::arch::Sm;
use crate::cubin::Cubin;

const BRA: u16 = 0x947;
const BRA_U: u16 = 0x547;
const CALL_REL: u16 = 0x944;

/// Every function of `cubin` (kernels and device functions in their sections), decoded.
/// A kernel's symbol covers its whole section, sub-functions included; each function here
/// ends where the next one in its section starts.
pub fn functions(cubin: &Cubin) -> Vec<Function> {
    let sm = cubin.arch();
    let infos = cubin.functions();
    let sections = &cubin.elf().sections;
    infos
        .iter()
        .filter_map(|f| {
            let data = &sections.get(f.text_section)?.data;
            let start = f.text_offset;
            let next = infos
                .iter()
                .filter(|g| g.text_section == f.text_section && g.text_offset > start)
                .map(|g| g.text_offset)
                .min();
            let end = start
                .checked_add(f.text_size)
                .map_or(data.len() as u64, |e| e.min(data.len() as u64));
            let end = next.map_or(end, |n| n.min(end));
            let siblings: Vec<(u64, &str)> = infos
                .iter()
                .filter(|g| g.text_section == f.text_section)
                .map(|g| (g.text_offset, g.name.as_str()))
                .collect();
            let instrs = (start..end)
                .step_by(16)
                .filter_map(|off| {
                    let o = usize::try_from(off).ok()?;
                    let word: [u8; 16] = data.get(o..o.checked_add(16)?)?.try_into().ok()?;
                    Some(decode(sm, off, u128::from_le_bytes(word), &siblings))
                })
                .collect();
            Some(Function {
                name: f.name.clone(),
                section: f.text_section,
                start,
                instrs,
                kernel: f.is_kernel,
                // Facts of the operand decoder (`decode`), which this one does not run.
                regs: None,
                abi_regs: None,
                abi_files: None,
                marked: Vec::new(),
            })
        })
        .collect()
}

fn bits(w: u128, lo: u32, n: u32) -> u64 {
    ((w >> lo) & ((1u128 << n) - 1)) as u64
}

fn sign_extend(v: u64, n: u32) -> i64 {
    let shift = 64 - n;
    ((v << shift) as i64) >> shift
}

/// The byte distance a relative branch or call jumps from the next instruction: a plain
/// signed byte count at bits 32-81 up to sm_89 (whose two low bits, 32-33, are flags); from sm_90 split into bits 16-23 (`delta >> 2`)
/// and bits 34-81 (`delta >> 10`, signed).
pub(crate) fn branch_delta(sm: u32, w: u128) -> i64 {
    if !Sm::of(sm).model().split_branch_offsets {
        // Bits 32-33 are flags (bit 32 on sm_75 `BRA.U`), not part of the offset.
        sign_extend(bits(w, 34, 48), 48) << 2
    } else {
        (sign_extend(bits(w, 34, 48), 48) << 10) | ((bits(w, 16, 8) as i64) << 2)
    }
}

fn decode(sm: u32, offset: u64, w: u128, siblings: &[(u64, &str)]) -> Instr {
    let op = bits(w, 0, 12) as u16;
    let mnemonic = opcodes::mnemonic(op);
    let pred = bits(w, 12, 3);
    let negated = bits(w, 15, 1) == 1;
    let predicate = (pred != 7 || negated).then_some(Pred {
        uniform: false,
        index: pred as u8,
        negated,
    });
    let relative = || {
        let next = i64::try_from(offset).ok()?.checked_add(16)?;
        u64::try_from(next.checked_add(branch_delta(sm, w))?).ok()
    };
    let target = matches!(op, BRA | BRA_U).then(relative).flatten();
    let callee = (op == CALL_REL)
        .then(relative)
        .flatten()
        .and_then(|t| siblings.iter().find(|(o, _)| *o == t))
        .map(|(_, n)| n.to_string());
    Instr {
        offset,
        raw: w,
        // An unknown number keeps its value in the text; its class is `Other`.
        opcode: mnemonic.map_or_else(|| Opcode::new(format!("UNKNOWN_{op:#05x}")), Opcode::new),
        predicate,
        operands: Vec::new(),
        ctrl: Control::from_words(0, (w >> 64) as u64),
        target,
        targets: Vec::new(),
        callee,
        // No operands were decoded: nothing may assume which registers it touches.
        unknown: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_offsets_in_both_forms() {
        // sm_80: BRA with a plain delta of -16 (the spin after EXIT).
        let w: u128 = 0x947 | (((-16i64) as u64 as u128 & ((1u128 << 50) - 1)) << 32);
        assert_eq!(branch_delta(80, w), -16);
        // sm_90: +0x120 split as (0x120 >> 2) & 0xff = 0x48 at bits 16-23 and 0x120 >> 10 = 0.
        let w: u128 = 0x947 | (0x48u128 << 16);
        assert_eq!(branch_delta(90, w), 0x120);
        // sm_90: -0x1410: low part ((-0x1410 >> 2) & 0xff), high part -0x1410 >> 10 = -6.
        let d: i64 = -0x1410;
        let w: u128 = 0x947
            | ((((d >> 2) & 0xff) as u128) << 16)
            | ((((d >> 10) as u64) as u128 & ((1u128 << 48) - 1)) << 34);
        assert_eq!(branch_delta(90, w), d);
    }
}
