//! The return addresses a re-layout must follow: which functions a section holds and where
//! each finds its return address on entry (a register, a frame word, a MOV of its own), the
//! `MOV Rx, <return address>` feeding each call, and the `LEPC` sequences of `CALL.ABS`
//! (docs/sass.md §Branches and calls).

use super::{RelayoutError, invalid};
use crate::arch::Sm;
use crate::cubin::Cubin;
use crate::sass::encode;
use std::collections::BTreeSet;

/// One function in the section: `[start, end)` and where, on entry, it holds the return
/// addresses its `RET.REL`s jump to.
pub(super) struct Func {
    pub(super) start: u64,
    pub(super) end: u64,
    /// `None`: a return address the code moves in a way not followed.
    pub(super) ret_locs: Option<BTreeSet<Loc>>,
}

/// Where a return address is held: a register, or a word of the local frame (`[R1+imm]`),
/// where ptxas spills it in a caller or a callee under register pressure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Loc {
    Reg(u8),
    Frame(i64),
    /// Materialised by the callee itself (`MOV Rx, imm` at this section index): ptxas
    /// does so when a function has a single call site.
    Mov(usize),
}

/// `(imm, data register)` of a 32-bit `STL [R1+imm], Rd`, or `(imm, dst)` of a 32-bit
/// `LDL[.LU] Rd, [R1+imm]`, unguarded.
fn frame_word(w: u128, op: u16) -> Option<(i64, u8)> {
    if encode::opcode(w) != op
        || encode::guard(w) != (7, false)
        || encode::reg(w, encode::RegField::A) != 1
        || encode::get_bits(w, 73, 3) != 4
    {
        return None;
    }
    let imm = ((encode::get_bits(w, 40, 24) as i64) << 40) >> 40;
    let data = if op == encode::OP_STL {
        encode::RegField::B
    } else {
        encode::RegField::Dst
    };
    Some((imm, encode::reg(w, data)))
}

/// Whether `w` writes `R1` (the frame pointer): frame words cannot be followed across it.
/// Stores write no register, and `BSSY Bn` / `BSYNC Bn` (0x941) hold their convergence
/// barrier where other instructions hold their destination (`BSSY B1` is no write of `R1`:
/// the FP32 division slow path opens with one).
fn writes_sp(w: u128) -> bool {
    encode::reg(w, encode::RegField::Dst) == 1
        && !matches!(
            encode::opcode(w),
            encode::OP_STL | encode::OP_STS | 0x386 | 0x986 | 0x988 | encode::OP_BSSY | 0x941
        )
}

/// `MOV Rx, imm` or `IMAD.MOV.U32 Rx, RZ, RZ, imm` (form 2: C is the imm32, B GPR in bits
/// 64-71).
fn is_mov_imm(w: u128) -> bool {
    match encode::opcode(w) {
        encode::OP_MOV_IMM => true,
        0x424 => {
            encode::reg(w, encode::RegField::A) == 255 && encode::reg(w, encode::RegField::C) == 255
        }
        _ => false,
    }
}

/// The source of the register copy `w` defines `dst` with (`MOV Rd, Rs`,
/// `IMAD.MOV.U32 Rd, RZ, RZ, Rs`), unguarded.
fn copy_source(w: u128) -> Option<u8> {
    if encode::guard(w) != (7, false) {
        return None;
    }
    match encode::opcode(w) {
        0x202 => Some(encode::reg(w, encode::RegField::B)),
        0x224
            if encode::reg(w, encode::RegField::A) == 255
                && encode::reg(w, encode::RegField::B) == 255 =>
        {
            Some(encode::reg(w, encode::RegField::C))
        }
        _ => None,
    }
}

/// Where the function `body` held, on entry, the value the `RET.REL` at index `ret` reads
/// from `reg`: followed back through register copies (`MOV Rd, Rs`, `IMAD.MOV.U32 Rd, RZ,
/// RZ, Rs`: ptxas moves the return address between registers, `IMAD.MOV.U32 R6, RZ, RZ, R8`
/// before `RET.REL.NODEC R6`) and through the local frame (`LDL Rd, [R1+k]` back to the last
/// `STL [R1+k], Rs` before it, or to the caller's word `[R1+k]` when the callee stored none:
/// under pressure the caller spills the return address right before the `CALL` and the
/// callee reloads it before returning). `None` when the frame pointer changes on the way.
fn entry_location(body: &[u128], first: usize, ret: usize, reg: u8) -> Option<Loc> {
    let mut at = Loc::Reg(reg);
    for (i, &w) in body[..ret].iter().enumerate().rev() {
        match at {
            Loc::Mov(_) => break,
            Loc::Reg(r) => {
                if encode::reg(w, encode::RegField::Dst) != r || encode::guard(w) != (7, false) {
                    continue;
                }
                if is_mov_imm(w) {
                    at = Loc::Mov(first + i);
                } else if let Some(src) = copy_source(w) {
                    at = Loc::Reg(src);
                } else if let Some((k, _)) = frame_word(w, encode::OP_LDL) {
                    at = Loc::Frame(k);
                }
            }
            Loc::Frame(k) => {
                if writes_sp(w) {
                    return None;
                }
                if let Some((imm, data)) = frame_word(w, encode::OP_STL)
                    && imm == k
                {
                    at = Loc::Reg(data);
                }
            }
        }
    }
    Some(at)
}

