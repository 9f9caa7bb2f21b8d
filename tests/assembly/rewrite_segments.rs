//! spill2smem's shared memory laid out as ptxas lays it out, program headers included, and
//! the assembly check comparing them on a SASS rewrite too (issue 47's last gap: the check
//! skipped the program headers of rewrites, because spill2smem added a module's first
//! `.nv.shared.<k>` without the writable `LOAD` ptxas writes for it).
//!
//! On real toolchain output, `chain_dot` at 32 registers (nvcc `-maxrregcount=32`, spilling)
//! rewritten by `nvcc-orion rewrite --spill2smem`, against ptxas's own shared-memory spilling
//! of the same kernel (`enable_smem_spilling`, the same PTX), in three modules:
//! * `smem_rewrite_first.cu` (sm_75, 80, 86), no shared memory at all: the rewrite adds the
//!   module's first shared section and one program header, as ptxas does;
//! * `smem_rewrite_beside.cu` (sm_75, 80, 86), with another kernel's `__shared__` data of a
//!   size no multiple of 16: the section goes among the shared sections where ptxas puts it,
//!   and the writable segment's size covers them in that order;
//! * `smem_rewrite_globals.cu` (sm_80, 90), with `__device__` data too (`.nv.global.init`,
//!   `.nv.global`) and on sm_90 `.nv.shared.reserved.0`: the section among those where
//!   ptxas puts it, the writable segment (file bytes and all) grown over it.
//!
//! In each, every NOBITS section (index, name offset), the new section's symbol (index, name
//! offset), the string tables' sizes and every program header's type, flags and alignment are
//! ptxas's; the writable segment's size is its file bytes and the NOBITS sections laid out in
//! section order (the rule checked on ptxas's build too); the assembly check, program headers
//! compared, passes the rewrite and rejects each wrong edit of the writable segment (another
//! size, other flags, none). A layout whose program headers cannot be extended as ptxas would
//! leaves the kernel alone, the cubin unchanged.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::assembly_check::{Mutation, SEGMENT_MUTATIONS, smem_spilled_builds, tools};
use crate::common;
use crate::rewrite_audit::spill2smem_rewrite;

use std::path::Path;
use std::process::Command;

use nvcc_orion::audit::{self, AuditError, Difference, Job};

/// The spilling kernel of both modules.
const KERNEL: &str = "_Z9chain_dotILi48EEvPKfPKiPfii";

#[test]
fn a_first_shared_section_is_laid_out_as_ptxas_does_sm_75() {
    laid_out_as_ptxas("smem_rewrite_first", 75);
}

#[test]
fn a_first_shared_section_is_laid_out_as_ptxas_does_sm_80() {
    laid_out_as_ptxas("smem_rewrite_first", 80);
}

#[test]
fn a_first_shared_section_is_laid_out_as_ptxas_does_sm_86() {
    laid_out_as_ptxas("smem_rewrite_first", 86);
}

#[test]
fn a_shared_section_beside_others_is_laid_out_as_ptxas_does_sm_75() {
    laid_out_as_ptxas("smem_rewrite_beside", 75);
}

#[test]
fn a_shared_section_beside_others_is_laid_out_as_ptxas_does_sm_80() {
    laid_out_as_ptxas("smem_rewrite_beside", 80);
}

#[test]
fn a_shared_section_beside_others_is_laid_out_as_ptxas_does_sm_86() {
    laid_out_as_ptxas("smem_rewrite_beside", 86);
}

#[test]
fn shared_memory_beside_device_data_is_laid_out_as_ptxas_does_sm_80() {
    laid_out_as_ptxas("smem_rewrite_globals", 80);
}

#[test]
fn shared_memory_beside_device_data_is_laid_out_as_ptxas_does_sm_90() {
    laid_out_as_ptxas("smem_rewrite_globals", 90);
}

/// A layout whose program headers cannot be extended as ptxas would (ptxas's sm_80 build of
/// a module with no shared memory, its program header table's own `LOAD` swapped with the
/// code's, so it is no longer last) is refused for the kernel: `nvcc-orion rewrite` leaves
/// it alone, says why, and writes the cubin back unchanged.
#[test]
fn a_layout_it_cannot_extend_leaves_the_kernel_alone() {
    let Some(nvcc) = common::nvcc_or_skip("rewrite_segments") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.cubin"), dir.path().join("out.cubin"));
    let src = common::kernels_dir().join("assembly/smem_rewrite_first.cu");
    let o = Command::new(&nvcc)
        .args(["-cubin", "-arch=sm_80", "-maxrregcount=32"])
        .arg(&src)
        .arg("-o")
        .arg(&input)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc");
    let mut bytes = std::fs::read(&input).unwrap();
    let (phoff, phnum) = (u64_at(&bytes, 0x20) as usize, u16_at(&bytes, 0x38) as usize);
    let (a, b) = (phoff + 56 * (phnum - 2), phoff + 56 * (phnum - 1));
    let last: Vec<u8> = bytes[b..b + 56].to_vec();
    bytes.copy_within(a..a + 56, b);
    bytes[a..a + 56].copy_from_slice(&last);
    std::fs::write(&input, &bytes).unwrap();
    let stderr = spill2smem_rewrite(&nvcc, KERNEL, &input, &output);
    assert!(
        stderr.lines().any(|l| l.contains(KERNEL)
            && l.contains("left alone")
            && l.contains("no shared memory section can be added as ptxas would")),
        "{stderr}"
    );
    assert!(
        std::fs::read(&output).unwrap() == bytes,
        "the cubin changed"
    );
}

