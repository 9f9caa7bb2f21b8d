//! Putting kernels compiled in another ptxas run of the same module (at another register
//! budget, possibly with `--entry`) in place of their copies in a whole-module cubin: what a
//! whole-module run at the mixed budgets would make, without compiling the other kernels
//! again. A kernel's own parts are its text section, the symbols in it, its `.nv.info.<k>`,
//! its relocations, its records in the global `.nv.info` and its `.debug_frame` CIEs and
//! FDEs; symbol indices are matched by name.
//!
//! The donor's code must mean in the module what it meant where ptxas compiled it, so a
//! splice is refused (and the caller compiles the module instead) unless:
//! * every module-level constant bank (`.nv.constant<N>`: bank 4 holds the addresses of
//!   globals, strings and external functions, laid out in the order ptxas met them; bank 3
//!   the `__constant__` data) reads the same in the module at every offset the donor's
//!   bank has: the same bytes, the same relocation symbols, the same objects (issue 30: an
//!   `--entry` run that leaves out a kernel using `vprintf` lays bank 4 out differently);
//! * the kernel calls nothing outside its own text section but what the module declares by
//!   name (`vprintf`, `__assertfail`);
//! * the cubin has no sm_100+ "merc" copy of the code, which would keep the old kernel;
//! * neither side has debug information that describes the code by address (`-lineinfo`'s
//!   `.debug_line` and `.nv_debug_line_sass`, `-G`'s `.debug_info`): the module's line
//!   program would put the donor's instructions at the old code's lines (issue 48), and only
//!   ptxas writes one for the code it compiled;
//! * anything else of the kernel that differs (parameter bank, shared size, a symbol one
//!   side lacks) agrees already, but for a shared memory section only the donor has
//!   (`shared_splice`: ptxas's shared-memory spilling), which is added. Frame information of another length or count is not such a
//!   part: `frame_splice` re-lays `.debug_frame` out around the donor's records.
//!
//! `tune::assemble` then has the result checked by `audit`, which reads both cubins with the
//! toolkit and shares nothing with this module.

use std::collections::HashMap;

use super::Cubin;
use super::debug_frame::fdes;
use super::edit::sym_first_word;
use super::eiattr::Attr;
use super::elf::{SHT_REL, SHT_RELA, rd_u64};
use super::nvinfo::{EIFMT_SVAL, encode_records, parse_records};
use super::refusal::{Refusal, SpliceError};
use super::symbols::{STT_FUNC, STT_SECTION, encode_relocs, parse_relocs};

/// `base` with each `(kernel, donor)`'s kernel taken from `donor`; the written bytes.
pub fn splice(base: &Cubin, parts: &[(&str, &Cubin)]) -> Result<Vec<u8>, SpliceError> {
    let mut out = base.clone();
    for (kernel, donor) in parts {
        let fail = |what| SpliceError {
            kernel: kernel.to_string(),
            what,
        };
        module_agrees(base, donor).map_err(fail)?;
        splice_one(&mut out, kernel, donor).map_err(fail)?;
    }
    out.store_symbols();
    relayout_packed(&mut out).map_err(|what| SpliceError {
        kernel: String::new(),
        what,
    })?;
    out.write().map_err(|e| SpliceError {
        kernel: String::new(),
        what: e.into(),
    })
}

/// Lay a cubin assembled from parts of several ptxas outputs out as ptxas would: each
/// section right after the one before it (a segment of NOBITS sections only moves with
/// them, [`super::elf::Elf::relayout_packed`]).
pub(super) fn relayout_packed(out: &mut Cubin) -> Result<(), Refusal> {
    out.elf.relayout_packed()?;
    Ok(())
}

/// Whether `donor`'s module-level parts read the same in `base` (see the module docs).
pub(super) fn module_agrees(base: &Cubin, donor: &Cubin) -> Result<(), Refusal> {
    if let Some(s) = [base, donor]
        .iter()
        .flat_map(|c| &c.elf.sections)
        .find(|s| s.name.starts_with(".nv.merc.") || s.name.starts_with(".nv.capmerc."))
    {
        return Err(Refusal::Merc {
            section: s.name.clone(),
        });
    }
    if let Some(name) = [base, donor].iter().find_map(|c| c.debug_info_section()) {
        return Err(Refusal::DebugInfo {
            section: name.to_string(),
        });
    }
    for (d, sec) in donor.elf.sections.iter().enumerate() {
        if is_module_bank(&sec.name) {
            bank_agrees(base, donor, d).map_err(|why| Refusal::Bank {
                bank: sec.name.clone(),
                why: Box::new(why),
            })?;
        }
    }
    Ok(())
}

