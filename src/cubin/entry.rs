//! Adding a kernel to a whole-module cubin under a new name, its code taken from another
//! ptxas run of the same module: adapt's variants `K__orion_v<k>` from the cubins tuning
//! already built, instead of a second whole-module ptxas run (issue 31).
//!
//! What is added is what ptxas adds for one more `.entry` (tests/assembly/entry_copy.rs compares the
//! result with a whole-module run that has the copy): the code `.text.N`, its `.nv.info.N`,
//! its relocations, its parameter bank `.nv.constant0.N` and shared memory `.nv.shared.N`,
//! each after the last section of its kind (so the segments that cover code and banks grow
//! to cover it); their section symbols and the entry symbol; the kernel's records in the
//! global `.nv.info` and `.nv.callgraph`; its `.debug_frame` CIEs and FDEs. The local
//! functions ptxas puts in the kernel's code (`$K$<helper>`, [`super::entry_locals`]) come
//! along renamed `$<name>$<helper>`, with their global records and frame records.
//!
//! Refused (the caller runs ptxas instead) under the splice's module rules
//! ([`super::splice`]: the donor's module banks must read the same in the module, no
//! sm_100+ "merc" copy), and wherever the donor's kernel has a part this does not know:
//! another function in its code than its own local helpers, a call to a function with a section of its own, a section
//! of a kind the module has none of to place it after. `tune::multi` has the result checked
//! by `audit`, which shares nothing with this module.

use super::Cubin;
use super::callgraph::CallGraph;
use super::elf::{SHT_CUDA_CALLGRAPH, SHT_CUDA_INFO, SHT_REL, SHT_RELA, Section, rd_u64};
use super::entry_locals::{Local, locals};
use super::nvinfo::{EIFMT_SVAL, encode_records, parse_records};
use super::refusal::{Refusal, SpliceError};
use super::splice::{SymbolMap, calls_stay_inside, frames, module_agrees, text_of};
use super::symbols::{STB_LOCAL, STT_SECTION, Symbol, encode_relocs, parse_relocs};

/// One kernel to add: `kernel` of `donor`, as `name`.
#[derive(Debug, Clone, Copy)]
pub struct Copy<'a> {
    pub kernel: &'a str,
    pub name: &'a str,
    pub donor: &'a Cubin,
}

/// `base` with each copy added; the written bytes.
pub fn add_copies(base: &Cubin, copies: &[Copy<'_>]) -> Result<Vec<u8>, SpliceError> {
    let mut out = base.clone();
    for c in copies {
        let fail = |what| SpliceError {
            kernel: c.name.to_string(),
            what,
        };
        refuse_unknown(base, c).map_err(fail)?;
        add_one(&mut out, c).map_err(fail)?;
    }
    let whole = |what| SpliceError {
        kernel: String::new(),
        what,
    };
    super::splice::relayout_packed(&mut out).map_err(whole)?;
    out.write().map_err(|e| whole(e.into()))
}

/// The module rules of the splice, and the cases this module does not handle.
fn refuse_unknown(base: &Cubin, c: &Copy<'_>) -> Result<(), Refusal> {
    if base.is_relocatable() || c.donor.is_relocatable() {
        return Err(Refusal::Relocatable);
    }
    if base.symbols.iter().any(|s| s.name == c.name) {
        return Err(Refusal::NameTaken);
    }
    module_agrees(base, c.donor)?;
    refused_by_donor(c.donor, c.kernel)
}

/// The refusals that depend on the donor alone, whatever cubin the copy would be added to:
/// a relocatable donor, a kernel that is not there, that calls a function with a section of
/// its own, or that shares its code section with anything but its local helpers. `tune::multi` asks this before the cubin the
/// copies go into exists, to know that the copy will be refused (issue 47).
pub fn refused_by_donor(donor: &Cubin, kernel: &str) -> Result<(), Refusal> {
    if donor.is_relocatable() {
        return Err(Refusal::Relocatable);
    }
    let td = text_of(donor, kernel)?;
    calls_stay_inside(donor, td)?;
    locals(donor, td, kernel, kernel).map(|_| ())
}

/// The kinds of section a kernel owns, by name prefix: each new one goes after the module's
/// last section of its kind.
const KINDS: [&str; 6] = [
    ".text.",
    ".nv.info.",
    ".rel.text.",
    ".rela.text.",
    ".nv.constant0.",
    ".nv.shared.",
];

/// Add one copy: its sections, its symbols, then each part filled with the donor's symbol
/// indices mapped to the module's.
fn add_one(out: &mut Cubin, c: &Copy<'_>) -> Result<(), Refusal> {
    let td = text_of(c.donor, c.kernel)?;
    let owned = owned_sections(c.donor, td, c.kernel)?;
    let helpers = locals(c.donor, td, c.kernel, c.name)?;
    let placed = place_sections(out, c, &owned)?;
    add_symbols(out, c, td, &owned, &placed, &helpers)?;
    let map = CopyMap::new(out, c, td, &owned, &placed, &helpers)?;
    fill_sections(out, c.donor, &owned, &placed, &map)?;
    add_global_records(out, c.donor, td, &map)?;
    add_callgraph(out, c.donor, td, &map)?;
    add_frame(out, c.donor, td, &map)
}

/// The donor's sections of the kernel, its code first: every section named `<kind>.<kernel>`
/// must be one of [`KINDS`] and belong to the code.
fn owned_sections(donor: &Cubin, td: usize, kernel: &str) -> Result<Vec<usize>, Refusal> {
    let suffix = format!(".{kernel}");
    let mut owned = vec![td];
    for (i, s) in donor.elf.sections.iter().enumerate() {
        let Some(prefix) = s.name.strip_suffix(&suffix) else {
            continue;
        };
        if i == td {
            continue;
        }
        let known = KINDS.iter().any(|k| k.trim_end_matches('.') == prefix);
        if !known || s.sh_info as usize != td {
            return Err(Refusal::UnknownPart(s.name.clone()));
        }
        owned.push(i);
    }
    Ok(owned)
}

/// The kind prefix of a kernel's section name.
fn kind_of(name: &str) -> Option<&'static str> {
    KINDS.iter().copied().find(|k| name.starts_with(k))
}

