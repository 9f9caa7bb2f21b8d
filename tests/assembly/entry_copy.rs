//! Adding a kernel under a new name from another ptxas run (`nvcc_orion::cubin::entry`,
//! issue 31) against what ptxas itself makes of the same module with the copy as one more
//! `.entry`: the same sections, symbols, kernel attributes and segments as the toolkit reads
//! them (`cuobjdump -elf`, `readelf`), the added kernel's code as `nvdisasm` prints it, and a
//! pass of the assembly check. Where a part cannot be made exact the copy is refused.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use nvcc_orion::audit::{self, AuditError, Job, Origin, Tools};
use nvcc_orion::cubin::Cubin;
use nvcc_orion::cubin::entry::{Copy, add_copies};
use nvcc_orion::cubin::refusal::{Refusal, SpliceError};

const TILE: &str = "_Z4tilePKfPfi";
const SCALE: &str = "_Z5scalePffi";
const COPY_SUFFIX: &str = "__orion_v1";
/// In `helpers.cu`: a kernel that calls a `__noinline__` helper, one that divides floats.
const MIXED: &str = "_Z5mixedPKfPfi";
const RATIO: &str = "_Z5ratioPKfS0_Pf";
const MIX_ROW: &str = "_Z7mix_rowPKfii";

fn builds(nvcc: &Path, sm: u32, kernel: &str, defines: &[&str]) -> Builds {
    builds_of("copies.cu", nvcc, sm, kernel, defines)
}

/// ptxas's cubins of `tests/kernels/assembly/<file>` for one architecture: the whole module; `kernel` alone at
/// 32 registers (`--entry`, the donor); the whole module with a copy of `kernel` named
/// `<kernel>__orion_v1` at 32 registers (the reference).
struct Builds {
    dir: PathBuf,
    base: Vec<u8>,
    donor: Vec<u8>,
    reference: Vec<u8>,
}

fn run(cmd: &mut Command, what: &str) -> Vec<u8> {
    let o = cmd.output().unwrap();
    common::assert_ok(&o, what);
    o.stdout
}

/// The `.entry` of `entry` in `ptx`: its text from `.visible .entry` to its closing brace.
fn entry_text<'a>(ptx: &'a str, entry: &str) -> &'a str {
    let start = ptx
        .find(&format!(".visible .entry {entry}("))
        .expect("entry in the PTX");
    let end = start + ptx[start..].find("\n}\n").expect("end of the entry") + 3;
    &ptx[start..end]
}

/// `.maxnreg n` on the entry that starts `text`, after its parameters.
fn with_maxnreg(text: &str, n: u32) -> String {
    let close = text.find(')').unwrap() + 1;
    format!("{}\n.maxnreg {n}\n{}", &text[..close], &text[close..])
}

fn builds_of(file: &str, nvcc: &Path, sm: u32, kernel: &str, defines: &[&str]) -> Builds {
    let src = common::kernels_dir().join("assembly").join(file);
    let source = std::fs::read(&src).unwrap();
    let tag = format!("entry-copy-{file}-{sm}-{kernel}-{}", defines.join(""));
    let dir = common::build_once(&tag, nvcc, &[&source], |dir| {
        let ptx = dir.join("m.ptx");
        let arch = format!("-arch=sm_{sm}");
        run(
            Command::new(nvcc)
                .args(["-ptx", &arch])
                .args(defines)
                .arg(&src)
                .arg("-o")
                .arg(&ptx),
            "nvcc -ptx",
        );
        let text = std::fs::read_to_string(&ptx).unwrap();
        let own = entry_text(&text, kernel);
        let at32 = with_maxnreg(own, 32);
        std::fs::write(dir.join("m32.ptx"), text.replace(own, &at32)).unwrap();
        let copy = at32.replace(kernel, &format!("{kernel}{COPY_SUFFIX}"));
        std::fs::write(dir.join("multi.ptx"), format!("{text}\n{copy}")).unwrap();
        let ptxas = common::toolkit_tool(nvcc, "ptxas");
        for (input, out, extra) in [
            ("m.ptx", "base.cubin", vec![]),
            ("m32.ptx", "donor.cubin", vec!["--entry", kernel]),
            ("multi.ptx", "reference.cubin", vec![]),
        ] {
            let mut c = Command::new(&ptxas);
            c.args([arch.as_str(), "-m64"]).args(&extra);
            run(c.arg(dir.join(input)).arg("-o").arg(dir.join(out)), "ptxas");
        }
    });
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    Builds {
        base: read("base.cubin"),
        donor: read("donor.cubin"),
        reference: read("reference.cubin"),
        dir,
    }
}

