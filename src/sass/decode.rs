//! Decoding a cubin's functions into the IR: nvdisasm's text for what each instruction is, our
//! operand tables for what it reads and writes.
//!
//! One `nvdisasm -json` run names every instruction (opcode with modifiers, operand text,
//! guard). What the JSON lacks comes from the cubin itself ([`CubinInfo`]): `BRX` jump-table
//! targets (`EIATTR_INDIRECT_BRANCH_TARGETS`: the same lists, in the same order, as the
//! `BRANCH_TARGETS` comments of `nvdisasm -c`), which functions are kernels (`STO_CUDA_ENTRY`
//! in the symbol's `st_other`) and each text section's `SHI_REGISTERS` (`sh_info[31:24]`,
//! which `nvdisasm -c` prints as `.sectioninfo`; 0 and not printed on sm_90+). The raw 128
//! bits come from the function's section. [`decode_with_listing`] takes those facts from
//! `nvdisasm -c` instead (the former second nvdisasm run); a test checks both agree.

use std::collections::HashMap;
use std::path::Path;

use super::listing::{JsonFunction, ListingError, Sections};
use crate::arch::Sm;
use crate::cubin::eiattr::OffsetLayout;
use crate::cubin::elf::SHT_CUDA_INFO;
use crate::cubin::nvinfo::EIFMT_SVAL;
use crate::cubin::{Attr, Cubin};
use object::{Object, ObjectSection, ObjectSymbol};

use super::control::Control;
use super::ir::{Function, Instr, OperandKind, Pred};
use super::listing::run_nvdisasm;
use super::opcode::Op;
use super::operands;

/// A decoded cubin.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// `sm_XX` as a number (75, 80, ...).
    pub sm: u32,
    pub functions: Vec<Function>,
}

/// Decode every function of the cubin at `path` (one nvdisasm run). The decoder fails the way
/// the listing does: both read nvdisasm's output and the cubin.
pub fn decode_file(nvdisasm: &Path, path: &Path) -> Result<Decoded, ListingError> {
    decode_sections(nvdisasm, path, &Sections::Every)
}

