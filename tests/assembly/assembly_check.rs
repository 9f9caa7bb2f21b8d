//! The assembly check (`nvcc_orion::audit`, issue 30) against real ptxas output: a splice
//! that would move a kernel into a module whose constant bank 4 is laid out differently is
//! refused, and the check rejects every kind of wrong assembly below, each made by editing a
//! correct assembled cubin, while the correct one passes. Cubins come from the real toolkit;
//! the check reads them only through cuobjdump and nvdisasm.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use nvcc_orion::audit::{self, AuditError, Difference, FrameError, Job, Origin, Tools};
use nvcc_orion::cubin::Cubin;
use nvcc_orion::cubin::refusal::{Refusal, SpliceError};
use nvcc_orion::cubin::splice::splice;

const HUNGRY: &str = "_Z6hungryPKiPKfPfii";
const CHATTY: &str = "_Z6chattyi";

/// ptxas's cubins of `tests/kernels/assembly/banks.cu` for one architecture and kernel order:
/// the whole module, the hungry kernel alone at 32 registers (`--entry`), and the whole
/// module with the hungry kernel at 32.
pub(super) struct Builds {
    pub(super) base: Vec<u8>,
    pub(super) donor: Vec<u8>,
    pub(super) whole32: Vec<u8>,
}

pub(super) fn tools(nvcc: &Path) -> Tools {
    Tools::in_dir(nvcc.parent().unwrap())
}

fn run(cmd: &mut Command, what: &str) {
    let o = cmd.output().unwrap();
    common::assert_ok(&o, what);
}

/// `.maxnreg n` on `entry`'s `.entry`: our own small edit of the PTX, after its parameters.
fn with_maxnreg(ptx: &str, entry: &str, n: u32) -> String {
    let at = ptx
        .find(&format!(".entry {entry}("))
        .expect("entry in the PTX");
    let close = at + ptx[at..].find(')').unwrap() + 1;
    format!("{}\n.maxnreg {n}\n{}", &ptx[..close], &ptx[close..])
}

fn builds(nvcc: &Path, sm: u32, hungry_first: bool) -> Builds {
    builds_with(nvcc, sm, hungry_first, false)
}

/// [`builds`], with `-lineinfo` (nvcc's PTX with `.loc` lines, ptxas's line tables) when
/// `lineinfo`.
fn builds_with(nvcc: &Path, sm: u32, hungry_first: bool, lineinfo: bool) -> Builds {
    let src = common::kernels_dir().join("assembly/banks.cu");
    let source = std::fs::read(&src).unwrap();
    let tag = format!("assembly-{sm}-{hungry_first}");
    let tag = if lineinfo { tag + "-lineinfo" } else { tag };
    let line_flag: &[&str] = if lineinfo {
        &["--generate-line-info"]
    } else {
        &[]
    };
    let dir = common::build_once(&tag, nvcc, &[&source], |dir| {
        let ptx = dir.join("m.ptx");
        let mut c = Command::new(nvcc);
        c.args(["-ptx", &format!("-arch=sm_{sm}")]).args(line_flag);
        if hungry_first {
            c.arg("-DHUNGRY_FIRST");
        }
        run(c.arg(&src).arg("-o").arg(&ptx), "nvcc -ptx");
        let text = std::fs::read_to_string(&ptx).unwrap();
        std::fs::write(dir.join("m32.ptx"), with_maxnreg(&text, HUNGRY, 32)).unwrap();
        let ptxas = common::toolkit_tool(nvcc, "ptxas");
        let arch = format!("-arch=sm_{sm}");
        for (input, out, extra) in [
            ("m.ptx", "base.cubin", vec![]),
            ("m32.ptx", "donor.cubin", vec!["--entry", HUNGRY]),
            ("m32.ptx", "whole32.cubin", vec![]),
        ] {
            let mut c = Command::new(&ptxas);
            c.args([arch.as_str(), "-m64"]).args(line_flag).args(&extra);
            run(c.arg(dir.join(input)).arg("-o").arg(dir.join(out)), "ptxas");
        }
    });
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    Builds {
        base: read("base.cubin"),
        donor: read("donor.cubin"),
        whole32: read("whole32.cubin"),
    }
}

/// The splice of the hungry kernel from its donor into ptxas's module.
fn spliced(b: &Builds) -> Result<Vec<u8>, SpliceError> {
    let base = Cubin::parse(&b.base).unwrap();
    let donor = Cubin::parse(&b.donor).unwrap();
    splice(&base, &[(HUNGRY, &donor)])
}

fn job<'a>(shipped: &'a [u8], b: &'a Builds) -> Job<'a> {
    Job {
        proved: Vec::new(),
        shipped,
        baseline: &b.base,
        module: &b.base,
        origins: vec![Origin {
            shipped: HUNGRY,
            name: HUNGRY,
            cubin: &b.donor,
        }],
    }
}

/// Which function a disagreement names.
fn named(r: Result<audit::Checked, AuditError>) -> Result<audit::Checked, String> {
    match r {
        Ok(c) => Ok(c),
        Err(AuditError::Disagrees { kernel, what }) => Err(format!("{kernel}: {what}")),
        Err(e) => panic!("the check could not run: {e}"),
    }
}

#[test]
fn a_module_laid_out_differently_is_not_spliced_and_its_code_is_caught() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    for sm in [80, 90] {
        let b = builds(&nvcc, sm, true);
        // Compiled alone, the kernel's bank 4 has other offsets: the splice refuses.
        let refused = spliced(&b).unwrap_err();
        assert!(
            matches!(&refused.what, Refusal::Bank { bank, .. } if bank == ".nv.constant4"),
            "sm_{sm}: {refused}"
        );
        // Its code placed into the whole module anyway (what the old splice did, here into
        // the whole-module build at the same budget, so only the bank differs): rejected.
        let mut wrong = b.whole32.clone();
        let (at, len) = section(&wrong, &format!(".text.{HUNGRY}"));
        let (dat, dlen) = section(&b.donor, &format!(".text.{HUNGRY}"));
        assert_eq!(len, dlen, "sm_{sm}: same code size at the same budget");
        wrong[at..at + len].copy_from_slice(&b.donor[dat..dat + dlen]);
        let j = Job {
            proved: Vec::new(),
            shipped: &wrong,
            baseline: &b.base,
            module: &b.whole32,
            origins: vec![Origin {
                shipped: HUNGRY,
                name: HUNGRY,
                cubin: &b.donor,
            }],
        };
        let why = named(audit::check(&tools(&nvcc), &j)).unwrap_err();
        assert!(why.starts_with(HUNGRY), "sm_{sm}: {why}");
        // The whole-module build itself is its own origin and passes.
        let own = Job {
            proved: Vec::new(),
            shipped: &b.whole32,
            baseline: &b.base,
            module: &b.whole32,
            origins: Vec::new(),
        };
        named(audit::check(&tools(&nvcc), &own)).unwrap();
    }
}