fn added(b: &Builds, kernel: &str) -> Result<Vec<u8>, SpliceError> {
    let base = Cubin::parse(&b.base).unwrap();
    let donor = Cubin::parse(&b.donor).unwrap();
    let name = format!("{kernel}{COPY_SUFFIX}");
    let copy = Copy {
        kernel,
        name: &name,
        donor: &donor,
    };
    add_copies(&base, &[copy])
}

/// A toolkit program's standard output on `bytes`, written to `dir/<file>`.
fn read_with(tool: &Path, args: &[&str], bytes: &[u8], dir: &Path, file: &str) -> String {
    let path = dir.join(file);
    std::fs::write(&path, bytes).unwrap();
    let out = run(Command::new(tool).args(args).arg(&path), file);
    String::from_utf8_lossy(&out).into_owned()
}

/// What `cuobjdump -elf` says of a cubin, without what depends on where things are: each
/// section's name, type, flags, entry size, alignment and (but for the name tables) size;
/// each symbol's name, type, binding, visibility, other and size, and its section's name.
fn structure(listing: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut names: Vec<(String, String)> = Vec::new();
    let mut part = "";
    for line in listing.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with("Sections:") {
            part = "sections";
            continue;
        }
        if line.starts_with(".section .symtab") {
            part = "symbols";
            continue;
        }
        if line.starts_with('.') || w.is_empty() {
            if part == "symbols" && line.starts_with('.') {
                part = "";
            }
            continue;
        }
        match part {
            "sections" if w.len() == 10 && w[0] != "Index" => {
                let size = if w[9].ends_with("strtab") { "-" } else { w[2] };
                names.push((w[0].to_string(), w[9].to_string()));
                out.insert(format!(
                    "section {} {} flags={} es={} align={} size={size}",
                    w[9], w[5], w[6], w[3], w[4]
                ));
            }
            "symbols" if w.len() >= 9 && w[0] != "Num" => {
                let ndx = w[w.len() - 2];
                let section = names
                    .iter()
                    .find(|(i, _)| u64::from_str_radix(i, 16).ok() == parse_hex(ndx))
                    .map_or("-", |(_, n)| n.as_str());
                out.insert(format!(
                    "symbol {} {} {} {} {} size={} in {section}",
                    w[w.len() - 1],
                    w[3],
                    w[4],
                    w[5],
                    w[6],
                    w[2]
                ));
            }
            _ => {}
        }
    }
    out
}

fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// `readelf -lW`'s section-to-segment map, by segment type and flags.
fn segments(readelf: &str) -> BTreeSet<String> {
    let mut kinds = Vec::new();
    let mut out = BTreeSet::new();
    let mut mapping = false;
    for line in readelf.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if line.contains("Section to Segment mapping") {
            mapping = true;
            continue;
        }
        if !mapping && matches!(w.first(), Some(&"LOAD") | Some(&"PHDR")) {
            kinds.push(format!("{} {}", w[0], w[7..w.len() - 1].join("")));
        } else if mapping && let Some(n) = w.first().and_then(|n| n.parse::<usize>().ok()) {
            let mut sections: Vec<&str> = w[1..].to_vec();
            sections.sort();
            out.insert(format!("{}: {}", kinds[n], sections.join(" ")));
        }
    }
    out
}

fn diff(a: &BTreeSet<String>, b: &BTreeSet<String>) -> String {
    let only = |x: &BTreeSet<String>, y: &BTreeSet<String>| -> Vec<String> {
        x.difference(y).cloned().collect()
    };
    format!(
        "ours only: {:#?}\nptxas only: {:#?}",
        only(a, b),
        only(b, a)
    )
}

