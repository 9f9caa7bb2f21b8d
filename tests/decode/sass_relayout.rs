//! Re-layout against the toolkit: NOPs inserted at pseudo-random places of every function of
//! real sm_75-sm_90 cubins (device calls, recursion, indirect calls, printf, spills, a BRX
//! switch), checked with nvdisasm (the original instructions, in order, with only NOPs
//! between; every branch, BSSY, call and return address pointing at the same original
//! instruction), `cuobjdump -elf` (EXIT offsets, annotations, indirect-branch targets) and
//! `cuobjdump -res-usage` (unchanged); and a host object rewritten through the container
//! layer links with nvcc.

use crate::common;

use common::fixtures::{self, Fixtures};
use nvcc_orion::cubin::{Cubin, OffsetMap};
use nvcc_orion::sass::encode::{self, RegField};
use nvcc_orion::sass::listing::{self, Listing as Function};
use nvcc_orion::sass::{Op, relayout};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fx() -> Option<&'static Fixtures> {
    fixtures::fixtures()
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("relayout-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn in_scope(path: &Path) -> bool {
    fixtures::elf_arch(path).is_some_and(|a| (75..=90).contains(&a))
}

/// Offset attributes of one function's `.nv.info.<k>` block of `cuobjdump -elf`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Attrs {
    exits: Vec<u64>,
    annotations: Vec<u64>,
    branches: Vec<(u64, Vec<u64>)>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap()
}

fn offset_attrs(dump: &str) -> BTreeMap<String, Attrs> {
    let mut out: BTreeMap<String, Attrs> = BTreeMap::new();
    let mut cur: Option<String> = None;
    let mut attr = String::new();
    for line in dump.lines() {
        if let Some(name) = line.strip_prefix(".nv.info.") {
            cur = Some(name.trim().to_string());
            continue;
        }
        if !line.starts_with(char::is_whitespace) && !line.trim().is_empty() {
            cur = None;
            continue;
        }
        let Some(k) = &cur else { continue };
        let a = out.entry(k.clone()).or_default();
        let t = line.trim();
        if let Some(name) = t.strip_prefix("Attribute:") {
            attr = name.trim().to_string();
            continue;
        }
        let t = t.strip_prefix("Value:").unwrap_or(t).trim();
        match attr.as_str() {
            "EIATTR_EXIT_INSTR_OFFSETS" => a.exits.extend(
                t.split_whitespace()
                    .filter(|w| w.starts_with("0x"))
                    .map(hex),
            ),
            "EIATTR_ANNOTATIONS" => {
                if let Some((_, o)) = t.split_once("Offset :") {
                    a.annotations.push(hex(o));
                }
            }
            "EIATTR_INDIRECT_BRANCH_TARGETS" => {
                if let Some(rest) = t.strip_prefix("Offset of Indirect Branch:") {
                    let off = rest.split_whitespace().next().unwrap();
                    a.branches.push((hex(off), Vec::new()));
                } else if let Some(rest) = t.strip_prefix("Targets:") {
                    a.branches.last_mut().unwrap().1 = rest.split_whitespace().map(hex).collect();
                }
            }
            _ => {}
        }
    }
    out
}

fn nvdisasm() -> PathBuf {
    fixtures::tool("nvdisasm")
}

