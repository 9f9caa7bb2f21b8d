//! The cubin layer (`nvcc_orion::cubin`) on real toolchain output: every cubin of the fixture
//! matrix (bare cubins and every cubin inside fatbins, objects, executables and the archive)
//! round-trips byte-identically, its queries agree with `cuobjdump -res-usage` / `-elf` and
//! nvdisasm, and edited cubins are accepted by the toolkit with the new values.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use common::fixtures::{self, Fixtures};
use nvcc_orion::cubin::{Cubin, OffsetMap, debug_frame};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn fx() -> Option<&'static Fixtures> {
    fixtures::fixtures()
}

/// A cubin of the matrix: (label, path, bytes).
type Extracted = (String, PathBuf, Vec<u8>);

/// Every distinct cubin of the matrix, deduplicated by contents.
fn all_cubins() -> &'static Vec<Extracted> {
    static ALL: OnceLock<Vec<Extracted>> = OnceLock::new();
    ALL.get_or_init(|| {
        let fx = fx().expect("fixtures");
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("cubin-real-{}", std::process::id()));
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for a in &fx.artifacts {
            let dir = root.join(a.name);
            let paths = fixtures::extract_elfs(&a.path, &dir)
                .unwrap_or_else(|e| panic!("extract {}: {e}", a.name));
            for p in paths {
                let bytes = std::fs::read(&p).unwrap();
                if seen.insert(bytes.clone()) {
                    let label = format!("{}:{}", a.name, p.file_name().unwrap().to_string_lossy());
                    out.push((label, p, bytes));
                }
            }
        }
        out
    })
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("cubin-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Identity
// ---------------------------------------------------------------------------------------------

#[test]
fn every_cubin_round_trips_byte_identically() {
    if fx().is_none() {
        return;
    }
    let all = all_cubins();
    let mut kernels = BTreeSet::new();
    let mut arches = BTreeSet::new();
    let mut rel = 0;
    for (label, _, bytes) in all {
        let c = Cubin::parse(bytes).unwrap_or_else(|e| panic!("{label}: {e}"));
        let out = c.write().unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(out == *bytes, "{label}: write is not byte-identical");
        for k in c.kernels() {
            kernels.insert(k.name);
        }
        arches.insert(c.arch());
        if c.is_relocatable() {
            rel += 1;
        }
    }
    eprintln!(
        "{} distinct cubins, {} distinct kernels, arches {arches:?}, {rel} relocatable",
        all.len(),
        kernels.len()
    );
    assert!(all.len() >= 30, "only {} cubins", all.len());
    assert!(kernels.len() >= 40, "only {} kernels", kernels.len());
    assert_eq!(
        arches,
        BTreeSet::from([75, 80, 86, 89, 90, 100, 120]),
        "arch coverage"
    );
    assert!(rel > 0, "no relocatable cubin");
}

/// Forcing a relayout of an unedited cubin must not move anything: the layout algorithm
/// reproduces ptxas's offsets and program headers.
#[test]
fn relayout_of_unedited_cubin_is_identity() {
    if fx().is_none() {
        return;
    }
    for (label, _, bytes) in all_cubins() {
        let mut c = Cubin::parse(bytes).unwrap();
        c.force_relayout().unwrap();
        let out = c.write().unwrap();
        if out != *bytes {
            let a = Cubin::parse(&out).unwrap();
            let b = Cubin::parse(bytes).unwrap();
            assert_eq!(a.elf().header, b.elf().header, "{label}: header");
            assert_eq!(a.elf().phdrs, b.elf().phdrs, "{label}: phdrs");
            for (x, y) in a.elf().sections.iter().zip(&b.elf().sections) {
                assert_eq!(x, y, "{label}: section");
            }
            panic!("{label}: relayout changed bytes outside the headers");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Queries against the toolkit
// ---------------------------------------------------------------------------------------------

#[test]
fn queries_agree_with_res_usage_and_symbols() {
    if fx().is_none() {
        return;
    }
    let mut checked = 0;
    for (label, path, bytes) in all_cubins() {
        let c = Cubin::parse(bytes).unwrap();
        let funcs: BTreeMap<String, _> = c
            .functions()
            .into_iter()
            .map(|f| (f.name.clone(), f))
            .collect();
        let ru = fixtures::res_usage(path).unwrap_or_else(|e| panic!("{label}: {e}"));
        for r in &ru {
            let f = funcs
                .get(&r.function)
                .unwrap_or_else(|| panic!("{label}: res-usage lists {} we do not", r.function));
            // Kernels: EIATTR_REGCOUNT. Device functions: cuobjdump prints the `.text`
            // sh_info high byte (0 on sm_90+, even where EIATTR_REGCOUNT has the count).
            let ours = if f.is_kernel {
                f.registers
            } else {
                f.section_registers
            };
            assert_eq!(
                ours.unwrap_or(0),
                r.reg,
                "{label}: {} registers",
                r.function
            );

            assert_eq!(
                f.static_shared, r.shared as u64,
                "{label}: {} shared",
                r.function
            );
            assert_eq!(f.min_stack, r.stack, "{label}: {} stack", r.function);
            checked += 1;
        }
        let ours: BTreeSet<String> = c.kernels().into_iter().map(|k| k.name).collect();
        let theirs = fixtures::kernel_names(path).unwrap();
        assert_eq!(ours, theirs, "{label}: kernel set");
        // Every function the symbol table calls FUNC with a definition is listed.
        let syms = fixtures::elf_symbols(path).unwrap();
        let defined_funcs = c.functions().len();
        assert!(
            syms.iter().filter(|s| s.ty == "FUNC").count() >= defined_funcs,
            "{label}: more functions than FUNC symbols"
        );
    }
    assert!(checked >= 100, "only {checked} res-usage rows checked");
}

fn spill_annotations_in_nvdisasm(path: &Path) -> BTreeMap<String, u32> {
    let text = common::fixtures::run_tool("nvdisasm", &["-c"], path).unwrap();
    let mut out = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix(".text.")
            && let Some(name) = rest.strip_suffix(':')
        {
            current = name.to_string();
            continue;
        }
        if t.ends_with(':') && !t.starts_with('/') && !t.starts_with(".L") && !t.contains(' ') {
            // A label of a sub-function (`$callee:`) or of the kernel itself.
            let name = t.trim_end_matches(':').trim_matches('"');
            if !name.starts_with('.') {
                current = name.to_string();
            }
        }
        if t.contains("SpillRefill") {
            *out.entry(current.clone()).or_insert(0) += 1;
        }
    }
    out
}

#[test]
fn spill_counts_agree_with_nvdisasm_and_ptxas() {
    let Some(fx) = fx() else { return };
    let art = fx.get("spill_sm89_r24.cubin");
    let bytes = std::fs::read(&art.path).unwrap();
    let c = Cubin::parse(&bytes).unwrap();
    let total_ours: u32 = c.functions().iter().map(|f| f.spill_instructions).sum();
    let by_fn = spill_annotations_in_nvdisasm(&art.path);
    let total_theirs: u32 = by_fn.values().sum();
    assert!(total_theirs > 0, "the spill fixture has no SpillRefill");
    assert_eq!(total_ours, total_theirs, "SpillRefill total ({by_fn:?})");
    for f in c.functions() {
        if let Some(&n) = by_fn.get(&f.name) {
            assert_eq!(f.spill_instructions, n, "{}", f.name);
        }
    }
    // ptxas -v: spill stores > 0 exactly for the functions with annotations.
    let src = fx.src_dir().join("spill.cu");
    let info = fixtures::ptxas_v(&[src], &["-cubin", "-arch=sm_89", "-maxrregcount=24"]).unwrap();
    let mut compared = 0;
    for p in &info {
        if let Some(f) = c.function_info(&p.function) {
            assert_eq!(
                p.spill_stores > 0,
                f.spill_instructions > 0,
                "{}: ptxas says {} spill stores, we count {} spill instructions",
                p.function,
                p.spill_stores,
                f.spill_instructions
            );
            compared += 1;
        }
    }
    assert!(compared >= 2, "only {compared} functions compared");
}

// ---------------------------------------------------------------------------------------------
// Edits
// ---------------------------------------------------------------------------------------------

/// One whole-program cubin per architecture: one where some kernel has no `.nv.shared.<k>`
/// section (so that it must be created), and among those the one with the most kernels.
fn one_per_arch() -> Vec<(u32, &'static Extracted)> {
    let mut best: BTreeMap<u32, ((bool, usize), &'static Extracted)> = BTreeMap::new();
    for entry in all_cubins() {
        let c = Cubin::parse(&entry.2).unwrap();
        if c.is_relocatable() {
            continue;
        }
        let kernels = c.kernels();
        let lacks = kernels.iter().any(|k| {
            c.elf()
                .section_index_by_name(&format!(".nv.shared.{}", k.name))
                .is_none()
        });
        let n = (lacks, kernels.len());
        let e = best.entry(c.arch()).or_insert((n, entry));
        if n > e.0 {
            *e = (n, entry);
        }
    }
    best.into_iter().map(|(a, (_, e))| (a, e)).collect()
}

/// nvdisasm lists the edited cubin whole without an error, and cuobjdump reads its ELF. One
/// nvdisasm run, not also a `-c` one (issue 50: each costs about 0.4 s of CPU): the whole
/// listing is the code sections `-c` lists (line for line, on the 20 cubins of
/// `tests/kernels/sass`) plus the other sections, so it disassembles all that `-c` would.
fn toolkit_accepts(path: &Path, label: &str) {
    fixtures::nvdisasm_ok(path).unwrap_or_else(|e| panic!("{label}: {e}"));
    fixtures::elf_dump(path)
        .unwrap_or_else(|e| panic!("{label}: cuobjdump -elf rejects the edited cubin: {e}"));
}

#[test]
fn register_and_shared_edits_show_in_res_usage() {
    if fx().is_none() {
        return;
    }
    let dir = scratch("edit");
    let picked = one_per_arch();
    assert_eq!(
        picked.iter().map(|p| p.0).collect::<BTreeSet<_>>(),
        BTreeSet::from([75, 80, 86, 89, 90, 100, 120])
    );
    let mut created = 0;
    let mut renumbered = 0;
    let mut refused = 0;
    for (arch, (label, _, bytes)) in picked {
        let mut c = Cubin::parse(bytes).unwrap();
        let kernels = c.kernels();
        let grow = kernels
            .iter()
            .max_by_key(|k| k.static_shared)
            .unwrap()
            .clone();
        let has_section = |name: &str| {
            c.elf()
                .section_index_by_name(&format!(".nv.shared.{name}"))
                .is_some()
        };
        let fresh = kernels
            .iter()
            .filter(|k| k.name != grow.name)
            .min_by_key(|k| (has_section(&k.name), k.static_shared))
            .unwrap()
            .clone();
        // A section is added only where ptxas's layout of it is known (`shared_splice`):
        // elsewhere (sm_100+'s copy of the code, which keeps section indices of its own; a
        // sm_90 `-G` cubin with no NOBITS section before its constant banks) the edit is
        // refused and the cubin left as it was. Before sm_90 it always is known.
        let refusal = [&grow, &fresh].into_iter().find_map(|k| {
            let mut e = c.clone();
            let err = e.set_shared_size(&k.name, k.static_shared + 2048).err()?;
            assert!(e == c, "{label}: a refused edit changed the cubin");
            Some(err.to_string())
        });
        if let Some(err) = refusal {
            assert!(
                arch >= 90 && err.contains("no shared memory section can be added as ptxas would"),
                "{label}: {err}"
            );
            refused += 1;
            continue;
        }
        let regs = (grow.registers.unwrap() + 8).min(255);
        c.set_register_count(&grow.name, regs).unwrap();
        let grow_had_section = c
            .elf()
            .section_index_by_name(&format!(".nv.shared.{}", grow.name))
            .is_some();
        let shared = grow.static_shared + 4096;
        c.set_shared_size(&grow.name, shared).unwrap();
        let had_section = c
            .elf()
            .section_index_by_name(&format!(".nv.shared.{}", fresh.name))
            .is_some();
        c.set_shared_size(&fresh.name, 2048).unwrap();
        if !had_section {
            created += 1;
        }
        let out = c.write().unwrap();
        // Our own view of the result.
        let back = Cubin::parse(&out).unwrap();
        assert_eq!(
            back.write().unwrap(),
            out,
            "{label}: edited file round-trips"
        );
        let g = back.function_info(&grow.name).unwrap();
        assert_eq!(g.registers, Some(regs));
        assert_eq!(g.static_shared, shared);
        assert_eq!(back.function_info(&fresh.name).unwrap().static_shared, 2048);
        let symtab = back
            .elf()
            .sections
            .iter()
            .find(|s| s.name == ".symtab")
            .unwrap();
        // Locals first, `sh_info` = first global, where the toolkit's file followed that
        // rule (sm_75-89); sm_90+ ET_EXEC cubins interleave them and set `sh_info` to the
        // symbol count, which must stay so.
        let orig = Cubin::parse(bytes).unwrap();
        let orig_symtab = orig
            .elf()
            .sections
            .iter()
            .find(|s| s.name == ".symtab")
            .unwrap();
        let rule = |cb: &Cubin, first: usize| {
            cb.symbols()
                .iter()
                .enumerate()
                .all(|(i, s)| (s.bind() == 0) == (i < first))
        };
        let first_global = symtab.sh_info as usize;
        if rule(&orig, orig_symtab.sh_info as usize) {
            assert!(rule(&back, first_global), "{label}: locals first");
        } else {
            assert_eq!(
                first_global,
                back.symbols().len(),
                "{label}: symtab sh_info"
            );
        }
        // Every other function is unchanged.
        for f in Cubin::parse(bytes).unwrap().functions() {
            if f.name != grow.name && f.name != fresh.name {
                let mut b = back.function_info(&f.name).unwrap();
                b.symbol = f.symbol;
                b.text_section = f.text_section;
                assert_eq!(b, f, "{label}: {} changed", f.name);
            }
        }
        // The section symbol of a created section: inserted before the globals (renumbering
        // every reference) where the file keeps locals first, else appended.
        if !had_section {
            let idx = back
                .symbols()
                .iter()
                .position(|s| s.name == format!(".nv.shared.{}", fresh.name))
                .unwrap_or_else(|| panic!("{label}: no section symbol"));
            assert_eq!(
                back.symbols().len(),
                orig.symbols().len() + 1 + usize::from(!grow_had_section)
            );
            if idx + 1 < back.symbols().len() {
                renumbered += 1;
            }
        }
        // The writable LOAD segment grew with the shared sections.
        let rw = |cb: &Cubin| {
            cb.elf()
                .phdrs
                .iter()
                .filter(|p| p.p_type == 1 && p.p_flags & 2 != 0)
                .map(|p| p.p_memsz)
                .sum::<u64>()
        };
        assert!(
            rw(&back) >= rw(&orig) + 4096,
            "{label}: RW segment {:#x} -> {:#x}",
            rw(&orig),
            rw(&back)
        );
        let path = dir.path().join(format!("edited_sm{arch}.cubin"));
        std::fs::write(&path, &out).unwrap();
        toolkit_accepts(&path, label);
        let ru = fixtures::res_usage(&path).unwrap();
        // cuobjdump sees every other function exactly as before (symbol renumbering kept
        // every reference right).
        let orig_path = dir.path().join(format!("orig_sm{arch}.cubin"));
        std::fs::write(&orig_path, bytes).unwrap();
        let ru_orig = fixtures::res_usage(&orig_path).unwrap();
        assert_eq!(ru.len(), ru_orig.len());
        for (a, b) in ru.iter().zip(&ru_orig) {
            if a.function != grow.name && a.function != fresh.name {
                assert_eq!(a, b, "{label}: res-usage of {} changed", a.function);
            }
        }
        let r = ru.iter().find(|r| r.function == grow.name).unwrap();
        assert_eq!(r.reg, regs, "{label}: REG after the edit");
        assert_eq!(r.shared as u64, shared, "{label}: SHARED after the edit");
        let r = ru.iter().find(|r| r.function == fresh.name).unwrap();
        assert_eq!(
            r.shared, 2048,
            "{label}: SHARED of {} after creation",
            fresh.name
        );
        let dump = fixtures::elf_dump(&path).unwrap();
        assert!(
            dump.contains(&format!(".nv.shared.{}", fresh.name)),
            "{label}"
        );
        if arch < 90 {
            // sh_info high byte too (nvdisasm's SHI_REGISTERS).
            let text = back.elf().sections[g.text_section].sh_info >> 24;
            assert_eq!(text, regs, "{label}: sh_info[31:24]");
        }
    }
    assert!(created > 0, "no kernel without a shared section was found");
    assert!(
        renumbered > 0,
        "no creation went through symbol renumbering"
    );
    assert!(refused > 0, "no creation was refused");
    eprintln!(
        "{created} shared sections created, {renumbered} with renumbering, {refused} refused"
    );
}

/// The value lists of every `EIATTR_EXIT_INSTR_OFFSETS` in `cuobjdump -elf`, in order.
fn exit_lists(dump: &str) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    let mut pending = false;
    for line in dump.lines() {
        let t = line.trim();
        if t == "Attribute:\tEIATTR_EXIT_INSTR_OFFSETS" || t.ends_with("EIATTR_EXIT_INSTR_OFFSETS")
        {
            pending = true;
        } else if pending && let Some(v) = t.strip_prefix("Value:") {
            out.push(
                v.split_whitespace()
                    .map(|x| u32::from_str_radix(x.trim_start_matches("0x"), 16).unwrap())
                    .collect(),
            );
            pending = false;
        }
    }
    out
}

/// Insert 8 NOPs (128 bytes) after the first instruction of every kernel of every
/// whole-program cubin and check the metadata moved with the code: EXIT offsets point at EXIT
/// instructions, sub-function symbols and annotations moved by 128, jump tables follow.
#[test]
fn text_replacement_moves_every_offset() {
    if fx().is_none() {
        return;
    }
    let dir = scratch("text");
    let mut kernels_done = 0;
    let mut with_subfunctions = 0;
    let mut with_branch_targets = 0;
    let mut fde_moved = 0;
    let mut toolkit_checked = BTreeSet::new();
    for (label, _, bytes) in all_cubins() {
        let orig = Cubin::parse(bytes).unwrap();
        if orig.is_relocatable() {
            continue;
        }
        for k in orig.kernels() {
            let mut c = orig.clone();
            let text = &orig.elf().sections[k.text_section].data;
            let insert_at = 16u64;
            let mut code = text[..16].to_vec();
            for _ in 0..8 {
                code.extend_from_slice(&nvcc_orion::cubin::edit::NOP);
            }
            code.extend_from_slice(&text[16..]);
            let map = OffsetMap::shift_from(insert_at, 128);
            match c.replace_text(&k.name, code, &map) {
                Ok(()) => {}
                Err(e) => panic!("{label}: {}: {e}", k.name),
            }
            let out = c.write().unwrap();
            let back = Cubin::parse(&out).unwrap();
            let nk = back.function_info(&k.name).unwrap();
            let new_text = &back.elf().sections[nk.text_section].data;
            assert_eq!(new_text.len(), text.len() + 128);
            assert_eq!(nk.text_size, new_text.len() as u64);
            // EXIT offsets: each old one moved by 128 and points at an EXIT (0x94d).
            let recs = |cb: &Cubin, t: usize| {
                let idx = cb
                    .elf()
                    .sections
                    .iter()
                    .position(|s| s.name.starts_with(".nv.info.") && s.sh_info as usize == t)
                    .unwrap();
                cb.records(idx)
            };
            let words = |rs: &[nvcc_orion::cubin::Record], code: u8| -> Vec<u32> {
                rs.iter()
                    .filter(|r| r.attr.code() == code)
                    .flat_map(|r| r.words().collect::<Vec<_>>())
                    .collect()
            };
            let old_recs = recs(&orig, k.text_section);
            let new_recs = recs(&back, nk.text_section);
            let old_exits = words(&old_recs, 0x1c);
            let new_exits = words(&new_recs, 0x1c);
            assert!(
                !old_exits.is_empty(),
                "{label}: {} has no EXIT offsets",
                k.name
            );
            assert_eq!(
                new_exits,
                old_exits
                    .iter()
                    .map(|&o| if o >= 16 { o + 128 } else { o })
                    .collect::<Vec<_>>()
            );
            for &o in &new_exits {
                let lo = u16::from_le_bytes([new_text[o as usize], new_text[o as usize + 1]]);
                assert_eq!(lo & 0xfff, 0x94d, "{label}: {}: no EXIT at {o:#x}", k.name);
            }
            // Annotations: pairs {kind, offset}, offsets moved.
            let old_ann = words(&old_recs, 0x55);
            let new_ann = words(&new_recs, 0x55);
            for (i, (a, b)) in old_ann.iter().zip(&new_ann).enumerate() {
                if i % 2 == 1 {
                    assert_eq!(*b, if *a >= 16 { a + 128 } else { *a });
                } else {
                    assert_eq!(a, b);
                }
            }
            // Branch targets and the jump table.
            let old_ibt = words(&old_recs, 0x34);
            if !old_ibt.is_empty() {
                with_branch_targets += 1;
                let new_ibt = words(&new_recs, 0x34);
                assert_ne!(old_ibt, new_ibt);
                let c2 = |cb: &Cubin, t: usize| {
                    cb.elf()
                        .sections
                        .iter()
                        .find(|s| s.name.starts_with(".nv.constant2.") && s.sh_info as usize == t)
                        .map(|s| s.data.clone())
                };
                if let (Some(a), Some(b)) = (c2(&orig, k.text_section), c2(&back, nk.text_section))
                {
                    assert_ne!(a, b, "{label}: jump table unchanged");
                }
            }
            // Sub-functions moved by 128.
            for f in orig.functions() {
                if f.text_section == k.text_section && f.name != k.name {
                    with_subfunctions += 1;
                    let nf = back.function_info(&f.name).unwrap();
                    assert_eq!(nf.text_offset, f.text_offset + 128, "{label}: {}", f.name);
                    assert_eq!(nf.text_size, f.text_size, "{label}: {}", f.name);
                    assert_eq!(
                        &new_text
                            [nf.text_offset as usize..(nf.text_offset + nf.text_size) as usize],
                        &text[f.text_offset as usize..(f.text_offset + f.text_size) as usize]
                    );
                }
            }
            // .debug_frame: the kernel's FDE grew by the insertion, no other range changed.
            let ranges = |cb: &Cubin| -> Vec<u64> {
                let Some(df) = cb.elf().sections.iter().find(|s| s.name == ".debug_frame") else {
                    return Vec::new();
                };
                debug_frame::fdes(&df.data)
                    .iter()
                    .map(|f| nvcc_orion::cubin::elf::rd_u64(&df.data, f.range_at).unwrap())
                    .collect()
            };
            let (ra, rb) = (ranges(&orig), ranges(&back));
            assert_eq!(ra.len(), rb.len());
            let grown: Vec<(u64, u64)> = ra
                .iter()
                .zip(&rb)
                .filter(|(a, b)| a != b)
                .map(|(a, b)| (*a, *b))
                .collect();
            assert!(
                grown.len() <= 1 && grown.iter().all(|(a, b)| b == &(a + 128)),
                "{label}: {}: FDE ranges {grown:?}",
                k.name
            );
            if grown.len() == 1 {
                fde_moved += 1;
            }
            // Everything else about the kernel is unchanged.
            let mut same = nk.clone();
            same.text_size = k.text_size;
            same.symbol = k.symbol;
            same.text_section = k.text_section;
            assert_eq!(same, k, "{label}");
            kernels_done += 1;
            if toolkit_checked.insert(orig.arch()) || !old_ibt.is_empty() {
                let path = dir.path().join(format!("text_{}.cubin", kernels_done));
                std::fs::write(&path, &out).unwrap();
                toolkit_accepts(&path, label);
                // cuobjdump reads the moved EXIT offsets back: exactly this kernel's list
                // changed, by the shift.
                let orig_path = dir.path().join(format!("orig_{kernels_done}.cubin"));
                std::fs::write(&orig_path, bytes).unwrap();
                let before = exit_lists(&fixtures::elf_dump(&orig_path).unwrap());
                let after = exit_lists(&fixtures::elf_dump(&path).unwrap());
                assert_eq!(before.len(), after.len());
                let changed: Vec<_> = before.iter().zip(&after).filter(|(a, b)| a != b).collect();
                let shifted: Vec<u32> = old_exits
                    .iter()
                    .map(|&o| if o >= 16 { o + 128 } else { o })
                    .collect();
                assert_eq!(changed.len(), 1, "{label}: {}", k.name);
                assert_eq!(changed[0].0, &old_exits, "{label}: {}", k.name);
                assert_eq!(changed[0].1, &shifted, "{label}: {}", k.name);
            }
        }
    }
    eprintln!(
        "{kernels_done} kernels moved, {with_subfunctions} sub-functions, {with_branch_targets} with indirect branch targets, {fde_moved} FDE ranges grown"
    );
    assert!(kernels_done >= 100);
    assert!(with_subfunctions > 0);
    assert!(
        fde_moved * 2 > kernels_done,
        "only {fde_moved} FDE ranges followed"
    );
}

// ---------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------

/// Parse, and when that succeeds exercise everything: no panic anywhere.
fn exercise(bytes: &[u8]) -> bool {
    let Ok(c) = Cubin::parse(bytes) else {
        return false;
    };
    let funcs = c.functions();
    let _ = c.kernels();
    let _ = c.write();
    if let Some(f) = funcs.first() {
        let _ = c.function_info(&f.name);
        let mut e = c.clone();
        if e.set_register_count(&f.name, 33).is_ok() {
            let _ = e.write().map(|b| Cubin::parse(&b));
        }
        let mut e = c.clone();
        if e.set_shared_size(&f.name, 8192).is_ok() {
            let _ = e.write().map(|b| Cubin::parse(&b));
        }
        let mut e = c.clone();
        let code = vec![0u8; (f.text_size as usize).min(1 << 16) / 16 * 16 + 128];
        if e.replace_text(&f.name, code, &OffsetMap::shift_from(16, 128))
            .is_ok()
        {
            let _ = e.write().map(|b| Cubin::parse(&b));
        }
    }
    true
}

#[test]
fn truncated_and_corrupted_cubins_never_panic() {
    if fx().is_none() {
        return;
    }
    assert!(Cubin::parse(&[]).is_err());
    let picked: Vec<&Extracted> = one_per_arch()
        .into_iter()
        .map(|(_, e)| e)
        .chain(
            all_cubins()
                .iter()
                .filter(|e| Cubin::parse(&e.2).unwrap().is_relocatable())
                .take(1),
        )
        .collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut ok, mut err) = (0, 0);
    for (label, _, bytes) in picked {
        // Truncations: every length near the start, the tables, the end, and a stride.
        let n = bytes.len();
        let c = Cubin::parse(bytes).unwrap();
        let shoff = c.elf().header.e_shoff as usize;
        let mut lens: BTreeSet<usize> = (0..=80).collect();
        lens.extend((0..n).step_by(n / 150 + 1));
        lens.extend(shoff.saturating_sub(8)..(shoff + 80).min(n));
        lens.extend(n.saturating_sub(80)..n);
        for len in lens {
            if exercise(&bytes[..len]) {
                ok += 1;
            } else {
                err += 1;
            }
        }
        // Bit flips: anywhere, and concentrated on the header and section header table.
        for round in 0..400 {
            let mut m = bytes.clone();
            let flips = 1 + (next() % 4) as usize;
            for _ in 0..flips {
                let r = next();
                let at = match round % 3 {
                    0 => (r as usize) % 64,
                    1 => shoff + (r as usize) % (n - shoff),
                    _ => (r as usize) % n,
                };
                m[at] ^= 1 << ((r >> 32) % 8);
            }
            if exercise(&m) {
                ok += 1;
            } else {
                err += 1;
            }
        }
        eprintln!("{label}: done");
    }
    eprintln!("{ok} mutated inputs parsed, {err} refused");
    assert!(ok > 0 && err > 0);
}

/// A damaged file whose symbol name points past `.strtab`: giving a kernel its first shared
/// memory (a section name and a section symbol name inserted, every later name moved) is
/// refused with the name's offset, the cubin unchanged, and never panics (the `cubin` fuzz
/// target found an overflow there: a panic with overflow checks, a wrapped name without).
/// Both places: the name the new one goes before, and a later one.
#[test]
fn a_symbol_name_past_the_string_table_refuses_a_new_shared_section() {
    if fx().is_none() {
        return;
    }
    let mut checked = BTreeSet::new();
    for (label, _, bytes) in all_cubins() {
        let c = Cubin::parse(bytes).unwrap();
        if c.is_relocatable() || checked.contains(&c.arch()) {
            continue;
        }
        // A kernel with no shared memory whose section's name `.strtab` does not hold
        // already (ptxas leaves it there before sm_90, see the end), so that it is inserted.
        let strtab = &c.elf().sections[c.elf().section_index_by_name(".strtab").unwrap()].data;
        let Some(fresh) = c.kernels().into_iter().find(|k| {
            let name = format!(".nv.shared.{}", k.name);
            c.elf().section_index_by_name(&name).is_none()
                && !strtab.split(|&b| b == 0).any(|n| n == name.as_bytes())
        }) else {
            continue;
        };
        // Where the undamaged file takes the edit.
        if c.clone().set_shared_size(&fresh.name, 2048).is_err() {
            continue;
        }
        // The new section symbol goes right after the kernel's code section symbol; the
        // named symbols after that place are the ones whose names move. (Entries read from
        // the table's bytes: `st_name` at 0, `st_info` at 4, `st_shndx` at 6.)
        let code = c
            .elf()
            .section_index_by_name(&format!(".text.{}", fresh.name))
            .unwrap();
        let symtab = c.elf().section_index_by_name(".symtab").unwrap();
        let table = &c.elf().sections[symtab];
        let entries: Vec<(u32, u8, usize)> = table
            .data
            .chunks_exact(24)
            .map(|e| {
                let name = u32::from_le_bytes(e[0..4].try_into().unwrap());
                let shndx = u16::from_le_bytes(e[6..8].try_into().unwrap());
                (name, e[4] & 0xf, usize::from(shndx))
            })
            .collect();
        const STT_SECTION: u8 = 3;
        let after = 1 + entries
            .iter()
            .position(|&(_, kind, shndx)| kind == STT_SECTION && shndx == code)
            .unwrap();
        let kernel = c
            .symbols()
            .iter()
            .position(|s| s.name == fresh.name)
            .unwrap();
        let named: Vec<usize> = (after..entries.len())
            .filter(|&i| entries[i].0 != 0 && i != kernel)
            .collect();
        let at = table.sh_offset as usize;
        for i in [named.first(), named.last()].into_iter().flatten() {
            let mut m = bytes.clone();
            m[at + i * 24..at + i * 24 + 4].copy_from_slice(&0xffff_ff00u32.to_le_bytes());
            let damaged = Cubin::parse(&m).unwrap();
            let mut e = damaged.clone();
            let err = e.set_shared_size(&fresh.name, 2048).expect_err(&format!(
                "{label}: symbol {i} damaged, yet the edit was made"
            ));
            assert!(
                err.to_string()
                    .contains("a name at 0xffffff00, past its string table"),
                "{label}: symbol {i}: {err}"
            );
            assert!(e == damaged, "{label}: a refused edit changed the cubin");
        }
        checked.insert(c.arch());
    }
    // Before sm_90 ptxas leaves every `.nv.shared.<kernel>` name in `.strtab` whether the
    // section is there or not, so no name is inserted; sm_90's are where it happens.
    assert!(
        checked.contains(&90),
        "damaged cubins checked on {checked:?}"
    );
}

/// A damaged file whose section header links past the section table: a kernel's first shared
/// section, inserted among the sections, moves every later index up by one, and the damaged
/// link stays past the table (it wrapped, or panicked under overflow checks: the `cubin`
/// fuzz target) whether the edit is made or refused.
#[test]
fn a_section_link_past_the_table_stays_past_it_when_a_section_is_added() {
    if fx().is_none() {
        return;
    }
    let mut checked = 0;
    for (label, _, bytes) in all_cubins() {
        let c = Cubin::parse(bytes).unwrap();
        let Some(fresh) = c.kernels().into_iter().find(|k| {
            c.elf()
                .section_index_by_name(&format!(".nv.shared.{}", k.name))
                .is_none()
        }) else {
            continue;
        };
        let mut edited = c.clone();
        if c.is_relocatable() || edited.set_shared_size(&fresh.name, 2048).is_err() {
            continue;
        }
        // The last section header's `sh_link` (at 0x28 of its 64 bytes).
        let shoff = c.elf().header.e_shoff as usize;
        let link = shoff + (c.elf().sections.len() - 1) * 64 + 0x28;
        let mut m = bytes.clone();
        m[link..link + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut damaged = Cubin::parse(&m).unwrap();
        if damaged.set_shared_size(&fresh.name, 2048).is_err() {
            continue;
        }
        let out = damaged.write().unwrap();
        let back = Cubin::parse(&out).unwrap();
        let name = &c.elf().sections[c.elf().sections.len() - 1].name;
        let moved = back.elf().section_index_by_name(name).unwrap();
        let at = back.elf().header.e_shoff as usize + moved * 64 + 0x28;
        assert_eq!(
            out[at..at + 4],
            u32::MAX.to_le_bytes(),
            "{label}: the damaged link moved"
        );
        checked += 1;
    }
    assert!(checked > 0, "no cubin took the edit");
}

// ---------------------------------------------------------------------------------------------
// Indirect branches (no fixture has BRX jump tables, so this test compiles a dense switch)
// ---------------------------------------------------------------------------------------------

/// `(brx offset, targets)` groups of `Offset of Indirect Branch: … Targets: …` in
/// `cuobjdump -elf`.
fn cuobjdump_branch_targets(dump: &str) -> Vec<(u32, Vec<u32>)> {
    let hex = |s: &str| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    let mut out = Vec::new();
    for line in dump.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Offset of Indirect Branch:") {
            let off = rest.split_whitespace().next().unwrap();
            out.push((hex(off), Vec::new()));
        } else if let Some(rest) = t.strip_prefix("Targets:") {
            let last = out.last_mut().unwrap();
            last.1 = rest.split_whitespace().map(hex).collect();
        }
    }
    out
}

#[test]
fn text_replacement_moves_indirect_branch_targets_and_jump_tables() {
    if fx().is_none() {
        return;
    }
    let dir = scratch("brx");
    let src = dir.path().join("sw2.cu");
    std::fs::write(&src, common::switch_kernel_source()).unwrap();
    let nvcc = common::find_nvcc().unwrap();
    for arch in [80, 90] {
        let cubin = dir.path().join(format!("sw2_{arch}.cubin"));
        let st = std::process::Command::new(&nvcc)
            .args(["-cubin", &format!("-arch=sm_{arch}"), "-o"])
            .arg(&cubin)
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success());
        let bytes = std::fs::read(&cubin).unwrap();
        let before = cuobjdump_branch_targets(&fixtures::elf_dump(&cubin).unwrap());
        assert!(before.len() >= 2, "sm_{arch}: no BRX in the switch kernel");
        let mut c = Cubin::parse(&bytes).unwrap();
        assert_eq!(c.write().unwrap(), bytes);
        let k = c.kernels().remove(0);
        let text = c.elf().sections[k.text_section].data.clone();
        let c2 = |cb: &Cubin| {
            cb.elf()
                .sections
                .iter()
                .find(|s| s.name.starts_with(".nv.constant2."))
                .unwrap()
                .data
                .clone()
        };
        let table_before = c2(&c);
        let mut code = text[..16].to_vec();
        for _ in 0..8 {
            code.extend_from_slice(&nvcc_orion::cubin::edit::NOP);
        }
        code.extend_from_slice(&text[16..]);
        c.replace_text(&k.name, code, &OffsetMap::shift_from(16, 128))
            .unwrap();
        let out = c.write().unwrap();
        let edited = dir.path().join(format!("sw2_{arch}_edited.cubin"));
        std::fs::write(&edited, &out).unwrap();
        toolkit_accepts(&edited, &format!("sw2 sm_{arch}"));
        let after = cuobjdump_branch_targets(&fixtures::elf_dump(&edited).unwrap());
        let shifted: Vec<(u32, Vec<u32>)> = before
            .iter()
            .map(|(b, t)| (b + 128, t.iter().map(|x| x + 128).collect()))
            .collect();
        assert_eq!(after, shifted, "sm_{arch}: INDIRECT_BRANCH_TARGETS");
        // Every jump-table word that was a target moved with it; others are untouched.
        let targets: BTreeSet<u32> = before.iter().flat_map(|g| g.1.clone()).collect();
        let back = Cubin::parse(&out).unwrap();
        let table_after = c2(&back);
        let mut moved = 0;
        for (a, b) in table_before.chunks(4).zip(table_after.chunks(4)) {
            let a = u32::from_le_bytes(a.try_into().unwrap());
            let b = u32::from_le_bytes(b.try_into().unwrap());
            if targets.contains(&a) {
                assert_eq!(b, a + 128);
                moved += 1;
            } else {
                assert_eq!(a, b);
            }
        }
        assert!(
            moved >= targets.len(),
            "sm_{arch}: jump table entries moved: {moved}"
        );
        // The BRX instructions are where the attribute says.
        let new_text = &back.elf().sections[k.text_section].data;
        for (b, _) in &after {
            let lo = u16::from_le_bytes([new_text[*b as usize], new_text[*b as usize + 1]]);
            assert_eq!(lo & 0xfff, 0x949, "sm_{arch}: no BRX at {b:#x}");
        }
    }
}

