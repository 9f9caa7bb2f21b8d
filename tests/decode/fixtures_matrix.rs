//! The shared fixture matrix (`tests/common/fixtures.rs`) and its toolkit oracles, checked on
//! the real fixtures: every artifact is there and holds what its row says, and every oracle
//! parses the toolkit's output for every kind of file.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use common::fixtures::{self, Artifact, Fixtures, Kind, MATRIX};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn fx() -> Option<&'static Fixtures> {
    fixtures::fixtures()
}

fn set<T: Ord + Clone>(v: impl IntoIterator<Item = T>) -> BTreeSet<T> {
    v.into_iter().collect()
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("fixtures-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Kernels whose source is in `file` (by the names they have in the cubin built from it).
fn kernels_of(fx: &Fixtures, cubin: &str) -> BTreeSet<String> {
    fx.get(cubin).kernels.clone()
}

// ---------------------------------------------------------------------------------------------
// The table itself (no nvcc needed)
// ---------------------------------------------------------------------------------------------

#[test]
fn matrix_covers_every_arch_flag_and_kind() {
    let flags: BTreeSet<&str> = MATRIX
        .iter()
        .flat_map(|e| e.flags.iter().copied())
        .collect();
    for f in [
        "-G",
        "-lineinfo",
        "-rdc=true",
        "-dc",
        "-dlink",
        "-compress-mode=size",
        "-compress-mode=speed",
        "-compress-mode=none",
        "-maxrregcount=24",
        "-cubin",
        "-fatbin",
        "-c",
    ] {
        assert!(flags.contains(f), "no row uses {f}");
    }
    let arch_text: String = MATRIX
        .iter()
        .flat_map(|e| e.flags.iter())
        .copied()
        .collect();
    for sm in [75, 80, 86, 89, 90, 100, 120] {
        assert!(
            arch_text.contains(&format!("sm_{sm}")),
            "no row targets sm_{sm}"
        );
    }
    let kinds: BTreeSet<Kind> = MATRIX.iter().map(|e| e.kind).collect();
    for k in [
        Kind::Cubin,
        Kind::Fatbin,
        Kind::Object,
        Kind::RdcObject,
        Kind::Executable,
        Kind::Archive,
    ] {
        assert!(kinds.contains(&k), "no row of kind {k:?}");
    }
    let names: BTreeSet<&str> = MATRIX.iter().map(|e| e.name).collect();
    assert_eq!(names.len(), MATRIX.len(), "duplicate row names");
    // Every source file of the matrix is used by some row.
    for entry in std::fs::read_dir(fixtures::matrix_sources_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".cu") {
            assert!(
                MATRIX.iter().any(|e| e.inputs.contains(&name.as_str())),
                "{name} is in no row"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The build
// ---------------------------------------------------------------------------------------------

#[test]
fn every_artifact_exists_with_its_kernels() {
    let Some(fx) = fx() else { return };
    assert_eq!(fx.artifacts.len(), MATRIX.len());
    assert!(fx.dir.join("COMPLETE").is_file());
    for a in &fx.artifacts {
        let len = std::fs::metadata(&a.path).unwrap().len();
        assert!(len > 0, "{} is empty", a.name);
        assert!(!a.arches.is_empty(), "{} has no arch", a.name);
        assert!(!a.kernels.is_empty(), "{} has no kernel", a.name);
        let head = std::fs::read(&a.path).unwrap();
        match a.kind {
            Kind::Cubin | Kind::Object | Kind::RdcObject | Kind::Executable => {
                assert!(head.starts_with(b"\x7fELF"), "{} is not an ELF", a.name)
            }
            Kind::Fatbin => assert!(
                head.starts_with(&0xBA55_ED50u32.to_le_bytes()),
                "{} has no fatbin magic",
                a.name
            ),
            Kind::Archive => assert!(
                head.starts_with(b"!<arch>\n"),
                "{} is not an archive",
                a.name
            ),
        }
    }
    let all = fx.all_kernels();
    assert!(
        all.len() >= 40,
        "only {} distinct kernels: {all:?}",
        all.len()
    );
    // Template instances are distinct kernels.
    assert_eq!(
        all.iter()
            .filter(|k| k.starts_with("_Z15horner_unrolled"))
            .count(),
        4
    );
    assert_eq!(
        all.iter()
            .filter(|k| k.starts_with("_Z16block_reduce_sum"))
            .count(),
        3
    );
    // Every kernel of the sources is in some fixture.
    for k in [
        "_Z13fma_chain_f32PKfPfi",
        "_Z13recursive_fibPKiPii",
        "_Z13printf_reportPKii",
        "_Z14spill_wide_f32PKfPfi",
        "_Z19grid_sync_two_phasePfS_i",
        "_Z13rdc_use_blendPKfS0_Pfi",
        "_Z9main_initPfif",
    ] {
        assert!(all.contains(k), "{k} missing from {all:?}");
    }
    eprintln!(
        "{} artifacts, {} distinct kernels, in {} (built in {:?})",
        fx.artifacts.len(),
        all.len(),
        fx.dir.display(),
        fx.build_time
    );
}

#[test]
fn fixtures_are_built_once_and_reused() {
    let Some(fx) = fx() else { return };
    // Every process of a test run, and every later run, finds the same folder.
    let log = std::fs::read_to_string(fx.dir.parent().unwrap().join("builds.log")).unwrap();
    let builds = log.lines().filter(|l| l.starts_with(&fx.key)).count();
    assert_eq!(
        builds, 1,
        "the matrix {} was built {builds} times:\n{log}",
        fx.key
    );
    assert!(fx.build_time.is_some());
    assert!(fx.dir.join("commands.log").is_file());
    let tmp_left = std::fs::read_dir(fx.dir.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{}.tmp.", fx.key))
        })
        .count();
    assert_eq!(tmp_left, 0, "temporary build folders left behind");
    // The sources that made the fixtures are kept next to them.
    assert!(fx.src_dir().join("math.cu").is_file());
}

#[test]
fn artifact_metadata_follows_the_flags() {
    let Some(fx) = fx() else { return };
    let a = fx.get("calls_all.o");
    assert_eq!(a.arches, vec![75, 80, 86, 89, 90, 100, 120]);
    assert_eq!(a.ptx_arches, vec![120]);
    assert_eq!(a.sources, vec!["calls.cu"]);
    let c = fx.get("math_sm75.cubin");
    assert_eq!((c.arches.clone(), c.ptx_arches.clone()), (vec![75], vec![]));
    let f = fx.get("memory_size.fatbin");
    assert_eq!(
        (f.arches.clone(), f.ptx_arches.clone()),
        (vec![80], vec![80])
    );
    let ar = fx.get("librdc.a");
    assert_eq!(ar.arches, vec![80, 100]);
    assert_eq!(ar.sources, vec!["rdc_lib.cu", "rdc_use.cu"]);
    assert_eq!(
        fx.get("app_rdc").sources,
        vec!["main.cu", "rdc_lib.cu", "rdc_use.cu"]
    );
    assert!(fx.get("math_sm90_G.cubin").has_flag("-G"));
}

// ---------------------------------------------------------------------------------------------
// cuobjdump -lelf / -lptx
// ---------------------------------------------------------------------------------------------

#[test]
fn listings_show_every_arch_of_every_artifact() {
    let Some(fx) = fx() else { return };
    for a in &fx.artifacts {
        let elf = fixtures::list_elf(&a.path).unwrap();
        let ptx = fixtures::list_ptx(&a.path).unwrap();
        assert_eq!(
            set(elf.iter().map(|l| l.arch)),
            set(a.arches.iter().copied()),
            "{}: ELF listing {elf:?}",
            a.name
        );
        assert_eq!(
            set(ptx.iter().map(|l| l.arch)),
            set(a.ptx_arches.iter().copied()),
            "{}: PTX listing {ptx:?}",
            a.name
        );
        // Numbering is 1..=n in order.
        assert!(
            elf.iter().enumerate().all(|(i, l)| l.number == i + 1),
            "{elf:?}"
        );
        match a.kind {
            // One image per arch...
            Kind::Cubin | Kind::Fatbin | Kind::Object | Kind::RdcObject => {
                assert_eq!(elf.len(), a.arches.len(), "{}: {elf:?}", a.name)
            }
            // ...one per member and arch...
            Kind::Archive => {
                assert_eq!(elf.len(), 4, "{elf:?}");
                assert_eq!(
                    set(elf.iter().map(|l| l
                        .member
                        .clone()
                        .unwrap()
                        .rsplit(':')
                        .next()
                        .unwrap()
                        .to_string())),
                    set(["rdc_lib.o".to_string(), "rdc_use.o".to_string()])
                );
            }
            // ...and executables hold several fatbins: one per translation unit plus one more,
            // each with every arch (whole program), or the device-linked image only (rdc).
            Kind::Executable => {
                assert_eq!(elf.len() % a.arches.len(), 0, "{}: {elf:?}", a.name);
                assert!(elf.len() >= a.arches.len(), "{}: {elf:?}", a.name);
            }
        }
    }
    // Whole-program executable: 3 TUs + 1 image group without functions.
    assert_eq!(
        fixtures::list_elf(&fx.get("app").path).unwrap().len(),
        4 * 3
    );
    // A device-linked executable lists the linked image only (the inputs' relocatable cubins
    // stay in `__nv_relfatbin`, which cuobjdump does not list).
    assert_eq!(
        fixtures::list_elf(&fx.get("app_rdc").path).unwrap().len(),
        2
    );
}

// ---------------------------------------------------------------------------------------------
// cuobjdump -res-usage
// ---------------------------------------------------------------------------------------------

#[test]
fn res_usage_has_every_kernel_of_every_image() {
    let Some(fx) = fx() else { return };
    for a in &fx.artifacts {
        let images =
            fixtures::res_usage_images(&a.path).unwrap_or_else(|e| panic!("{}: {e}", a.name));
        let listed = fixtures::list_elf(&a.path).unwrap();
        assert_eq!(
            images.len(),
            listed.len(),
            "{}: one block per ELF image",
            a.name
        );
        for (img, l) in images.iter().zip(&listed) {
            assert_eq!(
                img.arch, l.arch,
                "{}: image order differs from -lelf",
                a.name
            );
            assert_eq!(img.member, l.member, "{}", a.name);
            assert!(img.common.contains_key("GLOBAL"), "{}: {img:?}", a.name);
        }
        for &arch in &a.arches {
            let names: BTreeSet<&str> = images
                .iter()
                .filter(|i| i.arch == arch)
                .flat_map(|i| i.functions.iter().map(|f| f.function.as_str()))
                .collect();
            for k in &a.kernels {
                assert!(
                    names.contains(k.as_str()),
                    "{} sm_{arch}: no res-usage for kernel {k}",
                    a.name
                );
            }
        }
        for f in images.iter().flat_map(|i| &i.functions) {
            assert!(f.other.is_empty(), "{}: unknown fields {f:?}", a.name);
            assert!(f.texture.is_some() && f.surface.is_some() && f.sampler.is_some());
            if a.kernels.contains(&f.function) {
                assert!(f.reg > 0, "{}: {f:?}", a.name);
                assert!(f.constant.contains_key(&0), "kernel without cbank 0: {f:?}");
            }
        }
    }
}

#[test]
fn res_usage_values() {
    let Some(fx) = fx() else { return };
    let find = |artifact: &str, arch: u32, function: &str| {
        fixtures::res_usage(&fx.get(artifact).path)
            .unwrap()
            .into_iter()
            .find(|r| r.arch == arch && r.function == function)
            .unwrap_or_else(|| panic!("{artifact} sm_{arch}: no {function}"))
    };
    // Shared memory: sm_90 and later count the 1 KB the system reserves.
    let reduce256 = "_Z16block_reduce_sumILi256EEvPKfPfi";
    assert_eq!(find("memory_sm86.cubin", 86, reduce256).shared, 1024);
    assert_eq!(
        find("memory_none.fatbin", 120, reduce256).shared,
        1024 + 1024
    );
    assert_eq!(find("memory_G.o", 75, reduce256).shared, 1024);
    assert_eq!(find("memory_G.o", 120, reduce256).shared, 1024 + 1024);
    // Dynamic shared memory is not counted.
    assert_eq!(
        find("memory_sm86.cubin", 86, "_Z17dynamic_smem_scanPKiPii").shared,
        0
    );
    // Recursion: the stack size cannot be known.
    assert_eq!(
        find("calls_sm100.cubin", 100, "_Z13recursive_fibPKiPii").stack,
        None
    );
    // A local array is stack, not LOCAL.
    let hist = find("calls_sm100.cubin", 100, "_Z15local_histogramPKhPii");
    assert_eq!((hist.stack, hist.local), (Some(256), 0));
    // The function-pointer table is in constant bank 2 (sm_80: ptxas puts such data there).
    assert!(
        find("calls_all.o", 80, "_Z17indirect_dispatchPKfPKiPfi")
            .constant
            .contains_key(&2)
    );
    // Relocatable images also list device functions; sm_100 reports REG:0 for them.
    let ru = fixtures::res_usage(&fx.get("rdc_lib.o").path).unwrap();
    let dev: Vec<_> = ru
        .iter()
        .filter(|r| r.function == "_Z8rdc_lerpfff")
        .collect();
    assert_eq!(dev.len(), 2, "{ru:?}");
    assert!(dev.iter().all(|r| r.constant.is_empty()));
    assert!(
        dev.iter().all(|r| r.compressed),
        "rdc ELF images are compressed"
    );
    // Whole-program images list kernels only.
    let calls = fixtures::res_usage(&fx.get("calls_sm100.cubin").path).unwrap();
    assert!(!calls.iter().any(|r| r.function.starts_with("_Z7fib_rec")));
    // __maxnreg__ and __launch_bounds__ caps hold.
    assert!(find("math_sm75.cubin", 75, "_Z15maxnreg_stencilPKfPfii").reg <= 40);
    assert!(find("math_sm75.cubin", 75, "_Z22bounded_saxpy_unrolledfPKfPfi").reg <= 64);
}

// ---------------------------------------------------------------------------------------------
// Kernels per executable, cuobjdump -sass
// ---------------------------------------------------------------------------------------------

#[test]
fn executables_hold_all_arches_and_their_kernels() {
    let Some(fx) = fx() else { return };
    let app = fx.get("app");
    let expected: BTreeSet<String> = ["main.cu", "math.cu", "memory.cu"]
        .iter()
        .flat_map(|src| {
            fx.artifacts
                .iter()
                .filter(|a| a.kind == Kind::Cubin && a.sources == vec![*src])
                .flat_map(|a| a.kernels.iter().cloned())
        })
        .chain([
            "_Z9main_initPfif".to_string(),
            "_Z10main_checkPKfiPi".to_string(),
        ])
        .collect();
    assert_eq!(app.kernels, expected);
    // Every kernel at every arch. (`cuobjdump -sass app` would say the same but takes ~7 s:
    // the SASS oracle is exercised on the smaller app_rdc below.)
    let ru = fixtures::res_usage(&app.path).unwrap();
    for arch in [75, 90, 120] {
        let at: BTreeSet<&str> = ru
            .iter()
            .filter(|r| r.arch == arch)
            .map(|r| r.function.as_str())
            .collect();
        for k in &app.kernels {
            assert!(at.contains(k.as_str()), "app sm_{arch}: no {k}");
        }
    }
    // The device link keeps only the kernels the host code launches, and the device functions
    // they call.
    let rdc = fx.get("app_rdc");
    assert_eq!(
        rdc.kernels,
        set([
            "_Z9main_initPfif",
            "_Z10main_checkPKfiPi",
            "_Z18rdc_lib_fill_tablei",
            "_Z13rdc_use_blendPKfS0_Pfi"
        ]
        .map(String::from))
    );
    let rdc_sass = fixtures::sass_functions(&rdc.path).unwrap();
    assert_eq!(set(rdc_sass.iter().map(|(a, _)| *a)), set([80, 100]));
    for arch in [80, 100] {
        let at: BTreeSet<String> = rdc_sass
            .iter()
            .filter(|(a, _)| *a == arch)
            .map(|(_, f)| f.clone())
            .collect();
        assert!(at.is_superset(&rdc.kernels), "sm_{arch}: {at:?}");
        // The device functions have SASS of their own (real calls after the device link).
        assert!(at.contains("_Z8rdc_lerpfff"), "sm_{arch}: {at:?}");
    }
    let text = fixtures::sass(&rdc.path).unwrap();
    assert!(
        text.contains("CALL.REL") || text.contains("CALL.ABS"),
        "no call in the rdc SASS"
    );
    // The rdc objects and the archive keep every kernel of their sources.
    assert_eq!(
        fx.get("librdc.a").kernels,
        &fx.get("rdc_lib.o").kernels | &fx.get("rdc_use.o").kernels
    );
    assert_eq!(
        fx.get("rdc_lib.o").kernels,
        kernels_of(fx, "rdc_lib_sm90_rdc.cubin")
    );
}

// ---------------------------------------------------------------------------------------------
// cuobjdump -xelf, nvdisasm
// ---------------------------------------------------------------------------------------------

#[test]
fn extracted_cubins_are_valid_and_disassemble() {
    let Some(fx) = fx() else { return };
    let dir = scratch("xelf");
    let mut extracted = 0;
    for a in &fx.artifacts {
        let out = dir.path().join(a.name);
        let cubins =
            fixtures::extract_elfs(&a.path, &out).unwrap_or_else(|e| panic!("{}: {e}", a.name));
        let listed = fixtures::list_elf(&a.path).unwrap();
        assert_eq!(cubins.len(), listed.len());
        for (c, l) in cubins.iter().zip(&listed) {
            assert_eq!(fixtures::elf_arch(c), Some(l.arch), "{}", c.display());
            extracted += 1;
        }
        // nvdisasm takes about half a second a cubin: all the bare cubins, and the last image
        // (the newest arch) of one file of each other kind.
        let check: Vec<&PathBuf> = match a.name {
            _ if a.kind == Kind::Cubin => cubins.iter().collect(),
            "math_multi.fatbin" | "memory_G.o" | "rdc_use.o" | "app_rdc" | "librdc.a" => {
                cubins.last().into_iter().collect()
            }
            _ => Vec::new(),
        };
        for c in check {
            fixtures::nvdisasm_ok(c).unwrap_or_else(|e| panic!("{}: {e}", a.name));
        }
        // A bare cubin extracts to itself.
        if a.kind == Kind::Cubin {
            assert_eq!(
                std::fs::read(&cubins[0]).unwrap(),
                std::fs::read(&a.path).unwrap()
            );
        }
    }
    assert!(extracted >= 40, "{extracted} images");
}

#[test]
fn nvdisasm_reports_broken_cubins() {
    let Some(fx) = fx() else { return };
    let dir = scratch("broken");
    let good = std::fs::read(&fx.get("coop_sm120.cubin").path).unwrap();
    let truncated = dir.path().join("truncated.cubin");
    std::fs::write(&truncated, &good[..good.len() / 3]).unwrap();
    let err = fixtures::nvdisasm_ok(&truncated).unwrap_err();
    assert!(!err.trim().is_empty());
    let not_elf = dir.path().join("text.cubin");
    std::fs::write(&not_elf, "not a cubin").unwrap();
    assert!(fixtures::nvdisasm_ok(&not_elf).is_err());
    // cuobjdump refuses a file without device code.
    let plain = dir.path().join("plain.o");
    std::fs::write(&plain, b"\x7fELF").unwrap();
    assert!(fixtures::res_usage(&plain).is_err());
}

// ---------------------------------------------------------------------------------------------
// ptxas -v
// ---------------------------------------------------------------------------------------------

fn src(fx: &Fixtures, a: &Artifact) -> Vec<PathBuf> {
    a.sources.iter().map(|s| fx.src_dir().join(s)).collect()
}

#[test]
fn spill_fixture_really_spills() {
    let Some(fx) = fx() else { return };
    let a = fx.get("spill_sm89_r24.cubin");
    let report = fixtures::ptxas_v(&src(fx, a), &a.flags).unwrap();
    let entries: Vec<_> = report.iter().filter(|r| r.entry).collect();
    assert_eq!(set(entries.iter().map(|r| r.function.clone())), a.kernels);
    for r in &entries {
        assert_eq!(r.arch, Some(89));
        assert!(r.registers.unwrap() <= 24, "{r:?}");
        assert!(r.spill_stores > 0 && r.spill_loads > 0, "no spill: {r:?}");
        assert!(r.stack_frame >= r.spill_stores.min(r.stack_frame));
        assert!(r.cmem.contains_key(&0), "sm_89 reports cmem[0]: {r:?}");
    }
    // ptxas and cuobjdump agree on registers and stack.
    let ru = fixtures::res_usage(&a.path).unwrap();
    for r in &entries {
        let u = ru.iter().find(|u| u.function == r.function).unwrap();
        assert_eq!(Some(u.reg), r.registers, "{}", r.function);
        assert_eq!(u.stack, r.cumulative_stack.or(Some(0)), "{}", r.function);
    }
    // The spills are in the SASS.
    let text = fixtures::sass(&a.path).unwrap();
    assert!(
        text.contains("STL") && text.contains("LDL"),
        "no STL/LDL in the SASS"
    );
    // The device function called from a spilling loop is reported too, as a non-entry.
    assert!(
        report
            .iter()
            .any(|r| !r.entry && r.function == "_Z12spill_calleefff")
    );
    // The same kernels without the cap do not spill (so the fixture is about the cap).
    let free = fixtures::ptxas_v(&src(fx, a), &["-cubin", "-arch=sm_89"]).unwrap();
    let wide = free
        .iter()
        .find(|r| r.function == "_Z14spill_wide_f32PKfPfi")
        .unwrap();
    assert_eq!((wide.spill_stores, wide.spill_loads), (0, 0), "{wide:?}");
    assert!(wide.registers.unwrap() > 24);
}

#[test]
fn ptxas_v_agrees_with_res_usage_across_arches() {
    let Some(fx) = fx() else { return };
    let a = fx.get("spill_r24.o");
    let report = fixtures::ptxas_v(&src(fx, a), &a.flags).unwrap();
    let ru = fixtures::res_usage(&a.path).unwrap();
    for &arch in &a.arches {
        for k in &a.kernels {
            let p = report
                .iter()
                .find(|r| r.entry && r.arch == Some(arch) && &r.function == k)
                .unwrap_or_else(|| panic!("ptxas -v: no {k} for sm_{arch}"));
            let u = ru
                .iter()
                .find(|u| u.arch == arch && &u.function == k)
                .unwrap();
            assert_eq!(Some(u.reg), p.registers, "{k} sm_{arch}");
            assert!(p.spill_stores > 0, "{k} sm_{arch}: {p:?}");
        }
    }
    // sm_90 and later print no cmem in -v.
    assert!(
        report
            .iter()
            .filter(|r| r.entry && r.arch == Some(90))
            .all(|r| r.cmem.is_empty())
    );
    // Shared memory from -v excludes the reserved 1 KB that res-usage adds on sm_90+.
    let m = fx.get("memory_none.fatbin");
    let v = fixtures::ptxas_v(&src(fx, m), &["-cubin", "-arch=sm_120"]).unwrap();
    let mu = fixtures::res_usage(&m.path).unwrap();
    let name = "_Z21static_smem_transposePKfPfii";
    let p = v.iter().find(|r| r.function == name).unwrap();
    let u = mu.iter().find(|u| u.function == name).unwrap();
    assert_eq!(p.smem, Some(32 * 33 * 4));
    assert_eq!(u.shared, 32 * 33 * 4 + 1024);
}

#[test]
fn parse_ptxas_v_sample() {
    let text = "\
ptxas info    : 24 bytes gmem
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_80'
ptxas info    : Function properties for _Z1kPf
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 30 registers, used 1 barriers, 256 bytes smem, 16 bytes cumulative stack size, 372 bytes cmem[0], 8 bytes cmem[2]
ptxas info    : Compile time = 1.5 ms
ptxas info    : Function properties for _Z1ff
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
";
    let r = fixtures::parse_ptxas_v(text);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].function, "_Z1kPf");
    assert!(r[0].entry);
    assert_eq!(r[0].arch, Some(80));
    assert_eq!(r[0].registers, Some(30));
    assert_eq!(r[0].barriers, Some(1));
    assert_eq!(r[0].smem, Some(256));
    assert_eq!(r[0].cumulative_stack, Some(16));
    assert_eq!(r[0].cmem, BTreeMap::from([(0, 372), (2, 8)]));
    assert_eq!(
        (r[0].stack_frame, r[0].spill_stores, r[0].spill_loads),
        (16, 8, 4)
    );
    assert!(r[0].other.is_empty());
    assert_eq!(r[1].function, "_Z1ff");
    assert!(!r[1].entry);
    assert_eq!(r[1].arch, Some(80));
    assert_eq!(r[1].registers, None);
}

// ---------------------------------------------------------------------------------------------
// Debug info and compression
// ---------------------------------------------------------------------------------------------

fn section_names(dump: &str) -> BTreeSet<String> {
    // Section table rows of `cuobjdump -elf`: the name is the last column.
    dump.lines()
        .filter(|l| l.split_whitespace().count() >= 9)
        .filter_map(|l| l.split_whitespace().last())
        .filter(|n| n.starts_with('.'))
        .map(str::to_string)
        .collect()
}

#[test]
fn debug_fixtures_have_debug_sections() {
    let Some(fx) = fx() else { return };
    let sections = |name: &str| section_names(&fixtures::elf_dump(&fx.get(name).path).unwrap());
    for g in ["math_sm90_G.cubin", "memory_G.o"] {
        let s = sections(g);
        for sec in [
            ".debug_info",
            ".debug_line",
            ".debug_abbrev",
            ".nv_debug_info_reg_sass",
        ] {
            assert!(s.contains(sec), "{g}: no {sec} in {s:?}");
        }
    }
    for l in ["calls_sm80_lineinfo.cubin", "coop_lineinfo.o"] {
        let s = sections(l);
        assert!(s.contains(".debug_line"), "{l}: {s:?}");
        assert!(!s.contains(".debug_info"), "{l}: {s:?}");
    }
    for plain in ["math_sm75.cubin", "calls_all.o", "app"] {
        let s = sections(plain);
        assert!(
            !s.iter()
                .any(|n| n.starts_with(".debug_line") || n.starts_with(".debug_info")),
            "{plain}: {s:?}"
        );
    }
    // The top byte of e_flags tells debug builds apart (0x06 plain).
    let top = |name: &str| fixtures::elf_flags(&fx.get(name).path).unwrap() >> 24;
    assert_eq!(top("math_sm75.cubin"), 0x06);
    assert_eq!(top("calls_sm100.cubin"), 0x06);
    assert_eq!(top("math_sm90_G.cubin"), 0x0f);
    assert_eq!(top("calls_sm80_lineinfo.cubin"), 0x09);
    // With readelf too, when binutils are there (they are wherever nvcc can link).
    if let Ok(out) = std::process::Command::new("readelf")
        .args(["-S", "-W"])
        .arg(&fx.get("math_sm90_G.cubin").path)
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(".debug_info"), "{text}");
    }
}

