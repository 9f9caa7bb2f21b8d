//! The assembly check: every cubin nvcc-orion assembled (kernels spliced between ptxas runs,
//! variants embedded beside their originals, attributes edited, rewrites redone on the final
//! module) is read back with the toolkit and compared, function by function, with the cubin
//! each function's code came from.
//!
//! Like the translation checker, it imports nothing from the code it checks: not the cubin
//! reader or writer, not the splice, not the SASS decoder. It reads only what `cuobjdump
//! -elf` and `nvdisasm -json` print (`dump`, `listing`), and `.debug_frame` through
//! maintained crates (`frames`), so a bug in our ELF model cannot hide itself
//! (`tests/house/layers.rs` keeps this module's imports to the leaves).
//!
//! # What "the same" means
//! For each function that owns a code section in the shipped cubin, against its origin
//! (the cubin it was compiled or evaluated in, under its name there; by default the module
//! the shipped cubin's other parts came from):
//! * the code section's header (size, alignment, flags, the register count in `sh_info`),
//!   the symbols in it, its relocations (by symbol name), its `.nv.info.<k>` records in
//!   order and its records in `.nv.info`;
//! * every other section named after it (parameter bank, jump tables, shared and local
//!   memory, the sm_100+ copy of the code): type, size, bytes, relocations;
//! * its call edges by name, and the code of any callee with a section of its own;
//! * its code: the same bytes where every module-level constant bank (`banks`) reads the
//!   same at each offset the origin gives meaning to; otherwise both listings instruction by
//!   instruction, each bank operand read through its own cubin's tables (a relocation's
//!   symbol, an object, bytes), the encodings differing only in the moved offset, and a
//!   bank read through a register only where the bank is laid out alike everywhere.
//!
//! The compiler's helper subroutines in a function's section (`$__internal_<n>_$...`, which
//! ptxas numbers per module) are named by role on both sides (`kernel::Pair::new`): the
//! comparison itself proves two helpers of one role are the same code.
//!
//! A kernel a SASS rewrite changed (`Job::proved`) is compared with its unrewritten section
//! in `module` instead (`proved`): the translation checker vouches for its code, the
//! functions in its section included, and everything else must be the unrewritten
//! section's but for the edits a rewrite makes with its code, each bounded.
//!
//! Where the shipped cubin, or a cubin it came from, has a line table (`-lineinfo`), each
//! function's instructions must be annotated with the same source and PTX lines as in its
//! origin (`lines`: `nvdisasm -g -gp`, a PTX line compared by its text).
//!
//! Each function's call frame information (`.debug_frame`: its FDEs and their CIEs) must
//! be its origin's, read without the toolkit, which prints none of it (`frames`: the
//! `object` crate's ELF reader, `gimli`'s DWARF encoding).
//!
//! Then the module as a whole (`module`): sections no function owns, objects and the
//! attributes that name no function, against the module origin; its writable segment, the
//! one program header an assembly or a rewrite changes beyond offsets (`segments`); and, for
//! relocatable code, no kernel whose register limit differs from ptxas's own reaches a
//! function another module defines (nvlink would refuse the limit).
//!
//! # What it trusts
//! cuobjdump and nvdisasm themselves, and the `object` and `gimli` crates; that ptxas's
//! output for the origin is right; that debug information other than the line tables and
//! `.debug_frame` (`.debug_info`, ...) need not follow the code (it is not compared).

mod banks;
mod difference;
mod dump;
mod frames;
mod kernel;
mod lines;
mod listing;
mod module;
mod proved;
mod reader;
mod segments;
mod verdict;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

pub use difference::Difference;
use dump::Dump;
pub use frames::FrameError;
use kernel::{Code, Pair};
pub use lines::LineTableDifference;
use reader::{Read, Reader};

/// The toolkit programs the check reads cubins with.
#[derive(Debug, Clone)]
pub struct Tools {
    pub cuobjdump: PathBuf,
    pub nvdisasm: PathBuf,
}

impl Tools {
    /// The tools in the toolkit's `bin` folder.
    pub fn in_dir(bin: &Path) -> Tools {
        Tools {
            cuobjdump: bin.join("cuobjdump"),
            nvdisasm: bin.join("nvdisasm"),
        }
    }
}

/// Where one function of the shipped cubin came from.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// Its name in the shipped cubin.
    pub shipped: &'a str,
    /// Its name in `cubin`.
    pub name: &'a str,
    pub cubin: &'a [u8],
}