/// `(file offset, size)` of section `name`.
fn section(bytes: &[u8], name: &str) -> (usize, usize) {
    let c = Cubin::parse(bytes).unwrap();
    let s = c
        .elf()
        .sections
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no section {name}"));
    (s.sh_offset as usize, s.data.len())
}

/// One `.nv.info` record as it sits in the file: (offset of its value, format, attribute,
/// value length). Read with our own few lines, not the crate's record parser.
fn records(bytes: &[u8], name: &str) -> Vec<(usize, u8, u8, usize)> {
    let (at, len) = section(bytes, name);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 4 <= len {
        let (format, attr) = (bytes[at + i], bytes[at + i + 1]);
        let size = u16::from_le_bytes([bytes[at + i + 2], bytes[at + i + 3]]) as usize;
        match format {
            4 => {
                out.push((at + i + 4, format, attr, size));
                i += 4 + size;
            }
            _ => {
                out.push((at + i + 2, format, attr, 2));
                i += 4;
            }
        }
    }
    out
}

/// The value of the first record `attr` of section `name` (for SVAL records naming a
/// function first, the first one naming `function`'s symbol).
fn record(bytes: &[u8], name: &str, attr: u8, function: Option<&str>) -> usize {
    let sym = function.map(|f| symbol_index(bytes, f));
    records(bytes, name)
        .into_iter()
        .find(|&(at, _, a, _)| {
            a == attr
                && sym
                    .is_none_or(|s| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) == s)
        })
        .unwrap_or_else(|| panic!("no attribute {attr:#x} in {name}"))
        .0
}

fn symbol_index(bytes: &[u8], name: &str) -> u32 {
    let c = Cubin::parse(bytes).unwrap();
    c.symbols().iter().position(|s| s.name == name).unwrap() as u32
}

fn add_u32(bytes: &mut [u8], at: usize, delta: u32) {
    let v = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    bytes[at..at + 4].copy_from_slice(&v.wrapping_add(delta).to_le_bytes());
}

/// The file offset of the first instruction of `kernel` for which `pick` holds.
fn instruction(bytes: &[u8], kernel: &str, pick: impl Fn(u128) -> bool) -> usize {
    let (at, len) = section(bytes, &format!(".text.{kernel}"));
    (0..len / 16)
        .map(|i| at + 16 * i)
        .find(|&o| pick(u128::from_le_bytes(bytes[o..o + 16].try_into().unwrap())))
        .expect("such an instruction")
}

/// `LDC`/`ULDC` from bank 4 (opcode and bank fields as docs/sass.md gives them).
fn reads_bank4(w: u128) -> bool {
    matches!(w & 0xfff, 0xb82 | 0xab9) && (w >> 54) & 0x1f == 4 && (w >> 24) & 0xff == 0xff
}

/// A correct splice, and one wrong edit of it per kind of assembly mistake.
pub(super) type Mutation = (&'static str, fn(&mut Vec<u8>), &'static str);

const EIATTR_REGCOUNT: u8 = 0x2f;
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_MIN_STACK_SIZE: u8 = 0x12;
const EIATTR_MAXREG_COUNT: u8 = 0x1b;
const EIATTR_EXTERNS: u8 = 0x0f;
const EIATTR_PARAM_CBANK: u8 = 0x0a;
const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
const EIATTR_ANNOTATIONS: u8 = 0x55;

fn info_k() -> String {
    format!(".nv.info.{HUNGRY}")
}

const MUTATIONS: &[Mutation] = &[
    (
        "bank-4 offset of an address load",
        |b| {
            let at = instruction(b, HUNGRY, reads_bank4);
            let w = u128::from_le_bytes(b[at..at + 16].try_into().unwrap()) ^ (0x8u128 << 38);
            b[at..at + 16].copy_from_slice(&w.to_le_bytes());
        },
        HUNGRY,
    ),
    (
        "relocation symbol of the bank",
        |b| {
            // Two entries of the bank's relocations trade symbols.
            let (at, _) = section(b, ".rela.nv.constant4");
            let (x, y) = (at + 8 + 4, at + 24 + 8 + 4);
            let (sx, sy) = (b[x..x + 4].to_vec(), b[y..y + 4].to_vec());
            b[x..x + 4].copy_from_slice(&sy);
            b[y..y + 4].copy_from_slice(&sx);
        },
        "the module",
    ),
    (
        "dropped relocation",
        |b| {
            let (at, _) = section(b, ".rela.nv.constant4");
            b[at + 8..at + 12].copy_from_slice(&0u32.to_le_bytes());
        },
        "the module",
    ),
    (
        "register count attribute",
        |b| {
            let at = record(b, ".nv.info", EIATTR_REGCOUNT, Some(HUNGRY));
            add_u32(b, at + 4, 8);
        },
        HUNGRY,
    ),
    (
        "frame size attribute",
        |b| {
            let at = record(b, ".nv.info", EIATTR_FRAME_SIZE, Some(HUNGRY));
            add_u32(b, at + 4, 16);
        },
        HUNGRY,
    ),
    (
        "stack size attribute",
        |b| {
            let at = record(b, ".nv.info", EIATTR_MIN_STACK_SIZE, Some(HUNGRY));
            add_u32(b, at + 4, 16);
        },
        HUNGRY,
    ),
    (
        "register limit attribute",
        |b| {
            let at = record(b, &info_k(), EIATTR_MAXREG_COUNT, None);
            b[at] = b[at].wrapping_add(8);
        },
        HUNGRY,
    ),
    (
        "external symbol of the kernel",
        |b| {
            let at = record(b, &info_k(), EIATTR_EXTERNS, None);
            add_u32(b, at, 1);
        },
        HUNGRY,
    ),
    (
        "parameter bank symbol",
        |b| {
            let at = record(b, &info_k(), EIATTR_PARAM_CBANK, None);
            add_u32(b, at, 1);
        },
        HUNGRY,
    ),
    (
        "parameter bank size",
        |b| {
            let at = record(b, &info_k(), EIATTR_CBANK_PARAM_SIZE, None);
            b[at] = b[at].wrapping_add(4);
        },
        HUNGRY,
    ),
    (
        "parameter bank contents",
        |b| {
            let (at, _) = section(b, &format!(".nv.constant0.{HUNGRY}"));
            b[at] ^= 1;
        },
        HUNGRY,
    ),
    (
        "scheduling bits of an instruction",
        |b| {
            let at = instruction(b, HUNGRY, |w| (w >> 105) & 0xf != 0xf);
            b[at + 13] ^= 0x02; // the stall count's low bit (bit 105)
        },
        HUNGRY,
    ),
    (
        "spill annotation",
        |b| {
            let at = record(b, &info_k(), EIATTR_ANNOTATIONS, None);
            add_u32(b, at + 4, 16);
        },
        HUNGRY,
    ),
    (
        "kernel symbol size",
        |b| {
            let c = Cubin::parse(b).unwrap();
            let (at, _) = section(b, ".symtab");
            let i = c.symbols().iter().position(|s| s.name == HUNGRY).unwrap();
            add_u32(b, at + 24 * i + 16, 0xfffffff0); // st_size - 16
        },
        HUNGRY,
    ),
    (
        "code of a kernel the splice left alone",
        |b| {
            let at = instruction(b, CHATTY, |_| true);
            b[at + 2] ^= 0x01; // its destination register
        },
        CHATTY,
    ),
    (
        "call graph edge",
        |b| {
            let (at, len) = section(b, ".nv.callgraph");
            let vprintf = symbol_index(b, "vprintf");
            let assert_fail = symbol_index(b, "__assertfail");
            for e in (at..at + len).step_by(8) {
                let callee = u32::from_le_bytes(b[e + 4..e + 8].try_into().unwrap());
                if callee == assert_fail {
                    b[e + 4..e + 8].copy_from_slice(&vprintf.to_le_bytes());
                    return;
                }
            }
            panic!("no call of __assertfail");
        },
        HUNGRY,
    ),
    (
        "initial value of a global",
        |b| {
            let (at, _) = section(b, ".nv.global.init");
            b[at] ^= 0x20;
        },
        "the module",
    ),
];

