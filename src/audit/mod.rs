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
//! attributes that name no function, against the module origin; and, for relocatable code,
//! no kernel whose register limit differs from ptxas's own reaches a function another
//! module defines (nvlink would refuse the limit).
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
mod verdict;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

pub use difference::Difference;
use dump::Dump;
use kernel::{Code, Pair};
use listing::Function;

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
pub fn check_each(tools: &Tools, job: &Job<'_>) -> Result<(Checked, Vec<AuditError>), AuditError> {
    let mut reader = Reader::new(tools)?;
    let mut all = vec![job.shipped, job.module];
    all.extend(job.origins.iter().map(|o| o.cubin));
    reader.prefetch(&all);
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
    for o in &job.origins {
        if !owners.iter().any(|f| f == o.shipped) {
            found.push(disagrees(o.shipped, Difference::NotShipped));
        }
    }
    for f in module::owners(&module) {
        let replaced = job.origins.iter().any(|o| o.shipped == f);
        if !replaced && !owners.contains(&f) {
            found.push(disagrees(&f, Difference::MissingFromShipped));
        }
    }
    let mut checked = Checked::default();
    for f in &owners {
        let (name, cubin) = job
            .origins
            .iter()
            .find(|o| o.shipped == f.as_str())
            .map_or((f.as_str(), job.module), |o| (o.name, o.cubin));
        let origin = reader.dump(cubin)?;
        let pair = Pair::new(&shipped, &origin, f, name);
        checked.functions += 1;
        if job.proved.contains(&f.as_str()) {
            checked.disassembled += 1;
            match reader.listing(job.shipped) {
                Err(AuditError::Unreadable(why)) => {
                    found.push(disagrees(f, Difference::Unreadable(why)))
                }
                r => found.extend(proved::compare(&pair, &r?).err().map(|w| disagrees(f, w))),
            }
            continue;
        }
        match pair.compare() {
            Ok(Code::Same) => {}
            Ok(Code::Disassemble) => {
                checked.disassembled += 1;
                let a = match reader.listing(job.shipped) {
                    Err(AuditError::Unreadable(why)) => {
                        found.push(disagrees(f, Difference::Unreadable(why)));
                        continue;
                    }
                    r => r?,
                };
                let b = reader.listing(cubin)?;
                if let Err(what) = kernel::compare_listings(&pair, &a, &b) {
                    found.push(disagrees(f, what));
                }
            }
            Err(what) => found.push(disagrees(f, what)),
        }
    }
    found.extend(compare_lines(&mut reader, job, &shipped, &module, &owners)?);
    found.extend(compare_frames(job, &owners));
    if shipped.relocatable {
        let baseline = reader.dump(job.baseline)?;
        found.extend(link_limits(&shipped, &baseline).err());
    }
    Ok((checked, found))
}

