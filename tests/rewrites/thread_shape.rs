//! Thread shape and block size of the spill area on real ptxas output (the kernels of
//! `tests/kernels/spill2smem/shape.cu`, compiled for sm_80 and sm_90 at a 31-register budget
//! so they spill):
//!
//! * a `__launch_bounds__(256)` kernel (`EIATTR_MAX_THREADS`, no `REQNTID`) is rewritten with
//!   slots indexed by the 3-D thread index (nvdisasm shows `S2R SR_TID.Y` and `SR_TID.Z` in
//!   its prologue) and its base is proved for every block shape of at most 256 threads;
//! * a kernel that declares nothing, rewritten under an assumed block size, carries that size
//!   as its launch bound (`cuobjdump -elf` shows `EIATTR_MAX_THREADS`);
//! * a kernel given `.reqntid 256, 1, 1` keeps the 1-D prologue (`SR_TID.X` alone), proved
//!   for its one shape;
//! * the base proof, run on nvdisasm's reading of a written cubin whose prologue was broken
//!   (`SR_TID.Z` read as `SR_TID.X`, a shift of 1 instead of 2), refuses it.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use nvcc_orion::cubin::{Cubin, OffsetMap};
use nvcc_orion::sass::{decode, encode};
use nvcc_orion::transform::area::{Options, ThreadsSource};
use nvcc_orion::tune::proven::{self, Outcome};
use nvcc_orion::tune::ptx::{Budget, entries, with_budgets};
use nvcc_orion::verify::SpillBase;
use nvcc_orion::verify::base::{self, BaseError, Launch, ValueProblem};

const ARCHS: &[u32] = &[80, 90];
const BOUNDS: &str = "_Z12shape_boundsPKfPfi";
const FREE: &str = "_Z10shape_freePKfPfi";
const REQNTID: &str = "_Z13shape_reqntidPKfPfi";
/// The block size assumed for the kernel that declares none.
const ASSUMED: u32 = 192;

struct Built {
    nvcc: PathBuf,
    dir: PathBuf,
    /// arch → spilling cubin.
    cubins: BTreeMap<u32, PathBuf>,
}

fn source() -> PathBuf {
    common::kernels_dir().join("spill2smem/shape.cu")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run tool");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `.reqntid 256, 1, 1` on `kernel`'s entry, after its parameter list.
fn with_reqntid(ptx: &str, kernel: &str) -> String {
    let at = ptx
        .find(&format!(".entry {kernel}("))
        .expect("the entry is in the PTX");
    let close = at + ptx[at..].find("\n)").expect("parameter list") + 2;
    format!("{}\n.reqntid 256, 1, 1{}", &ptx[..close], &ptx[close..])
}

/// Build once per source hash (cross-process: [`common::build_once`]).
fn built() -> Option<&'static Built> {
    static B: OnceLock<Option<Built>> = OnceLock::new();
    B.get_or_init(|| {
        let nvcc = common::nvcc_or_skip("thread_shape")?;
        let cubin = |dir: &Path, a: u32| dir.join(format!("shape_sm{a}.cubin"));
        let src = std::fs::read(source()).expect("source");
        let dir = common::build_once("thread-shape", &nvcc, &[&src], |dir| {
            let ptxas = common::toolkit_tool(&nvcc, "ptxas");
            for &a in ARCHS {
                let raw = dir.join(format!("raw_{a}.ptx"));
                run(Command::new(&nvcc)
                    .args(["-ptx", &format!("-arch=compute_{a}"), "-o"])
                    .arg(&raw)
                    .arg(source()));
                let text = std::fs::read_to_string(&raw).unwrap();
                let budgets = entries(&text)
                    .unwrap()
                    .into_iter()
                    .map(|e| (e.name, Budget::regs(31)))
                    .collect();
                let text = with_reqntid(&with_budgets(&text, &budgets).unwrap(), REQNTID);
                let ptx = dir.join(format!("shape_{a}.ptx"));
                std::fs::write(&ptx, text).unwrap();
                run(Command::new(&ptxas)
                    .arg(format!("-arch=sm_{a}"))
                    .arg(&ptx)
                    .arg("-o")
                    .arg(cubin(dir, a)));
            }
        });
        let cubins = ARCHS.iter().map(|&a| (a, cubin(&dir, a))).collect();
        Some(Built { nvcc, dir, cubins })
    })
    .as_ref()
}

/// `spill2smem` of `kernel` on `arch` with the block-size `setting`: the cubin before, the
/// outcome, and the path the result was written to.
fn rewrite(b: &Built, arch: u32, kernel: &str, setting: Option<u32>) -> (Cubin, Outcome, PathBuf) {
    let bytes = std::fs::read(&b.cubins[&arch]).unwrap();
    let cubin = Cubin::parse(&bytes).unwrap();
    let info = cubin.function_info(kernel).expect(kernel);
    assert!(
        info.spill_instructions > 0,
        "sm_{arch} {kernel} does not spill"
    );
    let mut o = Options::for_kernel(&cubin, kernel, setting);
    o.max_registers = Some(32);
    let outcome = proven::spill2smem(&bytes, &[(kernel.to_string(), o)]).unwrap();
    let path = b.dir.join(format!(
        "out_{arch}_{kernel}_{}.cubin",
        setting.unwrap_or(0)
    ));
    std::fs::write(&path, &outcome.bytes).unwrap();
    (cubin, outcome, path)
}