/// Wrong call frame information (`.debug_frame`): each must be found by the check's own
/// reading of it (`audit::frames`) as an FDE that differs, not only blamed on the kernel.
const FRAME_MUTATIONS: &[Mutation] = &[
    (
        "FDE range one instruction short",
        |b| {
            let fde = fde_of(b, HUNGRY);
            add_u32(b, fde + 28, 0xfffffff0); // its address range - 16
        },
        HUNGRY,
    ),
    (
        "CFA offset of an FDE",
        |b| {
            // The program opens with DW_CFA_advance_loc4, then DW_CFA_def_cfa (a ULEB128
            // register, then a ULEB128 offset): the offset grows by 8.
            let program = fde_of(b, HUNGRY) + 36;
            assert_eq!(
                (b[program], b[program + 5]),
                (0x04, 0x0c),
                "advance, def_cfa"
            );
            let mut at = program + 6;
            while b[at] & 0x80 != 0 {
                at += 1;
            }
            // The offset's low seven bits (the hungry kernel's frame: 0xb0 0x01).
            assert!(b[at + 1] & 0x7f < 0x78, "room in the first byte");
            b[at + 1] += 8;
        },
        HUNGRY,
    ),
    (
        "two kernels' FDEs swapped",
        |b| {
            let (x, y) = (frame_relocation(b, HUNGRY), frame_relocation(b, CHATTY));
            let (sx, sy) = (b[x + 12..x + 16].to_vec(), b[y + 12..y + 16].to_vec());
            b[x + 12..x + 16].copy_from_slice(&sy);
            b[y + 12..y + 16].copy_from_slice(&sx);
        },
        HUNGRY,
    ),
    (
        "FDE dropped",
        |b| {
            // Its CIE pointer becomes the CIE id: the record is no FDE any more.
            let fde = fde_of(b, HUNGRY);
            b[fde + 12..fde + 20].copy_from_slice(&u64::MAX.to_le_bytes());
        },
        HUNGRY,
    ),
];

/// The file offset of the `.rela.debug_frame` entry that relocates `kernel`'s FDE (sm_90:
/// 24-byte entries, the symbol index in the high half of `r_info`). Read with our own few
/// lines, not the crate's.
fn frame_relocation(bytes: &[u8], kernel: &str) -> usize {
    let (at, len) = section(bytes, ".rela.debug_frame");
    let sym = symbol_index(bytes, kernel);
    (at..at + len)
        .step_by(24)
        .find(|&e| u32::from_le_bytes(bytes[e + 12..e + 16].try_into().unwrap()) == sym)
        .unwrap_or_else(|| panic!("no relocation of {kernel}'s FDE"))
}

/// The file offset of `kernel`'s FDE (the relocation's target is its location, 20 bytes
/// into the 64-bit record).
fn fde_of(bytes: &[u8], kernel: &str) -> usize {
    let e = frame_relocation(bytes, kernel);
    let offset = u64::from_le_bytes(bytes[e..e + 8].try_into().unwrap()) as usize;
    let (at, _) = section(bytes, ".debug_frame");
    at + offset - 20
}

#[test]
fn every_kind_of_wrong_assembly_is_rejected() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    let tk = tools(&nvcc);
    let b = builds(&nvcc, 90, false);
    let good = spliced(&b).expect("the layouts agree: the splice applies");
    named(audit::check(&tk, &job(&good, &b))).expect("the correct splice passes");
    let mut failures = Vec::new();
    let frames = FRAME_MUTATIONS.iter().map(|m| (m, true));
    for ((what, mutate, blamed), frame) in MUTATIONS.iter().map(|m| (m, false)).chain(frames) {
        let mut bad = good.clone();
        mutate(&mut bad);
        assert_ne!(bad, good, "{what}: the mutation changed nothing");
        let checked = audit::check(&tk, &job(&bad, &b));
        let fde_differs = matches!(
            &checked,
            Err(AuditError::Disagrees {
                what: Difference::Frame(FrameError::FdeDiffers { .. }),
                ..
            })
        );
        if frame && !fde_differs {
            failures.push(format!("{what}: not an FDE difference ({checked:?})"));
        }
        match named(checked) {
            Ok(_) => failures.push(format!("{what}: accepted")),
            Err(why) if !why.starts_with(blamed) => {
                failures.push(format!("{what}: blamed the wrong part ({why})"))
            }
            Err(_) => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} kinds of wrong assembly got through:\n{}",
        failures.len(),
        MUTATIONS.len() + FRAME_MUTATIONS.len(),
        failures.join("\n")
    );
}