/// `tests/kernels/assembly/<stem>.cu` for `sm_<arch>`: the rewrite against ptxas's shared
/// memory spilling, then the check on the rewrite and its mutants.
fn laid_out_as_ptxas(stem: &str, arch: u32) {
    let Some(nvcc) = common::nvcc_or_skip("rewrite_segments") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (base, ours) = rewrite(&nvcc, dir.path(), stem, arch);
    let theirs = smem_spilled_builds(&nvcc, stem, KERNEL, arch).whole32;
    let label = format!("{stem} sm_{arch}");
    let name = format!(".nv.shared.{KERNEL}");
    assert!(nobits(&base).iter().all(|s| s.name != name), "{label}");
    if stem.ends_with("first") {
        assert!(nobits(&base).is_empty(), "{label}: ptxas's own build");
    }
    // Where each NOBITS section is and what names it; the sizes are the rewrite's own.
    let place = |b: &[u8]| -> Vec<(usize, String, u32)> {
        nobits(b)
            .into_iter()
            .map(|s| (s.index, s.name, s.sh_name))
            .collect()
    };
    assert_eq!(place(&ours), place(&theirs), "{label}: NOBITS sections");
    assert_eq!(
        section_symbols(&ours, &name),
        section_symbols(&theirs, &name),
        "{label}: the section symbol"
    );
    let tables = |b: &[u8]| -> Vec<u64> {
        sections(b)
            .into_iter()
            .filter(|s| s.name.ends_with("strtab"))
            .map(|s| s.size)
            .collect()
    };
    assert_eq!(tables(&ours), tables(&theirs), "{label}: string tables");
    // The program headers: ptxas's kinds in ptxas's order, the writable one its file bytes
    // and then the NOBITS sections laid out in section order (which is what ptxas's own
    // segment holds), starting at the first of them where it has no file bytes.
    let kinds = |b: &[u8]| -> Vec<(u32, u32, u64)> {
        segments(b)
            .iter()
            .map(|p| (p.kind, p.flags, p.align))
            .collect()
    };
    assert_eq!(kinds(&ours), kinds(&theirs), "{label}: program headers");
    for (b, whose) in [(&ours, "ours"), (&theirs, "ptxas's")] {
        let w = writable(b);
        let s = nobits(b);
        let laid_out = s.iter().fold(w.filesz, |end, s| {
            end.next_multiple_of(s.align.max(1)) + s.size
        });
        assert_eq!(
            w.memsz, laid_out,
            "{label}: {whose} writable segment's size"
        );
        if w.filesz == 0 {
            assert_eq!(w.offset, s[0].offset, "{label}: {whose} writable segment");
        }
    }
    check_passes_and_rejects_mutants(&nvcc, &base, &ours, &label);
}

/// nvcc's spilling cubin of `<stem>.cu` at 32 registers, and `nvcc-orion rewrite
/// --spill2smem` of it with [`KERNEL`] proved.
fn rewrite(nvcc: &Path, dir: &Path, stem: &str, arch: u32) -> (Vec<u8>, Vec<u8>) {
    let src = common::kernels_dir().join(format!("assembly/{stem}.cu"));
    let (base, ours) = (dir.join("base.cubin"), dir.join("ours.cubin"));
    let o = Command::new(nvcc)
        .args(["-cubin", &format!("-arch=sm_{arch}"), "-maxrregcount=32"])
        .arg(&src)
        .arg("-o")
        .arg(&base)
        .output()
        .unwrap();
    common::assert_ok(&o, "nvcc");
    let stderr = spill2smem_rewrite(nvcc, KERNEL, &base, &ours);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(KERNEL) && l.contains("proved (")),
        "{stem} sm_{arch}: {KERNEL} rewritten and proved:\n{stderr}"
    );
    (std::fs::read(base).unwrap(), std::fs::read(ours).unwrap())
}

