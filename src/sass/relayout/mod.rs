//! Re-layout: inserting and deleting instructions in a function's text section with every branch,
//! call, BSSY, BRX jump table, RET.REL, return-address immediate, offset attribute, symbol,
//! `.debug_frame` range and relocation moved to match (docs/sass.md §Re-layout and padding).
//!
//! The instructions of the section are re-encoded here (PC-relative fields, the `MOV Rx,
//! <return address>` feeding each `CALL.REL`); everything outside the code (attributes,
//! symbols, relocations, jump tables in `.nv.constant2.<k>`, `.debug_frame`) is moved by
//! [`Cubin::replace_text`] with the [`OffsetMap`] built here.
//!
//! Semantics of an insertion "before offset P": the new instructions run when control falls
//! through into P; every branch, call, jump-table entry or attribute that named P still
//! names the original instruction at P (it now sits after the inserted code). A call's
//! return address is the instruction right after the (moved) call, so code inserted right
//! after a call runs when the call returns. At offset 0 of a section the owner's entry point
//! stays at the section start (its symbol does not move), so code inserted there runs on
//! entry, while references to offset 0 held elsewhere (a relocation `sym + 0` of a call into
//! a `-G` function's own section, attributes) name the original first instruction after it.
//! Inserted words are copied verbatim (their
//! PC-relative fields, if any, are not adjusted). Untouched instructions keep their control
//! bits.
//!
//! Also re-encoded: `RET.REL`/`BRX`/indirect `CALL.REL Rx` immediates (minus their own next
//! pc), return-address MOVs found by dataflow (the register the callee's `RET.REL` reads,
//! followed back through register copies inside the callee, defined by the nearest
//! `MOV Rx, imm` before the call whose value is the call's offset + 16), and the `LEPC`
//! sequences that compute the return point of a `CALL.ABS` (vprintf). `RET.ABS` (`-G`) and
//! `CALL.ABS` need nothing here (relocations, moved by the cubin layer). Refused: sm_100+,
//! a direct branch out of the section, an unrecognised return-address or LEPC sequence.
//! Text is padded like ptxas does: at least 128 bytes of NOPs on sm_80+, then to 128.

mod returns;

use super::encode::{self, RelKind};
use crate::arch::Sm;
use crate::cubin::elf;
use crate::cubin::symbols::parse_relocs;
use crate::cubin::{Cubin, CubinError, OffsetMap};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Why a re-layout was refused. The cubin is unchanged when this is returned.
#[derive(Debug)]
pub enum RelayoutError {
    /// The cubin layer refused the new text (unknown offset attribute, relocation, ...).
    Cubin(CubinError),
    /// The request or the code cannot be handled.
    Invalid(String),
}