/// Insert a copy of each owned section, renamed, after the module's last section of its
/// kind: their indices in `out`, in `owned`'s order.
fn place_sections(out: &mut Cubin, c: &Copy<'_>, owned: &[usize]) -> Result<Vec<usize>, Refusal> {
    let mut placed: Vec<usize> = Vec::new();
    for &d in owned {
        let from = &c.donor.elf.sections[d];
        let kind = kind_of(&from.name).ok_or(Refusal::NoKnownKind)?;
        let last = out
            .elf
            .sections
            .iter()
            .rposition(|s| {
                s.name.starts_with(kind)
                    && s.sh_type == from.sh_type
                    && !s.name.starts_with(".nv.shared.reserved")
            })
            .ok_or(Refusal::NoPlaceFor(kind))?;
        let name = format!("{kind}{}", c.name);
        let sh_name = out.elf.add_section_name(&name)?;
        let section = Section {
            name,
            sh_name,
            sh_link: 0,
            sh_info: 0,
            sh_offset: 0,
            // No bytes in the file yet: the relayout takes the size from the data, and a
            // section that had none cannot look like it lies inside the next one's bytes.
            sh_size: if from.is_nobits() { from.sh_size } else { 0 },
            ..from.clone()
        };
        let at = last + 1;
        out.insert_section(at, section)?;
        for p in &mut placed {
            *p += usize::from(*p >= at);
        }
        placed.push(at);
    }
    Ok(placed)
}

/// The donor's section symbols of the owned sections (the code's followed by its local
/// functions', renamed, as ptxas orders them), and the kernel's own symbol under the new name.
fn add_symbols(
    out: &mut Cubin,
    c: &Copy<'_>,
    td: usize,
    owned: &[usize],
    placed: &[usize],
    helpers: &[Local],
) -> Result<(), Refusal> {
    let interleaved = {
        let st = &out.elf.sections[out.symtab];
        st.sh_info as usize >= out.symbols.len()
    };
    for (&d, &p) in owned.iter().zip(placed) {
        let Some(s) = c
            .donor
            .symbols
            .iter()
            .find(|s| s.kind() == STT_SECTION && s.st_shndx as usize == d)
        else {
            continue;
        };
        let name = out.elf.sections[p].name.clone();
        let st_name = if s.st_name == 0 {
            0
        } else {
            add_symbol_name(out, &name)?
        };
        out.insert_local_symbol(Symbol {
            name,
            st_name,
            st_shndx: p as u16,
            ..s.clone()
        })?;
        if d == td {
            add_local_functions(out, c.donor, placed[0], helpers)?;
        }
    }
    let k = c
        .donor
        .symbols
        .iter()
        .find(|s| s.name == c.kernel && s.st_shndx as usize == td && s.bind() != STB_LOCAL)
        .ok_or(Refusal::KernelNotGlobal)?;
    let st_name = add_symbol_name(out, c.name)?;
    out.symbols.push(Symbol {
        name: c.name.to_string(),
        st_name,
        st_shndx: placed[0] as u16,
        ..k.clone()
    });
    if interleaved {
        let n = out.symbols.len() as u32;
        out.elf.sections[out.symtab].sh_info = n;
    }
    out.store_symbols();
    Ok(())
}