/// Decode the functions of the text sections `sections` of the cubin at `path` (one
/// nvdisasm run): each as [`decode_file`] decodes it, the other sections left out.
pub fn decode_sections(
    nvdisasm: &Path,
    path: &Path,
    sections: &Sections,
) -> Result<Decoded, ListingError> {
    let mut args = sections.args();
    args.push("-json".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let json = run_nvdisasm(nvdisasm, &args, path)?;
    let bytes = std::fs::read(path).map_err(|e| ListingError::Elf(e.to_string()))?;
    decode(&json, &bytes)
}

/// What the JSON lacks, read from the cubin or from `nvdisasm -c`.
#[derive(Debug, Default, PartialEq)]
pub struct CubinInfo {
    /// (section name, offset) of a `BRX` → its targets, in table order.
    pub brx: HashMap<(String, u64), Vec<u64>>,
    /// Kernel names (symbol order, or listing order).
    pub kernels: Vec<String>,
    /// Text section name → `SHI_REGISTERS`.
    pub(crate) regs: HashMap<String, u32>,
}

impl CubinInfo {
    /// Read from the cubin: `INDIRECT_BRANCH_TARGETS` of every `.nv.info.<k>`, kernel
    /// symbols, `sh_info[31:24]` of every `.text.*` section (absent when 0, as on sm_90+).
    pub fn from_cubin(cubin: &Cubin) -> CubinInfo {
        let mut info = CubinInfo::default();
        let sections = &cubin.elf().sections;
        for s in sections {
            if s.name.starts_with(".text.") && s.sh_info >> 24 != 0 {
                info.regs.insert(s.name.clone(), s.sh_info >> 24);
            }
        }
        info.kernels = cubin
            .symbols()
            .iter()
            .filter(|s| s.is_kernel())
            .map(|s| s.name.clone())
            .collect();
        for (i, s) in sections.iter().enumerate() {
            if s.sh_type != SHT_CUDA_INFO || s.name == ".nv.info" {
                continue;
            }
            let Some(text) = sections.get(s.sh_info as usize) else {
                continue;
            };
            for r in cubin.records(i) {
                if r.attr != Attr::IndirectBranchTargets || r.format != EIFMT_SVAL {
                    continue;
                }
                // {u32 brx, u32 0, u32 n, u32 target[n]} repeated.
                let w: Vec<u32> = r.words().collect();
                let mut at = 0;
                while at + 3 <= w.len() {
                    let end = (at + 3).saturating_add(w[at + 2] as usize).min(w.len());
                    info.brx.insert(
                        (text.name.clone(), u64::from(w[at])),
                        w[at + 3..end].iter().map(|&t| u64::from(t)).collect(),
                    );
                    at = end;
                }
            }
        }
        info
    }

    /// Read from `nvdisasm -c` output: `BRANCH_TARGETS` comments (labels resolved),
    /// `.other NAME, @"STO_CUDA_ENTRY ..."`, `.sectioninfo @"SHI_REGISTERS=n"`.
    pub fn from_listing(text: &str) -> CubinInfo {
        let mut info = CubinInfo::default();
        let mut section = String::new();
        let mut labels: HashMap<(String, String), u64> = HashMap::new();
        let mut pending: Vec<String> = Vec::new();
        let mut brx_labels: Vec<(String, u64, Vec<String>)> = Vec::new();
        for line in text.lines() {
            let t = line.trim();
            if let Some(rest) = t.strip_prefix(".section\t") {
                section = rest
                    .trim()
                    .split(',')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                continue;
            }
            if let Some(rest) = t.strip_prefix(".sectioninfo") {
                if let Some(n) = rest
                    .split("SHI_REGISTERS=")
                    .nth(1)
                    .and_then(|r| r.trim_end_matches('"').trim().parse().ok())
                {
                    info.regs.insert(section.clone(), n);
                }
                continue;
            }
            if let Some(rest) = t.strip_prefix(".other") {
                if rest.contains("STO_CUDA_ENTRY") {
                    let name = rest.trim().split(',').next().unwrap_or("").trim();
                    info.kernels.push(name.to_string());
                }
                continue;
            }
            if let Some(l) = t.strip_suffix(':')
                && !l.contains(' ')
            {
                pending.push(l.to_string());
                continue;
            }
            if let Some(rest) = t.strip_prefix("/*")
                && let Some((hex, body)) = rest.split_once("*/")
                && let Ok(off) = u64::from_str_radix(hex.trim(), 16)
            {
                for l in pending.drain(..) {
                    labels.insert((section.clone(), l), off);
                }
                if let Some(i) = body.find("BRANCH_TARGETS ") {
                    let list = &body[i + "BRANCH_TARGETS ".len()..];
                    let list = list.split('"').next().unwrap_or("");
                    brx_labels.push((
                        section.clone(),
                        off,
                        list.split(',').map(|s| s.trim().to_string()).collect(),
                    ));
                }
            }
        }
        for (sec, off, ls) in brx_labels {
            let targets = ls
                .iter()
                .filter_map(|l| labels.get(&(sec.clone(), l.clone())).copied())
                .collect();
            info.brx.insert((sec, off), targets);
        }
        info
    }
}

fn parse_pred(s: &str) -> Option<Pred> {
    let s = s.trim().strip_prefix('@')?;
    let (negated, s) = match s.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (uniform, s) = match s.strip_prefix("UP") {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('P')?),
    };
    let index = if s == "T" { 7 } else { s.parse().ok()? };
    Some(Pred {
        uniform,
        index,
        negated,
    })
}

/// Combine `nvdisasm -json` output with the cubin's bytes.
pub fn decode(json: &[u8], cubin: &[u8]) -> Result<Decoded, ListingError> {
    let parsed = Cubin::parse(cubin).map_err(|e| ListingError::Elf(e.to_string()))?;
    decode_with(json, cubin, &parsed, &CubinInfo::from_cubin(&parsed))
}

/// Combine `nvdisasm -json` and `nvdisasm -c` output with the cubin's bytes: the jump
/// tables, kernels and register counts from the listing, not from the cubin (the former
/// two-run decode; kept to check [`decode`] against).
pub fn decode_with_listing(json: &[u8], text: &str, cubin: &[u8]) -> Result<Decoded, ListingError> {
    let parsed = Cubin::parse(cubin).map_err(|e| ListingError::Elf(e.to_string()))?;
    decode_with(json, cubin, &parsed, &CubinInfo::from_listing(text))
}