/// How far after an `LEPC` ptxas puts the `CALL.ABS` it prepares (instructions).
const LEPC_WINDOW: usize = 12;

/// Why an `LEPC` cannot be re-encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum LepcRefusal {
    #[error("LEPC at {pc:#x} is not followed by a CALL.ABS")]
    NoCall { pc: u64 },
    #[error("LEPC at {pc:#x}: unknown form")]
    UnknownForm { pc: u64 },
    #[error("LEPC at {pc:#x} does not name the return point of the CALL.ABS at {call:#x}")]
    OtherReturn { pc: u64, call: u64 },
    #[error("LEPC at {pc:#x}: the return point would be {distance:#x} bytes away (8-bit field)")]
    TooFar { pc: u64, distance: u64 },
    #[error("LEPC at {pc:#x}: no MOV of its own offset and of the return offset {ret:#x}")]
    NoMovs { pc: u64, ret: u64 },
    #[error("LEPC at {pc:#x}: its address MOVs cannot be deleted")]
    MovsDeleted { pc: u64 },
    #[error("offset {0:#x}")]
    Offset(u64),
}

/// Re-encode the `LEPC` at index `i` (and, on sm_75-89, the two MOV immediates its address
/// arithmetic uses) so that the address it computes is still the return point right after
/// the following `CALL.ABS` (vprintf and other syscalls):
/// * sm_90+ `LEPC Rd, label`: the 8-bit immediate at bits 24-31 is `label - next pc`, with
///   `label` the instruction after the `CALL.ABS`.
/// * sm_75-89 `LEPC Rd`: `R = LEPC address - MOV(lepc offset) + MOV(return offset)`; both MOVs
///   (`MOV Rx, imm` between the LEPC and the call, immediates equal to the LEPC's own offset
///   and to the call's offset + 16) are patched.
///
/// Anything else is refused ([`LepcRefusal`]).
pub(super) fn lepc(
    words: &[u128],
    deleted: &[bool],
    i: usize,
    sm: u32,
    new_pc: &dyn Fn(u64) -> u64,
    out: &mut [u128],
    patched: &mut Vec<usize>,
) -> Result<(), LepcRefusal> {
    let pc = i as u64 * 16;
    let w = words[i];
    // The first CALL.ABS after it, with no other control flow between (NOPs do not count
    // towards the window).
    let mut seen = 0;
    let mut call = None;
    for (k, &x) in words.iter().enumerate().skip(i + 1) {
        let op = encode::opcode(x);
        if op == encode::OP_CALL_ABS {
            call = Some(k);
            break;
        }
        if encode::rel_kind(x).is_some() || op == encode::OP_EXIT || seen >= LEPC_WINDOW {
            break;
        }
        if op != encode::OP_NOP {
            seen += 1;
        }
    }
    let call = call.ok_or(LepcRefusal::NoCall { pc })?;
    let ret_old = (call as u64 + 1) * 16;
    let ret_new = new_pc(call as u64 * 16) + 16;
    let lepc_new = new_pc(pc);
    if encode::opcode(w) == encode::OP_LEPC {
        if !Sm::of(sm).model().lepc_label || encode::get_bits(w, 32, 32) != 0 {
            return Err(LepcRefusal::UnknownForm { pc });
        }
        let d = encode::get_bits(w, 24, 8);
        if pc + 16 + d != ret_old {
            return Err(LepcRefusal::OtherReturn {
                pc,
                call: call as u64 * 16,
            });
        }
        let nd = ret_new - (lepc_new + 16);
        if nd > 0xff {
            return Err(LepcRefusal::TooFar { pc, distance: nd });
        }
        out[i] = encode::set_bits(w, 24, 8, nd);
        return Ok(());
    }
    let movs: Vec<(usize, u64)> = (i + 1..call)
        .filter(|&k| encode::opcode(words[k]) == encode::OP_MOV_IMM)
        .map(|k| (k, u64::from(encode::imm32(words[k]))))
        .collect();
    let own = movs.iter().find(|&&(_, v)| v == pc).map(|&(k, _)| k);
    let ret = movs.iter().find(|&&(_, v)| v == ret_old).map(|&(k, _)| k);
    let (Some(own), Some(ret)) = (own, ret) else {
        return Err(LepcRefusal::NoMovs { pc, ret: ret_old });
    };
    if deleted[own] || deleted[ret] {
        return Err(LepcRefusal::MovsDeleted { pc });
    }
    let fit = |v: u64| u32::try_from(v).map_err(|_| LepcRefusal::Offset(v));
    out[own] = encode::set_imm32(out[own], fit(lepc_new)?);
    out[ret] = encode::set_imm32(out[ret], fit(ret_new)?);
    patched.extend([own, ret]);
    Ok(())
}

