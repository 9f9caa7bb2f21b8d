//! Decoding a cubin's functions into the IR: nvdisasm's text for what each instruction is, our
//! operand tables for what it reads and writes.
//!
//! One `nvdisasm -json` run names every instruction (opcode with modifiers, operand text,
//! guard); one `nvdisasm -c` run gives what the JSON lacks: `BRX` jump-table targets
//! (`BRANCH_TARGETS` with their labels) and which functions are kernels (`STO_CUDA_ENTRY`).
//! The raw 128 bits come from the function's section.

use std::collections::HashMap;
use std::path::Path;

use super::listing::JsonFunction;
use object::{Object, ObjectSection, ObjectSymbol};

use super::control::Control;
use super::ir::{Function, Instr, OperandKind, Pred};
use super::listing::run_nvdisasm;
use super::operands::{self, Family};

/// The decoder fails the way the listing does (both read nvdisasm's output and the cubin).
pub use super::listing::ListingError as DecodeError;

/// A decoded cubin.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// `sm_XX` as a number (75, 80, ...).
    pub sm: u32,
    pub functions: Vec<Function>,
}

/// Decode every function of the cubin at `path` (two nvdisasm runs).
pub fn decode_file(nvdisasm: &Path, path: &Path) -> Result<Decoded, DecodeError> {
    let json = run_nvdisasm(nvdisasm, &["-json"], path)?;
    let text = run_nvdisasm(nvdisasm, &["-c"], path)?;
    let bytes = std::fs::read(path).map_err(|e| DecodeError::Elf(e.to_string()))?;
    decode(&json, &String::from_utf8_lossy(&text), &bytes)
}

/// What `nvdisasm -c` adds to the JSON.
#[derive(Debug, Default)]
struct TextInfo {
    /// (section name, offset) of a `BRX` → its targets.
    brx: HashMap<(String, u64), Vec<u64>>,
    kernels: Vec<String>,
    /// Section name → `SHI_REGISTERS`.
    regs: HashMap<String, u32>,
}

fn parse_text(text: &str) -> TextInfo {
    let mut info = TextInfo::default();
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

/// Combine `nvdisasm -json` and `nvdisasm -c` output with the cubin's bytes.
pub fn decode(json: &[u8], text: &str, cubin: &[u8]) -> Result<Decoded, DecodeError> {
    let (header, funcs): (serde_json::Value, Vec<JsonFunction>) =
        serde_json::from_slice(json).map_err(|e| DecodeError::Json(e.to_string()))?;
    let v = &header["SM"]["version"];
    let sm = (v["major"].as_u64().unwrap_or(0) * 10 + v["minor"].as_u64().unwrap_or(0)) as u32;
    let family = Family::of(sm).ok_or(DecodeError::Arch(sm))?;
    let info = parse_text(text);
    let elf = object::File::parse(cubin).map_err(|e| DecodeError::Elf(e.to_string()))?;
    let mut out = Vec::new();
    for f in funcs {
        let err = |what: String| DecodeError::Function {
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
                opcode: j.opcode,
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
            resolve_targets(&mut ins);
            if ins.base() == "BRX" {
                ins.targets = info
                    .brx
                    .get(&(sec_name.clone(), offset))
                    .cloned()
                    .unwrap_or_default();
            }
            instrs.push(ins);
        }
        out.push(Function {
            kernel: info.kernels.contains(&f.name),
            regs: info.regs.get(&sec_name).copied(),
            name: f.name,
            section: sec_index.0,
            start: f.start,
            instrs,
        });
    }
    // nvdisasm's call model covers SHI_REGISTERS registers on sm_75-89; on sm_90, where
    // SHI_REGISTERS is rounded up, with the highest register the section names plus three
    // (two above the highest; found on the kernels of tests/sass_decode.rs).
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
        if family == Family::Hopper {
            f.regs = Some(f.regs.map_or(u + 2, |r| r.min(u + 2)));
        } else if f.regs.is_none() {
            f.regs = Some(u);
        }
    }
    Ok(Decoded { sm, functions: out })
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
    match ins.base() {
        "BRA" | "BSSY" | "JMP" => ins.target = imm(ins),
        "CALL" => {
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