/// The added kernel's SASS as `nvdisasm` prints it, line by line.
fn sass(nvdisasm: &Path, bytes: &[u8], dir: &Path, file: &str, function: &str) -> Vec<String> {
    let all = read_with(nvdisasm, &["-c"], bytes, dir, file);
    let header = format!(".section\t.text.{function},");
    let code: Vec<&str> = all
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(&header))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with(".section\t"))
        .filter(|l| l.trim_start().starts_with("/*"))
        .collect();
    assert!(!code.is_empty(), "no code for {function} in {file}");
    // Labels are numbered in file order (`.L_x_<n>`), which ptxas's layout and ours differ in.
    code.iter()
        .map(|l| match l.find(".L_x_") {
            Some(at) => {
                let rest = l[at + 5..].trim_start_matches(|c: char| c.is_ascii_digit());
                format!("{}.L_x{rest}", &l[..at])
            }
            None => l.to_string(),
        })
        .collect()
}

#[test]
fn an_added_kernel_is_what_ptxas_makes_of_one_more_entry() {
    let Some(nvcc) = common::nvcc_or_skip("entry_copy") else {
        return;
    };
    for sm in [75, 80, 86, 89, 90] {
        for kernel in [TILE, SCALE] {
            let b = builds(&nvcc, sm, kernel, &[]);
            let ours = like_ptxas(&nvcc, &b, sm, kernel);
            let name = format!("{kernel}{COPY_SUFFIX}");
            let tools = Tools::in_dir(nvcc.parent().unwrap());
            // The same entry claiming 8 registers more than its code was compiled for: the
            // assembly check names it.
            let wrong = with_more_registers(&ours, &name, 8);
            match audit::check(&tools, &job(&b, &wrong, &name, kernel)) {
                Err(AuditError::Disagrees { kernel: k, .. }) => assert_eq!(k, name),
                other => panic!("sm_{sm} {kernel}: a wrong register count passed: {other:?}"),
            }
        }
    }
}

/// The copy of `kernel` added to `b.base` against ptxas's reference: the same sections,
/// symbols and segments, the same code in the added section, and a pass of the assembly
/// check. The copy's bytes.
fn like_ptxas(nvcc: &Path, b: &Builds, sm: u32, kernel: &str) -> Vec<u8> {
    let cuobjdump = common::toolkit_tool(nvcc, "cuobjdump");
    let nvdisasm = common::toolkit_tool(nvcc, "nvdisasm");
    let ours = added(b, kernel).unwrap_or_else(|e| panic!("sm_{sm} {kernel}: {e}"));
    let name = format!("{kernel}{COPY_SUFFIX}");
    let view =
        |bytes: &[u8], f: &str| structure(&read_with(&cuobjdump, &["-elf"], bytes, &b.dir, f));
    let (a, r) = (view(&ours, "ours.cubin"), view(&b.reference, "ref.cubin"));
    assert!(a == r, "sm_{sm} {kernel}: {}", diff(&a, &r));
    let load = |bytes: &[u8], f: &str| {
        segments(&read_with(Path::new("readelf"), &["-lW"], bytes, &b.dir, f))
    };
    let (a, r) = (load(&ours, "ours.cubin"), load(&b.reference, "ref.cubin"));
    assert!(a == r, "sm_{sm} {kernel} segments: {}", diff(&a, &r));
    let a = sass(&nvdisasm, &ours, &b.dir, "ours.cubin", &name);
    let r = sass(&nvdisasm, &b.reference, &b.dir, "ref.cubin", &name);
    let first = a.iter().zip(&r).find(|(x, y)| x != y);
    assert!(
        a.len() == r.len() && first.is_none(),
        "sm_{sm} {kernel}: the added kernel's code: {} lines against {}, first \
                 difference {first:?}",
        a.len(),
        r.len()
    );
    let (a, r) = (
        frame_records(&ours, &name),
        frame_records(&b.reference, &name),
    );
    assert!(
        !r.is_empty(),
        "sm_{sm} {kernel}: no frame records in the reference"
    );
    assert!(
        a == r,
        "sm_{sm} {kernel} frame records: {a:#?}\nptxas: {r:#?}"
    );
    let tools = Tools::in_dir(nvcc.parent().unwrap());
    audit::check(&tools, &job(b, &ours, &name, kernel))
        .unwrap_or_else(|e| panic!("sm_{sm} {kernel}: the assembly check: {e}"));
    ours
}