#[test]
fn sm_80_register_field_and_rel_tables() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    let tk = tools(&nvcc);
    let b = builds(&nvcc, 80, false);
    let good = spliced(&b).expect("the layouts agree: the splice applies");
    named(audit::check(&tk, &job(&good, &b))).expect("the correct splice passes");
    // sm_75-89 keep the register count in the code section's sh_info[31:24].
    let mut bad = good.clone();
    let c = Cubin::parse(&bad).unwrap();
    let text = c
        .elf()
        .sections
        .iter()
        .position(|s| s.name == format!(".text.{HUNGRY}"))
        .unwrap();
    let shoff = c.elf().header.e_shoff as usize;
    bad[shoff + 64 * text + 44 + 3] ^= 0x08;
    let why = named(audit::check(&tk, &job(&bad, &b))).unwrap_err();
    assert!(why.starts_with(HUNGRY), "{why}");
    // REL (not RELA) bank relocations: one moved to another offset.
    let mut bad = good.clone();
    let (at, len) = section(&bad, ".rel.nv.constant4");
    let first = (at..at + len)
        .step_by(16)
        .find(|&e| bad[e..e + 8] == [0; 8])
        .expect("a relocation at offset 0");
    add_u32(&mut bad, first, 8);
    let why = named(audit::check(&tk, &job(&bad, &b))).unwrap_err();
    assert!(why.starts_with("the module"), "{why}");
}

/// Where the tests put a kernel that calls across modules (`-rdc`).
fn rdc_cubin(nvcc: &Path) -> PathBuf {
    let src = common::kernels_dir().join("separable/walk.cu");
    let source = std::fs::read(&src).unwrap();
    let dir = common::build_once("assembly-rdc", nvcc, &[&source], |dir| {
        run(
            Command::new(nvcc)
                .args(["-rdc=true", "-cubin", "-arch=sm_90"])
                .arg(&src)
                .arg("-o")
                .arg(dir.join("rdc.cubin")),
            "nvcc -rdc -cubin",
        );
    });
    dir.join("rdc.cubin")
}

#[test]
fn a_retuned_kernel_calling_another_module_is_rejected() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    let base = std::fs::read(rdc_cubin(&nvcc)).unwrap();
    let kernel = "_Z8far_walkPKiPKfPfii";
    let j = |shipped: &[u8]| -> Result<audit::Checked, AuditError> {
        audit::check(
            &tools(&nvcc),
            &Job {
                proved: Vec::new(),
                shipped,
                baseline: &base,
                module: shipped,
                origins: Vec::new(),
            },
        )
    };
    j(&base).expect("ptxas's own relocatable cubin passes");
    // The kernel given a register limit (as a retuned kernel would have) while it calls a
    // function another module defines: nvlink would refuse it.
    let mut bad = base.clone();
    let at = record(
        &bad,
        &format!(".nv.info.{kernel}"),
        EIATTR_MAXREG_COUNT,
        None,
    );
    bad[at] = 32;
    let why = j(&bad).unwrap_err();
    assert!(
        matches!(&why, AuditError::Disagrees { kernel: k, what: Difference::CallsOutOfModule { .. } } if k == kernel),
        "{why}"
    );
    assert!(why.to_string().contains("another module"), "{why}");
}

#[test]
fn variants_with_swapped_attributes_are_rejected() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // An object: a `-cubin` output has no glue to reach variants, so it embeds none.
    let obj = dir.path().join("multi.o");
    let report = dir.path().join("r.jsonl");
    let kept = dir.path().join("kept");
    let o = common::without_our_settings(common::orion(), &nvcc)
        .env("NVCC_ORION", "adapt")
        .env("NVCC_ORION_REPORT", &report)
        .arg(format!("--orion-keep-cubins={}", kept.display()))
        .args(["-c", "-arch=sm_90"])
        .arg(common::kernels_dir().join("assembly/banks.cu"))
        .arg("-o")
        .arg(&obj)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc-orion adapt");
    let out = extracted_sm90_cubin(&nvcc, &obj, &dir.path().join("x"));
    let rec: serde_json::Value = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["kernel"] == HUNGRY)
        .unwrap();
    let candidates: Vec<Vec<u8>> = rec["cubins"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| std::fs::read(p.as_str().unwrap()).unwrap())
        .collect();
    let variants: Vec<(String, usize)> = rec["variants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["dropped"].is_null())
        .map(|v| {
            let name = v["name"].as_str().unwrap().to_string();
            (name, v["candidate"].as_u64().unwrap() as usize)
        })
        .collect();
    // The default (variant 0, under the kernel's own name) and at least one alternative.
    assert!(variants.len() >= 2, "two embedded variants: {rec}");
    let shipped = std::fs::read(&out).unwrap();
    let check = |bytes: &[u8]| {
        named(audit::check(
            &tools(&nvcc),
            &variants_job(bytes, &candidates, &shipped, &variants),
        ))
    };
    check(&shipped).expect("each variant is its standalone candidate");
    // Two variants' register counts trade places.
    let mut bad = shipped.clone();
    let (a, b) = (&variants[0].0, &variants[1].0);
    let (ra, rb) = (
        record(&bad, ".nv.info", EIATTR_REGCOUNT, Some(a)) + 4,
        record(&bad, ".nv.info", EIATTR_REGCOUNT, Some(b)) + 4,
    );
    let (va, vb) = (bad[ra..ra + 4].to_vec(), bad[rb..rb + 4].to_vec());
    assert_ne!(va, vb);
    bad[ra..ra + 4].copy_from_slice(&vb);
    bad[rb..rb + 4].copy_from_slice(&va);
    let why = check(&bad).unwrap_err();
    assert!(
        why.starts_with(a.as_str()) || why.starts_with(b.as_str()),
        "{why}"
    );
    // Under a cache, a pass is remembered (a cached build does not read the same cubins
    // again) and read back as the same verdict; a disagreement never is.
    let cache = dir.path().join("cache");
    let cached = |bytes: &[u8]| {
        named(audit::check_cached(
            &tools(&nvcc),
            &variants_job(bytes, &candidates, &shipped, &variants),
            Some(&cache),
        ))
    };
    let verdicts = || std::fs::read_dir(cache.join("audit-v1")).map_or(0, |d| d.count());
    let first = cached(&shipped).expect("passes");
    assert_eq!(verdicts(), 1);
    assert_eq!(cached(&shipped).expect("remembered"), first);
    assert_eq!(first, check(&shipped).unwrap());
    cached(&bad).unwrap_err();
    assert_eq!(verdicts(), 1, "a disagreement is not remembered");
}