/// One assembled cubin to check.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    pub shipped: &'a [u8],
    /// What ptxas made of the step as asked (for relocatable code's register limits).
    pub baseline: &'a [u8],
    /// The cubin the shipped one's module-level parts, and every function not in `origins`,
    /// came from.
    pub module: &'a [u8],
    pub origins: Vec<Origin<'a>>,
    /// Kernels whose text section a SASS rewrite changed and the translation checker proved
    /// against the same kernel's section in `module` (which must be whole-module ptxas
    /// output): compared with `module` in everything the proof does not cover (`proved`).
    pub proved: Vec<&'a str>,
}

/// What the check did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checked {
    /// Functions compared.
    pub functions: usize,
    /// Of those, how many needed both listings (their code bytes differ from the origin's).
    pub disassembled: usize,
}

/// Why a cubin does not pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// A tool could not be run (missing, or no temporary folder).
    #[error("{0}")]
    Tool(String),
    /// A tool ran and refused a cubin (or printed what cannot be read).
    #[error("{0}")]
    Unreadable(String),
    #[error("{kernel}: {what}")]
    Disagrees { kernel: String, what: Difference },
}

/// Functions the driver provides (`printf`, `assert`, device `malloc`): nvlink checks no
/// register count for them. (The tuner has its own list; this one is kept apart on purpose.)
const DRIVER_CALLS: &[&str] = &["vprintf", "__assertfail", "malloc", "free"];

/// Check `job` (see the module docs): the first disagreement is the error.
pub fn check(tools: &Tools, job: &Job<'_>) -> Result<Checked, AuditError> {
    let (checked, mut found) = check_each(tools, job)?;
    match found.is_empty() {
        true => Ok(checked),
        false => Err(found.swap_remove(0)),
    }
}

/// [`check`], with a pass remembered under cache root `cache` (the variant cache's): the
/// same bytes from the same origins, read by the same tools and checker, pass again without
/// running them (`verdict`). `None`: always check.
pub fn check_cached(
    tools: &Tools,
    job: &Job<'_>,
    cache: Option<&Path>,
) -> Result<Checked, AuditError> {
    let Some(file) = cache.map(|root| verdict::path(root, tools, job)) else {
        return check(tools, job);
    };
    if let Some(checked) = verdict::read(&file) {
        return Ok(checked);
    }
    let checked = check(tools, job)?;
    verdict::write(&file, checked);
    Ok(checked)
}

/// Check `job`, going on past disagreements: every function that disagrees (as
/// [`AuditError::Disagrees`]), in the shipped cubin's order, the module's own first. An
/// error is a tool that failed.
///
/// Each cubin is read once per process ([`reader`]), and the reads of one step are made side
/// by side on the free job slots: every cubin's `cuobjdump -elf` first, then the listings of
/// the functions whose code differs from their origin's.
pub fn check_each(tools: &Tools, job: &Job<'_>) -> Result<(Checked, Vec<AuditError>), AuditError> {
    let reader = Reader::new(tools);
    let mut all = vec![job.shipped, job.module];
    all.extend(job.origins.iter().map(|o| o.cubin));
    reader.read_ahead(Read::Dump, &all);
    let shipped = match reader.dump(job.shipped) {
        Err(AuditError::Unreadable(why)) => {
            let why = Difference::Unreadable(why);
            return Ok((Checked::default(), vec![disagrees("the module", why)]));
        }
        r => r?,
    };
    let module = reader.dump(job.module)?;
    let mut found = Vec::new();
    if let Err(what) = module::compare(&shipped, &module) {
        found.push(disagrees("the module", what));
    }
    let owners = module::owners(&shipped);
    found.extend(unmatched(job, &owners, &module));
    let (checked, functions) = compare_functions(&reader, job, &shipped, &owners)?;
    found.extend(functions);
    found.extend(compare_lines(&reader, job, &shipped, &module, &owners)?);
    found.extend(compare_frames(job, &owners));
    // After the functions': a kernel's part of another size is blamed on the kernel first.
    // SASS rewrites too: one that gives a module its first shared memory adds the segment
    // ptxas would (`cubin::shared_segment`).
    found.extend(
        segments::compare(job.shipped, job.module)
            .err()
            .map(|what| disagrees("the module", what)),
    );
    if shipped.relocatable {
        let baseline = reader.dump(job.baseline)?;
        found.extend(link_limits(&shipped, &baseline).err());
    }
    Ok((checked, found))
}