/// Where any cubin of `job` has a line table: each function's against its origin's
/// (`lines`), the disagreements found.
fn compare_lines(
    reader: &mut Reader<'_>,
    job: &Job<'_>,
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
    let mut found = Vec::new();
    let ours = match reader.lines(job.shipped) {
        Err(AuditError::Unreadable(why)) => {
            return Ok(vec![disagrees("the module", Difference::Unreadable(why))]);
        }
        r => r?,
    };
    for f in owners {
        let (name, cubin) = job
            .origins
            .iter()
            .find(|o| o.shipped == f.as_str())
            .map_or((f.as_str(), job.module), |o| (o.name, o.cubin));
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
    let mut origins: HashMap<(*const u8, usize), Result<frames::Frames, String>> = HashMap::new();
    let mut found = Vec::new();
    for f in owners.iter().filter(|f| !job.proved.contains(&f.as_str())) {
        let (name, cubin) = job
            .origins
            .iter()
            .find(|o| o.shipped == f.as_str())
            .map_or((f.as_str(), job.module), |o| (o.name, o.cubin));
        let theirs = origins
            .entry((cubin.as_ptr(), cubin.len()))
            .or_insert_with(|| read(cubin));
        let result = match theirs {
            Ok(t) if !t.present() && !ours.present() => Ok(()),
            Ok(t) => frames::compare(&ours, f, t, name),
            Err(why) => Err(format!("where the code was compiled: {why}")),
        };
        if let Err(why) = result {
            found.push(disagrees(f, Difference::Frame(why)));
        }
    }
    found
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

/// What the toolkit printed of each distinct cubin read so far in this process, by the
/// SHA-256 of the tool's path and the cubin's bytes: a job names the same round's cubin for
/// many variants, and under adapt the multi-variant cubin's check names the baseline, the
/// plain tuned cubin and the variants the first check read.
#[derive(Default)]
struct Seen {
    dumps: HashMap<[u8; 32], Arc<Dump>>,
    listings: HashMap<[u8; 32], Arc<Vec<Function>>>,
    lines: HashMap<[u8; 32], Arc<lines::Lines>>,
}

fn seen() -> std::sync::MutexGuard<'static, Seen> {
    static SEEN: OnceLock<Mutex<Seen>> = OnceLock::new();
    SEEN.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The key of `bytes` as read by `tool`.
fn key(tool: &Path, bytes: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(tool.as_os_str().as_encoded_bytes());
    h.update([0]);
    h.update(bytes);
    h.finalize().into()
}

/// Runs the toolkit on cubins, once per distinct content in the process ([`Seen`]).
struct Reader<'t> {
    tools: &'t Tools,
    dir: tempfile::TempDir,
    files: usize,
}

impl<'t> Reader<'t> {
    fn new(tools: &'t Tools) -> Result<Reader<'t>, AuditError> {
        let dir = tempfile::Builder::new()
            .prefix("nvcc-orion-audit-")
            .tempdir()
            .map_err(|e| AuditError::Tool(format!("temporary folder: {e}")))?;
        Ok(Reader {
            tools,
            dir,
            files: 0,
        })
    }

    fn dump(&mut self, bytes: &[u8]) -> Result<Arc<Dump>, AuditError> {
        if let Some(d) = seen().dumps.get(&key(&self.tools.cuobjdump, bytes)) {
            return Ok(d.clone());
        }
        let out = self.run(&self.tools.cuobjdump.clone(), &["-elf"], bytes)?;
        self.keep_dump(bytes, &out)
    }

    fn keep_dump(&mut self, bytes: &[u8], out: &[u8]) -> Result<Arc<Dump>, AuditError> {
        let text = String::from_utf8_lossy(out);
        let d = Arc::new(Dump::parse(&text).map_err(|e| AuditError::Unreadable(e.to_string()))?);
        seen()
            .dumps
            .insert(key(&self.tools.cuobjdump, bytes), d.clone());
        Ok(d)
    }

    /// Dump the distinct cubins of `all` not read yet on two threads, when a job slot is free
    /// for the second: the reads are independent, and the last architecture's step waits on
    /// them. What fails here is left for [`Reader::dump`] to meet again, in the check's order.
    fn prefetch(&mut self, all: &[&[u8]]) {
        let mut todo: Vec<&[u8]> = Vec::new();
        {
            let seen = seen();
            for b in all {
                if !seen.dumps.contains_key(&key(&self.tools.cuobjdump, b)) && !todo.contains(b) {
                    todo.push(b);
                }
            }
        }
        if todo.len() < 2 {
            return;
        }
        let Some(_slot) = crate::jobs::Slots::of_process().try_extra() else {
            return;
        };
        let mut paths = Vec::new();
        for b in &todo {
            let path = self.dir.path().join(format!("c{}.cubin", self.files));
            self.files += 1;
            if std::fs::write(&path, b).is_err() {
                return;
            }
            paths.push(path);
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let outs: Vec<std::sync::Mutex<Option<Vec<u8>>>> =
            paths.iter().map(|_| std::sync::Mutex::new(None)).collect();
        let cuobjdump = &self.tools.cuobjdump;
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(p) = paths.get(i) else { break };
                        if let Ok(o) = Command::new(cuobjdump).arg("-elf").arg(p).output()
                            && o.status.success()
                        {
                            *outs[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(o.stdout);
                        }
                    }
                });
            }
        });
        for (b, out) in todo.iter().zip(outs) {
            if let Some(o) = out.into_inner().unwrap_or_else(|e| e.into_inner()) {
                let _ = self.keep_dump(b, &o);
            }
        }
    }

    fn listing(&mut self, bytes: &[u8]) -> Result<Arc<Vec<Function>>, AuditError> {
        let k = key(&self.tools.nvdisasm, bytes);
        if let Some(l) = seen().listings.get(&k) {
            return Ok(l.clone());
        }
        let out = self.run(&self.tools.nvdisasm.clone(), &["-json"], bytes)?;
        let l = Arc::new(listing::parse(&out).map_err(|e| AuditError::Tool(e.to_string()))?);
        seen().listings.insert(k, l.clone());
        Ok(l)
    }

    /// `nvdisasm -g -gp`'s line annotations ([`lines`]).
    fn lines(&mut self, bytes: &[u8]) -> Result<Arc<lines::Lines>, AuditError> {
        let k = key(&self.tools.nvdisasm, bytes);
        if let Some(l) = seen().lines.get(&k) {
            return Ok(l.clone());
        }
        let out = self.run(&self.tools.nvdisasm.clone(), &["-g", "-gp"], bytes)?;
        let text = String::from_utf8_lossy(&out);
        let l = Arc::new(lines::parse(&text).map_err(|e| AuditError::Tool(e.to_string()))?);
        seen().lines.insert(k, l.clone());
        Ok(l)
    }

    /// `tool ARGS FILE` on `bytes` written to a file: its standard output.
    fn run(&mut self, tool: &Path, args: &[&str], bytes: &[u8]) -> Result<Vec<u8>, AuditError> {
        let path = self.dir.path().join(format!("c{}.cubin", self.files));
        self.files += 1;
        std::fs::write(&path, bytes)
            .map_err(|e| AuditError::Tool(format!("{}: {e}", path.display())))?;
        let out = Command::new(tool)
            .args(args)
            .arg(&path)
            .output()
            .map_err(|e| AuditError::Tool(format!("{}: {e}", tool.display())))?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr);
            return Err(AuditError::Unreadable(format!(
                "{} {} failed: {}",
                tool.display(),
                args.join(" "),
                why.lines().next().unwrap_or("")
            )));
        }
        Ok(out.stdout)
    }
}