/// The sm_90 cubin of `obj`, as `cuobjdump -xelf` extracts it into `scratch`.
fn extracted_sm90_cubin(nvcc: &Path, obj: &Path, scratch: &Path) -> PathBuf {
    std::fs::create_dir_all(scratch).unwrap();
    let o = Command::new(nvcc.with_file_name("cuobjdump"))
        .current_dir(scratch)
        .args(["-xelf", "all"])
        .arg(obj)
        .output()
        .unwrap();
    common::assert_ok(&o, "cuobjdump -xelf");
    std::fs::read_dir(scratch)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("sm_90.cubin"))
        .unwrap_or_else(|| panic!("no sm_90 cubin in {}", obj.display()))
}

/// The offset in a `.debug_line` section of the first special opcode of its (first) line
/// program that can be moved one source line on, and that opcode: the next one up advances
/// the address as far and the line one further (DWARF 2-4 layout, read with our own lines).
fn first_special_opcode(sec: &[u8]) -> (usize, u8) {
    let header_length = u32::from_le_bytes(sec[6..10].try_into().unwrap()) as usize;
    let (line_range, opcode_base) = (sec[13], sec[14]);
    let operands = &sec[15..15 + opcode_base as usize - 1];
    let uleb = |i: &mut usize| {
        let (mut v, mut shift) = (0usize, 0);
        loop {
            let b = sec[*i];
            *i += 1;
            v |= ((b & 0x7f) as usize) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                return v;
            }
        }
    };
    let mut i = 10 + header_length;
    loop {
        let (at, op) = (i, sec[i]);
        i += 1;
        match op {
            0 => i += uleb(&mut i),
            // DW_LNS_fixed_advance_pc: a 2-byte operand.
            9 => i += 2,
            op if op >= opcode_base => {
                if (op - opcode_base) % line_range + 1 < line_range {
                    return (at, op);
                }
            }
            op => {
                for _ in 0..operands[op as usize - 1] {
                    uleb(&mut i);
                }
            }
        }
    }
}

/// `-lineinfo` (issue 48): the old splice left the module's line tables describing the
/// untuned code. Now the splice refuses a module with line tables (ptxas builds it whole),
/// and the check compares every function's `nvdisasm -g -gp` annotations with its origin's:
/// the whole-module `-lineinfo` build passes, and the same cubin with one row of its line
/// program moved a source line on is rejected.
#[test]
fn line_tables_that_do_not_describe_the_code_are_refused_and_rejected() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    for sm in [80, 90] {
        // The same kernels without line tables splice (the old code spliced these too).
        spliced(&builds(&nvcc, sm, false)).unwrap();
        let b = builds_with(&nvcc, sm, false, true);
        let refused = spliced(&b).unwrap_err();
        assert!(
            matches!(refused.what, Refusal::DebugInfo { .. }),
            "sm_{sm}: {refused}"
        );
        let own = |shipped| Job {
            proved: Vec::new(),
            shipped,
            baseline: &b.base,
            module: &b.whole32,
            origins: Vec::new(),
        };
        named(audit::check(&tools(&nvcc), &own(&b.whole32))).unwrap();
        let mut wrong = b.whole32.clone();
        let (at, _) = section(&wrong, ".debug_line");
        let (offset, op) = first_special_opcode(&wrong[at..]);
        wrong[at + offset] = op + 1;
        let why = named(audit::check(&tools(&nvcc), &own(&wrong))).unwrap_err();
        assert!(why.contains("line table"), "sm_{sm}: {why}");
    }
}

/// The check of an adapt cubin `bytes` whose embedded `variants` (name, candidate) are each
/// their standalone candidate's build of `HUNGRY`, the tuned cubin `shipped` its module.
fn variants_job<'a>(
    bytes: &'a [u8],
    candidates: &'a [Vec<u8>],
    shipped: &'a [u8],
    variants: &'a [(String, usize)],
) -> Job<'a> {
    Job {
        proved: Vec::new(),
        shipped: bytes,
        baseline: &candidates[0],
        module: shipped,
        origins: variants
            .iter()
            .map(|(name, c)| Origin {
                shipped: name,
                name: HUNGRY,
                cubin: &candidates[*c],
            })
            .collect(),
    }
}

/// A toolkit at `at` that is `nvcc`'s but for a `cuobjdump` and an `nvdisasm` that log each
/// run to `at/reads.log` (`start PID TOOL FIRST-ARG CUBIN-SHA STDOUT` then `end PID
/// UNDER-WAY`), STDOUT `file` or `pipe` as the tool's standard output is one. Before running
/// the real tool, a `cuobjdump` waits (at most `at/tries` times 0.05 s) until `at/want` runs
/// are under way at once, or one run has seen that many (`at/met`): reads made side by side
/// meet there, reads made one after another never do, whatever the machine's speed. nvcc
/// finds its tools beside itself (`nvcc.profile`'s `_HERE_`), and so does the check.
fn logging_toolkit(nvcc: &Path, at: &Path) -> PathBuf {
    common::toolkit_with(nvcc, at, &|name, real| {
        if name != "cuobjdump" && name != "nvdisasm" {
            return None;
        }
        let wait = if name == "cuobjdump" {
            "want=$(cat \"$at/want\"); tries=$(cat \"$at/tries\"); i=0\n\
                     while [ $i -lt $tries ] && [ ! -e \"$at/met\" ]; do\n\
                     n=$(( $(grep -c '^start' \"$log\") - $(grep -c '^end' \"$log\") ))\n\
                     if [ $n -ge $want ]; then : > \"$at/met\"; break; fi\n\
                     sleep 0.05; i=$((i+1)); done\n"
        } else {
            ""
        };
        let script = format!(
            "#!/bin/sh\nat='{at}'; log=\"$at/reads.log\"\n\
                     for f; do :; done\n\
                     sum=$(sha256sum < \"$f\" | cut -c1-16)\n\
                     kind=other; [ -p /proc/self/fd/1 ] && kind=pipe; [ -f /proc/self/fd/1 ] && kind=file\n\
                     echo \"start $$ {name} $1 $sum $kind\" >> \"$log\"\n\
                     {wait}\
                     n=$(( $(grep -c '^start' \"$log\") - $(grep -c '^end' \"$log\") ))\n\
                     '{real}' \"$@\"; rc=$?\n\
                     echo \"end $$ $n\" >> \"$log\"\nexit $rc\n",
            at = at.display(),
            real = real.display(),
        );
        Some(script)
    })
}

/// What one build's check read, from the logging toolkit's log.
struct Reads {
    /// (tool, first argument, cubin) of each run, in the order they started.
    runs: Vec<(String, String, String)>,
    /// How each run's standard output was connected.
    outputs: Vec<String>,
    /// The most runs a run saw under way at once, itself included.
    peak: usize,
}