/// Section index → the instruction offsets its `.nv.info.<k>` attributes name (every
/// attribute with an [`OffsetLayout`]: `EXIT_INSTR_OFFSETS`, `INT_WARP_WIDE_INSTR_OFFSETS`,
/// `COOP_GROUP_INSTR_OFFSETS`, `UNUSED_LOAD_BYTE_OFFSET`, `SYSCALL_OFFSETS`, the `BRX` of
/// `INDIRECT_BRANCH_TARGETS`, `ANNOTATIONS`, ...), sorted, 16-byte aligned ones only.
fn attribute_offsets(cubin: &Cubin) -> HashMap<usize, Vec<u64>> {
    let mut out: HashMap<usize, Vec<u32>> = HashMap::new();
    for (i, s) in cubin.elf().sections.iter().enumerate() {
        if s.sh_type != SHT_CUDA_INFO || s.name == ".nv.info" {
            continue;
        }
        let v = out.entry(s.sh_info as usize).or_default();
        for r in cubin.records(i) {
            if r.format != EIFMT_SVAL {
                continue;
            }
            let w: Vec<u32> = r.words().collect();
            match r.attr.offset_layout() {
                OffsetLayout::List => v.extend(&w),
                OffsetLayout::BranchTargets => {
                    let mut at = 0;
                    while at + 3 <= w.len() {
                        v.push(w[at]);
                        at = (at + 3).saturating_add(w[at + 2] as usize);
                    }
                }
                OffsetLayout::Stride16 => v.extend(w.iter().step_by(4)),
                OffsetLayout::KindOffsetPairs => v.extend(w.iter().skip(1).step_by(2)),
                OffsetLayout::None | OffsetLayout::Unknown => {}
            }
        }
    }
    out.into_iter()
        .map(|(k, v)| {
            let mut v: Vec<u64> = v
                .into_iter()
                .filter(|o| o % 16 == 0)
                .map(u64::from)
                .collect();
            v.sort_unstable();
            v.dedup();
            (k, v)
        })
        .collect()
}

fn decode_with(
    json: &[u8],
    cubin: &[u8],
    parsed: &Cubin,
    info: &CubinInfo,
) -> Result<Decoded, ListingError> {
    let marks = attribute_offsets(parsed);
    let (header, funcs): (serde_json::Value, Vec<JsonFunction>) =
        serde_json::from_slice(json).map_err(|e| ListingError::Json(e.to_string()))?;
    let v = &header["SM"]["version"];
    let sm = (v["major"].as_u64().unwrap_or(0) * 10 + v["minor"].as_u64().unwrap_or(0)) as u32;
    let family = Sm::of(sm).model().family.ok_or(ListingError::Arch(sm))?;
    let elf = object::File::parse(cubin).map_err(|e| ListingError::Elf(e.to_string()))?;
    let mut out = Vec::new();
    for f in funcs {
        let err = |what: String| ListingError::Function {
            name: f.name.clone(),
            what,
        };
        let sym = elf
            .symbols()
            .find(|s| s.name() == Ok(f.name.as_str()))
            .ok_or_else(|| err("no symbol".into()))?;
        let sec_index = sym
            .section_index()
            .ok_or_else(|| err("symbol has no section".into()))?;
        let section = elf
            .section_by_index(sec_index)
            .map_err(|e| err(e.to_string()))?;
        let sec_name = section.name().unwrap_or("").to_string();
        let data = section.data().map_err(|e| err(e.to_string()))?;
        if f.length != 16 * f.instrs.len() as u64 {
            return Err(err(format!(
                "{} bytes but {} instructions",
                f.length,
                f.instrs.len()
            )));
        }
        let mut instrs = Vec::with_capacity(f.instrs.len());
        for (i, j) in f.instrs.into_iter().enumerate() {
            let offset = f.start + 16 * i as u64;
            let word = usize::try_from(offset)
                .ok()
                .and_then(|o| data.get(o..o.checked_add(16)?))
                .ok_or_else(|| err(format!("instruction at {offset:#x} is past the section")))?;
            let raw = u128::from_le_bytes(word.try_into().expect("16 bytes"));
            let parsed = operands::parse(&j.operands);
            let mut ins = Instr {
                offset,
                raw,
                opcode: j.opcode.into(),
                predicate: j.predicate.as_deref().and_then(parse_pred),
                operands: parsed.clone().unwrap_or_default(),
                ctrl: Control::from_bytes(word).expect("16 bytes"),
                target: None,
                targets: Vec::new(),
                callee: None,
                unknown: parsed.is_none(),
            };
            if !ins.unknown {
                ins.unknown = !operands::apply(family, &mut ins);
            }
            if Sm::of(sm).model().implicit_memory_descriptor {
                implicit_descriptor(&mut ins);
            }
            resolve_targets(&mut ins);
            if ins.op() == Op::Brx {
                ins.targets = info
                    .brx
                    .get(&(sec_name.clone(), offset))
                    .cloned()
                    .unwrap_or_default();
            }
            instrs.push(ins);
        }
        let end = f.start + f.length;
        let marked = marks
            .get(&sec_index.0)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|o| (f.start..end).contains(o))
                    .collect()
            })
            .unwrap_or_default();
        out.push(Function {
            marked,
            kernel: info.kernels.contains(&f.name),
            regs: info.regs.get(&sec_name).copied(),
            abi_regs: None,
            abi_files: None,
            name: f.name,
            section: sec_index.0,
            start: f.start,
            instrs,
        });
    }
    // nvdisasm's call model covers SHI_REGISTERS registers on sm_75-89; on sm_90, where
    // SHI_REGISTERS is rounded up, with the highest register the section names plus three
    // (two above the highest; found on the kernels of tests/decode/sass_decode.rs):
    // `ShaderModel::call_regs_from_code`.
    let mut used: HashMap<usize, u32> = HashMap::new();
    for f in &out {
        let m = used.entry(f.section).or_default();
        for ins in &f.instrs {
            for r in ins.gpr_reads().into_iter().chain(ins.gpr_writes()) {
                *m = (*m).max(u32::from(r) + 1);
            }
        }
    }
    for f in &mut out {
        let u = used.get(&f.section).copied().unwrap_or(0);
        if Sm::of(sm).model().call_regs_from_code {
            f.regs = Some(f.regs.map_or(u + 2, |r| r.min(u + 2)));
        } else if f.regs.is_none() {
            f.regs = Some(u);
        }
    }
    // The ABI registers of nvdisasm's liveness: those, but never beyond its `-plr` table,
    // whose columns, the same for every section of the listing, go up to the highest
    // register an instruction names or a `RET` reads (the callee-saved ones below the count):
    // a call clobbers only registers with a column (tests/oracles/liveness_oracle.rs).
    let table = section_columns(&out)
        .into_values()
        .fold(Columns::default(), Columns::max);
    for f in &mut out {
        f.abi_regs = f.regs.map(|r| r.min(table.gprs));
        f.abi_files = Some(table.files);
    }
    Ok(Decoded { sm, functions: out })
}