/// The assembly check's job for `shipped`, the base with `kernel`'s copy `name` added.
fn job<'a>(b: &'a Builds, shipped: &'a [u8], name: &'a str, kernel: &'a str) -> Job<'a> {
    Job {
        proved: Vec::new(),
        shipped,
        baseline: &b.base,
        module: &b.base,
        origins: vec![Origin {
            shipped: name,
            name: kernel,
            cubin: &b.donor,
        }],
    }
}

/// The `.debug_frame` records of `function`'s code, in file order: each CIE's bytes and each
/// FDE's with its CIE pointer cleared, the symbol its location is relocated against and the
/// relocation's type and addend.
fn frame_records(bytes: &[u8], function: &str) -> Vec<String> {
    let c = Cubin::parse(bytes).unwrap();
    let sections = &c.elf().sections;
    let Some(df) = sections.iter().position(|s| s.name == ".debug_frame") else {
        return Vec::new();
    };
    let rel = sections
        .iter()
        .find(|s| s.name == ".rel.debug_frame" || s.name == ".rela.debug_frame")
        .unwrap();
    let size = if rel.name.starts_with(".rela") {
        24
    } else {
        16
    };
    let relocs: Vec<(u64, String, u32, i64)> = rel
        .data
        .chunks_exact(size)
        .map(|r| {
            let word = |at: usize| u64::from_le_bytes(r[at..at + 8].try_into().unwrap());
            let sym = &c.symbols()[(word(8) >> 32) as usize].name;
            let addend = if size == 24 { word(16) as i64 } else { 0 };
            (word(0), sym.clone(), word(8) as u32, addend)
        })
        .collect();
    let data = &sections[df].data;
    let (mut at, mut out, mut cie) = (0usize, Vec::new(), String::new());
    while at + 12 <= data.len() {
        let len = u64::from_le_bytes(data[at + 4..at + 12].try_into().unwrap()) as usize;
        let mut record = data[at..at + 12 + len].to_vec();
        if record[12..20] == [0xff; 8] {
            cie = format!("CIE {}", hex(&record));
        } else {
            record[12..20].fill(0);
            let location = relocs.iter().find(|r| r.0 == (at + 20) as u64);
            if location.is_some_and(|r| r.1 == function) {
                let r = location.unwrap();
                out.push(cie.clone());
                out.push(format!(
                    "FDE {} at {} type {} addend {}",
                    hex(&record),
                    r.1,
                    r.2,
                    r.3
                ));
            }
        }
        at += 12 + len;
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A kernel that calls a `__noinline__` helper (compiled into its own section as a local
/// `$<kernel>$<helper>`, with frame records of its own) is added with the helper renamed
/// `$<copy>$<helper>` as ptxas names it in a whole-module run with the copy; the assembly
/// check rejects the copy with the helper left under its old name or with the kernel's frame
/// relocated against the original.
#[test]
fn a_kernel_with_a_local_helper_is_added_as_ptxas_adds_it() {
    let Some(nvcc) = common::nvcc_or_skip("entry_copy") else {
        return;
    };
    let tools = Tools::in_dir(nvcc.parent().unwrap());
    for sm in [75, 80, 86, 89, 90] {
        let b = builds_of("helpers.cu", &nvcc, sm, MIXED, &[]);
        let ours = like_ptxas(&nvcc, &b, sm, MIXED);
        let name = format!("{MIXED}{COPY_SUFFIX}");
        let helper = format!("${name}${MIX_ROW}");
        let c = Cubin::parse(&ours).unwrap();
        assert!(
            c.symbols().iter().any(|s| s.name == helper),
            "sm_{sm}: no {helper}"
        );
        let old_name = with_symbol_renamed(&ours, &helper, &format!("${MIXED}${MIX_ROW}"));
        match audit::check(&tools, &job(&b, &old_name, &name, MIXED)) {
            // Two functions of that name: the original's records no longer read as its own.
            Err(e @ AuditError::Disagrees { .. }) => {
                eprintln!("sm_{sm}: the helper under its old name: {e}")
            }
            Err(e) => panic!("sm_{sm}: the helper under its old name: not a difference: {e}"),
            Ok(_) => panic!("sm_{sm}: the helper under its old name passed the check"),
        }
        let wrong_frame = with_frame_relocated_against(&ours, &name, MIXED);
        match audit::check(&tools, &job(&b, &wrong_frame, &name, MIXED)) {
            Err(e @ AuditError::Disagrees { .. }) => {
                eprintln!("sm_{sm}: the frame against the original: {e}")
            }
            Err(e) => panic!("sm_{sm}: the frame against the original: not a difference: {e}"),
            Ok(_) => panic!("sm_{sm}: the copy's frame against the original passed the check"),
        }
    }
}

/// A kernel whose section holds a compiler slow path (`$__internal_<n>_$...`, numbered over
/// the whole module, so ptxas renames the module's own with the copy) is refused.
#[test]
fn a_kernel_with_a_numbered_slow_path_is_refused() {
    let Some(nvcc) = common::nvcc_or_skip("entry_copy") else {
        return;
    };
    for sm in [80, 90] {
        let b = builds_of("helpers.cu", &nvcc, sm, RATIO, &[]);
        let why = added(&b, RATIO).unwrap_err();
        assert!(
            matches!(&why.what, Refusal::SharedCode(f) if f.starts_with("$__internal_")),
            "sm_{sm}: {why}"
        );
    }
}

/// `bytes` with the symbol name `from` in `.strtab` overwritten by the shorter `to`.
fn with_symbol_renamed(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert!(to.len() < from.len());
    let c = Cubin::parse(bytes).unwrap();
    let strtab = c
        .elf()
        .sections
        .iter()
        .find(|s| s.name == ".strtab")
        .unwrap();
    let needle = format!("{from}\0");
    let at = strtab
        .data
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .expect("the name in .strtab");
    let mut out = bytes.to_vec();
    let start = strtab.sh_offset as usize + at;
    out[start..start + from.len()].fill(0);
    out[start..start + to.len()].copy_from_slice(to.as_bytes());
    out
}

/// `bytes` with every `.debug_frame` relocation against `function` made against `other`.
fn with_frame_relocated_against(bytes: &[u8], function: &str, other: &str) -> Vec<u8> {
    let c = Cubin::parse(bytes).unwrap();
    let index = |n: &str| c.symbols().iter().position(|s| s.name == n).unwrap() as u64;
    let (from, to) = (index(function), index(other));
    let rel = c
        .elf()
        .sections
        .iter()
        .find(|s| s.name == ".rel.debug_frame" || s.name == ".rela.debug_frame")
        .unwrap();
    let size = if rel.name.starts_with(".rela") {
        24
    } else {
        16
    };
    let mut out = bytes.to_vec();
    let mut moved = 0;
    for i in (0..rel.data.len()).step_by(size) {
        let at = rel.sh_offset as usize + i + 8;
        let info = u64::from_le_bytes(out[at..at + 8].try_into().unwrap());
        if info >> 32 == from {
            let info = (to << 32) | (info & 0xffff_ffff);
            out[at..at + 8].copy_from_slice(&info.to_le_bytes());
            moved += 1;
        }
    }
    assert!(moved > 0, "no frame relocation against {function}");
    out
}

/// `bytes` with `.text.<function>`'s register count (the top byte of its `sh_info`) raised by
/// `more`, edited in the section header table as it lies in the file.
fn with_more_registers(bytes: &[u8], function: &str, more: u8) -> Vec<u8> {
    let c = Cubin::parse(bytes).unwrap();
    let index = c
        .elf()
        .sections
        .iter()
        .position(|s| s.name == format!(".text.{function}"))
        .unwrap();
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let at = shoff + index * 64 + 44 + 3;
    let mut out = bytes.to_vec();
    out[at] += more;
    out
}

#[test]
fn a_copy_whose_module_bank_reads_otherwise_is_refused() {
    let Some(nvcc) = common::nvcc_or_skip("entry_copy") else {
        return;
    };
    for sm in [80, 90] {
        let b = builds(&nvcc, sm, TILE, &["-DCHATTY"]);
        let why = added(&b, TILE).unwrap_err();
        assert!(
            matches!(&why.what, Refusal::Bank { bank, .. } if bank == ".nv.constant4"),
            "sm_{sm}: {why}"
        );
    }
}

#[test]
fn sm_100_and_later_are_refused() {
    let Some(nvcc) = common::nvcc_or_skip("entry_copy") else {
        return;
    };
    for sm in [100, 120] {
        let b = builds(&nvcc, sm, SCALE, &[]);
        let why = added(&b, SCALE).unwrap_err();
        assert!(matches!(why.what, Refusal::Merc { .. }), "sm_{sm}: {why}");
    }
}