fn reads(log: &Path) -> Reads {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut r = Reads {
        runs: Vec::new(),
        outputs: Vec::new(),
        peak: 0,
    };
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[..] {
            ["start", _, tool, arg, sum, kind] => {
                r.runs.push((tool.into(), arg.into(), sum.into()));
                r.outputs.push(kind.into());
            }
            ["end", _, n] => r.peak = r.peak.max(n.parse().unwrap()),
            _ => panic!("a line the logging tools do not write: {line}"),
        }
    }
    r
}

/// Issue 47: the check of a real build (`tests/kernels/tune/pressure.cu` for sm_90, its
/// retuned kernels spliced in from the variants they were evaluated in) reads each distinct
/// cubin once, and only the shipped cubin, its module and the cubins of the kernels that
/// changed; every read goes to a file, not a pipe (cuobjdump writes unbuffered); and the
/// reads run side by side on the build's free job slots: under a jobserver with three tokens
/// to spare, three `cuobjdump` runs are under way at once, with none to spare never two, and
/// the cubin is the same bytes either way. Before, the reads went through pipes, and at most
/// two ran at once.
#[test]
fn the_check_reads_each_cubin_once_into_files_side_by_side() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tk = dir.path().join("tk");
    let tk_nvcc = logging_toolkit(&nvcc, &tk);
    let build = |tokens: usize, want: usize, tries: usize, out: &str| {
        std::fs::write(tk.join("want"), want.to_string()).unwrap();
        std::fs::write(tk.join("tries"), tries.to_string()).unwrap();
        let _ = std::fs::remove_file(tk.join("met"));
        let _ = std::fs::remove_file(tk.join("reads.log"));
        let report = dir.path().join(format!("{out}.jsonl"));
        let client = jobserver::Client::new(tokens).expect("a jobserver");
        let mut cmd = common::without_our_settings(common::orion(), &tk_nvcc);
        cmd.current_dir(dir.path())
            .env("NVCC_ORION_CACHE", "off")
            .env("NVCC_ORION_REPORT", &report)
            .args(["-arch=sm_90", "-cubin"])
            .arg(common::kernels_dir().join("tune").join("pressure.cu"))
            .args(["-o", out]);
        client.configure_make(&mut cmd);
        let o = cmd.output().unwrap();
        common::assert_ok(&o, out);
        let retuned = std::fs::read_to_string(&report)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|r| r["chosen"].as_u64().is_some_and(|c| c != 0))
            .count();
        let cubin = std::fs::read(dir.path().join(out)).unwrap();
        (reads(&tk.join("reads.log")), retuned, cubin)
    };

    let (spare, retuned, cubin) = build(3, 3, 200, "spare.cubin");
    let dumps: Vec<&String> = spare
        .runs
        .iter()
        .filter(|(tool, _, _)| tool == "cuobjdump")
        .map(|(_, _, sum)| sum)
        .collect();
    assert!(
        retuned >= 1 && dumps.len() >= 3,
        "the premise: kernels retuned ({retuned}) and at least three cubins read: {:?}",
        spare.runs
    );
    let distinct: std::collections::BTreeSet<_> = spare.runs.iter().collect();
    assert_eq!(
        distinct.len(),
        spare.runs.len(),
        "each distinct cubin read once by each way of reading it: {:?}",
        spare.runs
    );
    assert!(
        dumps.len() <= 2 + retuned,
        "only the shipped cubin, its module and one cubin per retuned kernel ({retuned}) \
         are read: {:?}",
        spare.runs
    );
    assert!(
        spare.outputs.iter().all(|k| k == "file"),
        "every tool prints to a file: {:?}",
        spare.outputs
    );
    assert!(
        spare.peak >= 3,
        "three reads under way at once on the spare tokens, not {}",
        spare.peak
    );

    let (none, _, alone) = build(0, 2, 10, "alone.cubin");
    assert_eq!(
        none.peak, 1,
        "with no token to spare the reads run one after another: {:?}",
        none.runs
    );
    assert_eq!(none.runs.len(), spare.runs.len(), "{:?}", none.runs);
    assert_eq!(alone, cubin, "the same bytes, whatever ran side by side");
}

/// Issue 47/50: in a forced spill2smem build (`tests/kernels/spill_corpus/cap32.cu` for
/// sm_90), the toolkit lists each distinct cubin once per way of listing it, whoever asks:
/// the proof decodes the rewritten cubin with `nvdisasm -json` and the assembly check reads
/// the shipped cubin, the same bytes, with the same `-json`; one run serves both
/// (`process::listings`). Before, the check ran `nvdisasm -json` on those bytes again, about
/// 0.5 s of a 5 s build. The tools log (tool, arguments but the input, SHA-256 of the input);
/// the shipped cubin must be among what the check read, so the premise (a rewrite shipped and
/// was checked) holds.
#[test]
fn a_rewrite_build_lists_each_distinct_cubin_once() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("tk");
    let log = at.join("runs.log");
    let tk_nvcc = common::toolkit_with(&nvcc, &at, &|name, real| {
        if name != "cuobjdump" && name != "nvdisasm" {
            return None;
        }
        Some(format!(
            "#!/bin/sh\nfor f; do last=$f; done\n\
             sum=$(sha256sum < \"$last\" | cut -d' ' -f1)\n\
             line=\"{name} $sum\"\n\
             for a; do [ \"$a\" = \"$last\" ] || line=\"$line $a\"; done\n\
             echo \"$line\" >> '{log}'\n\
             exec '{real}' \"$@\"\n",
            log = log.display(),
            real = real.display(),
        ))
    });
    let mut cmd = common::without_our_settings(common::orion(), &tk_nvcc);
    let o = cmd
        .current_dir(dir.path())
        .env("NVCC_ORION_CACHE", "off")
        .args(["-cubin", "-arch=sm_90", "-maxrregcount=32"])
        .args(["--orion-transforms=spill2smem", "--orion-force=spill2smem"])
        .args(["--orion-block-size=128", "--orion-report=r.jsonl"])
        .arg(common::kernels_dir().join("spill_corpus").join("cap32.cu"))
        .args(["-o", "c.cubin"])
        .output()
        .unwrap();
    common::assert_ok(&o, "the forced build");
    let report = std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap();
    assert!(report.contains("\"proved\":true"), "{report}");
    let shipped = std::fs::read(dir.path().join("c.cubin")).unwrap();
    let sum: String = <sha2::Sha256 as sha2::Digest>::digest(&shipped)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let text = std::fs::read_to_string(&log).unwrap();
    let runs: Vec<&str> = text.lines().collect();
    for (tool, args) in [("cuobjdump", "-elf"), ("nvdisasm", "-json")] {
        let want = format!("{tool} {sum} {args}");
        assert!(
            runs.contains(&want.as_str()),
            "the premise: the shipped cubin was read ({want}):\n{text}"
        );
    }
    let distinct: std::collections::BTreeSet<&&str> = runs.iter().collect();
    assert_eq!(
        distinct.len(),
        runs.len(),
        "a cubin listed twice the same way:\n{text}"
    );
}