/// `.nv.constant<N>` with no kernel name after it: a bank every kernel of the module shares.
fn is_module_bank(name: &str) -> bool {
    name.strip_prefix(".nv.constant")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Donor bank section `d` reads the same in `base` at each of its offsets: bytes, relocation
/// symbols and the objects placed in it.
fn bank_agrees(base: &Cubin, donor: &Cubin, d: usize) -> Result<(), Refusal> {
    let sec = &donor.elf.sections[d];
    let b = base
        .elf
        .sections
        .iter()
        .position(|s| s.name == sec.name)
        .ok_or(Refusal::BankMissing)?;
    if base.elf.sections[b].data.get(..sec.data.len()) != Some(&sec.data[..]) {
        return Err(Refusal::BankBytes);
    }
    let in_base = relocs_of(base, b)?;
    for r in relocs_of(donor, d)? {
        if !in_base.contains(&r) {
            return Err(Refusal::BankRelocation {
                offset: r.0,
                symbol: r.1,
            });
        }
    }
    for s in donor
        .symbols
        .iter()
        .filter(|s| s.st_shndx as usize == d && s.kind() != STT_SECTION)
    {
        let same = base.symbols.iter().any(|t| {
            t.name == s.name
                && (t.st_value, t.st_size) == (s.st_value, s.st_size)
                && t.st_shndx as usize == b
        });
        if !same {
            return Err(Refusal::BankObject {
                symbol: s.name.clone(),
            });
        }
    }
    Ok(())
}

/// A relocation by symbol name: (offset, symbol, type, addend).
type NamedReloc = (u64, String, u32, Option<i64>);

/// The relocations applied to section `target` of `c`.
pub(super) fn relocs_of(c: &Cubin, target: usize) -> Result<Vec<NamedReloc>, Refusal> {
    let Some(rel) =
        c.elf.sections.iter().find(|s| {
            (s.sh_type == SHT_REL || s.sh_type == SHT_RELA) && s.sh_info as usize == target
        })
    else {
        return Ok(Vec::new());
    };
    let list = parse_relocs(&rel.data, rel.sh_type == SHT_RELA).ok_or(Refusal::BadRelocations)?;
    list.iter()
        .map(|r| {
            let s = c
                .symbols
                .get(r.sym as usize)
                .ok_or(Refusal::RelocationSymbol)?;
            Ok((r.r_offset, key_name(c, s), r.r_type, r.addend))
        })
        .collect()
}

pub(super) fn text_of(c: &Cubin, kernel: &str) -> Result<usize, Refusal> {
    c.symbols
        .iter()
        .find(|s| s.name == kernel && s.kind() == STT_FUNC)
        .map(|s| s.st_shndx as usize)
        .filter(|&t| t != 0 && t < c.elf.sections.len())
        .ok_or(Refusal::NoSuchFunction)
}

/// The section whose `sh_info` is `text` and whose type and name satisfy `pred`.
pub(super) fn attached(c: &Cubin, text: usize, pred: impl Fn(u32, &str) -> bool) -> Option<usize> {
    c.elf
        .sections
        .iter()
        .position(|s| s.sh_info as usize == text && pred(s.sh_type, &s.name))
}

/// Kernel `kernel`'s code in `out` replaced by `donor`'s, step by step: the two must agree on
/// everything but the code, then the code, its symbols, its `.nv.info`, relocations, global
/// records and frames are carried over with the donor's symbol indices mapped to `out`'s.
fn splice_one(out: &mut Cubin, kernel: &str, donor: &Cubin) -> Result<(), Refusal> {
    let tb = text_of(out, kernel)?;
    let td = text_of(donor, kernel)?;
    calls_stay_inside(donor, td)?;
    same_symbols_in_text(out, tb, donor, td)?;
    if let Some(d) = super::shared_splice::missing_shared(out, donor, kernel) {
        super::shared_splice::add_shared(out, tb, donor, d)?;
    }
    same_kernel_sections(out, donor, kernel)?;
    let map = SymbolMap::new(out, donor);
    let map_sym = |i: u32| map.get(i);
    copy_code(out, tb, donor, td);
    copy_text_symbols(out, tb, donor, td);
    copy_kernel_info(out, tb, donor, td, &map_sym)?;
    copy_code_relocations(out, tb, donor, td, &map_sym)?;
    copy_global_records(out, tb, donor, td)?;
    // `.debug_frame`: the CIEs and FDEs of the kernel's functions, of any length.
    super::frame_splice::splice_frames(out, tb, donor, td, &map_sym)
}

/// Donor symbol index → base symbol index, by name (section symbols by section name).
pub(super) struct SymbolMap<'a> {
    donor: &'a Cubin,
    by_name: HashMap<(String, u8), u32>,
}