/// [`listing::list`] of a cubin these tests start from (a fixture, or a compile whose bytes are
/// the same every run). Five tests of this file and `sass_predict` list the fixture cubins,
/// `calls_all.o`'s seven up to four times; the suite's nvdisasm lists each once per run
/// ([`common::listing_memo`]).
pub(super) fn listed(path: &Path) -> Vec<Function> {
    let bytes = std::fs::read(path).unwrap();
    let out = Command::new(nvdisasm())
        .arg("-json")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nvdisasm -json {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    listing::from_json(&out.stdout, &bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Numbers in an operand token: `0x1a0`, `-0x120`.
fn number(tok: &str) -> Option<i64> {
    let tok = tok.trim_end_matches(')');
    let (neg, h) = match tok.strip_prefix('-') {
        Some(h) => (true, h),
        None => (false, tok),
    };
    let v = i64::from_str_radix(h.strip_prefix("0x")?, 16).ok()?;
    Some(if neg { -v } else { v })
}

/// What one re-layout did to one cubin, for the checks.
struct Applied {
    /// Section owner → map.
    maps: BTreeMap<String, OffsetMap>,
    /// Function → section owner.
    owner_of: BTreeMap<String, String>,
    /// Section owner → old code end (trailing padding excluded).
    code_end: BTreeMap<String, u64>,
    inserted: usize,
}

impl Applied {
    fn map(&self, func: &str, off: u64) -> u64 {
        self.owner_of
            .get(func)
            .and_then(|o| self.maps.get(o))
            .map_or(off, |m| m.map(off).unwrap())
    }
}

#[derive(Default, Debug)]
struct Counts {
    instrs: usize,
    nops: usize,
    targets: usize,
    returns: usize,
    register_based: usize,
    round_trips: usize,
}

/// Compare the nvdisasm listings of the original and the re-laid-out cubin.
fn compare_listings(
    label: &str,
    old: &[Function],
    new: &[Function],
    ap: &Applied,
    counts: &mut Counts,
) {
    let new_by_name: BTreeMap<&str, &Function> = new.iter().map(|f| (f.name.as_str(), f)).collect();
    assert_eq!(old.len(), new.len(), "{label}: function count");
    for f in old {
        let g = new_by_name
            .get(f.name.as_str())
            .unwrap_or_else(|| panic!("{label}: {} lost", f.name));
        let owner = ap.owner_of.get(&f.name).unwrap();
        let end = ap.code_end[owner];
        // The section owner's entry is the section start: code inserted at 0 runs first.
        let start = if f.start == 0 {
            0
        } else {
            ap.map(&f.name, f.start)
        };
        assert_eq!(g.start, start, "{label}: {} start", f.name);
        let new_at: BTreeMap<u64, &listing::Line> =
            g.instrs.iter().map(|i| (i.offset, i)).collect();
        let mut images = BTreeSet::new();
        for i in f.instrs.iter().filter(|i| i.offset < end) {
            let n = ap.map(&f.name, i.offset);
            images.insert(n);
            let j = new_at.get(&n).unwrap_or_else(|| {
                panic!("{label}: {} {:#x} has no image at {n:#x}", f.name, i.offset)
            });
            let ctx = format!(
                "{label}: {} {:#x}→{n:#x} `{} {}` vs `{} {}`",
                f.name, i.offset, i.opcode, i.operands, j.opcode, j.operands
            );
            assert_eq!(i.predicate, j.predicate, "{ctx}");
            assert_eq!(i.opcode, j.opcode, "{ctx}");
            counts.instrs += 1;
            let ta: Vec<&str> = i.operands.split([',', ' ']).collect();
            let tb: Vec<&str> = j.operands.split([',', ' ']).collect();
            assert_eq!(ta.len(), tb.len(), "{ctx}");
            let base = i.op();
            for (a, b) in ta.iter().zip(&tb) {
                if a == b {
                    if matches!(base, Op::Bra | Op::Bssy) && number(a).is_some() {
                        counts.targets += 1;
                    }
                    continue;
                }
                let (Some(x), Some(y)) = (number(a), number(b)) else {
                    panic!("{ctx}: operand {a} became {b}");
                };
                if i.operands.contains("@lo(") || i.operands.contains("@hi(") {
                    // A relocated address (`32@lo((k + 0xf00))`, -G code): moved by the
                    // relocation addend.
                    assert_eq!(y as u64, ap.map(&f.name, x as u64), "{ctx}");
                    counts.returns += 1;
                    continue;
                }
                match base {
                    // Direct targets: the same original instruction.
                    Op::Bra | Op::Bssy | Op::Jmp | Op::Call if x >= 0 => {
                        assert_eq!(y as u64, ap.map(&f.name, x as u64), "{ctx}");
                        counts.targets += 1;
                    }
                    // Minus my own next pc.
                    Op::Brx | Op::Ret | Op::Call | Op::Brxu => {
                        assert_eq!(x, -(i.offset as i64 + 16), "{ctx}");
                        assert_eq!(y, -(n as i64 + 16), "{ctx}");
                        counts.register_based += 1;
                    }
                    // LEPC (sm_75-89): the MOV of the LEPC's own offset.
                    Op::Mov
                        if f.instrs
                            .iter()
                            .any(|c| c.offset == x as u64 && c.op() == Op::Lepc) =>
                    {
                        assert_eq!(y as u64, ap.map(&f.name, x as u64), "{ctx}");
                        counts.returns += 1;
                    }
                    // Return address: the instruction after the moved call (CALL.REL, or the
                    // CALL.ABS an LEPC prepares).
                    Op::Mov | Op::Imad | Op::Lepc => {
                        let call_old = x as u64 - 16;
                        let call = f.instrs.iter().find(|c| c.offset == call_old);
                        assert!(
                            call.is_some_and(|c| c.op() == Op::Call),
                            "{ctx}: only return addresses change"
                        );
                        assert_eq!(y as u64, ap.map(&f.name, call_old) + 16, "{ctx}");
                        counts.returns += 1;
                    }
                    _ => panic!("{ctx}: operand {a} became {b}"),
                }
            }
        }
        // Everything else in the new function is a NOP.
        for j in &g.instrs {
            if !images.contains(&j.offset) {
                assert_eq!(
                    j.opcode.as_str(),
                    "NOP",
                    "{label}: {} {:#x}",
                    g.name,
                    j.offset
                );
                counts.nops += 1;
            }
        }
    }
}

/// Check a re-laid-out cubin: the control bits of every original instruction unchanged.
/// Register-based branches (RET.REL, BRX, indirect CALL.REL) hold minus their own next pc
/// before and after (nvdisasm prints these by function name, so the bytes are checked).
fn compare_control(label: &str, old: &Cubin, new: &Cubin, ap: &Applied, counts: &mut Counts) {
    let sm = old.arch();
    for (owner, map) in &ap.maps {
        let a = old.function_info(owner).unwrap();
        let b = new.function_info(owner).unwrap();
        let ta = &old.elf().sections[a.text_section].data;
        let tb = &new.elf().sections[b.text_section].data;
        for o in (0..ap.code_end[owner]).step_by(16) {
            let n = map.map(o).unwrap() as usize;
            let wa = u128::from_le_bytes(ta[o as usize..o as usize + 16].try_into().unwrap());
            let wb = u128::from_le_bytes(tb[n..n + 16].try_into().unwrap());
            assert_eq!(wa >> 105, wb >> 105, "{label}: {owner} {o:#x} control bits");
            if encode::rel_kind(wa) == Some(encode::RelKind::RegisterBased) {
                assert_eq!(
                    encode::rel_delta(sm, wa),
                    Some(-(o as i64 + 16)),
                    "{label}: {o:#x}"
                );
                assert_eq!(
                    encode::rel_delta(sm, wb),
                    Some(-(n as i64 + 16)),
                    "{label}: {o:#x}"
                );
                counts.register_based += 1;
            }
            if encode::rel_kind(wa).is_none() {
                assert!(
                    wa == wb
                        || encode::opcode(wa) == encode::OP_MOV_IMM
                        || encode::opcode(wa) == 0x424
                        || encode::opcode(wa) == encode::OP_LEPC,
                    "{label}: {owner} {o:#x} changed"
                );
            }
        }
    }
}

/// Re-lay out `path` with `per_function` NOPs per function and `seed`; check everything.
fn check_cubin(label: &str, path: &Path, dir: &Path, per_function: usize, seeds: &[u64]) -> Counts {
    let bytes = std::fs::read(path).unwrap();
    let old = Cubin::parse(&bytes).unwrap();
    let old_list = listed(path);
    let old_attrs = offset_attrs(&fixtures::elf_dump(path).unwrap());
    let old_res = fixtures::res_usage(path).unwrap();
    let mut counts = Counts::default();
    for &seed in seeds {
        let label = format!("{label} seed {seed}");
        let mut c = old.clone();
        let done = relayout::insert_random_nops(&mut c, per_function, seed)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let mut ap = Applied {
            maps: BTreeMap::new(),
            owner_of: BTreeMap::new(),
            code_end: BTreeMap::new(),
            inserted: 0,
        };
        let sec_owner: BTreeMap<usize, String> = done
            .iter()
            .map(|(o, _)| (old.function_info(o).unwrap().text_section, o.clone()))
            .collect();
        for f in old.functions() {
            if let Some(o) = sec_owner.get(&f.text_section) {
                ap.owner_of.insert(f.name.clone(), o.clone());
            }
        }
        for (o, r) in &done {
            ap.maps.insert(o.clone(), r.map.clone());
            ap.code_end.insert(
                o.clone(),
                relayout::code_offsets(&old, o).unwrap().len() as u64 * 16,
            );
            ap.inserted += r.inserted.len();
        }
        let out = dir.join(format!(
            "{}_{seed}.cubin",
            path.file_stem().unwrap().to_string_lossy()
        ));
        let written = c.write().unwrap();
        std::fs::write(&out, &written).unwrap();
        fixtures::nvdisasm_ok(&out).unwrap_or_else(|e| panic!("{label}: {e}"));
        let new = Cubin::parse(&written).unwrap();
        let new_list = listing::list(&nvdisasm(), &out).unwrap();
        compare_listings(&label, &old_list, &new_list, &ap, &mut counts);
        compare_control(&label, &old, &new, &ap, &mut counts);
        // Offset attributes.
        let new_attrs = offset_attrs(&fixtures::elf_dump(&out).unwrap());
        assert_eq!(old_attrs.len(), new_attrs.len(), "{label}");
        for (k, a) in &old_attrs {
            let m = |o: u64| ap.map(k, o);
            let want = Attrs {
                exits: a.exits.iter().map(|&o| m(o)).collect(),
                annotations: a.annotations.iter().map(|&o| m(o)).collect(),
                branches: a
                    .branches
                    .iter()
                    .map(|(b, t)| (m(*b), t.iter().map(|&o| m(o)).collect()))
                    .collect(),
            };
            assert_eq!(
                new_attrs.get(k),
                Some(&want),
                "{label}: {k} offset attributes"
            );
        }
        // Jump tables in .nv.constant2: every old target word maps.
        for (k, a) in &old_attrs {
            if a.branches.is_empty() {
                continue;
            }
            let targets: BTreeSet<u64> = a.branches.iter().flat_map(|(_, t)| t.clone()).collect();
            let name = format!(".nv.constant2.{k}");
            let sec = |cb: &Cubin| {
                cb.elf()
                    .sections
                    .iter()
                    .find(|s| s.name == name)
                    .map(|s| s.data.clone())
                    .unwrap()
            };
            let (ca, cb) = (sec(&old), sec(&new));
            assert_eq!(ca.len(), cb.len());
            for (wa, wb) in ca.chunks_exact(4).zip(cb.chunks_exact(4)) {
                let va = u32::from_le_bytes(wa.try_into().unwrap()) as u64;
                let vb = u32::from_le_bytes(wb.try_into().unwrap()) as u64;
                if targets.contains(&va) {
                    assert_eq!(vb, ap.map(k, va), "{label}: jump table");
                    counts.targets += 1;
                } else {
                    assert_eq!(va, vb);
                }
            }
        }
        assert_eq!(
            fixtures::res_usage(&out).unwrap(),
            old_res,
            "{label}: res-usage"
        );
        // Deleting the inserted NOPs gives every section back byte for byte (symbols,
        // attributes, relocations, jump tables, .debug_frame, code).
        let mut back = new.clone();
        for (o, r) in &done {
            let d = relayout::delete(&mut back, o, &r.inserted)
                .unwrap_or_else(|e| panic!("{label}: delete: {e}"));
            assert_eq!(d.inserted.len(), 0);
        }
        let again = Cubin::parse(&back.write().unwrap()).unwrap();
        assert_eq!(old.elf().sections.len(), again.elf().sections.len());
        for (x, y) in old.elf().sections.iter().zip(&again.elf().sections) {
            let k = x.data.iter().zip(&y.data).position(|(p, q)| p != q);
            assert!(
                x.name == y.name && x.data == y.data,
                "{label}: insert then delete: {} differs ({} vs {} bytes, first at {k:?})",
                x.name,
                x.data.len(),
                y.data.len()
            );
        }
        counts.round_trips += 1;
    }
    counts
}

fn fixture_cubins(fx: &Fixtures, dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for name in ["calls_all.o", "spill_r24.o", "memory_G.o", "app"] {
        let sub = dir.join(name.replace('.', "_"));
        for p in fixtures::extract_elfs(&fx.get(name).path, &sub).unwrap() {
            if in_scope(&p) {
                out.push((p.file_name().unwrap().to_string_lossy().to_string(), p));
            }
        }
    }
    for name in [
        "memory_sm86.cubin",
        "math_sm75.cubin",
        "math_sm90_G.cubin",
        "calls_sm80_lineinfo.cubin",
        "spill_sm89_r24.cubin",
    ] {
        let p = fx.get(name).path.clone();
        if in_scope(&p) {
            out.push((name.to_string(), p));
        }
    }
    out
}

#[test]
fn nops_everywhere_keep_every_reference() {
    let Some(fx) = fx() else { return };
    let dir = scratch("fixtures");
    let cubins = fixture_cubins(fx, dir.path());
    assert!(cubins.len() >= 10, "{cubins:?}");
    let mut total = Counts::default();
    let mut archs = BTreeSet::new();
    for (label, path) in &cubins {
        archs.insert(fixtures::elf_arch(path).unwrap());
        // calls: two seeds (device calls, recursion, indirect calls); others one.
        let seeds: &[u64] = if label.starts_with("calls") {
            &[1, 7]
        } else {
            &[3]
        };
        let c = check_cubin(label, path, dir.path(), 6, seeds);
        total.instrs += c.instrs;
        total.nops += c.nops;
        total.targets += c.targets;
        total.returns += c.returns;
        total.register_based += c.register_based;
        total.round_trips += c.round_trips;
    }
    eprintln!("{} cubins, archs {archs:?}: {total:?}", cubins.len());
    assert_eq!(archs, BTreeSet::from([75, 80, 86, 89, 90]));
    assert!(
        total.returns > 20,
        "return addresses were patched: {total:?}"
    );
    assert!(
        total.register_based > 20,
        "RET.REL/indirect calls re-encoded: {total:?}"
    );
    assert!(total.targets > 500);
}

#[test]
fn brx_jump_tables_follow() {
    if fx().is_none() {
        return;
    }
    let dir = scratch("brx");
    let src = dir.path().join("sw2.cu");
    std::fs::write(&src, common::switch_kernel_source()).unwrap();
    let nvcc = common::find_nvcc().unwrap();
    let mut brx = 0;
    for arch in [75, 90] {
        let cubin = dir.path().join(format!("sw2_{arch}.cubin"));
        let st = Command::new(&nvcc)
            .args(["-cubin", &format!("-arch=sm_{arch}"), "-o"])
            .arg(&cubin)
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success());
        let c = check_cubin(&format!("sw2 sm_{arch}"), &cubin, dir.path(), 12, &[5, 11]);
        assert!(c.targets > 20, "sm_{arch}: {c:?}");
        brx += c.register_based;
    }
    assert!(brx >= 4, "BRX immediates re-encoded: {brx}");
}

#[test]
fn host_object_relaid_out_links() {
    let Some(fx) = fx() else { return };
    let dir = scratch("link");
    let obj = &fx.get("calls_all.o").path;
    let bytes = std::fs::read(obj).unwrap();
    let (out, n) = nvcc_orion::commands::debug_relayout::relayout_bytes(bytes, 4, 9).unwrap();
    assert_eq!(
        n, 5,
        "sm_75, 80, 86, 89, 90 images rewritten; sm_100/120 left"
    );
    let edited = dir.path().join("calls_edited.o");
    std::fs::write(&edited, out).unwrap();
    let cubins = dir.path().join("cubins");
    for c in fixtures::extract_elfs(&edited, &cubins).unwrap() {
        fixtures::nvdisasm_ok(&c).unwrap_or_else(|e| panic!("{}: {e}", c.display()));
    }
    assert_eq!(
        fixtures::res_usage(&edited).unwrap(),
        fixtures::res_usage(obj).unwrap()
    );
    let main = dir.path().join("stub_main.cu");
    std::fs::write(&main, "int main() { return 0; }\n").unwrap();
    let app = dir.path().join("app");
    let link = Command::new(common::find_nvcc().unwrap())
        .arg(&main)
        .arg(&edited)
        .arg("-o")
        .arg(&app)
        .output()
        .unwrap();
    assert!(
        link.status.success(),
        "link: {}",
        String::from_utf8_lossy(&link.stderr)
    );
    let sass = fixtures::cuobjdump(&["-sass"], &app).unwrap();
    assert!(sass.contains("NOP"));
}

#[test]
fn renaming_a_register_changes_only_its_name() {
    let Some(fx) = fx() else { return };
    let dir = scratch("rename");
    let path = fx.get("math_sm75.cubin").path.clone();
    let mut c = Cubin::parse(&std::fs::read(&path).unwrap()).unwrap();
    let old_list = listed(&path);
    // A kernel with simple ALU/memory code; rename R0 → an unused register in every field.
    let k = old_list
        .iter()
        .find(|f| f.name.contains("fma_chain_f32"))
        .unwrap();
    let used: BTreeSet<String> = k
        .instrs
        .iter()
        .flat_map(|i| {
            i.operands
                .split(|ch: char| !ch.is_ascii_alphanumeric())
                .filter(|t| t.starts_with('R') && t[1..].parse::<u32>().is_ok())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let to = (100u8..200)
        .find(|r| !used.contains(&format!("R{r}")))
        .unwrap();
    let from = 0u8;
    let info = c.function_info(&k.name).unwrap();
    let mut text = c.elf().sections[info.text_section].data.clone();
    let mut renamed = 0;
    for chunk in text.chunks_exact_mut(16) {
        let mut w = encode::from_bytes(chunk.try_into().unwrap());
        let op = encode::opcode(w);
        if op == encode::OP_NOP || encode::rel_kind(w).is_some() || op == encode::OP_EXIT {
            continue;
        }
        // Fields that hold GPRs for this opcode: dst and A always here; B unless the
        // operand form puts an immediate/cbuf/UR there (bits 9-11 = 4, 5, 6); C for the
        // forms 1, 2, 3, 7 of three-source ALU ops.
        let form = (op >> 9) & 7;
        let mut fields = vec![RegField::Dst, RegField::A];
        if form == 1 {
            fields.push(RegField::B);
        }
        for f in fields {
            if encode::reg(w, f) == from {
                w = encode::set_reg(w, f, to);
                renamed += 1;
            }
        }
        chunk.copy_from_slice(&encode::to_bytes(w));
    }
    assert!(renamed > 0);
    let map = OffsetMap::new();
    c.replace_text(&k.name, text, &map).unwrap();
    let out = dir.path().join("renamed.cubin");
    std::fs::write(&out, c.write().unwrap()).unwrap();
    let new_list = listing::list(&nvdisasm(), &out).unwrap();
    let g = new_list.iter().find(|f| f.name == k.name).unwrap();
    let swap = |s: &str| {
        s.split_inclusive(|ch: char| !ch.is_ascii_alphanumeric())
            .map(|t| {
                let (word, sep) = t.split_at(
                    t.trim_end_matches(|ch: char| !ch.is_ascii_alphanumeric())
                        .len(),
                );
                if word == format!("R{from}") {
                    format!("R{to}{sep}")
                } else {
                    t.to_string()
                }
            })
            .collect::<String>()
    };
    let mut changed = 0;
    for (a, b) in k.instrs.iter().zip(&g.instrs) {
        assert_eq!(a.opcode, b.opcode);
        if a.operands != b.operands {
            changed += 1;
        }
        assert_eq!(swap(&a.operands), b.operands, "{:#x}", a.offset);
    }
    assert!(changed > 0);
    eprintln!("R{from} → R{to}: {renamed} fields, {changed} instructions");
}

#[test]
fn branch_fields_decode_and_encode_back_on_real_code() {
    let Some(fx) = fx() else { return };
    let dir = scratch("fields");
    let mut paths = Vec::new();
    for name in ["calls_all.o", "memory_G.o", "coop_lineinfo.o", "app"] {
        let sub = dir.path().join(name.replace('.', "_"));
        paths.extend(fixtures::extract_elfs(&fx.get(name).path, &sub).unwrap());
    }
    let mut checked: BTreeMap<u32, usize> = BTreeMap::new();
    let mut targets = 0;
    for path in &paths {
        let sm = fixtures::elf_arch(path).unwrap();
        let c = Cubin::parse(&std::fs::read(path).unwrap()).unwrap();
        for f in listed(path) {
            let info = c.function_info(&f.name).unwrap();
            let data = &c.elf().sections[info.text_section].data;
            for i in &f.instrs {
                let o = i.offset as usize;
                let w = encode::from_bytes(data[o..o + 16].try_into().unwrap());
                let Some(kind) = encode::rel_kind(w) else {
                    continue;
                };
                let d = encode::rel_delta(sm, w).unwrap();
                assert_eq!(
                    encode::set_rel_delta(sm, w, d).unwrap(),
                    w,
                    "{}",
                    path.display()
                );
                *checked.entry(sm).or_default() += 1;
                // Direct targets agree with nvdisasm's.
                let printed = i
                    .operands
                    .rsplit(',')
                    .next()
                    .and_then(|t| number(t.trim()))
                    .filter(|_| matches!(i.op(), Op::Bra | Op::Bssy));
                if let Some(t) = printed {
                    assert_ne!(kind, encode::RelKind::RegisterBased);
                    assert_eq!(
                        encode::direct_target(sm, i.offset, w),
                        Some(t as u64),
                        "{} {:#x} {} {}",
                        path.display(),
                        i.offset,
                        i.opcode,
                        i.operands
                    );
                    let moved =
                        encode::set_direct_target(sm, i.offset + 0x40, w, t as u64).unwrap();
                    assert_eq!(
                        encode::direct_target(sm, i.offset + 0x40, moved),
                        Some(t as u64)
                    );
                    assert_eq!(moved >> 105, w >> 105, "control bits kept");
                    targets += 1;
                }
            }
        }
    }
    eprintln!(
        "branch-like instructions per arch: {checked:?}; {targets} targets agree with nvdisasm"
    );
    for sm in [75, 80, 86, 89, 90, 100, 120] {
        assert!(
            checked.get(&sm).copied().unwrap_or(0) > 20,
            "sm_{sm}: {checked:?}"
        );
    }
    assert!(targets > 500);
}

#[test]
fn debug_relayout_command_and_entry_insertion() {
    let Some(fx) = fx() else { return };
    let dir = scratch("cli");
    // The command on a host object.
    let out = dir.path().join("spill_edited.o");
    let st = common::orion()
        .args(["debug", "relayout"])
        .arg(&fx.get("spill_r24.o").path)
        .args(["--insert-nops", "3", "--seed", "4", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let cubins = dir.path().join("cubins");
    let extracted = fixtures::extract_elfs(&out, &cubins).unwrap();
    assert!(!extracted.is_empty());
    for c in &extracted {
        fixtures::nvdisasm_ok(c).unwrap_or_else(|e| panic!("{}: {e}", c.display()));
    }
    // Insertion at offset 0 of every -G function's own section (sm_75, calls through
    // R_CUDA_ABS47_34 relocations): the entry stays at 0, callers' addends move past the NOP.
    let g = dir.path().join("g");
    let path = fixtures::extract_elfs(&fx.get("memory_G.o").path, &g)
        .unwrap()
        .into_iter()
        .find(|p| fixtures::elf_arch(p) == Some(75))
        .unwrap();
    let mut c = Cubin::parse(&std::fs::read(&path).unwrap()).unwrap();
    let callees: Vec<String> = c
        .functions()
        .into_iter()
        .filter(|f| !f.is_kernel && f.text_offset == 0)
        .map(|f| f.name)
        .collect();
    assert!(!callees.is_empty());
    for f in &callees {
        let r = relayout::insert_nops(&mut c, f, &[0, 0], 2).unwrap();
        assert_eq!(r.inserted, vec![0, 16]);
        assert_eq!(c.function_info(f).unwrap().text_offset, 0);
    }
    let edited = dir.path().join("g_edited.cubin");
    std::fs::write(&edited, c.write().unwrap()).unwrap();
    fixtures::nvdisasm_ok(&edited).unwrap();
    let text = fixtures::run_tool("nvdisasm", &["-c"], &edited).unwrap();
    let moved_calls = text
        .lines()
        .filter(|l| l.contains("CALL.ABS.NOINC") && l.contains("@srel"))
        .count();
    assert!(moved_calls > 0, "calls now enter past the inserted NOPs");
}

#[test]
fn refusals_leave_the_cubin_unchanged() {
    let Some(fx) = fx() else { return };
    let dir = scratch("refuse");
    let paths = fixtures::extract_elfs(&fx.get("calls_all.o").path, dir.path()).unwrap();
    let by_arch = |a: u32| {
        let p = paths
            .iter()
            .find(|p| fixtures::elf_arch(p) == Some(a))
            .unwrap();
        Cubin::parse(&std::fs::read(p).unwrap()).unwrap()
    };
    // sm_100+ is out of scope.
    let mut c = by_arch(100);
    let k = c.kernels().remove(0).name;
    let e = relayout::insert_nops(&mut c, &k, &[16], 1).unwrap_err();
    assert!(e.to_string().contains("sm_100"), "{e}");

    let mut c = by_arch(80);
    let before = c.write().unwrap();
    let k = "_Z16live_across_callPKfPfi";
    let offs = relayout::code_offsets(&c, k).unwrap();
    let end = offs.len() as u64 * 16;
    // Out of range / misaligned.
    assert!(relayout::insert_nops(&mut c, k, &[end + 16], 1).is_err());
    assert!(relayout::insert_nops(&mut c, k, &[8], 1).is_err());
    // Not a section owner.
    let sub = c
        .functions()
        .into_iter()
        .find(|f| !f.is_kernel && f.text_offset > 0)
        .unwrap();
    let e = relayout::insert_nops(&mut c, &sub.name, &[0], 1).unwrap_err();
    assert!(e.to_string().contains("own"), "{e}");
    // Deleting control flow, or the MOV of a return address.
    let info = c.function_info(k).unwrap();
    let text = c.elf().sections[info.text_section].data.clone();
    let word = |o: u64| encode::from_bytes(text[o as usize..o as usize + 16].try_into().unwrap());
    let call = offs
        .iter()
        .copied()
        .find(|&o| encode::opcode(word(o)) == encode::OP_CALL_REL)
        .unwrap();
    let e = relayout::delete(&mut c, k, &[call]).unwrap_err();
    assert!(e.to_string().contains("cannot be deleted"), "{e}");
    let mov = offs
        .iter()
        .copied()
        .filter(|&o| o < call)
        .rfind(|&o| {
            encode::opcode(word(o)) == encode::OP_MOV_IMM
                && u64::from(encode::imm32(word(o))) == call + 16
        })
        .unwrap();
    let e = relayout::delete(&mut c, k, &[mov]).unwrap_err();
    assert!(e.to_string().contains("return address"), "{e}");
    assert!(c.write().unwrap() == before, "refusals change nothing");

    // A NOP right after the call: the return address now names the NOP (it runs on return).
    let r = relayout::insert_nops(&mut c, k, &[call + 16], 1).unwrap();
    let new_call = r.map.map(call).unwrap();
    assert_eq!(r.inserted, vec![new_call + 16]);
    let info = c.function_info(k).unwrap();
    let text = &c.elf().sections[info.text_section].data;
    let m = r.map.map(mov).unwrap() as usize;
    let w = encode::from_bytes(text[m..m + 16].try_into().unwrap());
    assert_eq!(u64::from(encode::imm32(w)), new_call + 16);
    assert!(r.return_addresses.contains(&(m as u64)));
}

#[test]
fn printf_lepc_return_points_follow() {
    if fx().is_none() {
        return;
    }
    let dir = scratch("printf");
    let src = dir.path().join("pf.cu");
    std::fs::write(
        &src,
        "#include <cstdio>\n__global__ void pf(const int* in, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n && in[i] > 3) printf(\"%d %d\\n\", i, in[i]);\n    if (i == 0) printf(\"done %d\\n\", n);\n}\n",
    )
    .unwrap();
    let nvcc = common::find_nvcc().unwrap();
    let mut lepc = 0;
    for arch in [75, 86, 90] {
        let cubin = dir.path().join(format!("pf_{arch}.cubin"));
        let st = Command::new(&nvcc)
            .args(["-cubin", &format!("-arch=sm_{arch}"), "-o"])
            .arg(&cubin)
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success());
        // Many NOPs in a small kernel: some land between each LEPC and its CALL.ABS.
        let c = check_cubin(&format!("pf sm_{arch}"), &cubin, dir.path(), 40, &[1, 2]);
        lepc += c.returns;
    }
    assert!(lepc >= 6, "LEPC return points re-encoded: {lepc}");
}

#[test]
fn local_to_shared_swap_keeps_operands() {
    let Some(fx) = fx() else { return };
    let dir = scratch("swap");
    let mut paths = vec![fx.get("spill_sm89_r24.cubin").path.clone()];
    paths.extend(
        fixtures::extract_elfs(&fx.get("spill_r24.o").path, dir.path())
            .unwrap()
            .into_iter()
            .filter(|p| in_scope(p)),
    );
    let mut swapped = 0;
    for path in &paths {
        let mut c = Cubin::parse(&std::fs::read(path).unwrap()).unwrap();
        let old_list = listed(path);
        for k in c.kernels() {
            let mut text = c.elf().sections[k.text_section].data.clone();
            for chunk in text.chunks_exact_mut(16) {
                let w = encode::from_bytes(chunk.try_into().unwrap());
                if let Some(s) = encode::swap_local_shared(w)
                    && matches!(encode::opcode(w), encode::OP_STL | encode::OP_LDL)
                {
                    assert_eq!(s >> 105, w >> 105, "control bits kept");
                    chunk.copy_from_slice(&encode::to_bytes(s));
                }
            }
            c.replace_text(&k.name, text, &OffsetMap::new()).unwrap();
        }
        let out = dir.path().join(format!(
            "{}_swapped.cubin",
            path.file_stem().unwrap().to_string_lossy()
        ));
        std::fs::write(&out, c.write().unwrap()).unwrap();
        fixtures::nvdisasm_ok(&out).unwrap();
        let new_list = listing::list(&nvdisasm(), &out).unwrap();
        for (f, g) in old_list.iter().zip(&new_list) {
            for (a, b) in f.instrs.iter().zip(&g.instrs) {
                let want = match a.op() {
                    Op::Stl => Op::Sts,
                    Op::Ldl => Op::Lds,
                    _ => {
                        assert_eq!((&a.opcode, &a.operands), (&b.opcode, &b.operands));
                        continue;
                    }
                };
                assert_eq!(b.op(), want, "{} {:#x}", f.name, a.offset);
                // Width modifiers stay; the eviction hint (.LU) goes.
                let mods = |s: &str| -> Vec<String> {
                    s.split('.')
                        .skip(1)
                        .filter(|m| !matches!(*m, "LU" | "U"))
                        .map(str::to_string)
                        .collect()
                };
                assert_eq!(
                    mods(a.opcode.as_str()),
                    mods(b.opcode.as_str()),
                    "{} {:#x}",
                    f.name,
                    a.offset
                );
                assert_eq!(a.operands, b.operands, "{} {:#x}", f.name, a.offset);
                swapped += 1;
            }
        }
    }
    eprintln!("{swapped} STL/LDL swapped to STS/LDS");
    assert!(swapped > 100);
}