/// The donor's local functions of the kernel's code, renamed, in the added code section.
fn add_local_functions(
    out: &mut Cubin,
    donor: &Cubin,
    text: usize,
    helpers: &[Local],
) -> Result<(), Refusal> {
    for h in helpers {
        let st_name = add_symbol_name(out, &h.name)?;
        out.insert_local_symbol(Symbol {
            name: h.name.clone(),
            st_name,
            st_shndx: text as u16,
            ..donor.symbols[h.index].clone()
        })?;
    }
    Ok(())
}

/// Add `name` to the symbol name table, returning its offset.
fn add_symbol_name(out: &mut Cubin, name: &str) -> Result<u32, Refusal> {
    let strtab = out.elf.sections[out.symtab].sh_link as usize;
    let sec = out
        .elf
        .sections
        .get_mut(strtab)
        .filter(|_| strtab != 0)
        .ok_or(Refusal::NoStrtab)?;
    let off = u32::try_from(sec.data.len()).map_err(|_| Refusal::StrtabTooLarge)?;
    sec.data.extend_from_slice(name.as_bytes());
    sec.data.push(0);
    Ok(off)
}

/// Donor symbol index → module symbol index: the kernel, its local functions and its
/// sections' symbols to the added ones, everything else by name ([`SymbolMap`]).
struct CopyMap<'a> {
    by_name: SymbolMap<'a>,
    own: Vec<(u32, u32)>,
}

impl<'a> CopyMap<'a> {
    fn new(
        out: &Cubin,
        c: &Copy<'a>,
        td: usize,
        owned: &[usize],
        placed: &[usize],
        helpers: &[Local],
    ) -> Result<CopyMap<'a>, Refusal> {
        let find = |cubin: &Cubin, pred: &dyn Fn(&Symbol) -> bool| {
            cubin.symbols.iter().position(pred).map(|i| i as u32)
        };
        let mut own = Vec::new();
        for (&d, &p) in owned.iter().zip(placed) {
            let section_symbol = |shndx: usize| {
                move |s: &Symbol| s.kind() == STT_SECTION && s.st_shndx as usize == shndx
            };
            if let Some(from) = find(c.donor, &section_symbol(d)) {
                let to = find(out, &section_symbol(p)).ok_or(Refusal::SectionSymbolMissing)?;
                own.push((from, to));
            }
        }
        for h in helpers {
            let to = find(out, &|s| s.name == h.name).ok_or(Refusal::EntrySymbolMissing)?;
            own.push((h.index as u32, to));
        }
        // The kernel last: [`CopyMap::entry`].
        let from = find(c.donor, &|s| {
            s.name == c.kernel && s.st_shndx as usize == td
        })
        .ok_or(Refusal::NoKernelSymbol)?;
        let to = find(out, &|s| s.name == c.name).ok_or(Refusal::EntrySymbolMissing)?;
        own.push((from, to));
        Ok(CopyMap {
            by_name: SymbolMap::new(out, c.donor),
            own,
        })
    }

    fn get(&self, i: u32) -> Result<u32, Refusal> {
        match self.own.iter().find(|(f, _)| *f == i) {
            Some(&(_, t)) => Ok(t),
            None => self.by_name.get(i),
        }
    }

    /// The added entry symbol.
    fn entry(&self) -> u32 {
        self.own.last().map_or(0, |&(_, t)| t)
    }
}

/// Each placed section's links and contents: the code's `sh_info` (its symbol and registers),
/// the records and relocations with their symbols mapped, the rest naming the code.
fn fill_sections(
    out: &mut Cubin,
    donor: &Cubin,
    owned: &[usize],
    placed: &[usize],
    map: &CopyMap<'_>,
) -> Result<(), Refusal> {
    let text = placed[0];
    let symtab = out.symtab as u32;
    for (&d, &p) in owned.iter().zip(placed) {
        let from = &donor.elf.sections[d];
        let data = if p == text {
            from.data.clone()
        } else if from.sh_type == SHT_CUDA_INFO {
            mapped_records(&from.data, map)?
        } else if from.sh_type == SHT_REL || from.sh_type == SHT_RELA {
            let mut rel = parse_relocs(&from.data, from.sh_type == SHT_RELA)
                .ok_or(Refusal::BadRelocations)?;
            for r in &mut rel {
                r.sym = map.get(r.sym)?;
            }
            encode_relocs(&rel)
        } else {
            from.data.clone()
        };
        let s = &mut out.elf.sections[p];
        s.data = data;
        s.sh_link = if from.sh_link != 0 { symtab } else { 0 };
        s.sh_info = if p == text {
            (from.sh_info & 0xff00_0000) | map.entry()
        } else {
            text as u32
        };
    }
    Ok(())
}

