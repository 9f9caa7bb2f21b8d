//! The SASS listing (`nvdisasm -json` plus the raw control fields) and the stall predictor on
//! real ptxas output: every instruction's control field is read at the right offset (checked
//! against `nvdisasm -hex`), and the predictor prices spill code above the same kernel
//! compiled without spills.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use common::fixtures::{self, Fixtures};
use nvcc_orion::cubin::Cubin;
use nvcc_orion::predict::Sm;
use nvcc_orion::predict::memory::Placement;
use nvcc_orion::predict::stalls::function_cost;
use nvcc_orion::sass::access::bytes_per_thread;
use nvcc_orion::sass::raw;
use std::process::Command;

fn fx() -> Option<&'static Fixtures> {
    fixtures::fixtures()
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("sass-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// The high words `nvdisasm -hex` prints, in order, per function.
fn hex_high_words(cubin: &std::path::Path) -> Vec<u64> {
    let text = fixtures::run_tool("nvdisasm", &["-hex", "-c"], cubin).unwrap();
    // Each instruction: `/*0010*/ OP ... ; /* 0xLOW */` then a line `/* 0xHIGH */`.
    let mut out = Vec::new();
    let mut pending = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("/*") && t.contains("*/") && t.contains(';') && t.contains("/* 0x") {
            pending = true;
        } else if pending && t.starts_with("/* 0x") {
            let hex = t.trim_start_matches("/* 0x").trim_end_matches("*/").trim();
            out.push(u64::from_str_radix(hex, 16).unwrap());
            pending = false;
        }
    }
    out
}

#[test]
fn control_fields_match_nvdisasm_on_every_arch() {
    let Some(fx) = fx() else { return };
    let dir = scratch("listing");
    let cubins = fixtures::extract_elfs(&fx.get("calls_all.o").path, dir.path()).unwrap();
    assert_eq!(cubins.len(), 7);
    for c in &cubins {
        let fs = super::sass_relayout::listed(c);
        assert!(fs.len() >= 5, "{}: {} functions", c.display(), fs.len());
        // nvdisasm -hex prints sections in the same order as -json prints functions.
        let ours: Vec<u64> = fs
            .iter()
            .flat_map(|f| &f.instrs)
            .map(|i| u64::from(i.ctrl.to_bits()) << 41)
            .collect();
        let theirs: Vec<u64> = hex_high_words(c)
            .into_iter()
            .map(|h| h & !((1 << 41) - 1))
            .collect();
        assert_eq!(ours.len(), theirs.len(), "{}", c.display());
        assert!(ours == theirs, "{}: control fields differ", c.display());
        // Every function ends in ptxas's padding, and kernels branch somewhere.
        assert!(
            fs.iter()
                .flat_map(|f| &f.instrs)
                .any(|i| i.target.is_some())
        );
    }
}

#[test]
fn predictor_prices_spills_above_registers() {
    let Some(fx) = fx() else { return };
    let dir = scratch("predict");
    let src = fx.src_dir().join("spill.cu");
    let nvcc = fixtures::tool("nvcc");
    // The predictor reads what the tuner reads: the IR decoded from the bytes.
    let build = |cap: Option<u32>, out: &str| {
        let out = dir.path().join(out);
        let mut cmd = Command::new(&nvcc);
        cmd.args(["-cubin", "-arch=sm_89", "-o"])
            .arg(&out)
            .arg(&src);
        if let Some(c) = cap {
            cmd.arg(format!("-maxrregcount={c}"));
        }
        let r = cmd.output().unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        raw::functions(&Cubin::parse(&std::fs::read(&out).unwrap()).unwrap())
    };
    let capped = build(Some(24), "capped.cubin");
    let free = build(None, "free.cubin");
    let mut compared = 0;
    for name in ["_Z14spill_wide_f32PKfPfi", "_Z14spill_wide_f64PKdPdi"] {
        // Priced alike: local data in L1 (a frame that fits).
        let m = Sm::of(89).memory();
        let at = Placement::new(&m, 0, 0, 0).latencies(&m);
        let c = function_cost(89, &at, &capped, name).unwrap_or_else(|| panic!("{name} in capped"));
        let f = function_cost(89, &at, &free, name).unwrap_or_else(|| panic!("{name} in free"));
        assert!(
            c.local_accesses > 0.0,
            "{name}: the 24-register build spills"
        );
        assert!(
            c.local_accesses > f.local_accesses,
            "{name}: {c:?} vs {f:?}"
        );
        assert!(
            c.latency > f.latency,
            "{name}: spills must cost latency: {c:?} vs {f:?}"
        );
        compared += 1;
    }
    assert_eq!(compared, 2);
}