/// One section's share of nvdisasm's `-plr` table, whose columns are the same for every
/// section it lists: the widest share of the sections listed sets them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Columns {
    /// GPR columns: the highest register an instruction names, or the highest callee-saved
    /// register below the count of a function that returns.
    gprs: u32,
    /// The other files' columns: every predicate (0), uniform register (1) and uniform
    /// predicate (2) an instruction names, a call's clobbers aside.
    files: [u8; 3],
}

impl Columns {
    fn max(self, o: Columns) -> Columns {
        let mut files = self.files;
        for (f, g) in files.iter_mut().zip(o.files) {
            *f = (*f).max(g);
        }
        Columns {
            gprs: self.gprs.max(o.gprs),
            files,
        }
    }
}

/// Each section's [`Columns`] (`functions` with their register counts set).
fn section_columns(functions: &[Function]) -> HashMap<usize, Columns> {
    let mut out: HashMap<usize, Columns> = HashMap::new();
    for f in functions {
        let c = out.entry(f.section).or_default();
        for ins in &f.instrs {
            for r in ins.gpr_reads().into_iter().chain(ins.gpr_writes()) {
                c.gprs = c.gprs.max(u32::from(r) + 1);
            }
            if !ins.is_call() {
                for (k, r) in other_files_named(ins) {
                    c.files[k] = c.files[k].max(r + 1);
                }
            }
        }
        if f.instrs.iter().any(|i| i.op() == Op::Ret) {
            let regs = f.regs.unwrap_or(0).min(255);
            if let Some(r) = (2..regs).rev().find(|&r| callee_saved(r as u8)) {
                c.gprs = c.gprs.max(r + 1);
            }
        }
    }
    out
}