/// A kernel's `.nv.info` records with their symbol words mapped.
fn mapped_records(data: &[u8], map: &CopyMap<'_>) -> Result<Vec<u8>, Refusal> {
    let mut recs = parse_records(data)?;
    for r in recs.iter_mut().filter(|r| r.format == EIFMT_SVAL) {
        let words = match r.attr {
            super::Attr::Externs => r.data.len() / 4,
            a if super::edit::sym_first_word(a) => 1,
            _ => 0,
        };
        for w in 0..words {
            let v = r.word(w).ok_or(Refusal::ShortRecord)?;
            r.set_word(w, map.get(v)?).ok_or(Refusal::ShortRecord)?;
        }
    }
    Ok(encode_records(&recs)?)
}

/// The donor's global `.nv.info` records of the kernel, for the added entry.
fn add_global_records(
    out: &mut Cubin,
    donor: &Cubin,
    td: usize,
    map: &CopyMap<'_>,
) -> Result<(), Refusal> {
    let (Some(gb), Some(gd)) = (out.global_info(), donor.global_info()) else {
        return Err(Refusal::NoGlobalInfo);
    };
    let kernel_sym = |w: u32| {
        donor
            .symbols
            .get(w as usize)
            .is_some_and(|s| s.st_shndx as usize == td && s.kind() != STT_SECTION)
    };
    let mut recs = parse_records(&out.elf.sections[gb].data)?;
    for mut r in parse_records(&donor.elf.sections[gd].data)? {
        // Only attributes whose first word is a symbol (a version number may equal an index).
        let names_symbol = r.format == EIFMT_SVAL && super::edit::sym_first_word(r.attr);
        let Some(w) = names_symbol.then(|| r.word(0)).flatten() else {
            continue;
        };
        if kernel_sym(w) {
            r.set_word(0, map.get(w)?).ok_or(Refusal::ShortRecord)?;
            recs.push(r);
        }
    }
    out.elf.sections[gb].data = encode_records(&recs)?;
    Ok(())
}

/// The donor's `.nv.callgraph` rows of the kernel's functions (the kernel and its local
/// helpers), for the added entry, each in its list ([`super::callgraph`]): symbols mapped,
/// prototypes kept.
fn add_callgraph(
    out: &mut Cubin,
    donor: &Cubin,
    td: usize,
    map: &CopyMap<'_>,
) -> Result<(), Refusal> {
    let graph = |c: &Cubin| {
        c.elf
            .sections
            .iter()
            .position(|s| s.sh_type == SHT_CUDA_CALLGRAPH)
    };
    let (Some(gb), Some(gd)) = (graph(out), graph(donor)) else {
        return Ok(());
    };
    let ours = |v: i32| {
        usize::try_from(v).is_ok_and(|i| {
            i > 0
                && donor
                    .symbols
                    .get(i)
                    .is_some_and(|s| s.st_shndx as usize == td && s.kind() != STT_SECTION)
        })
    };
    let read = |c: &Cubin, i: usize| {
        CallGraph::parse(&c.elf.sections[i].data).map_err(|error| Refusal::CallGraph {
            section: c.elf.sections[i].name.clone(),
            error,
        })
    };
    let (mut into, from) = (read(out, gb)?, read(donor, gd)?);
    let sym = |v: i32| -> Result<i32, Refusal> {
        match u32::try_from(v) {
            Ok(u) if u > 0 => Ok(i32::try_from(map.get(u)?)?),
            _ => Ok(v),
        }
    };
    for (a, b) in from.calls.iter().filter(|p| ours(p.0)) {
        into.calls.push((sym(*a)?, sym(*b)?));
    }
    for (a, b) in from.references.iter().filter(|p| ours(p.0)) {
        into.references.push((sym(*a)?, sym(*b)?));
    }
    for (a, proto) in from.targets.iter().filter(|p| ours(p.0)) {
        into.targets.push((sym(*a)?, *proto));
    }
    for (a, proto) in from.indirect.iter().filter(|p| ours(p.0)) {
        into.indirect.push((sym(*a)?, *proto));
    }
    out.elf.sections[gb].data = into.encode();
    Ok(())
}