impl<'a> SymbolMap<'a> {
    pub(super) fn new(out: &Cubin, donor: &'a Cubin) -> SymbolMap<'a> {
        let by_name = out
            .symbols
            .iter()
            .enumerate()
            .map(|(i, s)| ((key_name(out, s), s.kind()), i as u32))
            .collect();
        SymbolMap { donor, by_name }
    }

    pub(super) fn get(&self, i: u32) -> Result<u32, Refusal> {
        let s = self
            .donor
            .symbols
            .get(i as usize)
            .ok_or(Refusal::SymbolOutOfRange(i))?;
        self.by_name
            .get(&(key_name(self.donor, s), s.kind()))
            .copied()
            .ok_or_else(|| Refusal::SymbolNotInBase(s.name.clone()))
    }
}

/// The names of the symbols (not the section's own) defined in text section `t`, sorted.
pub(super) fn names_in_text(c: &Cubin, t: usize) -> Vec<String> {
    let mut v: Vec<String> = c
        .symbols
        .iter()
        .filter(|s| s.st_shndx as usize == t && s.kind() != STT_SECTION)
        .map(|s| s.name.clone())
        .collect();
    v.sort();
    v
}

fn same_symbols_in_text(out: &Cubin, tb: usize, donor: &Cubin, td: usize) -> Result<(), Refusal> {
    if names_in_text(out, tb) != names_in_text(donor, td) {
        return Err(Refusal::TextSymbols);
    }
    Ok(())
}

/// The kernel's other sections (constant bank, shared, local) must already agree.
fn same_kernel_sections(out: &Cubin, donor: &Cubin, kernel: &str) -> Result<(), Refusal> {
    let suffix = format!(".{kernel}");
    for s in donor
        .elf
        .sections
        .iter()
        .filter(|s| s.name.ends_with(&suffix))
    {
        let own = s.name.starts_with(".text.")
            || s.name.starts_with(".nv.info.")
            || s.name.starts_with(".rel.text.")
            || s.name.starts_with(".rela.text.");
        if own {
            continue;
        }
        let b = out
            .elf
            .sections
            .iter()
            .find(|b| b.name == s.name)
            .ok_or_else(|| Refusal::SectionNotInBase(s.name.clone()))?;
        if (b.sh_type, b.sh_flags, b.sh_size, &b.data)
            != (s.sh_type, s.sh_flags, s.sh_size, &s.data)
        {
            return Err(Refusal::SectionDiffers(s.name.clone()));
        }
    }
    Ok(())
}

/// The code, with its flags, alignment and register count.
fn copy_code(out: &mut Cubin, tb: usize, donor: &Cubin, td: usize) {
    let d = &donor.elf.sections[td];
    let (data, flags, align) = (d.data.clone(), d.sh_flags, d.sh_addralign);
    // (`sh_size` follows the data in the relayout, which reads the old one to place things.)
    let regs = d.sh_info & 0xff00_0000;
    let b = &mut out.elf.sections[tb];
    // `sh_info` of a text section: the register count in its top byte, its symbol below.
    b.sh_info = (b.sh_info & 0x00ff_ffff) | regs;
    b.data = data;
    b.sh_flags = flags;
    b.sh_addralign = align;
}

/// The values, sizes and attributes of the symbols in the code.
fn copy_text_symbols(out: &mut Cubin, tb: usize, donor: &Cubin, td: usize) {
    let values: HashMap<&str, (u64, u64, u8, u8)> = donor
        .symbols
        .iter()
        .filter(|s| s.st_shndx as usize == td && s.kind() != STT_SECTION)
        .map(|s| {
            (
                s.name.as_str(),
                (s.st_value, s.st_size, s.st_info, s.st_other),
            )
        })
        .collect();
    for s in out.symbols.iter_mut() {
        if s.st_shndx as usize == tb
            && s.kind() != STT_SECTION
            && let Some(&(v, z, info, other)) = values.get(s.name.as_str())
        {
            (s.st_value, s.st_size, s.st_info, s.st_other) = (v, z, info, other);
        }
    }
}

/// `.nv.info.<kernel>`: the donor's records, their symbol words mapped.
fn copy_kernel_info(
    out: &mut Cubin,
    tb: usize,
    donor: &Cubin,
    td: usize,
    map_sym: &impl Fn(u32) -> Result<u32, Refusal>,
) -> Result<(), Refusal> {
    let is_info = |t: u32, n: &str| t == super::elf::SHT_CUDA_INFO && n != ".nv.info";
    let Some((ib, id)) = both_attached(out, tb, donor, td, is_info, ".nv.info section")? else {
        return Ok(());
    };
    let mut recs = parse_records(&donor.elf.sections[id].data)?;
    for r in recs.iter_mut().filter(|r| r.format == EIFMT_SVAL) {
        let words = match r.attr {
            Attr::Externs => r.data.len() / 4,
            a if sym_first_word(a) => 1,
            _ => 0,
        };
        for w in 0..words {
            let v = r.word(w).ok_or(Refusal::ShortRecord)?;
            r.set_word(w, map_sym(v)?).ok_or(Refusal::ShortRecord)?;
        }
    }
    out.elf.sections[ib].data = encode_records(&recs)?;
    Ok(())
}

/// The sections attached to text section `tb` of `out` and `td` of `donor` that `pred` picks:
/// both, or neither (`None`); one side alone is an error naming `what`.
fn both_attached(
    out: &Cubin,
    tb: usize,
    donor: &Cubin,
    td: usize,
    pred: impl Fn(u32, &str) -> bool,
    what: &'static str,
) -> Result<Option<(usize, usize)>, Refusal> {
    match (attached(out, tb, &pred), attached(donor, td, &pred)) {
        (Some(b), Some(d)) => Ok(Some((b, d))),
        (None, None) => Ok(None),
        _ => Err(Refusal::OneSided(what)),
    }
}

/// The code's relocations, their symbols mapped.
fn copy_code_relocations(
    out: &mut Cubin,
    tb: usize,
    donor: &Cubin,
    td: usize,
    map_sym: &impl Fn(u32) -> Result<u32, Refusal>,
) -> Result<(), Refusal> {
    let is_rel = |t: u32, _: &str| t == SHT_REL || t == SHT_RELA;
    let Some((rb, rd)) = both_attached(out, tb, donor, td, is_rel, "relocations for the code")?
    else {
        return Ok(());
    };
    let rela = donor.elf.sections[rd].sh_type == SHT_RELA;
    if (out.elf.sections[rb].sh_type == SHT_RELA) != rela {
        return Err(Refusal::RelocationKinds);
    }
    let mut rel =
        parse_relocs(&donor.elf.sections[rd].data, rela).ok_or(Refusal::BadRelocations)?;
    for r in &mut rel {
        r.sym = map_sym(r.sym)?;
    }
    out.elf.sections[rb].data = encode_relocs(&rel);
    Ok(())
}

/// Symbol `w` of `c` where it is a function in text section `t`.
fn function_in(c: &Cubin, t: usize, w: u32) -> Option<&super::symbols::Symbol> {
    c.symbols
        .get(w as usize)
        .filter(|s| s.st_shndx as usize == t && s.kind() == STT_FUNC)
}

/// Records of the global `.nv.info` that name the kernel or its sub-functions: the donor's
/// values, in the same order and shape.
fn copy_global_records(
    out: &mut Cubin,
    tb: usize,
    donor: &Cubin,
    td: usize,
) -> Result<(), Refusal> {
    let (Some(gb), Some(gd)) = (out.global_info(), donor.global_info()) else {
        return Ok(());
    };
    let donor_recs: Vec<_> = parse_records(&donor.elf.sections[gd].data)?
        .into_iter()
        .filter_map(|r| {
            let w = (r.format == EIFMT_SVAL).then(|| r.word(0)).flatten()?;
            function_in(donor, td, w).map(|s| (s.name.clone(), r))
        })
        .collect();
    let mut recs = parse_records(&out.elf.sections[gb].data)?;
    let mut from = donor_recs.into_iter();
    for r in &mut recs {
        let Some(w) = (r.format == EIFMT_SVAL).then(|| r.word(0)).flatten() else {
            continue;
        };
        let Some(own) = function_in(out, tb, w) else {
            continue;
        };
        let (name, d) = from.next().ok_or(Refusal::FewerGlobalRecords)?;
        if d.attr != r.attr || d.data.len() != r.data.len() || own.name != name {
            return Err(Refusal::GlobalRecordShape);
        }
        r.data[4..].copy_from_slice(&d.data[4..]);
    }
    if from.next().is_some() {
        return Err(Refusal::MoreGlobalRecords);
    }
    out.elf.sections[gb].data = encode_records(&recs)?;
    Ok(())
}

/// The functions in `donor`'s text section `td` call only each other and functions the
/// module merely declares (`vprintf`): a callee with a section of its own was compiled for
/// the donor's budgets, and the module's copy of it for others.
pub(super) fn calls_stay_inside(donor: &Cubin, td: usize) -> Result<(), Refusal> {
    let defined_elsewhere = |name: &str| {
        donor
            .function_symbol(name)
            .is_some_and(|i| donor.symbols[i].st_shndx as usize != td)
    };
    for f in donor.functions().iter().filter(|f| f.text_section == td) {
        if let Some(c) = f.callees.iter().find(|c| defined_elsewhere(c)) {
            return Err(Refusal::CallsOutside {
                function: f.name.clone(),
                callee: c.clone(),
            });
        }
    }
    Ok(())
}

/// A symbol's name for matching: section symbols go by their section's name.
pub(super) fn key_name(c: &Cubin, s: &super::symbols::Symbol) -> String {
    if s.kind() == STT_SECTION {
        c.elf
            .sections
            .get(s.st_shndx as usize)
            .map_or_else(String::new, |x| x.name.clone())
    } else {
        s.name.clone()
    }
}

/// (FDE offset, end, function name).
pub(super) type Frame = (usize, usize, String);

/// The `.debug_frame` section and the FDEs in it whose location is relocated against a
/// function in text section `text`.
pub(super) fn frames(c: &Cubin, text: usize) -> Option<(usize, Vec<Frame>)> {
    let df = c
        .elf
        .sections
        .iter()
        .position(|s| s.name == ".debug_frame")?;
    let data = &c.elf.sections[df].data;
    let rel =
        c.elf.sections.iter().find(|s| {
            (s.sh_type == SHT_REL || s.sh_type == SHT_RELA) && s.sh_info as usize == df
        })?;
    let relocs = parse_relocs(&rel.data, rel.sh_type == SHT_RELA)?;
    let list = fdes(data);
    let mut out = Vec::new();
    for (i, f) in list.iter().enumerate() {
        let end = list.get(i + 1).map_or(data.len(), |n| n.offset);
        let Some(r) = relocs.iter().find(|r| r.r_offset as usize == f.location_at) else {
            continue;
        };
        let s = c.symbols.get(r.sym as usize)?;
        if s.st_shndx as usize == text {
            // The FDE's own length (CIEs between FDEs stay where they are).
            let len = rd_u64(data, f.offset + 4).map_or(end - f.offset, |l| 12 + l as usize);
            out.push((f.offset, f.offset + len, s.name.clone()));
        }
    }
    Some((df, out))
}
