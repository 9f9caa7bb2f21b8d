//! The cubin layer (`nvcc_orion::cubin`) on real toolchain output: every cubin of the fixture
//! matrix (bare cubins and every cubin inside fatbins, objects, executables and the archive)
//! round-trips byte-identically, its queries agree with `cuobjdump -res-usage` / `-elf` and
//! nvdisasm, and edited cubins are accepted by the toolkit with the new values.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

mod common;

use common::fixtures::{self, Fixtures};
use nvcc_orion::cubin::{Cubin, OffsetMap};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn fx() -> Option<&'static Fixtures> {
    fixtures::fixtures()
}

/// Every distinct cubin of the matrix: (label, path, bytes), deduplicated by contents.
fn all_cubins() -> &'static Vec<(String, PathBuf, Vec<u8>)> {
    static ALL: OnceLock<Vec<(String, PathBuf, Vec<u8>)>> = OnceLock::new();
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
        if let Some(rest) = t.strip_prefix(".text.") {
            if let Some(name) = rest.strip_suffix(':') {
                current = name.to_string();
                continue;
            }
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

#[allow(dead_code)]
fn unused(_: OffsetMap) {}