/// The instructions nvdisasm prints for `kernel` in the cubin at `path`, one per line.
fn sass(b: &Built, kernel: &str, path: &Path) -> Vec<String> {
    let text = run(Command::new(common::toolkit_tool(&b.nvcc, "nvdisasm"))
        .arg("-c")
        .arg(path));
    let start = text
        .find(&format!(".text.{kernel}:"))
        .expect("the kernel's code");
    let code = &text[start..];
    let code = &code[..code.find(".section").unwrap_or(code.len())];
    code.lines()
        .filter(|l| l.contains("*/") && l.contains(';'))
        .map(|l| l.trim().to_string())
        .collect()
}

/// The `Value:` line of `attr` in the `.nv.info.<kernel>` section `cuobjdump -elf` prints.
fn attribute(b: &Built, kernel: &str, attr: &str, path: &Path) -> Option<String> {
    let text = run(Command::new(common::toolkit_tool(&b.nvcc, "cuobjdump"))
        .arg("-elf")
        .arg(path));
    let start = text.find(&format!("\n.nv.info.{kernel}\n"))?;
    let section = &text[start + 1..];
    // Up to the next section's name (a line starting with a dot).
    let section = &section[..section.find("\n.").unwrap_or(section.len())];
    let at = section.find(&format!("Attribute:\t{attr}\n"))?;
    section[at..]
        .lines()
        .find_map(|l| l.trim().strip_prefix("Value:"))
        .map(|v| v.trim().to_string())
}

#[test]
fn launch_bounds_kernel_indexes_by_the_3d_thread_index() {
    let Some(b) = built() else { return };
    for &arch in ARCHS {
        let (cubin, outcome, path) = rewrite(b, arch, BOUNDS, None);
        assert_eq!(
            cubin.function_info(BOUNDS).unwrap().max_threads,
            Some([256, 1, 1]),
            "sm_{arch}: ptxas's form of __launch_bounds__(256)"
        );
        let proved = outcome.kernels[0]
            .1
            .as_ref()
            .unwrap_or_else(|e| panic!("sm_{arch}: {e}"));
        let r = &proved.rewrite;
        assert_eq!(r.options.source, ThreadsSource::MaxThreads);
        assert!(!r.options.one_d);
        assert_eq!(r.stride, 256 * 4);
        // Every (nx, ny, nz) with nx·ny·nz ≤ 256 and nz ≤ 64.
        assert!(proved.shapes > 2000, "sm_{arch}: {}", proved.shapes);
        let code = sass(b, BOUNDS, &path);
        let prologue = &code[..r
            .inserted
            .iter()
            .filter(|&&o| o <= r.base_defined_at)
            .count()];
        for sr in ["SR_TID.X", "SR_TID.Y", "SR_TID.Z"] {
            assert!(
                prologue.iter().any(|l| l.contains("S2R") && l.contains(sr)),
                "sm_{arch}: no {sr} in {prologue:#?}"
            );
        }
        assert!(
            prologue.iter().any(|l| l.contains("c[0x0][0x4]"))
                && prologue.iter().any(|l| l.contains("c[0x0][0x0]")),
            "sm_{arch}: the block's x and y extents are read: {prologue:#?}"
        );
        // ptxas's own launch bound is kept as it was.
        assert_eq!(
            attribute(b, BOUNDS, "EIATTR_MAX_THREADS", &path).as_deref(),
            Some("0x100 0x1 0x1")
        );
    }
}

#[test]
fn an_assumed_block_size_becomes_the_launch_bound() {
    let Some(b) = built() else { return };
    for &arch in ARCHS {
        let (cubin, outcome, path) = rewrite(b, arch, FREE, Some(ASSUMED));
        assert_eq!(cubin.function_info(FREE).unwrap().max_threads, None);
        let proved = outcome.kernels[0]
            .1
            .as_ref()
            .unwrap_or_else(|e| panic!("sm_{arch}: {e}"));
        assert_eq!(proved.rewrite.options.source, ThreadsSource::Setting);
        assert_eq!(proved.rewrite.stride, ASSUMED * 4);
        assert!(
            proved.summary().contains("EIATTR_MAX_THREADS"),
            "{}",
            proved.summary()
        );
        assert_eq!(
            attribute(b, FREE, "EIATTR_MAX_THREADS", &path).as_deref(),
            Some(format!("{ASSUMED:#x} 0x1 0x1").as_str()),
            "sm_{arch}"
        );
        // The other kernels are untouched: still no bound on the one that declares none
        // when it is not rewritten.
        assert_eq!(
            attribute(b, FREE, "EIATTR_MAX_THREADS", &b.cubins[&arch]),
            None
        );
    }
}

