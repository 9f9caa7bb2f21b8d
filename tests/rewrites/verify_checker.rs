//! The translation checker (`src/verify`) on real toolchain output.

use crate::common;

use common::fixtures::{self, Fixtures};
use nvcc_orion::sass::Op;
use nvcc_orion::sass::decode::{self, Decoded};
use nvcc_orion::sass::ir::Function;
use nvcc_orion::verify::{self, Check, Claim};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fx() -> Option<&'static Fixtures> {
    fixtures::fixtures()
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("verify-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn decoded(path: &Path) -> Decoded {
    decode::decode_file(&fixtures::tool("nvdisasm"), path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Functions grouped by text section, in decode order.
fn sections(d: &Decoded) -> BTreeMap<usize, Vec<Function>> {
    let mut out: BTreeMap<usize, Vec<Function>> = BTreeMap::new();
    for f in &d.functions {
        out.entry(f.section).or_default().push(f.clone());
    }
    out
}

fn in_scope(path: &Path) -> bool {
    fixtures::elf_arch(path).is_some_and(|a| (75..=90).contains(&a))
}

fn cubins(fx: &Fixtures, dir: &Path, objects: &[&str], bare: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for name in objects {
        let sub = dir.join(name.replace('.', "_"));
        for p in fixtures::extract_elfs(&fx.get(name).path, &sub).unwrap() {
            if in_scope(&p) {
                out.push(p);
            }
        }
    }
    for name in bare {
        out.push(fx.get(name).path.clone());
    }
    out
}

/// Check every section of `path` against itself (or against `rewritten` with the claims of
/// `claims`, by section owner); recursion must be rejected, everything else proved.
/// Returns (sections proved, sections with calls proved, recursive sections).
fn check_sections(
    label: &str,
    orig: &Decoded,
    rewritten: &Decoded,
    claims: &HashMap<String, Claim>,
) -> (usize, usize, usize) {
    let new = sections(rewritten);
    let (mut proved, mut with_calls, mut recursive) = (0, 0, 0);
    for (sec, fs) in sections(orig) {
        let claim = claims.get(&fs[0].name).cloned().unwrap_or_default();
        let rew = new
            .get(&sec)
            .unwrap_or_else(|| panic!("{label}: section {sec} gone"));
        match verify::check(&fs, rew, &claim) {
            Ok(p) => {
                proved += 1;
                with_calls += usize::from(p.calls > 0);
            }
            Err(e) if e.reason.contains("recursi") => recursive += 1,
            Err(e) => panic!("{label} (sm_{}): {e}", orig.sm),
        }
    }
    (proved, with_calls, recursive)
}

/// The switch kernel of tests/common (a `BRX` jump table), built for sm_80 in `dir`.
fn switch_cubin(dir: &Path) -> PathBuf {
    let src = dir.join("sw2.cu");
    std::fs::write(&src, common::switch_kernel_source()).unwrap();
    let cubin = dir.join("sw2_80.cubin");
    let st = std::process::Command::new(common::find_nvcc().unwrap())
        .args(["-cubin", "-arch=sm_80", "-o"])
        .arg(&cubin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    cubin
}

/// Spill and call cubins of every in-scope architecture (calls: sm_75, sm_80, sm_90, with
/// device calls, recursion, function pointers, printf), plus a `BRX` switch.
fn identity_inputs(fx: &Fixtures, dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = cubins(
        fx,
        dir,
        &["spill_r24.o", "calls_all.o"],
        &[
            "spill_sm89_r24.cubin",
            "calls_sm80_lineinfo.cubin",
            "memory_sm86.cubin",
        ],
    )
    .into_iter()
    .filter(|p| {
        !p.to_string_lossy().contains("calls_all") || matches!(fixtures::elf_arch(p), Some(75 | 90))
    })
    .collect();
    paths.push(switch_cubin(dir));
    paths
}

#[test]
fn identity_proves_every_section() {
    let Some(fx) = fx() else { return };
    let dir = scratch("identity");
    let mut total = (0, 0, 0);
    let mut brx = 0;
    for p in identity_inputs(fx, dir.path()) {
        let d = decoded(&p);
        brx += d
            .functions
            .iter()
            .flat_map(|f| &f.instrs)
            .filter(|i| i.op() == Op::Brx)
            .count();
        let (a, b, c) = check_sections(&p.display().to_string(), &d, &d, &HashMap::new());
        total = (total.0 + a, total.1 + b, total.2 + c);
    }
    eprintln!("identity: {total:?} (proved, with calls, recursive), {brx} BRX");
    assert!(total.0 > 50, "{total:?}");
    assert!(total.1 >= 10, "sections with calls: {total:?}");
    assert!(total.2 >= 6, "recursive sections rejected: {total:?}");
    assert!(brx >= 1);
    // Functions only called through pointers are listed inside the kernel's code; they are
    // checked as functions of their own (op_sq, op_neg, op_half, plus the padding branch).
    let d = decoded(&fx.get("calls_sm80_lineinfo.cubin").path);
    let fs = sections(&d)
        .into_values()
        .find(|fs| fs[0].name == "_Z17indirect_dispatchPKfPKiPfi")
        .unwrap();
    let p = verify::check(&fs, &fs, &Claim::identity()).unwrap();
    assert!(p.functions >= 4, "{p:?}");
}

/// NOPs inserted all over every function (with relayout's map, re-encoded branches, jump
/// tables and return addresses): still the same program.
#[test]
fn inserted_nops_prove() {
    let Some(fx) = fx() else { return };
    let dir = scratch("nops");
    let mut total = (0, 0, 0);
    for (n, p) in identity_inputs(fx, dir.path()).into_iter().enumerate() {
        let mut c = Cubin::parse(&std::fs::read(&p).unwrap()).unwrap();
        let done = relayout::insert_random_nops(&mut c, 6, 17 + n as u64)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let out = dir.path().join(format!("nops_{n}.cubin"));
        std::fs::write(&out, c.write().unwrap()).unwrap();
        let claims: HashMap<String, Claim> = done
            .into_iter()
            .map(|(k, r)| {
                (
                    k,
                    Claim {
                        map: r.map,
                        inserted: r.inserted,
                        base: None,
                        passed: Vec::new(),
                        renamed: Default::default(),
                    },
                )
            })
            .collect();
        let (a, b, c) = check_sections(
            &p.display().to_string(),
            &decoded(&p),
            &decoded(&out),
            &claims,
        );
        total = (total.0 + a, total.1 + b, total.2 + c);
    }
    eprintln!("with NOPs: {total:?}");
    assert!(total.0 > 50 && total.1 >= 10, "{total:?}");
}

// ---------------------------------------------------------------------------------------
// A correct spill2smem rewrite, built here (not in src/), and its corruptions.

use nvcc_orion::cubin::{Cubin, OffsetMap};
use nvcc_orion::sass::encode::{self, RegField};
use nvcc_orion::sass::ir::{Instr, OperandKind};
use nvcc_orion::sass::relayout;
use nvcc_orion::verify::{Rejection, SpillBase};
use std::collections::{BTreeSet, HashMap};

/// Threads per block assumed for the spill area's layout.
const THREADS: u32 = 256;

/// A 32-bit SpillRefill access `STL [R1+imm], Rx` / `LDL Rx, [R1+imm]` that is moved.
#[derive(Debug, Clone, Copy)]
struct Spill {
    off: u64,
    store: bool,
    reg: u8,
    imm: i64,
    /// A 64-bit spill, split into two 32-bit shared accesses (the second one inserted).
    wide: bool,
}

/// One spilling kernel and what the rewrite needs.
struct Spilled {
    label: String,
    bytes: Vec<u8>,
    kernel: String,
    orig: Vec<Function>,
    /// The base register: above every register the section uses.
    rb: u8,
    slot_of: BTreeMap<i64, u32>,
    spills: Vec<Spill>,
    /// A `MOV Rd, imm32` of the cubin, as a template.
    mov: u128,
    sm: u32,
}

/// Changes to the correct rewrite.
#[derive(Debug, Default, Clone)]
struct Variant {
    /// Extra instructions inserted before the original at this offset.
    extra: Vec<(u64, u128)>,
    /// Moved spill (original offset) → another slot.
    slot: HashMap<u64, u32>,
    /// Moved spill (original offset) → another data register.
    reg: HashMap<u64, u8>,
    /// Moved spills replaced by a NOP.
    nop: BTreeSet<u64>,
    /// Slots in the claim (default: one per spilled offset).
    slots: Option<u32>,
}

/// A `.64` shared access made 32-bit (width bits 73-75 = 4).
fn narrow(w: u128) -> u128 {
    encode::set_bits(w, 73, 3, 4)
}

fn stride() -> u32 {
    THREADS * 4
}

/// An original cubin decoded, and its `nvdisasm -c` listing: once per test process.
fn original(path: &Path) -> (Decoded, String) {
    static CACHE: std::sync::OnceLock<std::sync::Mutex<HashMap<PathBuf, (Decoded, String)>>> =
        std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().unwrap().get(path) {
        return v.clone();
    }
    let v = (
        decoded(path),
        fixtures::run_tool("nvdisasm", &["-c"], path).unwrap(),
    );
    cache.lock().unwrap().insert(path.to_path_buf(), v.clone());
    v
}

/// SpillRefill offsets of one text section, from the `nvdisasm -c` listing.
fn spill_refill(text: &str, kernel: &str) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix(".section\t") {
            inside =
                rest.trim().split(',').next().unwrap_or("").trim() == format!(".text.{kernel}");
            continue;
        }
        if inside
            && t.contains("SpillRefill")
            && let Some(rest) = t.strip_prefix("/*")
            && let Some((hex, _)) = rest.split_once("*/")
        {
            out.insert(u64::from_str_radix(hex.trim(), 16).unwrap());
        }
    }
    out
}

fn r1_imm(ins: &Instr) -> Option<i64> {
    ins.operands.iter().find_map(|o| match o.kind {
        OperandKind::Addr {
            reg: Some(1),
            reg_width: 1,
            ureg: None,
            desc: None,
            imm,
            ..
        } => Some(imm),
        _ => None,
    })
}

fn width_bytes(ins: &Instr) -> i64 {
    if ins.has_mod("128") {
        16
    } else if ins.has_mod("64") {
        8
    } else {
        4
    }
}

impl Spilled {
    fn new(label: &str, path: &Path, kernel: &str) -> Spilled {
        Spilled::build_plan(label, path, kernel, false)
    }

    /// Also move the 64-bit spills, each as two 32-bit accesses.
    fn with_wide(label: &str, path: &Path, kernel: &str) -> Spilled {
        Spilled::build_plan(label, path, kernel, true)
    }

    fn build_plan(label: &str, path: &Path, kernel: &str, split64: bool) -> Spilled {
        let (d, listing) = original(path);
        let sec = d
            .functions
            .iter()
            .find(|f| f.name == kernel)
            .unwrap_or_else(|| panic!("{label}: no {kernel}"))
            .section;
        let orig: Vec<Function> = d
            .functions
            .iter()
            .filter(|f| f.section == sec)
            .cloned()
            .collect();
        let max = orig
            .iter()
            .flat_map(|f| &f.instrs)
            .flat_map(|i| i.gpr_reads().into_iter().chain(i.gpr_writes()))
            .max()
            .unwrap_or(0);
        let rb = max + 1;
        let annotated = spill_refill(&listing, kernel);
        // Words any R1 access touches, and by which kinds of access.
        let mut wide_or_other: BTreeSet<i64> = BTreeSet::new();
        let mut cands = Vec::new();
        for ins in orig.iter().flat_map(|f| &f.instrs) {
            if !matches!(ins.op(), Op::Stl | Op::Ldl) {
                continue;
            }
            let Some(imm) = r1_imm(ins) else { continue };
            let data = if ins.op() == Op::Stl {
                ins.operands.last()
            } else {
                ins.operands.first()
            };
            let reg = match data.map(|o| &o.kind) {
                Some(OperandKind::Reg(r)) => *r,
                _ => 255,
            };
            let words: Vec<i64> = (0..width_bytes(ins) / 4).map(|k| imm + 4 * k).collect();
            let movable = annotated.contains(&ins.offset)
                && (width_bytes(ins) == 4 || (split64 && width_bytes(ins) == 8))
                && reg != 255
                && ins.always()
                && !ins
                    .modifiers()
                    .any(|m| matches!(m, "U8" | "S8" | "U16" | "S16"));
            if movable {
                cands.push(Spill {
                    off: ins.offset,
                    store: ins.op() == Op::Stl,
                    reg,
                    imm,
                    wide: width_bytes(ins) == 8,
                });
            } else {
                wide_or_other.extend(words);
            }
        }
        let spills: Vec<Spill> = cands
            .into_iter()
            .filter(|s| {
                let mut ws = vec![s.imm];
                if s.wide {
                    ws.push(s.imm + 4);
                }
                ws.iter().all(|w| !wide_or_other.contains(w))
            })
            .collect();
        let imms: BTreeSet<i64> = spills
            .iter()
            .flat_map(|s| [Some(s.imm), s.wide.then_some(s.imm + 4)])
            .flatten()
            .collect();
        let slot_of = imms
            .iter()
            .enumerate()
            .map(|(k, &i)| (i, k as u32))
            .collect();
        let mov = d
            .functions
            .iter()
            .flat_map(|f| &f.instrs)
            .map(|i| i.raw)
            .find(|&w| encode::opcode(w) == encode::OP_MOV_IMM)
            .unwrap_or_else(|| panic!("{label}: no MOV Rd, imm to copy"));
        Spilled {
            label: label.to_string(),
            bytes: std::fs::read(path).unwrap(),
            kernel: kernel.to_string(),
            orig,
            rb,
            slot_of,
            spills,
            mov,
            sm: d.sm,
        }
    }

    fn slots(&self) -> u32 {
        self.slot_of.len() as u32
    }

    /// `MOV Rd, imm` (always).
    fn mov(&self, rd: u8, imm: u32) -> u128 {
        let w = encode::set_reg(self.mov, RegField::Dst, rd);
        encode::set_guard(encode::set_imm32(w, imm), 7, false)
    }

    /// The shared form of a spill word: `STS [Rb + slot*stride], reg` / `LDS reg, [...]`.
    fn shared(&self, w: u128, store: bool, reg: u8, slot: u32) -> u128 {
        let w = encode::swap_local_shared(w).expect("STL/LDL");
        let w = encode::set_reg(w, RegField::A, self.rb);
        let w = encode::set_bits(w, 40, 24, u64::from(slot * stride()));
        encode::set_reg(w, if store { RegField::B } else { RegField::Dst }, reg)
    }

    /// A shared spill access built from the word of spill `s` (for inserted copies).
    fn shared_like(&self, s: &Spill, reg: u8, slot: u32) -> u128 {
        let w = self
            .orig
            .iter()
            .flat_map(|f| &f.instrs)
            .find(|i| i.offset == s.off)
            .unwrap()
            .raw;
        self.shared(w, s.store, reg, slot)
    }

    /// Build the rewrite (with `v` applied), decode it, and return it with its claim.
    fn build(&self, v: &Variant, dir: &Path, tag: &str) -> (Vec<Function>, Claim) {
        let mut c = Cubin::parse(&self.bytes).unwrap();
        let regs = c
            .function_info(&self.kernel)
            .and_then(|i| i.registers)
            .unwrap_or(0);
        if u32::from(self.rb) + 1 > regs {
            c.set_register_count(&self.kernel, u32::from(self.rb) + 1)
                .unwrap();
        }
        let mut ins: BTreeMap<u64, Vec<[u8; 16]>> = BTreeMap::new();
        ins.entry(0)
            .or_default()
            .push(encode::to_bytes(self.mov(self.rb, 0)));
        // The high halves of split 64-bit spills, right after their images.
        for sp in self.spills.iter().filter(|sp| sp.wide) {
            let w = self.orig[0]
                .instrs
                .iter()
                .find(|i| i.offset == sp.off)
                .unwrap()
                .raw;
            let hi = self.shared(w, sp.store, sp.reg + 1, self.slot_of[&(sp.imm + 4)]);
            ins.entry(sp.off + 16)
                .or_default()
                .push(encode::to_bytes(narrow(hi)));
        }
        for (off, w) in &v.extra {
            ins.entry(*off).or_default().push(encode::to_bytes(*w));
        }
        let ins: Vec<(u64, Vec<[u8; 16]>)> = ins.into_iter().collect();
        let rl = relayout::insert(&mut c, &self.kernel, &ins)
            .unwrap_or_else(|e| panic!("{}: {e}", self.label));
        let info = c.function_info(&self.kernel).unwrap();
        let mut text = c.elf().sections[info.text_section].data.clone();
        for s in &self.spills {
            let at = rl.map.map(s.off).unwrap() as usize;
            let w = encode::from_bytes(text[at..at + 16].try_into().unwrap());
            let nw = if v.nop.contains(&s.off) {
                encode::nop(1)
            } else {
                let slot = v.slot.get(&s.off).copied().unwrap_or(self.slot_of[&s.imm]);
                let reg = v.reg.get(&s.off).copied().unwrap_or(s.reg);
                let nw = self.shared(w, s.store, reg, slot);
                if s.wide { narrow(nw) } else { nw }
            };
            text[at..at + 16].copy_from_slice(&encode::to_bytes(nw));
        }
        c.replace_text(&self.kernel, text, &OffsetMap::new())
            .unwrap();
        let out = dir.join(format!("{}_{tag}.cubin", self.label));
        std::fs::write(&out, c.write().unwrap()).unwrap();
        let d = decoded(&out);
        let sec = d
            .functions
            .iter()
            .find(|f| f.name == self.kernel)
            .unwrap()
            .section;
        let fs = d
            .functions
            .into_iter()
            .filter(|f| f.section == sec)
            .collect();
        let claim = Claim {
            base: Some(SpillBase {
                reg: self.rb,
                defined_at: rl.inserted[0],
                stride: stride(),
                slots: v.slots.unwrap_or(self.slots()),
                area: 0,
            }),
            map: rl.map,
            inserted: rl.inserted,
            passed: Vec::new(),
            renamed: Default::default(),
        };
        (fs, claim)
    }

    fn check(&self, v: &Variant, dir: &Path, tag: &str) -> Result<verify::Proof, Rejection> {
        let (fs, claim) = self.build(v, dir, tag);
        let t = std::time::Instant::now();
        let r = verify::check(&self.orig, &fs, &claim);
        eprintln!("{} {tag}: checked in {:?}", self.label, t.elapsed());
        r
    }
}

/// The spill kernels of the fixtures, per architecture.
fn spill_kernels(fx: &Fixtures, dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = vec![(
        "sm89".to_string(),
        fx.get("spill_sm89_r24.cubin").path.clone(),
    )];
    for p in fixtures::extract_elfs(&fx.get("spill_r24.o").path, dir).unwrap() {
        if let Some(a) = fixtures::elf_arch(&p).filter(|a| matches!(a, 80 | 90)) {
            out.push((format!("sm{a}"), p));
        }
    }
    out
}

/// `_Z14spill_wide_f32PKfPfi` → `spill_wide_f32`.
fn short(k: &str) -> String {
    let rest = k
        .trim_start_matches("_Z")
        .trim_start_matches(|c: char| c.is_ascii_digit());
    let n: usize = k[2..2 + (k.len() - 2 - rest.len())]
        .parse()
        .unwrap_or(rest.len());
    rest[..n.min(rest.len())].to_string()
}

/// The correct rewrite of `kernels` (32-bit spills moved) and of `split` (64-bit spills
/// too, each as two 32-bit accesses) of the `arch` spill cubin proves.
fn correct_rewrites(arch: &str, kernels: &[&str], split: &[&str]) {
    let Some(fx) = fx() else { return };
    let dir = scratch(&format!("spill{arch}"));
    let (_, path) = spill_kernels(fx, dir.path())
        .into_iter()
        .find(|(a, _)| a == arch)
        .unwrap();
    for (k, wide) in kernels
        .iter()
        .map(|k| (k, false))
        .chain(split.iter().map(|k| (k, true)))
    {
        let label = format!("{arch}_{}{}", short(k), if wide { "_split" } else { "" });
        let s = if wide {
            Spilled::with_wide(&label, &path, k)
        } else {
            Spilled::new(&label, &path, k)
        };
        let n_wide = s.spills.iter().filter(|x| x.wide).count();
        assert!(
            s.spills.len() > 4,
            "{label}: {} spills moved",
            s.spills.len()
        );
        assert!(!wide || n_wide > 4, "{label}: {n_wide} 64-bit spills");
        let proof = s
            .check(&Variant::default(), dir.path(), "ok")
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        eprintln!(
            "{label}: {} spills ({n_wide} split), {} slots: {proof:?}",
            s.spills.len(),
            s.slots()
        );
        assert_eq!(proof.shared_moves, s.spills.len(), "{label}");
        assert_eq!(proof.inserted, 1 + n_wide, "{label}");
    }
}

#[test]
fn correct_spill_rewrites_prove_sm89() {
    correct_rewrites(
        "sm89",
        &[
            "_Z14spill_wide_f32PKfPfi",
            "_Z18spill_int_pointersPKiS0_S0_S0_Pxi",
            "_Z21spill_and_local_arrayPKiPKfPfi",
        ],
        &["_Z14spill_wide_f64PKdPdi", "_Z15spill_with_callPKfPfi"],
    );
}

#[test]
fn correct_spill_rewrites_prove_sm80() {
    correct_rewrites(
        "sm80",
        &[
            "_Z21spill_and_local_arrayPKiPKfPfi",
            "_Z15spill_with_callPKfPfi",
        ],
        &["_Z15spill_with_callPKfPfi"],
    );
}

#[test]
fn correct_spill_rewrites_prove_sm90() {
    correct_rewrites(
        "sm90",
        &[
            "_Z18spill_int_pointersPKiS0_S0_S0_Pxi",
            "_Z15spill_with_callPKfPfi",
        ],
        &["_Z15spill_with_callPKfPfi"],
    );
}

/// Control may leave or enter between two instructions of the kernel's list.
fn breaks_flow(i: &Instr) -> bool {
    i.is_branch()
        || i.is_call()
        || i.is_exit()
        || matches!(i.op(), Op::Bssy | Op::Bsync | Op::Warpsync | Op::Brx)
}

impl Spilled {
    fn kernel_instrs(&self) -> &[Instr] {
        &self.orig[0].instrs
    }

    fn spill_at(&self, off: u64) -> Option<&Spill> {
        self.spills.iter().find(|s| s.off == off)
    }

    /// A straight-line run `store(k) … [what] … reload(k)`: the moved spill store, the
    /// first later reload of the same slot, with no control flow and no other store of the
    /// slot between; `mid` must hold for some instruction strictly between.
    fn store_reload(&self, mid: impl Fn(&Instr, &Spill) -> bool) -> Option<(Spill, Spill, u64)> {
        let code = self.kernel_instrs();
        for (q, ins) in code.iter().enumerate() {
            let Some(st) = self.spill_at(ins.offset).filter(|s| s.store) else {
                continue;
            };
            let mut hit = None;
            for later in &code[q + 1..] {
                if breaks_flow(later) {
                    break;
                }
                if let Some(s) = self.spill_at(later.offset)
                    && s.imm == st.imm
                {
                    if s.store {
                        break;
                    }
                    if let Some(h) = hit {
                        return Some((*st, *s, h));
                    }
                    break;
                }
                if hit.is_none() && mid(later, st) {
                    hit = Some(later.offset);
                }
            }
        }
        None
    }

    fn spare_slot(&self) -> u32 {
        self.slots()
    }
}

/// Build the variant, check it, and return the rejection (with the claim, for offsets).
fn rejected(s: &Spilled, v: &Variant, dir: &Path, tag: &str) -> (Rejection, Claim) {
    let (fs, claim) = s.build(v, dir, tag);
    match verify::check(&s.orig, &fs, &claim) {
        Ok(p) => panic!("{} {tag}: the corrupted rewrite was proved: {p:?}", s.label),
        Err(e) => {
            eprintln!("{} {tag}: {e}", s.label);
            (e, claim)
        }
    }
}

fn expect_rejection(s: &Spilled, v: &Variant, dir: &Path, tag: &str) -> Rejection {
    rejected(s, v, dir, tag).0
}

#[test]
fn corrupted_spill_rewrites_are_rejected() {
    let Some(fx) = fx() else { return };
    let dir = scratch("mutate");
    let path = fx.get("spill_sm89_r24.cubin").path.clone();
    let s = Spilled::new(
        "sm89_int_pointers",
        &path,
        "_Z18spill_int_pointersPKiS0_S0_S0_Pxi",
    );
    s.check(&Variant::default(), dir.path(), "ok")
        .unwrap_or_else(|e| panic!("the correct rewrite: {e}"));

    // (a) Wrong slot: a store of another spill goes into the slot a later reload reads,
    // between the slot's own store and that reload.
    let (st, reload, other) = s
        .store_reload(|i, st| {
            s.spill_at(i.offset)
                .is_some_and(|o| o.store && o.imm != st.imm)
        })
        .expect("a store of another slot between a store and its reload");
    let mut v = Variant::default();
    v.slot.insert(other, s.slot_of[&st.imm]);
    let e = expect_rejection(&s, &v, dir.path(), "a_shared_slot");
    assert!(
        e.reason.contains(&format!("R{} ", reload.reg)),
        "names the reloaded register R{}: {e}",
        reload.reg
    );

    // (b) Missing store: the store becomes a NOP (the move has no image), or writes a slot
    // nobody reads (the reload then finds nothing).
    let mut v = Variant::default();
    v.nop.insert(st.off);
    let e = expect_rejection(&s, &v, dir.path(), "b_nop");
    assert!(e.reason.contains("spill move"), "{e}");
    assert!(e.reason.contains("NOP"), "{e}");
    let mut v = Variant {
        slots: Some(s.slots() + 1),
        ..Variant::default()
    };
    v.slot.insert(st.off, s.spare_slot());
    let e = expect_rejection(&s, &v, dir.path(), "b_other_slot");
    assert!(
        e.reason
            .contains(&format!("R{} holds nothing known", reload.reg)),
        "{e}"
    );
    assert_eq!(e.check, Check::Values, "{e}");

    // (c) The base register clobbered in the middle: the next spill access through it fails.
    let mid = s.spills[s.spills.len() / 2];
    let v = Variant {
        extra: vec![(mid.off, s.mov(s.rb, 0x40))],
        ..Variant::default()
    };
    let e = expect_rejection(&s, &v, dir.path(), "c_base");
    assert!(
        e.reason.contains(&format!("R{} holds", s.rb)) && e.reason.contains("spill base"),
        "{e}"
    );
    assert_eq!(e.check, Check::Values, "{e}");

    // (e) An inserted instruction overwrites a register the next original instruction reads.
    let (x, r) = s
        .kernel_instrs()
        .iter()
        .skip(16)
        .filter(|i| s.spill_at(i.offset).is_none() && !breaks_flow(i))
        .find_map(|i| {
            let r = *i.gpr_reads().iter().find(|&&r| r != 1)?;
            Some((i.offset, r))
        })
        .unwrap();
    let v = Variant {
        extra: vec![(x, s.mov(r, 0))],
        ..Variant::default()
    };
    let e = expect_rejection(&s, &v, dir.path(), "e_clobber");
    assert!(
        e.reason.contains(&format!("R{r} holds nothing known")),
        "{e}"
    );
    assert_eq!(e.check, Check::Values, "{e}");

    // (f) A wrong data register in a spill store: the reload gets another value.
    let wrong = if st.reg > 2 { st.reg - 1 } else { st.reg + 1 };
    let mut v = Variant::default();
    v.reg.insert(st.off, wrong);
    let e = expect_rejection(&s, &v, dir.path(), "f_data");
    assert!(
        e.reason.contains(&format!("R{} ", reload.reg)),
        "names the reloaded register R{}: {e}",
        reload.reg
    );
}

/// (d) Spill moves on the wrong side of a call, in the kernel with spills around
/// `__noinline__` calls (sm_80 and sm_90 from the host object, sm_89 cubin).
#[test]
fn spill_moves_across_calls_are_rejected() {
    let Some(fx) = fx() else { return };
    let dir = scratch("calls");
    let (mut done, mut literal) = (0, 0);
    for (arch, path) in spill_kernels(fx, dir.path()) {
        let s = Spilled::new(
            &format!("{arch}_with_call"),
            &path,
            "_Z15spill_with_callPKfPfi",
        );
        let code = s.kernel_instrs();
        // nvdisasm lists the callee inside the kernel's code: it starts at the call target.
        let first_call = code
            .iter()
            .find(|i| i.is_call() && i.callee.is_some())
            .unwrap();
        let callee_name = first_call.callee.clone().unwrap();
        let start = encode::direct_target(s.sm, first_call.offset, first_call.raw).unwrap();
        let body: Vec<&Instr> = code.iter().filter(|i| i.offset >= start).collect();
        // The callee's arguments and results.
        let args: BTreeSet<u8> = body.iter().flat_map(|i| i.gpr_reads()).collect();
        // A reload of an argument register before a call, nothing in between writing it:
        // the rewrite reloads it after the call instead.
        let mut found = None;
        for (p, ins) in code.iter().enumerate().filter(|(_, i)| i.offset < start) {
            let Some(rl) = s
                .spill_at(ins.offset)
                .filter(|x| !x.store && args.contains(&x.reg))
            else {
                continue;
            };
            for later in &code[p + 1..] {
                if later.is_call() && later.callee.as_deref() == Some(callee_name.as_str()) {
                    found = Some((*rl, later.offset));
                    break;
                }
                if breaks_flow(later) || later.gpr_writes().contains(&rl.reg) {
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        let (rl, call) = found.expect("a reload of an argument before a call");
        let mut v = Variant {
            slots: Some(s.slots() + 1),
            extra: vec![(call + 16, s.shared_like(&rl, rl.reg, s.slot_of[&rl.imm]))],
            ..Variant::default()
        };
        v.slot.insert(rl.off, s.spare_slot());
        let (e, claim) = rejected(&s, &v, dir.path(), "d_reload_after_call");
        assert_eq!(e.offset, claim.map.map(call).unwrap(), "at the call: {e}");
        assert!(
            e.reason.contains(&format!("R{} holds", rl.reg)) && e.reason.contains("live into"),
            "{e}"
        );

        // A store of the call's result register moved before the call.
        let results: BTreeSet<u8> = body.iter().flat_map(|i| i.gpr_writes()).collect();
        let mut found = None;
        for (c, ins) in code.iter().enumerate() {
            if !(ins.is_call() && ins.callee.as_deref() == Some(callee_name.as_str())) {
                continue;
            }
            for later in &code[c + 1..] {
                if let Some(st) = s
                    .spill_at(later.offset)
                    .filter(|x| x.store && results.contains(&x.reg))
                {
                    found = Some((*st, ins.offset));
                    break;
                }
                if breaks_flow(later) || later.gpr_writes().iter().any(|r| results.contains(r)) {
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        let (st, call) = found.expect("a store of the call's result");
        let mut v = Variant {
            slots: Some(s.slots() + 1),
            extra: vec![(call, s.shared_like(&st, st.reg, s.slot_of[&st.imm]))],
            ..Variant::default()
        };
        v.slot.insert(st.off, s.spare_slot());
        let (e, claim) = rejected(&s, &v, dir.path(), "d_store_before_call");
        // The slot's reload gets the argument's value, not the result: the first original
        // instruction that uses it (here, a later call) fails.
        assert!(e.offset > claim.map.map(st.off).unwrap(), "{e}");
        assert!(e.reason.contains("needs orig R"), "{e}");
        assert_eq!(e.check, Check::Values, "{e}");

        // A reload of a register the callee writes, moved from after the call to before it.
        let is_call = |i: &Instr| i.is_call() && i.callee.as_deref() == Some(callee_name.as_str());
        let mut found = None;
        for (c, ins) in code.iter().enumerate().filter(|(_, i)| is_call(i)) {
            for later in &code[c + 1..] {
                if let Some(rl) = s
                    .spill_at(later.offset)
                    .filter(|x| !x.store && results.contains(&x.reg))
                {
                    found = Some((*rl, ins.offset));
                    break;
                }
                if breaks_flow(later) {
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        if let Some((rl, call)) = found {
            let mut v = Variant {
                slots: Some(s.slots() + 1),
                extra: vec![(call, s.shared_like(&rl, rl.reg, s.slot_of[&rl.imm]))],
                ..Variant::default()
            };
            v.slot.insert(rl.off, s.spare_slot());
            // Either the early reload overwrites an argument of the call, or the register
            // lacks the callee's result after it: the rejection names the register.
            let (e, claim) = rejected(&s, &v, dir.path(), "d_reload_before_call");
            assert!(e.offset >= claim.map.map(call).unwrap(), "{e}");
            assert!(e.reason.contains(&format!("R{} holds", rl.reg)), "{e}");
            literal += 1;
        }

        // A store of a register the callee writes, moved from before the call to after it.
        let mut found = None;
        for (p, ins) in code.iter().enumerate().filter(|(_, i)| i.offset < start) {
            let Some(st) = s
                .spill_at(ins.offset)
                .filter(|x| x.store && results.contains(&x.reg))
            else {
                continue;
            };
            for later in &code[p + 1..] {
                if is_call(later) {
                    found = Some((*st, later.offset));
                    break;
                }
                if breaks_flow(later) || later.gpr_writes().contains(&st.reg) {
                    break;
                }
            }
            if found.is_some() {
                break;
            }
        }
        if let Some((st, call)) = found {
            let mut v = Variant {
                slots: Some(s.slots() + 1),
                extra: vec![(call + 16, s.shared_like(&st, st.reg, s.slot_of[&st.imm]))],
                ..Variant::default()
            };
            v.slot.insert(st.off, s.spare_slot());
            let (e, claim) = rejected(&s, &v, dir.path(), "d_store_after_call");
            assert!(e.offset > claim.map.map(call).unwrap(), "{e}");
            assert!(e.reason.contains("needs orig R"), "{e}");
            assert_eq!(e.check, Check::Values, "{e}");
            assert_eq!(e.check, Check::Values, "{e}");
            literal += 1;
        }
        done += 1;
    }
    assert_eq!(done, 3);
    assert!(
        literal >= 2,
        "{literal} reloads/stores moved across calls the other way"
    );
}

/// A consistent renaming of slots (two slots exchanged everywhere) is still correct, an
/// inserted branch is not.
#[test]
fn slot_permutation_proves_and_inserted_branch_is_rejected() {
    let Some(fx) = fx() else { return };
    let dir = scratch("perm");
    let path = fx.get("spill_sm89_r24.cubin").path.clone();
    let s = Spilled::new("sm89_wide_f64", &path, "_Z14spill_wide_f64PKdPdi");
    assert!(s.slots() >= 2);
    let (k1, k2) = (
        *s.slot_of.keys().next().unwrap(),
        *s.slot_of.keys().last().unwrap(),
    );
    let mut v = Variant::default();
    for sp in &s.spills {
        if sp.imm == k1 {
            v.slot.insert(sp.off, s.slot_of[&k2]);
        } else if sp.imm == k2 {
            v.slot.insert(sp.off, s.slot_of[&k1]);
        }
    }
    s.check(&v, dir.path(), "perm")
        .unwrap_or_else(|e| panic!("exchanged slots: {e}"));

    // A copy of the function's own `BRA` inserted in the middle.
    let bra = s
        .kernel_instrs()
        .iter()
        .find(|i| i.op() == Op::Bra)
        .unwrap()
        .raw;
    let mid = s.kernel_instrs()[s.kernel_instrs().len() / 2].offset;
    let v = Variant {
        extra: vec![(mid, bra)],
        ..Variant::default()
    };
    let e = expect_rejection(&s, &v, dir.path(), "inserted_bra");
    assert!(e.reason.contains("transfers control"), "{e}");
    assert_eq!(e.check, Check::InsertedControl, "{e}");
}

/// Malformed claims and inputs are rejections, never panics.
#[test]
fn bad_claims_are_rejected() {
    let Some(fx) = fx() else { return };
    let path = fx.get("spill_sm89_r24.cubin").path.clone();
    let d = decoded(&path);
    let secs = sections(&d);
    let fs = secs
        .values()
        .find(|fs| fs[0].name == "_Z15spill_with_callPKfPfi")
        .unwrap();
    let n = fs[0].instrs.len() as u64;
    // Two originals on one offset.
    let mut map = OffsetMap::new();
    map.insert(0x100, 0xf0);
    let c = Claim {
        map,
        ..Claim::default()
    };
    let e = verify::check(fs, fs, &c).unwrap_err();
    assert!(e.reason.contains("map to one offset"), "{e}");
    assert_eq!(e.check, Check::Mapping, "{e}");
    // An inserted offset outside the section, a base defined by an original instruction.
    let c = Claim {
        inserted: vec![16 * n + 0x1000],
        ..Claim::default()
    };
    assert!(verify::check(fs, fs, &c).is_err());
    let c = Claim {
        base: Some(SpillBase {
            reg: 30,
            defined_at: 0,
            stride: 1024,
            slots: 4,
            area: 0,
        }),
        ..Claim::default()
    };
    let e = verify::check(fs, fs, &c).unwrap_err();
    assert!(e.reason.contains("not an inserted instruction"), "{e}");
    assert_eq!(e.check, Check::Claim, "{e}");
    // Function lists that do not match.
    assert!(verify::check(fs, &[], &Claim::default()).is_err());
    let mut renamed = fs.clone();
    renamed[0].name = "other".into();
    assert!(verify::check(fs, &renamed, &Claim::default()).is_err());
    // Pseudo-random maps, inserted lists and bases over every section: no panic, and
    // anything that is not the identity of a non-recursive section is rejected or proved
    // without crashing.
    let mut rng = relayout::SplitMix64(7);
    for fs in secs.values() {
        for _ in 0..20 {
            let mut map = OffsetMap::new();
            for _ in 0..rng.below(3) {
                map.insert(16 * rng.below(n + 8), 16 * rng.below(n + 8));
            }
            let inserted = (0..rng.below(3)).map(|_| 16 * rng.below(n + 8)).collect();
            let base = (rng.below(2) == 1).then(|| SpillBase {
                reg: rng.below(256) as u8,
                defined_at: 16 * rng.below(n + 2),
                stride: rng.below(3) as u32 * 512,
                slots: rng.below(4) as u32,
                area: 0,
            });
            let c = Claim {
                map,
                inserted,
                base,
                passed: Vec::new(),
                renamed: Default::default(),
            };
            let mut shuffled = fs.clone();
            if rng.below(4) == 0 {
                let f = &mut shuffled[0];
                let i = rng.below(f.instrs.len() as u64) as usize;
                let j = rng.below(f.instrs.len() as u64) as usize;
                f.instrs.swap(i, j);
            }
            let _ = verify::check(fs, &shuffled, &c);
        }
    }
}