/// The donor's frame records of the kernel's code (a CIE and FDE for the kernel and for each
/// local function, one run in `.debug_frame`) appended to `.debug_frame`, each FDE pointing
/// to its CIE and the run's relocations moved with it, their symbols mapped.
fn add_frame(out: &mut Cubin, donor: &Cubin, td: usize, map: &CopyMap<'_>) -> Result<(), Refusal> {
    let Some((dd, fd)) = frames(donor, td) else {
        return Ok(());
    };
    if fd.is_empty() {
        return Ok(());
    }
    let src = &donor.elf.sections[dd].data;
    let Run {
        start,
        end,
        pointers,
    } = frame_run(src, &fd)?;
    let rel_of = |c: &Cubin, df: usize| {
        c.elf.sections.iter().position(|s| {
            (s.sh_type == SHT_REL || s.sh_type == SHT_RELA) && s.sh_info as usize == df
        })
    };
    let d_rel = rel_of(donor, dd).ok_or(Refusal::DonorFrameRelocations)?;
    let d_rela = donor.elf.sections[d_rel].sh_type == SHT_RELA;
    let run_relocs: Vec<_> = parse_relocs(&donor.elf.sections[d_rel].data, d_rela)
        .ok_or(Refusal::BadRelocations)?
        .into_iter()
        .filter(|r| (start..end).contains(&(r.r_offset as usize)))
        .collect();
    for &(fde, _) in &pointers {
        if !run_relocs.iter().any(|r| r.r_offset as usize == fde + 20) {
            return Err(Refusal::FdeLocation);
        }
    }
    let df = out
        .elf
        .section_index_by_name(".debug_frame")
        .ok_or(Refusal::NoDebugFrame)?;
    let b_rel = rel_of(out, df).ok_or(Refusal::FrameRelocations)?;
    if (out.elf.sections[b_rel].sh_type == SHT_RELA) != d_rela {
        return Err(Refusal::RelocationKinds);
    }
    let at = out.elf.sections[df].data.len();
    let mut bytes = src[start..end].to_vec();
    for &(fde, cie) in &pointers {
        let pointer = fde - start + 12;
        bytes[pointer..pointer + 8].copy_from_slice(&((at + cie - start) as u64).to_le_bytes());
    }
    out.elf.sections[df].data.extend_from_slice(&bytes);
    let mut rel =
        parse_relocs(&out.elf.sections[b_rel].data, d_rela).ok_or(Refusal::BadRelocations)?;
    for r in run_relocs {
        let sym = map.get(r.sym).map_err(|_| Refusal::FrameRelocation)?;
        rel.push(super::symbols::Reloc {
            r_offset: (at + r.r_offset as usize - start) as u64,
            sym,
            ..r
        });
    }
    out.elf.sections[b_rel].data = encode_relocs(&rel);
    Ok(())
}

/// The `.debug_frame` bytes of one kernel's frame records.
struct Run {
    start: usize,
    end: usize,
    /// Each FDE's offset with its CIE's.
    pointers: Vec<(usize, usize)>,
}

/// The run of `.debug_frame` bytes that holds the kernel's FDEs, each right after its own
/// CIE and each pair right after the last (as ptxas writes them).
fn frame_run(src: &[u8], fd: &[super::splice::Frame]) -> Result<Run, Refusal> {
    let mut pointers = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    for (fde, end, _) in fd {
        let (fde, end) = (*fde, *end);
        let cie = rd_u64(src, fde + 12).ok_or(Refusal::ShortDebugFrame)? as usize;
        let cie_len = rd_u64(src, cie + 4).ok_or(Refusal::ShortDebugFrame)? as usize;
        if cie.checked_add(12).and_then(|x| x.checked_add(cie_len)) != Some(fde)
            || rd_u64(src, cie + 12) != Some(u64::MAX)
        {
            return Err(Refusal::CieNotBeforeFde);
        }
        if end > src.len() || end < fde + 28 {
            return Err(Refusal::FdeUnknownShape);
        }
        run = match run {
            None => Some((cie, end)),
            Some((start, last)) if last == cie => Some((start, end)),
            Some(_) => return Err(Refusal::FrameRun),
        };
        pointers.push((fde, cie));
    }
    let (start, end) = run.ok_or(Refusal::FdeLocation)?;
    Ok(Run {
        start,
        end,
        pointers,
    })
}