#[test]
fn reqntid_kernel_keeps_the_1d_prologue() {
    let Some(b) = built() else { return };
    for &arch in ARCHS {
        let (cubin, outcome, path) = rewrite(b, arch, REQNTID, Some(ASSUMED));
        assert_eq!(
            cubin.function_info(REQNTID).unwrap().reqntid,
            Some([256, 1, 1])
        );
        assert_eq!(
            attribute(b, REQNTID, "EIATTR_REQNTID", &b.cubins[&arch]).as_deref(),
            Some("0x100 0x1 0x1")
        );
        let proved = outcome.kernels[0]
            .1
            .as_ref()
            .unwrap_or_else(|e| panic!("sm_{arch}: {e}"));
        let r = &proved.rewrite;
        // `.reqntid` wins over the setting and proves the block 1-D.
        assert_eq!(r.options.source, ThreadsSource::Reqntid);
        assert!(r.options.one_d);
        assert_eq!(r.stride, 256 * 4);
        assert_eq!(proved.shapes, 1);
        let code = sass(b, REQNTID, &path);
        let prologue = &code[..r
            .inserted
            .iter()
            .filter(|&&o| o <= r.base_defined_at)
            .count()];
        assert!(
            prologue.iter().any(|l| l.contains("SR_TID.X")),
            "sm_{arch}: {prologue:#?}"
        );
        assert!(
            !prologue
                .iter()
                .any(|l| l.contains("SR_TID.Y") || l.contains("SR_TID.Z")),
            "sm_{arch}: {prologue:#?}"
        );
        // Nothing added: the driver enforces `.reqntid` itself.
        assert_eq!(attribute(b, REQNTID, "EIATTR_MAX_THREADS", &path), None);
    }
}

/// The proof of `r`'s base on the cubin `bytes` after `edit` changed the instruction at
/// `at` (a rewritten section offset of the kernel `BOUNDS`), as nvdisasm reads it.
fn prove_edited(
    b: &Built,
    original: &Cubin,
    bytes: &[u8],
    r: &nvcc_orion::transform::spill2smem::Rewrite,
    at: u64,
    edit: impl Fn(u128) -> u128,
) -> Result<usize, BaseError> {
    let mut c = Cubin::parse(bytes).unwrap();
    let mut code = c.elf().sections[r.section].data.clone();
    let at = at as usize;
    let word = encode::from_bytes(code[at..at + 16].try_into().unwrap());
    code[at..at + 16].copy_from_slice(&encode::to_bytes(edit(word)));
    c.replace_text(BOUNDS, code, &OffsetMap::new()).unwrap();
    let path = b.dir.join("edited.cubin");
    std::fs::write(&path, c.write().unwrap()).unwrap();
    let decoded = decode::decode_file(&common::toolkit_tool(&b.nvcc, "nvdisasm"), &path).unwrap();
    let f = decoded
        .functions
        .iter()
        .find(|f| f.name == BOUNDS && f.section == r.section)
        .unwrap();
    let launch = Launch::read(original, &c, BOUNDS).unwrap();
    let claim = SpillBase {
        reg: r.base_reg,
        defined_at: r.base_defined_at,
        stride: r.stride,
        slots: r.slots,
        area: r.area_offset,
    };
    base::prove(f, &claim, &launch).map(|p| p.shapes)
}

#[test]
fn a_broken_prologue_in_a_written_cubin_is_refused() {
    let Some(b) = built() else { return };
    let arch = 80;
    let (cubin, outcome, path) = rewrite(b, arch, BOUNDS, None);
    let r = &outcome.kernels[0].1.as_ref().unwrap().rewrite;
    let code = sass(b, BOUNDS, &path);
    let find = |what: &str| {
        // One line per instruction from offset 0.
        16 * code.iter().position(|l| l.contains(what)).unwrap() as u64
    };
    // Unchanged, the proof holds.
    let shapes = prove_edited(b, &cubin, &outcome.bytes, r, find("SR_TID.Z"), |w| w).unwrap();
    assert!(shapes > 2000);
    // `S2R SR_TID.Z` → `SR_TID.X` (bits 72-79): threads of different z share slots.
    let e = prove_edited(b, &cubin, &outcome.bytes, r, find("SR_TID.Z"), |w| {
        encode::set_bits(w, 72, 8, 0x21)
    })
    .unwrap_err();
    // (Refused as the first shape that fails: shared slots, or a thread past its row.)
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::SameSlot { .. } | ValueProblem::OutsideRow { .. },
                ..
            }
        ),
        "{e}"
    );
    // The final `LEA` shifts by 1 (bits 75-79): two threads per word.
    let e = prove_edited(b, &cubin, &outcome.bytes, r, r.base_defined_at, |w| {
        encode::set_bits(w, 75, 5, 1)
    })
    .unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::Misaligned { .. } | ValueProblem::SameSlot { .. },
                ..
            }
        ),
        "{e}"
    );
}