/// Where the return address of the `CALL` at `call` (index) is materialised: the indices of
/// the reaching `MOV Rx, imm` (or `IMAD.MOV.U32 Rx, RZ, RZ, imm`) whose value reaches each
/// location `locs` the callee returns through, followed back through register copies and
/// frame words like [`entry_location`]. Empty when the callee never returns; `None` in
/// `locs` is a return address the callee's code does not let us follow.
pub(super) fn return_address_movs(
    words: &[u128],
    call: usize,
    caller_start: usize,
    locs: &Option<BTreeSet<Loc>>,
    kernel: &str,
) -> Result<Vec<usize>, RelayoutError> {
    let Some(locs) = locs else {
        return Err(invalid(
            kernel,
            format_args!(
                "the callee of the call at {:#x} returns through an address it moves in a way not followed",
                call * 16
            ),
        ));
    };
    let ret = (call as u64 + 1) * 16;
    let mut found = Vec::new();
    'locs: for &loc in locs {
        let mut at = loc;
        if let Loc::Mov(m) = loc {
            if u64::from(encode::imm32(words[m])) != ret {
                return Err(invalid(
                    kernel,
                    format_args!(
                        "the callee of the call at {:#x} returns to the fixed address {:#x} (MOV at {:#x})",
                        call * 16,
                        encode::imm32(words[m]),
                        m * 16
                    ),
                ));
            }
            found.push(m);
            continue;
        }
        for i in (caller_start..call).rev() {
            let w = words[i];
            let r = match at {
                Loc::Reg(r) => r,
                Loc::Mov(_) => break, // handled above
                Loc::Frame(k) => {
                    if writes_sp(w) {
                        break;
                    }
                    if let Some((imm, data)) = frame_word(w, encode::OP_STL)
                        && imm == k
                    {
                        at = Loc::Reg(data);
                    }
                    continue;
                }
            };
            if encode::reg(w, encode::RegField::Dst) != r {
                continue;
            }
            if !is_mov_imm(w) {
                if let Some(src) = copy_source(w) {
                    at = Loc::Reg(src);
                } else if let Some((k, _)) = frame_word(w, encode::OP_LDL) {
                    at = Loc::Frame(k);
                }
                continue;
            }
            if u64::from(encode::imm32(w)) == ret {
                found.push(i);
                continue 'locs;
            }
            return Err(invalid(
                kernel,
                format_args!(
                    "the return address of the call at {:#x} is not materialised as {ret:#x} by the reaching MOV at {:#x}",
                    call * 16,
                    i * 16
                ),
            ));
        }
        return Err(invalid(
            kernel,
            format_args!(
                "no MOV of the return address {ret:#x} before the call at {:#x}",
                call * 16
            ),
        ));
    }
    Ok(found)
}

/// The functions of section `sec` (`words`, its code) and their return-address locations.
pub(super) fn section_functions(cubin: &Cubin, sec: usize, words: &[u128]) -> Vec<Func> {
    let code_end = words.len() as u64 * 16;
    let mut starts: Vec<u64> = cubin
        .functions()
        .iter()
        .filter(|f| f.text_section == sec)
        .map(|f| f.text_offset)
        .filter(|&o| o < code_end)
        .collect();
    starts.push(0);
    starts.sort_unstable();
    starts.dedup();
    starts
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            let end = starts.get(k + 1).copied().unwrap_or(code_end);
            let body = &words[(s / 16) as usize..(end / 16) as usize];
            let ret_locs = body
                .iter()
                .enumerate()
                .filter(|(_, w)| encode::opcode(**w) == encode::OP_RET_REL)
                .filter_map(|(k, &w)| Some((k, encode::jump_register(w)?)))
                .map(|(k, r)| entry_location(body, (s / 16) as usize, k, r))
                .collect();
            Func {
                start: s,
                end,
                ret_locs,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::writes_sp;

    /// Words from nvdisasm's listing of the FP32 division slow path (sm_86, CUDA 13.5): the
    /// convergence barriers `B1` sit in the destination field without writing `R1`.
    #[test]
    fn convergence_barriers_do_not_write_the_frame_pointer() {
        let bssy_b1: u128 = 0x0000_0790_0001_7945;
        let bsync_b1: u128 = 0x0000_0000_0001_7941;
        // `IADD3 R1, R1, -0x1a0, RZ` does.
        let iadd3_r1: u128 = 0xffff_fe60_0101_7810;
        assert!(!writes_sp(bssy_b1));
        assert!(!writes_sp(bsync_b1));
        assert!(writes_sp(iadd3_r1));
    }
}