impl fmt::Display for RelayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RelayoutError::Cubin(e) => write!(f, "{e}"),
            RelayoutError::Invalid(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for RelayoutError {}

impl From<CubinError> for RelayoutError {
    fn from(e: CubinError) -> Self {
        RelayoutError::Cubin(e)
    }
}

fn invalid(kernel: &str, what: impl fmt::Display) -> RelayoutError {
    RelayoutError::Invalid(format!("function `{kernel}`: {what}"))
}

/// The lowest architecture whose code this module rewrites (docs/DESIGN.md §Architectures: sm_100
/// and sm_120 are out of scope for rewriting): the rows of
/// [`ShaderModel`](crate::arch::model::ShaderModel) with `relayout`, spelled as numbers for
/// messages.
pub(crate) const MIN_SM: u32 = 75;

/// The outcome of [`insert`].
#[derive(Debug, Clone)]
pub struct Relayout {
    /// Old offset of every original instruction → new offset.
    pub map: OffsetMap,
    /// New offsets of the inserted instructions, in request order.
    pub inserted: Vec<u64>,
    /// Return-address immediates patched (new offsets of the MOVs).
    pub return_addresses: Vec<u64>,
}

/// Insert `insertions` (`(old offset, instructions)`: the instructions go before the
/// instruction at that offset; an offset equal to the end of the code appends) into the text
/// section owned by `kernel` and re-encode everything that depends on the layout. Several
/// insertions at one offset are placed in request order.
pub fn insert(
    cubin: &mut Cubin,
    kernel: &str,
    insertions: &[(u64, Vec<[u8; 16]>)],
) -> Result<Relayout, RelayoutError> {
    edit(cubin, kernel, insertions, &[])
}

/// Delete the instructions at `offsets` of the text section owned by `kernel` and
/// re-encode everything that depends on the layout. A reference (branch target, jump-table
/// entry, attribute, symbol) to a deleted instruction moves to the instruction that follows
/// it (so an attribute naming a deleted instruction, e.g. a SpillRefill annotation, then
/// names its successor). Branches, calls, `BSSY`, `RET`, `BRX`, `EXIT`, `LEPC`, relocated
/// instructions and the return-address MOVs of calls cannot be deleted.
pub fn delete(cubin: &mut Cubin, kernel: &str, offsets: &[u64]) -> Result<Relayout, RelayoutError> {
    edit(cubin, kernel, &[], offsets)
}

/// [`insert`] and [`delete`] in one re-layout (offsets are old offsets; an instruction
/// may be deleted and have code inserted before it, which then takes its place).
pub(crate) fn edit(
    cubin: &mut Cubin,
    kernel: &str,
    insertions: &[(u64, Vec<[u8; 16]>)],
    deletions: &[u64],
) -> Result<Relayout, RelayoutError> {
    edit_with_heads(cubin, kernel, insertions, deletions, &BTreeMap::new())
}

/// [`insert`], where the code inserted at some offsets is also entered by the `BRA`s that
/// target them: `heads[P] = h` makes every `BRA` to `P` go to the `h`-th instruction
/// inserted before `P` (the first `h` run on fall-through only; the rest on every path into
/// `P`). Other references to `P` (attributes, `BSSY`, calls, jump tables) still name the
/// original instruction.
pub(crate) fn insert_with_heads(
    cubin: &mut Cubin,
    kernel: &str,
    insertions: &[(u64, Vec<[u8; 16]>)],
    heads: &BTreeMap<u64, u64>,
) -> Result<Relayout, RelayoutError> {
    edit_with_heads(cubin, kernel, insertions, &[], heads)
}

fn edit_with_heads(
    cubin: &mut Cubin,
    kernel: &str,
    insertions: &[(u64, Vec<[u8; 16]>)],
    deletions: &[u64],
    heads: &BTreeMap<u64, u64>,
) -> Result<Relayout, RelayoutError> {
    let sm = cubin.arch();
    if !Sm::of(sm).model().relayout {
        return Err(invalid(
            kernel,
            format_args!("sm_{sm} code is not rewritten (sm_{MIN_SM} to sm_90 only)"),
        ));
    }
    let (sec, words) = section_words(cubin, kernel)?;
    let n = words.len();
    let code_end = n as u64 * 16;
    let groups = group_insertions(insertions, code_end, kernel)?;
    let deleted = mark_deletions(cubin, sec, &words, deletions, kernel)?;
    let (map, group_at) = offset_map(&groups, &deleted);
    let funcs = returns::section_functions(cubin, sec, &words);
    let Reencoded {
        out,
        return_addresses,
    } = reencode(sm, &words, &deleted, &funcs, &map, &group_at, heads, kernel)?;
    let (mut code, inserted) = assemble(&out, &deleted, &groups, insertions, &group_at);
    // ptxas pads sm_80+ text with at least 128 bytes of NOPs before rounding the section to
    // 128 (sm_75: rounding only), checked on every fixture; keep that margin.
    for _ in 0..Sm::of(sm).model().tail_nops {
        code.extend_from_slice(&encode::NOP_PADDING.to_le_bytes());
    }
    cubin.replace_text(kernel, code, &map)?;
    Ok(Relayout {
        map,
        inserted,
        return_addresses,
    })
}

/// The section `kernel` owns, as words without the trailing NOP padding (`replace_text`
/// pads again).
fn section_words(cubin: &Cubin, kernel: &str) -> Result<(usize, Vec<u128>), RelayoutError> {
    let info = cubin
        .function_info(kernel)
        .ok_or_else(|| RelayoutError::Cubin(CubinError::NoFunction(kernel.to_string())))?;
    if !cubin.owns_section(info.symbol) {
        return Err(invalid(kernel, "does not own its text section"));
    }
    let sec = info.text_section;
    let data = &cubin.elf().sections[sec].data;
    if !data.len().is_multiple_of(16) {
        return Err(invalid(kernel, "text section size is not a multiple of 16"));
    }
    let mut words: Vec<u128> = data
        .chunks_exact(16)
        .map(|c| u128::from_le_bytes(c.try_into().expect("16-byte chunk")))
        .collect();
    while words.last() == Some(&encode::NOP_PADDING) {
        words.pop();
    }
    Ok((sec, words))
}

/// Insertions grouped by offset, in request order within an offset.
fn group_insertions(
    insertions: &[(u64, Vec<[u8; 16]>)],
    code_end: u64,
    kernel: &str,
) -> Result<BTreeMap<u64, Vec<[u8; 16]>>, RelayoutError> {
    let mut groups: BTreeMap<u64, Vec<[u8; 16]>> = BTreeMap::new();
    for (at, code) in insertions {
        if at % 16 != 0 || *at > code_end {
            return Err(invalid(
                kernel,
                format_args!("cannot insert at {at:#x} (code is {code_end:#x} bytes)"),
            ));
        }
        groups.entry(*at).or_default().extend_from_slice(code);
    }
    Ok(groups)
}

/// Which instructions go: refused for control flow and relocated instructions.
fn mark_deletions(
    cubin: &Cubin,
    sec: usize,
    words: &[u128],
    deletions: &[u64],
    kernel: &str,
) -> Result<Vec<bool>, RelayoutError> {
    let n = words.len();
    let code_end = n as u64 * 16;
    // Offsets of relocated instructions in this section (they cannot be deleted).
    let relocated: BTreeSet<u64> = cubin
        .elf()
        .sections
        .iter()
        .filter(|r| {
            (r.sh_type == elf::SHT_REL || r.sh_type == elf::SHT_RELA) && r.sh_info as usize == sec
        })
        .filter_map(|r| parse_relocs(&r.data, r.sh_type == elf::SHT_RELA))
        .flatten()
        .map(|r| r.r_offset / 16 * 16)
        .collect();
    let mut deleted = vec![false; n];
    for &d in deletions {
        if d % 16 != 0 || d >= code_end {
            return Err(invalid(
                kernel,
                format_args!("cannot delete at {d:#x} (code is {code_end:#x} bytes)"),
            ));
        }
        let w = words[(d / 16) as usize];
        let op = encode::opcode(w);
        if encode::rel_kind(w).is_some()
            || matches!(
                op,
                encode::OP_EXIT
                    | encode::OP_LEPC
                    | encode::OP_LEPC_REG
                    | encode::OP_RET_REL
                    | encode::OP_BRX
                    | encode::OP_BRXU
                    | encode::OP_CALL_ABS
            )
        {
            return Err(invalid(
                kernel,
                format_args!("the control-flow instruction at {d:#x} cannot be deleted"),
            ));
        }
        if relocated.contains(&d) {
            return Err(invalid(
                kernel,
                format_args!("the instruction at {d:#x} carries a relocation"),
            ));
        }
        deleted[(d / 16) as usize] = true;
    }
    Ok(deleted)
}

/// Old → new offsets, and the new offset of the first instruction inserted at each old one.
fn offset_map(
    groups: &BTreeMap<u64, Vec<[u8; 16]>>,
    deleted: &[bool],
) -> (OffsetMap, BTreeMap<u64, u64>) {
    let n = deleted.len();
    // `newpc[i]` for every old instruction and the end of the code.
    let mut newpc = vec![0u64; n + 1];
    let mut group_at: BTreeMap<u64, u64> = BTreeMap::new(); // old offset → new offset of first inserted
    let mut cur = 0u64;
    for (i, slot) in newpc.iter_mut().enumerate() {
        let pc = i as u64 * 16;
        if let Some(g) = groups.get(&pc) {
            group_at.insert(pc, cur);
            cur += g.len() as u64 * 16;
        }
        *slot = cur;
        if i < n && !deleted[i] {
            cur += 16;
        }
    }
    // A deleted instruction's references go to the next original instruction.
    for i in (0..n).rev() {
        if deleted[i] {
            newpc[i] = newpc[i + 1];
        }
    }
    let mut map = OffsetMap::new();
    map.insert(0, newpc[0]);
    for i in 1..=n {
        if newpc[i] != newpc[i - 1] + 16 {
            map.insert(i as u64 * 16, newpc[i]);
        }
    }
    (map, group_at)
}

/// The re-encoded words (deleted ones included, skipped by [`assemble`]).
struct Reencoded {
    out: Vec<u128>,
    return_addresses: Vec<u64>,
}

/// Re-encode every PC-relative field, LEPC sequence and return-address MOV for the new
/// layout.
#[allow(clippy::too_many_arguments)]
fn reencode(
    sm: u32,
    words: &[u128],
    deleted: &[bool],
    funcs: &[returns::Func],
    map: &OffsetMap,
    group_at: &BTreeMap<u64, u64>,
    heads: &BTreeMap<u64, u64>,
    kernel: &str,
) -> Result<Reencoded, RelayoutError> {
    let code_end = words.len() as u64 * 16;
    let new_pc = |old: u64| map.map(old).expect("offset in range");
    let all_ret_locs: Option<BTreeSet<returns::Loc>> =
        funcs.iter().try_fold(BTreeSet::new(), |mut all, f| {
            all.extend(f.ret_locs.as_ref()?);
            Some(all)
        });
    let func_of = |off: u64| funcs.iter().find(|f| f.start <= off && off < f.end);
    let mut out = words.to_vec();
    let mut ret_movs: BTreeMap<usize, usize> = BTreeMap::new(); // mov index → call index
    let mut ret_movs_lepc: Vec<usize> = Vec::new(); // MOVs patched for LEPC sequences
    for (i, &w) in words.iter().enumerate() {
        let pc = i as u64 * 16;
        let op = encode::opcode(w);
        if deleted[i] {
            continue;
        }
        if op == encode::OP_LEPC || op == encode::OP_LEPC_REG {
            returns::lepc(words, deleted, i, sm, &new_pc, &mut out, &mut ret_movs_lepc)
                .map_err(|e| invalid(kernel, e))?;
            continue;
        }
        let Some(kind) = encode::rel_kind(w) else {
            continue;
        };
        let npc = new_pc(pc);
        let nw = match kind {
            RelKind::Direct | RelKind::Bssy => {
                let t = encode::direct_target(sm, pc, w)
                    .filter(|&t| t < code_end && t % 16 == 0)
                    .ok_or_else(|| {
                        invalid(kernel, format_args!("branch at {pc:#x} leaves the section"))
                    })?;
                let nt = match (op, heads.get(&t), group_at.get(&t)) {
                    (encode::OP_BRA, Some(&h), Some(&g)) => g + 16 * h,
                    _ => new_pc(t),
                };
                encode::set_direct_target(sm, npc, w, nt)
            }
            RelKind::RegisterBased => {
                let d = encode::rel_delta(sm, w).expect("has a field");
                let base = pc as i64 + 16 + d;
                encode::set_rel_delta(sm, w, base - (npc as i64 + 16))
            }
        }
        .map_err(|e| invalid(kernel, format_args!("instruction at {pc:#x}: {e}")))?;
        out[i] = nw;
        // Calls: find the return-address MOV.
        let regs = match op {
            encode::OP_CALL_REL => encode::direct_target(sm, pc, w)
                .and_then(|t| funcs.iter().find(|f| f.start == t))
                .map(|f| f.ret_locs.clone())
                .unwrap_or(Some(BTreeSet::new())),
            encode::OP_CALL_REL_REG => all_ret_locs.clone(),
            _ => continue,
        };
        let caller = func_of(pc).map_or(0, |f| (f.start / 16) as usize);
        for m in returns::return_address_movs(words, i, caller, &regs, kernel)? {
            ret_movs.insert(m, i);
        }
    }
    let mut return_addresses = Vec::new();
    for &m in &ret_movs_lepc {
        return_addresses.push(new_pc(m as u64 * 16));
    }
    for (&m, &call) in &ret_movs {
        if deleted[m] {
            return Err(invalid(
                kernel,
                format_args!(
                    "the MOV at {:#x} holds the return address of the call at {:#x}",
                    m * 16,
                    call * 16
                ),
            ));
        }
        let ret = new_pc(call as u64 * 16) + 16;
        let ret = u32::try_from(ret)
            .map_err(|_| invalid(kernel, format_args!("return address {ret:#x}")))?;
        out[m] = encode::set_imm32(out[m], ret);
        return_addresses.push(new_pc(m as u64 * 16));
    }
    Ok(Reencoded {
        out,
        return_addresses,
    })
}

/// The new code: inserted groups before their offsets, deleted words dropped; and the new
/// offsets of the inserted instructions in request order (same offset: request order).
fn assemble(
    out: &[u128],
    deleted: &[bool],
    groups: &BTreeMap<u64, Vec<[u8; 16]>>,
    insertions: &[(u64, Vec<[u8; 16]>)],
    group_at: &BTreeMap<u64, u64>,
) -> (Vec<u8>, Vec<u64>) {
    let n = out.len();
    let total = n + groups.values().map(Vec::len).sum::<usize>();
    let mut code = Vec::with_capacity(total * 16 + 128);
    let mut inserted_at: BTreeMap<u64, u64> = BTreeMap::new();
    let mut next_group = groups.iter().peekable();
    for (i, w) in out.iter().enumerate() {
        let pc = i as u64 * 16;
        while let Some(&(&at, g)) = next_group.peek() {
            if at > pc {
                break;
            }
            inserted_at.insert(at, code.len() as u64);
            for b in g.iter() {
                code.extend_from_slice(b);
            }
            next_group.next();
        }
        if !deleted[i] {
            code.extend_from_slice(&w.to_le_bytes());
        }
    }
    for (&at, g) in next_group {
        inserted_at.insert(at, code.len() as u64);
        for b in g {
            code.extend_from_slice(b);
        }
    }
    debug_assert_eq!(&inserted_at, group_at);
    // New offsets of inserted instructions in request order (same offset: request order).
    let mut cursor: BTreeMap<u64, u64> = group_at.clone();
    let mut inserted = Vec::new();
    for (at, c) in insertions {
        let base = cursor.get_mut(at).expect("grouped");
        for _ in c {
            inserted.push(*base);
            *base += 16;
        }
    }
    (code, inserted)
}

/// Insert `count` NOPs (stall `stall`) at each of `offsets`: a convenience over [`insert`].
pub fn insert_nops(
    cubin: &mut Cubin,
    kernel: &str,
    offsets: &[u64],
    stall: u8,
) -> Result<Relayout, RelayoutError> {
    let nop = encode::nop(stall).to_le_bytes();
    let ins: Vec<(u64, Vec<[u8; 16]>)> = offsets.iter().map(|&o| (o, vec![nop])).collect();
    insert(cubin, kernel, &ins)
}

/// Offsets of the instructions of the section owned by `kernel` (trailing padding excluded),
/// where an insertion is possible: every instruction up to and including the last one.
pub fn code_offsets(cubin: &Cubin, kernel: &str) -> Option<Vec<u64>> {
    let info = cubin.function_info(kernel)?;
    let data = &cubin.elf().sections.get(info.text_section)?.data;
    let mut n = data.len() / 16;
    while n > 0 {
        let w: [u8; 16] = data[(n - 1) * 16..n * 16].try_into().ok()?;
        if u128::from_le_bytes(w) != encode::NOP_PADDING {
            break;
        }
        n -= 1;
    }
    Some((0..n as u64).map(|i| i * 16).collect())
}

/// SplitMix64: a small deterministic generator for test insertion points.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Insert `per_function` NOPs (stall 1) at pseudo-random instruction offsets of every
/// function of `cubin` (sub-functions included), one re-layout per text section, drawn from
/// `seed`. Returns `(section owner, result)` per rewritten section.
pub fn insert_random_nops(
    cubin: &mut Cubin,
    per_function: usize,
    seed: u64,
) -> Result<Vec<(String, Relayout)>, RelayoutError> {
    let mut rng = SplitMix64(seed);
    let functions = cubin.functions();
    let owners: Vec<_> = functions
        .iter()
        .filter(|f| cubin.owns_section(f.symbol))
        .cloned()
        .collect();
    let mut done = Vec::new();
    for owner in owners {
        let Some(offsets) = code_offsets(cubin, &owner.name) else {
            continue;
        };
        if offsets.is_empty() {
            continue;
        }
        let end = offsets.len() as u64 * 16;
        let mut starts: Vec<u64> = functions
            .iter()
            .filter(|f| f.text_section == owner.text_section && f.text_offset < end)
            .map(|f| f.text_offset)
            .collect();
        starts.push(0);
        starts.sort_unstable();
        starts.dedup();
        let mut at = Vec::new();
        for (k, &s) in starts.iter().enumerate() {
            let e = starts.get(k + 1).copied().unwrap_or(end);
            let slots = (e - s) / 16;
            // Not at offset 0: the owner's entry stays at the section start (the inserted
            // code would run on entry) while a call through a relocation to the owner's
            // symbol goes to the original first instruction (see the module docs).
            let (first, slots) = if s == 0 {
                (16, slots.saturating_sub(1))
            } else {
                (s, slots)
            };
            if slots == 0 {
                continue;
            }
            for _ in 0..per_function {
                at.push(first + rng.below(slots) * 16);
            }
        }
        at.sort_unstable();
        let r = insert_nops(cubin, &owner.name, &at, 1)?;
        done.push((owner.name.clone(), r));
    }
    Ok(done)
}