/// The sections of `decoded` not `left_out` that set the `-plr` table's columns among them:
/// for each column count, the first section that reaches the widest. A listing of the
/// `left_out` sections together with these, of this cubin or of one that differs from it
/// only in the `left_out` sections (a rewrite of them), has the columns of the whole
/// listing, so the same liveness at every call and the same ABI registers ([`Sections`]).
pub fn column_sections(decoded: &Decoded, left_out: &dyn Fn(usize) -> bool) -> Vec<usize> {
    let mut shares: Vec<(usize, Columns)> = section_columns(&decoded.functions)
        .into_iter()
        .filter(|(s, _)| !left_out(*s))
        .collect();
    shares.sort_unstable_by_key(|&(s, _)| s);
    let widest = shares
        .iter()
        .map(|&(_, c)| c)
        .fold(Columns::default(), Columns::max);
    let reaches = |c: &Columns, i: usize| match i {
        0 => c.gprs >= widest.gprs && widest.gprs > 0,
        i => c.files[i - 1] >= widest.files[i - 1] && widest.files[i - 1] > 0,
    };
    let mut out: Vec<usize> = (0..4)
        .filter_map(|i| shares.iter().find(|(_, c)| reaches(c, i)).map(|&(s, _)| s))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The predicates (file 0), uniform registers (1) and uniform predicates (2) an instruction
/// names, read or written, its guard included (`PT`, `URZ`, `UPT` are not registers).
fn other_files_named(ins: &Instr) -> Vec<(usize, u8)> {
    let mut out = Vec::new();
    if let Some(p) = ins.predicate.filter(|p| p.index != 7) {
        out.push((if p.uniform { 2 } else { 0 }, p.index));
    }
    fn uniform(out: &mut Vec<(usize, u8)>, r: Option<u8>, width: u8) {
        if let Some(r) = r.filter(|&r| r != 63) {
            out.extend((r..r.saturating_add(width.max(1)).min(63)).map(|r| (1, r)));
        }
    }
    for op in &ins.operands {
        match op.kind {
            OperandKind::Pred { index, .. } if index != 7 => out.push((0, index)),
            OperandKind::UPred { index, .. } if index != 7 => out.push((2, index)),
            OperandKind::UReg(r) => uniform(&mut out, Some(r), op.width),
            OperandKind::Const { ureg, .. } => uniform(&mut out, ureg, 1),
            OperandKind::Addr {
                ureg,
                ureg_width,
                desc,
                ..
            } => {
                uniform(&mut out, ureg, ureg_width);
                uniform(&mut out, desc, 2);
            }
            _ => {}
        }
    }
    out
}

/// Whether nvdisasm's call model has a callee preserve register `r` for its caller: R1, R2,
/// R16 to R31, and from R32 up every other group of four (R36-R39, R44-R47, ...). A call
/// may clobber the others (R0, R3-R15, R32-R35, R40-R43, ...); a `RET` reads these (checked
/// against `nvdisasm -plr` in tests/oracles/liveness_oracle.rs).
pub fn callee_saved(r: u8) -> bool {
    match r {
        1 | 2 | 16..=31 => true,
        0 | 3..=15 => false,
        _ => (r - 32) % 8 >= 4,
    }
}

/// On sm_80-89 a global memory access (`LDG.E R0, [R2.64]`) reads a uniform register pair,
/// the memory descriptor, that nvdisasm does not print (sm_90 prints it:
/// `desc[UR4][R2.64]`): its number is bits 32-37 of `LDG` (opcode 0x981) and of the generic
/// `LD` (0x980), bits 64-69 of `STG` (0x986), `ATOMG` (0x9a8), `RED` (0x98e), `LDGSTS`
/// (0xfae) and the generic `ST` (0x985) and `ATOM` (0x98a), found against `nvdisasm -plr`'s
/// UGPR column; `ATOMG.E.CAS` (0x3a9) and `ATOM.E.CAS` (0x38b) have none there. It goes in
/// the address operand's `desc`; the operand text stays as printed.
fn implicit_descriptor(ins: &mut Instr) {
    let at = match ins.raw & 0xfff {
        0x981 | 0x980 => 32,
        0x986 | 0x9a8 | 0x98e | 0xfae | 0x985 | 0x98a => 64,
        _ => return,
    };
    if !ins.has_mod("E") {
        return;
    }
    let ur = ((ins.raw >> at) & 0x3f) as u8;
    let global = ins
        .operands
        .iter()
        .position(|o| matches!(o.kind, OperandKind::Addr { reg_width: 2, .. }))
        .or_else(|| {
            ins.operands
                .iter()
                .position(|o| matches!(o.kind, OperandKind::Addr { .. }))
        });
    if let Some(i) = global
        && let OperandKind::Addr { desc, .. } = &mut ins.operands[i].kind
        && desc.is_none()
    {
        *desc = Some(ur);
    }
}

fn resolve_targets(ins: &mut Instr) {
    let imm = |ins: &Instr| {
        ins.operands.iter().rev().find_map(|o| match &o.kind {
            OperandKind::Imm(t) => t
                .strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok()),
            _ => None,
        })
    };
    match ins.op() {
        Op::Bra | Op::Bssy | Op::Jmp => ins.target = imm(ins),
        Op::Call => {
            if let Some(l) = ins.operands.iter().find_map(|o| match &o.kind {
                OperandKind::Label(l) => Some(l.clone()),
                _ => None,
            }) && !ins
                .operands
                .iter()
                .any(|o| matches!(o.kind, OperandKind::Reg(_)))
            {
                ins.callee = Some(l);
            }
            if ins.callee.is_none() {
                ins.target = imm(ins);
            }
        }
        _ => {}
    }
}