/// Functions `job` names that the shipped cubin lacks, and the module's functions that
/// neither ship nor are replaced.
fn unmatched(job: &Job<'_>, owners: &[String], module: &Dump) -> Vec<AuditError> {
    let mut found = Vec::new();
    for o in &job.origins {
        if !owners.iter().any(|f| f == o.shipped) {
            found.push(disagrees(o.shipped, Difference::NotShipped));
        }
    }
    for f in module::owners(module) {
        let replaced = job.origins.iter().any(|o| o.shipped == f);
        if !replaced && !owners.contains(&f) {
            found.push(disagrees(&f, Difference::MissingFromShipped));
        }
    }
    found
}

/// The name and cubin that shipped function `f` came from.
fn origin_of<'j>(job: &'j Job<'_>, f: &'j str) -> (&'j str, &'j [u8]) {
    job.origins
        .iter()
        .find(|o| o.shipped == f)
        .map_or((f, job.module), |o| (o.name, o.cubin))
}

/// What the first look at one function found.
enum Look<'a> {
    /// Settled: the same, or the difference.
    Done(Option<Difference>),
    /// Rewritten and proved: compared with the shipped listing (`proved`).
    Proved,
    /// Its code bytes differ: both listings are compared, the origin's from this cubin.
    Listings(&'a [u8]),
}

/// Every function the shipped cubin owns against its origin (see the module docs): first by
/// what cuobjdump printed; then, for those whose code differs, both listings, every listing
/// needed read side by side beforehand.
fn compare_functions<'j>(
    reader: &Reader<'_, 'j>,
    job: &'j Job<'_>,
    shipped: &Dump,
    owners: &[String],
) -> Result<(Checked, Vec<AuditError>), AuditError> {
    let mut checked = Checked::default();
    let mut looks = Vec::new();
    for f in owners {
        let (name, cubin) = origin_of(job, f);
        let origin = reader.dump(cubin)?;
        let pair = Pair::new(shipped, &origin, f, name);
        checked.functions += 1;
        let look = match job.proved.contains(&f.as_str()) {
            true => Look::Proved,
            false => match pair.compare() {
                Ok(Code::Same) => Look::Done(None),
                Ok(Code::Disassemble) => Look::Listings(cubin),
                Err(what) => Look::Done(Some(what)),
            },
        };
        if !matches!(look, Look::Done(_)) {
            checked.disassembled += 1;
        }
        looks.push((f, origin, name, look));
    }
    let mut listed = Vec::new();
    for (_, _, _, look) in &looks {
        match look {
            Look::Proved => listed.push(job.shipped),
            Look::Listings(cubin) => listed.extend([job.shipped, *cubin]),
            Look::Done(_) => {}
        }
    }
    reader.read_ahead(Read::Listing, &listed);
    let mut found = Vec::new();
    for (f, origin, name, look) in looks {
        let pair = || Pair::new(shipped, &origin, f, name);
        let what = match look {
            Look::Done(what) => what,
            Look::Proved => match reader.listing(job.shipped) {
                Err(AuditError::Unreadable(why)) => Some(Difference::Unreadable(why)),
                r => proved::compare(&pair(), &r?).err(),
            },
            Look::Listings(cubin) => match reader.listing(job.shipped) {
                Err(AuditError::Unreadable(why)) => Some(Difference::Unreadable(why)),
                r => {
                    let a = r?;
                    let b = reader.listing(cubin)?;
                    kernel::compare_listings(&pair(), &a, &b).err()
                }
            },
        };
        found.extend(what.map(|w| disagrees(f, w)));
    }
    Ok((checked, found))
}

/// Where any cubin of `job` has a line table: each function's against its origin's
/// (`lines`), the disagreements found.
fn compare_lines<'j>(
    reader: &Reader<'_, 'j>,
    job: &'j Job<'_>,
    shipped: &Dump,
    module: &Dump,
    owners: &[String],
) -> Result<Vec<AuditError>, AuditError> {
    let mut any = lines::present(shipped) || lines::present(module);
    for o in &job.origins {
        let origin = reader.dump(o.cubin)?;
        any = any || lines::present(&origin);
    }
    if !any {
        return Ok(Vec::new());
    }
    let mut all = vec![job.shipped];
    all.extend(owners.iter().map(|f| origin_of(job, f).1));
    reader.read_ahead(Read::Lines, &all);
    let mut found = Vec::new();
    let ours = match reader.lines(job.shipped) {
        Err(AuditError::Unreadable(why)) => {
            return Ok(vec![disagrees("the module", Difference::Unreadable(why))]);
        }
        r => r?,
    };
    for f in owners {
        let (name, cubin) = origin_of(job, f);
        let theirs = reader.lines(cubin)?;
        if let Err(what) = lines::compare(&ours, f, &theirs, name) {
            found.push(disagrees(f, Difference::LineTable(what)));
        }
    }
    Ok(found)
}