/// `process::listings` keys a listing by the tool, its arguments and the input's bytes, not
/// by the input's path: sound only if what the tools print of the same bytes does not depend
/// on the file's name or folder. Each way the proof and the check list a cubin, on one cubin
/// with a line table (so `-g -gp` prints lines) at two paths of different names and depths.
#[test]
fn a_listing_does_not_depend_on_the_input_path() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    let b = builds_with(&nvcc, 90, false, true);
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("a.cubin");
    let other = dir.path().join("deeper").join("zz_other_name.bin");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&one, &b.whole32).unwrap();
    std::fs::write(&other, &b.whole32).unwrap();
    let nvdisasm = common::toolkit_tool(&nvcc, "nvdisasm");
    let cuobjdump = common::toolkit_tool(&nvcc, "cuobjdump");
    let ways: [(&PathBuf, &[&str]); 5] = [
        (&nvdisasm, &["-json"]),
        (&nvdisasm, &["-c", "-plr"]),
        (&nvdisasm, &["-g", "-gp"]),
        (&nvdisasm, &["-c"]),
        (&cuobjdump, &["-elf"]),
    ];
    for (tool, args) in ways {
        let list = |p: &Path| {
            let o = Command::new(tool).args(args).arg(p).output().unwrap();
            common::assert_ok(&o, &format!("{} {args:?}", tool.display()));
            o.stdout
        };
        let at_one = list(&one);
        assert!(at_one.len() > 1000, "{args:?}: a real listing");
        assert!(
            at_one == list(&other),
            "{} {args:?} prints the same bytes differently at another path",
            tool.display()
        );
    }
}

/// A kernel of tests/kernels/assembly/smem_spill.cu that ptxas's shared-memory spilling at
/// 32 registers gives a `.nv.shared.<kernel>` of its own.
const SPILLER: &str = "_Z8hop_foldIfLi60ELi16EEvPKiPKT_PS2_ii";

/// ptxas's cubins of smem_spill.cu for sm_90: the whole module, [`SPILLER`] alone at 32
/// registers with `enable_smem_spilling` (`--entry`), and the whole module with it so.
fn spill_builds(nvcc: &Path) -> Builds {
    smem_spilled_builds(nvcc, "smem_spill", SPILLER, 90)
}

/// ptxas's cubins of tests/kernels/assembly/`<stem>`.cu for `sm_<arch>`: the whole module,
/// `kernel` alone at 32 registers with `enable_smem_spilling` (`--entry`), and the whole
/// module with it so.
pub(super) fn smem_spilled_builds(nvcc: &Path, stem: &str, kernel: &str, arch: u32) -> Builds {
    let src = common::kernels_dir().join(format!("assembly/{stem}.cu"));
    let source = std::fs::read(&src).unwrap();
    // The header the `smem_rewrite_*` modules share: an edit of it must rebuild them too.
    let header = std::fs::read(common::kernels_dir().join("assembly/chain_dot.cuh")).unwrap();
    let key = format!("assembly-{}-{arch}", stem.replace('_', "-"));
    let sm = format!("-arch=sm_{arch}");
    let dir = common::build_once(&key, nvcc, &[&source, &header], |dir| {
        let ptx = dir.join("m.ptx");
        let mut c = Command::new(nvcc);
        c.args(["-ptx", "-O3", &sm]);
        run(c.arg(&src).arg("-o").arg(&ptx), "nvcc -ptx");
        let text = with_maxnreg(&std::fs::read_to_string(&ptx).unwrap(), kernel, 32);
        // The pragma opens the entry's body, as the tuner writes it.
        let at = text.find(&format!(".entry {kernel}(")).unwrap();
        let open = at + text[at..].find('{').unwrap() + 1;
        let pragma = "\n.pragma \"enable_smem_spilling\";";
        let spilled = format!("{}{pragma}{}", &text[..open], &text[open..]);
        std::fs::write(dir.join("m32.ptx"), spilled).unwrap();
        let ptxas = common::toolkit_tool(nvcc, "ptxas");
        for (input, out, extra) in [
            ("m.ptx", "base.cubin", vec![]),
            ("m32.ptx", "donor.cubin", vec!["--entry", kernel]),
            ("m32.ptx", "whole32.cubin", vec![]),
        ] {
            let mut c = Command::new(&ptxas);
            c.args([sm.as_str(), "-m64"]).args(&extra);
            run(c.arg(dir.join(input)).arg("-o").arg(dir.join(out)), "ptxas");
        }
    });
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    Builds {
        base: read("base.cubin"),
        donor: read("donor.cubin"),
        whole32: read("whole32.cubin"),
    }
}

/// The file offset of section `name`'s header (ELF64: `e_shoff` at 0x28, 64-byte headers).
/// Read with our own few lines, not the crate's.
fn section_header(bytes: &[u8], name: &str) -> usize {
    let index = Cubin::parse(bytes)
        .unwrap()
        .elf()
        .section_index_by_name(name)
        .unwrap_or_else(|| panic!("no section {name}"));
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    shoff + 64 * index
}

fn shared_k() -> String {
    format!(".nv.shared.{SPILLER}")
}

/// Wrong assemblies of the part the splice adds (`cubin::shared_splice`).
const SHARED_MUTATIONS: &[Mutation] = &[
    (
        "shared section of another size",
        |b| {
            let h = section_header(b, &shared_k());
            b[h + 32] = b[h + 32].wrapping_add(16);
        },
        SPILLER,
    ),
    (
        "shared section of another name (the kernel's missing)",
        |b| {
            // `.nv.shared.<k>` becomes `.nv.shared.<k>` with its last letter changed.
            let h = section_header(b, &shared_k());
            let sh_name = u32::from_le_bytes(b[h..h + 4].try_into().unwrap()) as usize;
            let (table, _) = section(b, ".shstrtab");
            let last = table + sh_name + shared_k().len() - 1;
            b[last] = b'j';
        },
        // A section of no kernel's name: the module's, which ptxas's module has not.
        "the module",
    ),
    (
        "shared section not allocated",
        |b| {
            let h = section_header(b, &shared_k());
            b[h + 8] &= !0x2;
        },
        SPILLER,
    ),
];