/// The assembly check (program headers compared) passes the rewrite, and blames the module
/// for each wrong edit of its writable segment.
fn check_passes_and_rejects_mutants(nvcc: &Path, base: &[u8], ours: &[u8], label: &str) {
    let tk = tools(nvcc);
    let found = |shipped: &[u8]| -> Vec<(String, Difference)> {
        let job = Job {
            shipped,
            baseline: base,
            module: base,
            origins: Vec::new(),
            proved: vec![KERNEL],
        };
        let (_, found) = audit::check_each(&tk, &job).unwrap();
        found
            .into_iter()
            .map(|e| match e {
                AuditError::Disagrees { kernel, what } => (kernel, what),
                other => panic!("{label}: not a disagreement: {other}"),
            })
            .collect()
    };
    assert_eq!(found(ours), Vec::new(), "{label}: the rewrite passes");
    let mutations: &[Mutation] = SEGMENT_MUTATIONS;
    for (what, mutate, blamed) in mutations {
        let mut bad = ours.to_vec();
        mutate(&mut bad);
        assert_ne!(bad, ours, "{label}: {what}: the mutation changed nothing");
        let f = found(&bad);
        assert!(
            !f.is_empty()
                && f.iter()
                    .all(|(k, d)| { k == blamed && matches!(d, Difference::ProgramHeaders(_)) }),
            "{label}: {what}: {f:?}"
        );
    }
}

/// A section header, read with our own few lines (ELF64: `e_shoff` at 0x28, `e_shnum` at
/// 0x3c, `e_shstrndx` at 0x3e, 64-byte headers), not the crate's reader.
struct Header {
    index: usize,
    name: String,
    sh_name: u32,
    kind: u32,
    flags: u64,
    offset: u64,
    size: u64,
    align: u64,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The NUL-terminated string at `at`.
fn string_at(b: &[u8], at: usize) -> String {
    let end = at + b[at..].iter().position(|&c| c == 0).unwrap();
    String::from_utf8_lossy(&b[at..end]).into_owned()
}

fn sections(b: &[u8]) -> Vec<Header> {
    let (shoff, shnum) = (u64_at(b, 0x28) as usize, u16_at(b, 0x3c) as usize);
    let at = |i: usize| shoff + 64 * i;
    let names = u64_at(b, at(u16_at(b, 0x3e) as usize) + 24) as usize;
    (0..shnum)
        .map(|i| {
            let h = at(i);
            let sh_name = u32_at(b, h);
            Header {
                index: i,
                name: string_at(b, names + sh_name as usize),
                sh_name,
                kind: u32_at(b, h + 4),
                flags: u64_at(b, h + 8),
                offset: u64_at(b, h + 24),
                size: u64_at(b, h + 32),
                align: u64_at(b, h + 48),
            }
        })
        .collect()
}

/// The allocated NOBITS sections (`SHT_NOBITS`, `SHF_ALLOC`), in section order.
fn nobits(b: &[u8]) -> Vec<Header> {
    sections(b)
        .into_iter()
        .filter(|s| s.kind == 8 && s.flags & 2 != 0)
        .collect()
}

/// Each symbol of section `name` (ELF64 `Sym`: 24 bytes, `st_shndx` at +6): its index and
/// its name's offset in `.strtab`.
fn section_symbols(b: &[u8], name: &str) -> Vec<(usize, u32)> {
    let all = sections(b);
    let symtab = all.iter().find(|s| s.name == ".symtab").unwrap();
    let target = all.iter().find(|s| s.name == name).unwrap().index as u16;
    (0..symtab.size as usize / 24)
        .map(|i| (i, symtab.offset as usize + 24 * i))
        .filter(|&(_, at)| u16_at(b, at + 6) == target)
        .map(|(i, at)| (i, u32_at(b, at)))
        .collect()
}

/// A program header (ELF64: `e_phoff` at 0x20, `e_phnum` at 0x38, 56-byte headers).
struct Segment {
    kind: u32,
    flags: u32,
    offset: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

fn segments(b: &[u8]) -> Vec<Segment> {
    let (phoff, phnum) = (u64_at(b, 0x20) as usize, u16_at(b, 0x38) as usize);
    (0..phnum)
        .map(|i| {
            let p = phoff + 56 * i;
            Segment {
                kind: u32_at(b, p),
                flags: u32_at(b, p + 4),
                offset: u64_at(b, p + 8),
                filesz: u64_at(b, p + 32),
                memsz: u64_at(b, p + 40),
                align: u64_at(b, p + 48),
            }
        })
        .collect()
}

/// The one writable `LOAD`.
fn writable(b: &[u8]) -> Segment {
    let mut w: Vec<Segment> = segments(b)
        .into_iter()
        .filter(|p| p.kind == 1 && p.flags & 2 != 0)
        .collect();
    assert_eq!(w.len(), 1, "one writable LOAD");
    w.remove(0)
}