/// Each function's call frame information (`.debug_frame`, `frames`) against its origin's,
/// the disagreements found. A kernel a rewrite changed is left out: the rewrite moves its
/// code and FDE ranges with it, and the proof covers where its functions start.
fn compare_frames(job: &Job<'_>, owners: &[String]) -> Vec<AuditError> {
    let read = |bytes: &[u8]| frames::Frames::read(bytes);
    let ours = match read(job.shipped) {
        Ok(f) => f,
        Err(why) => return vec![disagrees("the module", Difference::Frame(why))],
    };
    let mut origins: HashMap<(*const u8, usize), Result<frames::Frames, FrameError>> =
        HashMap::new();
    let mut found = Vec::new();
    for f in owners.iter().filter(|f| !job.proved.contains(&f.as_str())) {
        let (name, cubin) = origin_of(job, f);
        let theirs = origins
            .entry((cubin.as_ptr(), cubin.len()))
            .or_insert_with(|| read(cubin));
        let result = match theirs {
            Ok(t) if !t.present() && !ours.present() => Ok(()),
            Ok(t) => frames::compare(&ours, f, t, name),
            Err(why) => Err(FrameError::Origin(Box::new(why.clone()))),
        };
        if let Err(why) = result {
            found.push(disagrees(f, Difference::Frame(why)));
        }
    }
    found
}

/// The check's own readers on any bytes, for the fuzzer (`fuzz/fuzz_targets/audit.rs`;
/// cargo-fuzz builds with `--cfg fuzzing`, so no other build has this): `.debug_frame` read
/// and compared with itself, the input as cuobjdump's `-elf` listing, as nvdisasm's
/// `-g -gp` listing and as its `-json` listing, and its program headers against themselves
/// (`segments`). Each gives a reading, a typed error or a difference.
#[cfg(fuzzing)]
pub fn fuzz_readers(data: &[u8]) {
    let _ = segments::compare(data, data);
    if let Ok(f) = frames::Frames::read(data) {
        for name in f.functions() {
            let _ = frames::compare(&f, name, &f, name);
        }
    }
    let text = String::from_utf8_lossy(data);
    let _ = dump::Dump::parse(&text);
    let _ = lines::parse(&text);
    let _ = listing::parse(data);
}

fn disagrees(kernel: &str, what: Difference) -> AuditError {
    AuditError::Disagrees {
        kernel: kernel.to_string(),
        what,
    }
}

/// Relocatable code: a kernel whose register limit is not ptxas's own reaches no function
/// another module defines.
fn link_limits(shipped: &Dump, baseline: &Dump) -> Result<(), AuditError> {
    let limit = |d: &Dump, k: &str| {
        d.records
            .get(&format!(".nv.info.{k}"))
            .into_iter()
            .flatten()
            .find(|r| r.attribute == "EIATTR_MAXREG_COUNT")
            .map(|r| r.text.clone())
    };
    let defined: BTreeSet<&str> = shipped
        .symbols
        .iter()
        .filter(|s| s.section != 0)
        .map(|s| s.name.as_str())
        .collect();
    let calls: BTreeMap<&str, Vec<&str>> =
        shipped.calls.iter().fold(BTreeMap::new(), |mut m, (a, b)| {
            m.entry(a.as_str())
                .or_insert_with(Vec::new)
                .push(b.as_str());
            m
        });
    for k in shipped.kernels() {
        let changed = baseline.function(&k.name).is_none()
            || limit(shipped, &k.name) != limit(baseline, &k.name);
        if !changed {
            continue;
        }
        let mut todo = vec![k.name.as_str()];
        let mut seen = BTreeSet::new();
        while let Some(f) = todo.pop() {
            for &c in calls.get(f).into_iter().flatten() {
                if !defined.contains(c) && !DRIVER_CALLS.contains(&c) {
                    return Err(disagrees(
                        &k.name,
                        Difference::CallsOutOfModule {
                            callee: c.to_string(),
                        },
                    ));
                }
                if seen.insert(c) {
                    todo.push(c);
                }
            }
        }
    }
    Ok(())
}