/// One entry of a fatbin container (docs/sass.md §Fatbin), read directly: enough
/// to tell compression apart, not a fatbin parser.
#[derive(Debug)]
struct FatbinEntry {
    kind: u16,
    arch: u32,
    flags: u64,
    compressed_size: u32,
}

fn fatbin_entries(data: &[u8]) -> Vec<FatbinEntry> {
    let u16_at = |o: usize| u16::from_le_bytes(data[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().unwrap());
    assert_eq!(u32_at(0), 0xBA55_ED50);
    let end = u16_at(6) as usize + u64_at(8) as usize;
    let mut at = u16_at(6) as usize;
    let mut out = Vec::new();
    while at < end {
        out.push(FatbinEntry {
            kind: u16_at(at),
            arch: u32_at(at + 0x1c),
            flags: u64_at(at + 0x28),
            compressed_size: u32_at(at + 0x10),
        });
        at += u32_at(at + 4) as usize + u64_at(at + 8) as usize;
    }
    assert_eq!(at, end);
    out
}

const LZ4: u64 = 0x2000;
const ZSTD: u64 = 0x8000;

#[test]
fn compress_modes_are_what_the_flags_say() {
    let Some(fx) = fx() else { return };
    // (fixture, expected (ELF, PTX) compression)
    for (name, elf, ptx) in [
        ("math_multi.fatbin", 0, ZSTD),
        ("memory_size.fatbin", ZSTD, ZSTD),
        ("memory_speed.fatbin", 0, LZ4),
        ("memory_none.fatbin", 0, 0),
    ] {
        let a = fx.get(name);
        let entries = fatbin_entries(&std::fs::read(&a.path).unwrap());
        assert!(!entries.is_empty());
        for e in &entries {
            let want = if e.kind == 1 { ptx } else { elf };
            assert_eq!(e.flags & (LZ4 | ZSTD), want, "{name}: {e:?}");
            assert_eq!(e.compressed_size != 0, want != 0, "{name}: {e:?}");
        }
        let archs: BTreeSet<u32> = entries
            .iter()
            .filter(|e| e.kind == 2)
            .map(|e| e.arch)
            .collect();
        assert_eq!(archs, set(a.arches.iter().copied()), "{name}");
        let ptx_archs: BTreeSet<u32> = entries
            .iter()
            .filter(|e| e.kind == 1)
            .map(|e| e.arch)
            .collect();
        assert_eq!(ptx_archs, set(a.ptx_arches.iter().copied()), "{name}");
        // cuobjdump prints `compressed` in the header of a compressed image (it does not say
        // which codec).
        let images = fixtures::res_usage_images(&a.path).unwrap();
        assert!(
            images.iter().all(|i| i.compressed == (elf != 0)),
            "{name}: {images:?}"
        );
        let ptx_text = fixtures::cuobjdump(&["-ptx"], &a.path).unwrap();
        let blocks: Vec<bool> = ptx_text
            .split("Fatbin ptx code:")
            .skip(1)
            .map(|block| block.lines().take(8).any(|l| l.trim() == "compressed"))
            .collect();
        assert_eq!(blocks.len(), a.ptx_arches.len(), "{name}:\n{ptx_text}");
        assert!(
            blocks.iter().all(|&c| c == (ptx != 0)),
            "{name}:\n{ptx_text}"
        );
    }
    // In host objects: default ELF is stored as is, but -G and relocatable ELFs are compressed.
    let compressed = |name: &str| -> Vec<bool> {
        fixtures::res_usage_images(&fx.get(name).path)
            .unwrap()
            .iter()
            .map(|i| i.compressed)
            .collect()
    };
    assert!(compressed("calls_all.o").iter().all(|c| !c));
    assert!(compressed("memory_G.o").iter().all(|c| *c));
    assert!(compressed("rdc_use.o").iter().all(|c| *c));
}

#[test]
fn archive_members_are_named() {
    let Some(fx) = fx() else { return };
    let a = fx.get("librdc.a");
    let ru = fixtures::res_usage(&a.path).unwrap();
    let members: BTreeSet<String> = ru
        .iter()
        .map(|r| {
            let m = r.member.as_deref().unwrap();
            assert!(
                m.starts_with(&a.path.to_string_lossy().into_owned()),
                "member `{m}` names the archive by the path given"
            );
            m.rsplit(':').next().unwrap().to_string()
        })
        .collect();
    assert_eq!(members, set(["rdc_lib.o", "rdc_use.o"].map(String::from)));
    let symbols = fixtures::elf_symbols(&a.path).unwrap();
    // rdc_use.o refers to the table rdc_lib.o defines: an undefined global there.
    assert!(
        symbols
            .iter()
            .any(|s| s.name == "rdc_table" && s.ty == "CUDA_OBJECT")
    );
    let _ = Path::new("");
}