/// The assembly check's job for `shipped`: ptxas's module with `kernel` spliced in from the
/// donor build.
fn one_kernel_job<'a>(shipped: &'a [u8], b: &'a Builds, kernel: &'a str) -> Job<'a> {
    Job {
        proved: Vec::new(),
        shipped,
        baseline: &b.base,
        module: &b.base,
        origins: vec![Origin {
            shipped: kernel,
            name: kernel,
            cubin: &b.donor,
        }],
    }
}

/// `good` (a splice of `kernel`) passes the assembly check, and each of `mutations` of it is
/// rejected with the blame it names.
fn passes_and_rejects_mutants(
    tk: &Tools,
    b: &Builds,
    kernel: &str,
    good: &[u8],
    mutations: &[Mutation],
) {
    named(audit::check(tk, &one_kernel_job(good, b, kernel))).expect("the correct splice passes");
    let mut failures = Vec::new();
    for (what, mutate, blamed) in mutations {
        let mut bad = good.to_vec();
        mutate(&mut bad);
        assert_ne!(bad, good, "{what}: the mutation changed nothing");
        match named(audit::check(tk, &one_kernel_job(&bad, b, kernel))) {
            Ok(_) => failures.push(format!("{what}: accepted")),
            Err(why) if !why.starts_with(blamed) => {
                failures.push(format!("{what}: blamed the wrong part ({why})"))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 47: the splice adds a kernel's `.nv.shared.<k>` that ptxas's own build has not (the
/// shared-memory spilling candidate), exactly as a whole-module ptxas run writes it, the
/// assembly check passes it, and rejects each wrong edit of the added part.
#[test]
fn an_added_shared_section_is_exact_and_its_mutants_are_rejected() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    let tk = tools(&nvcc);
    let b = spill_builds(&nvcc);
    let base = Cubin::parse(&b.base).unwrap();
    assert!(base.elf().section_index_by_name(&shared_k()).is_none());
    let donor = Cubin::parse(&b.donor).unwrap();
    let good = splice(&base, &[(SPILLER, &donor)]).expect("the splice adds the section");
    assert!(
        good == b.whole32,
        "the splice differs from a whole-module run at the same budgets"
    );
    passes_and_rejects_mutants(&tk, &b, SPILLER, &good, SHARED_MUTATIONS);
}

/// A kernel of tests/kernels/assembly/smem_first.cu, a module with no shared memory, that
/// ptxas's shared-memory spilling at 32 registers gives the module's first `.nv.shared.<k>`.
const FIRST: &str = "_Z9row_scoreI6__halfLi64EEvPKT_S3_PKiPfii";

/// ptxas's cubins of smem_first.cu for sm_80 (no NOBITS section, no writable segment), as
/// [`smem_spilled_builds`] makes them for [`FIRST`].
fn first_shared_builds(nvcc: &Path) -> Builds {
    smem_spilled_builds(nvcc, "smem_first", FIRST, 80)
}

/// The file offsets of the program headers (ELF64: `e_phoff` at 0x20, `e_phnum` at 0x38,
/// 56-byte headers) and the index of the writable `LOAD` (flags at +4 with `PF_W`). Read
/// with our own few lines, not the crate's.
fn program_headers(b: &[u8]) -> (Vec<usize>, usize) {
    let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().unwrap()) as usize;
    let phnum = u16::from_le_bytes(b[0x38..0x3a].try_into().unwrap()) as usize;
    let at: Vec<usize> = (0..phnum).map(|i| phoff + 56 * i).collect();
    let writable = at
        .iter()
        .position(|&p| b[p] == 1 && b[p + 4] & 2 != 0)
        .expect("a writable LOAD");
    (at, writable)
}

/// Wrong assemblies of the program header the splice adds (`cubin::shared_segment`).
pub(super) const SEGMENT_MUTATIONS: &[Mutation] = &[
    (
        "shared memory segment of another size",
        |b| {
            let (at, w) = program_headers(b);
            b[at[w] + 40] = b[at[w] + 40].wrapping_add(0x10);
        },
        "the module",
    ),
    (
        "shared memory segment with the code's flags (R E)",
        |b| {
            let (at, w) = program_headers(b);
            b[at[w] + 4] = 5;
        },
        "the module",
    ),
    (
        "shared memory segment missing (the table one header shorter)",
        |b| {
            let (at, w) = program_headers(b);
            let end = at[at.len() - 1] + 56;
            b.copy_within(at[w] + 56..end, at[w]);
            b[end - 56..end].fill(0);
            b[0x38] -= 1;
            // The two headers that describe the table itself: sizes one entry smaller.
            for &p in &at[..at.len() - 1] {
                let table = u64::from_le_bytes(b[p + 8..p + 16].try_into().unwrap())
                    == u64::from_le_bytes(b[0x20..0x28].try_into().unwrap());
                if table {
                    for f in [p + 32, p + 40] {
                        let v = u64::from_le_bytes(b[f..f + 8].try_into().unwrap()) - 56;
                        b[f..f + 8].copy_from_slice(&v.to_le_bytes());
                    }
                }
            }
        },
        "the module",
    ),
];

/// Issue 47: in a module with no shared memory (sm_80) the splice adds [`FIRST`]'s
/// `.nv.shared.<k>` and the writable program header ptxas writes for it, exactly as a
/// whole-module ptxas run does; the assembly check passes it and rejects each wrong edit of
/// the added header (another size, other flags, none).
#[test]
fn a_first_shared_segment_is_exact_and_its_mutants_are_rejected() {
    let Some(nvcc) = common::nvcc_or_skip("assembly_check") else {
        return;
    };
    let tk = tools(&nvcc);
    let b = first_shared_builds(&nvcc);
    let base = Cubin::parse(&b.base).unwrap();
    let shared = |c: &Cubin| {
        c.elf()
            .sections
            .iter()
            .any(|s| s.name.starts_with(".nv.shared."))
    };
    assert!(!shared(&base), "ptxas's own build has shared memory");
    let donor = Cubin::parse(&b.donor).unwrap();
    let good = splice(&base, &[(FIRST, &donor)]).expect("the splice adds section and segment");
    assert!(
        good == b.whole32,
        "the splice differs from a whole-module run at the same budgets"
    );
    passes_and_rejects_mutants(&tk, &b, FIRST, &good, SEGMENT_MUTATIONS);
}