#[test]
fn symbol_ranges_and_errors() {
    let Some(fx) = fx() else { return };
    let bytes = std::fs::read(&fx.get("calls_sm80_lineinfo.cubin").path).unwrap();
    let mut c = Cubin::parse(&bytes).unwrap();
    let sub = c
        .functions()
        .into_iter()
        .find(|f| !f.is_kernel)
        .expect("calls.cu has sub-functions");
    c.set_symbol_range(&sub.name, sub.text_offset + 16, sub.text_size - 16)
        .unwrap();
    let back = Cubin::parse(&c.write().unwrap()).unwrap();
    let f = back.function_info(&sub.name).unwrap();
    assert_eq!(
        (f.text_offset, f.text_size),
        (sub.text_offset + 16, sub.text_size - 16)
    );
    // Errors name what and where, on one line.
    let e = c.set_register_count("no_such_kernel", 32).unwrap_err();
    assert_eq!(e.to_string(), "no function `no_such_kernel` in the cubin");
    let k = c.kernels().remove(0);
    let e = c.set_register_count(&k.name, 300).unwrap_err();
    assert!(e.to_string().contains("300 registers"), "{e}");
    let e = c
        .replace_text(&k.name, vec![0; 20], &OffsetMap::new())
        .unwrap_err();
    assert!(e.to_string().contains("not a multiple of 16"), "{e}");
    let e = c
        .replace_text(&sub.name, vec![0; 32], &OffsetMap::new())
        .unwrap_err();
    assert!(
        e.to_string().contains("does not own its text section"),
        "{e}"
    );
    // A truncated .nv.info record is reported with its section and offset.
    let info = c
        .elf()
        .sections
        .iter()
        .position(|s| s.name.starts_with(".nv.info."))
        .unwrap();
    let s = &c.elf().sections[info];
    let mut bad = bytes.clone();
    // First record: make it an SVAL whose length runs past the section.
    let at = s.sh_offset as usize;
    bad[at] = 4;
    bad[at + 2] = 0xff;
    bad[at + 3] = 0xff;
    let e = Cubin::parse(&bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "section {info} ({}): record at 0x0 runs past the end",
            s.name
        )
    );
    // ELF-level problems.
    assert!(
        Cubin::parse(b"not an elf")
            .unwrap_err()
            .to_string()
            .starts_with("ELF header:")
    );
}