/// The bytes one thread moves, from nvdisasm's modifiers, for the loads and stores whose size
/// `sass::access` reads from the instruction's bits.
fn access_size(opcode: &str) -> Option<u32> {
    let mut parts = opcode.split('.');
    let base = parts.next()?;
    if !["LDG", "STG", "LDL", "STL", "LDS", "STS", "LD", "ST"].contains(&base) {
        return None;
    }
    let mut size = 4;
    for m in parts {
        size = match m {
            "U8" | "S8" => 1,
            "U16" | "S16" => 2,
            "64" => 8,
            "128" => 16,
            _ => size,
        };
    }
    Some(size)
}

/// The tuner decodes variants from their bytes (`sass::raw`), not with nvdisasm: on every
/// function of every arch it must agree with nvdisasm on what nvdisasm says.
#[test]
fn raw_decoding_agrees_with_nvdisasm() {
    let Some(fx) = fx() else { return };
    let dir = scratch("raw");
    let mut cubins = fixtures::extract_elfs(&fx.get("calls_all.o").path, dir.path()).unwrap();
    cubins.push(fx.get("spill_sm89_r24.cubin").path.clone());
    cubins.push(fx.get("memory_sm86.cubin").path.clone());
    let (mut known, mut total, mut branches, mut calls) = (0, 0, 0, 0);
    let mut sizes = std::collections::BTreeSet::new();
    for c in &cubins {
        let theirs = super::sass_relayout::listed(c);
        let cubin = Cubin::parse(&std::fs::read(c).unwrap()).unwrap();
        let ours = raw::functions(&cubin);
        // nvdisasm lists a sub-function reached only through a function pointer inside its
        // kernel's range, so compare by section and offset, not by function.
        let section_of: std::collections::HashMap<String, usize> = cubin
            .functions()
            .into_iter()
            .map(|f| (f.name, f.text_section))
            .collect();
        let mut by_offset = std::collections::HashMap::new();
        for o in &ours {
            for i in &o.instrs {
                by_offset.insert((section_of[&o.name], i.offset), i);
            }
        }
        for f in &theirs {
            let section = section_of[&f.name];
            for b in &f.instrs {
                let at = format!("{} {} {:#x}", c.display(), f.name, b.offset);
                let a = by_offset
                    .get(&(section, b.offset))
                    .unwrap_or_else(|| panic!("{at}: not decoded"));
                assert_eq!(a.ctrl, b.ctrl, "{at}");
                assert_eq!(a.target, b.target, "{at}: {} {}", b.opcode, b.operands);
                assert_eq!(a.callee, b.callee, "{at}: {} {}", b.opcode, b.operands);
                let pred = |p: &Option<String>| p.clone().filter(|p| p != "@PT");
                let ours = a.predicate.map(|p| p.to_string());
                assert_eq!(pred(&ours), pred(&b.predicate), "{at}");
                total += 1;
                if !a.opcode.as_str().starts_with("UNKNOWN") {
                    assert_eq!(a.op(), b.op(), "{at}");
                    assert_eq!(a.base(), b.base(), "{at}");
                    assert_eq!(a.class(), b.opcode.class(), "{at}");
                    known += 1;
                }
                branches += usize::from(b.target.is_some());
                calls += usize::from(b.callee.is_some());
                // The access size the predictor reads from the bits is nvdisasm's modifier.
                if let Some(want) = access_size(b.opcode.as_str()) {
                    assert_eq!(bytes_per_thread(a), want, "{at}: {}", b.opcode);
                    sizes.insert((
                        b.opcode.as_str().split('.').next().unwrap().to_string(),
                        want,
                    ));
                }
            }
        }
    }
    let distinct: std::collections::BTreeSet<u32> = sizes.iter().map(|s| s.1).collect();
    assert!(distinct.len() >= 4, "access sizes seen: {sizes:?}");
    assert!(
        branches > 100 && calls > 10,
        "{branches} branches, {calls} calls"
    );
    assert!(
        known * 100 >= total * 95,
        "only {known} of {total} mnemonics known"
    );
}
