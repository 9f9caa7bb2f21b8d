//! Reading cubins with the toolkit for the check: each distinct cubin once per process, by
//! what the tool printed of its bytes ([`Seen`]), and the reads one comparison needs side by
//! side on the build's free job slots ([`side_by_side`]).
//!
//! The tools run through `process::listings`, once per process for each distinct (tool,
//! arguments, bytes) whoever asks; what a tool prints goes to a temporary file, read back
//! once when it ends (`process::output_via_file`): cuobjdump writes unbuffered, so a pipe
//! would wake this process for every few bytes of a listing.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::dump::Dump;
use super::listing::{self, Function};
use super::{AuditError, Tools, lines};

/// What the toolkit printed of each distinct cubin read so far in this process, by the
/// SHA-256 of the tool's path and the cubin's digest ([`key`]): a job names the same round's
/// cubin for many variants, and under adapt the multi-variant cubin's check names the
/// baseline, the plain tuned cubin and the variants the first check read.
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

/// The key of a cubin whose bytes have SHA-256 `digest`, as read by `tool`.
fn key(tool: &Path, digest: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(tool.as_os_str().as_encoded_bytes());
    h.update([0]);
    h.update(digest);
    h.finalize().into()
}

/// `f` of each item, on the calling thread (its own job slot) and on as many extra job slots
/// as are free now, one thread each (tried, never waited for: `jobs`). The results come in
/// the items' order, whichever thread made them (`None` only if a thread died).
fn side_by_side<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<Option<R>> {
    let slots = crate::jobs::Slots::of_process();
    let extra: Vec<_> = (1..items.len()).map_while(|_| slots.try_extra()).collect();
    let next = AtomicUsize::new(0);
    let made: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let r = f(item);
            *made[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        }
    };
    std::thread::scope(|s| {
        for slot in extra {
            let work = &work;
            s.spawn(move || {
                let _slot = slot;
                work();
            });
        }
        work();
    });
    made.into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

/// The three ways the check reads a cubin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Read {
    /// `cuobjdump -elf`: sections, symbols, relocations, attributes ([`Dump`]).
    Dump,
    /// `nvdisasm -json`: the instructions of every function.
    Listing,
    /// `nvdisasm -g -gp`: the line annotations.
    Lines,
}

/// Runs the toolkit on cubins, once per distinct content in the process ([`Seen`]), for one
/// check, whose cubins are all borrowed for `'j`.
pub(super) struct Reader<'t, 'j> {
    tools: &'t Tools,
    /// The SHA-256 of each cubin this check has named, by its address and length, so that
    /// each is hashed once per check: a job names one cubin as the origin of many functions
    /// (under adapt plain tune's cubin for every original), and the check asks for its dump
    /// once per function; hashing it anew each time was about 40 % of the check's own CPU
    /// time on an adapt build (issue 47, bench/results/build.md). Sound because every cubin
    /// named is borrowed for `'j`, the reader's whole life: while it lives, the bytes at an
    /// address cannot change or go, so the same address and length are the same bytes.
    digests: Mutex<HashMap<(usize, usize), [u8; 32]>>,
    /// How many times a cubin's bytes were hashed (the digests made).
    hashed: AtomicUsize,
    job: PhantomData<&'j [u8]>,
}

impl<'t, 'j> Reader<'t, 'j> {
    pub(super) fn new(tools: &'t Tools) -> Reader<'t, 'j> {
        Reader {
            tools,
            digests: Mutex::default(),
            hashed: AtomicUsize::new(0),
            job: PhantomData,
        }
    }

    /// The SHA-256 of `bytes`, made once per cubin named in this check.
    fn digest(&self, bytes: &'j [u8]) -> [u8; 32] {
        let at = (bytes.as_ptr() as usize, bytes.len());
        let known = |d: &HashMap<_, _>| d.get(&at).copied();
        if let Some(d) = known(&self.digests.lock().unwrap_or_else(|e| e.into_inner())) {
            return d;
        }
        let d: [u8; 32] = Sha256::digest(bytes).into();
        self.hashed.fetch_add(1, Ordering::Relaxed);
        self.digests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(at, d);
        d
    }

    /// How many times this reader hashed a cubin's bytes.
    #[cfg(test)]
    fn hashed(&self) -> usize {
        self.hashed.load(Ordering::Relaxed)
    }

    pub(super) fn dump(&self, bytes: &'j [u8]) -> Result<Arc<Dump>, AuditError> {
        let k = key(&self.tools.cuobjdump, &self.digest(bytes));
        if let Some(d) = seen().dumps.get(&k) {
            return Ok(d.clone());
        }
        let out = self.print(&self.tools.cuobjdump, &["-elf"], bytes)?;
        let text = String::from_utf8_lossy(&out);
        let d = Arc::new(Dump::parse(&text).map_err(|e| AuditError::Unreadable(e.to_string()))?);
        seen().dumps.insert(k, d.clone());
        Ok(d)
    }

    pub(super) fn listing(&self, bytes: &'j [u8]) -> Result<Arc<Vec<Function>>, AuditError> {
        let k = key(&self.tools.nvdisasm, &self.digest(bytes));
        if let Some(l) = seen().listings.get(&k) {
            return Ok(l.clone());
        }
        let out = self.print(&self.tools.nvdisasm, &["-json"], bytes)?;
        let l = Arc::new(listing::parse(&out).map_err(|e| AuditError::Tool(e.to_string()))?);
        seen().listings.insert(k, l.clone());
        Ok(l)
    }

    /// `nvdisasm -g -gp`'s line annotations ([`lines`]).
    pub(super) fn lines(&self, bytes: &'j [u8]) -> Result<Arc<lines::Lines>, AuditError> {
        let k = key(&self.tools.nvdisasm, &self.digest(bytes));
        if let Some(l) = seen().lines.get(&k) {
            return Ok(l.clone());
        }
        let out = self.print(&self.tools.nvdisasm, &["-g", "-gp"], bytes)?;
        let text = String::from_utf8_lossy(&out);
        let l = Arc::new(lines::parse(&text).map_err(|e| AuditError::Tool(e.to_string()))?);
        seen().lines.insert(k, l.clone());
        Ok(l)
    }

    /// Read each distinct cubin of `all` that this process has not read `how` yet, side by
    /// side on the free job slots ([`side_by_side`]), so that the comparisons after find them
    /// read. What fails here is left for the comparison's own read to meet again, in the
    /// check's order: which error comes first never depends on the threads.
    pub(super) fn read_ahead(&self, how: Read, all: &[&'j [u8]]) {
        let tool = match how {
            Read::Dump => &self.tools.cuobjdump,
            Read::Listing | Read::Lines => &self.tools.nvdisasm,
        };
        let keys: Vec<[u8; 32]> = all.iter().map(|b| key(tool, &self.digest(b))).collect();
        let mut todo: Vec<&'j [u8]> = Vec::new();
        {
            let seen = seen();
            let read = |k: &[u8; 32]| match how {
                Read::Dump => seen.dumps.contains_key(k),
                Read::Listing => seen.listings.contains_key(k),
                Read::Lines => seen.lines.contains_key(k),
            };
            let mut named = std::collections::HashSet::new();
            for (b, k) in all.iter().zip(&keys) {
                if !read(k) && named.insert(*k) {
                    todo.push(b);
                }
            }
        }
        if todo.len() < 2 {
            return;
        }
        side_by_side(&todo, |b| match how {
            Read::Dump => self.dump(b).map(drop),
            Read::Listing => self.listing(b).map(drop),
            Read::Lines => self.lines(b).map(drop),
        });
    }

    /// `tool ARGS FILE` on `bytes`: its standard output. Each distinct (tool, arguments,
    /// bytes) runs once per process, shared with whoever else lists them (the proof of a
    /// rewrite lists the very bytes the check reads: `process::listings`).
    fn print(&self, tool: &Path, args: &[&str], bytes: &[u8]) -> Result<Vec<u8>, AuditError> {
        let out = crate::process::listings::print(tool, args, bytes)
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
        Ok(out.stdout.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_by_side_gives_every_result_in_the_items_order() {
        let items: Vec<u32> = (0..37).collect();
        let made = side_by_side(&items, |x| x * 3);
        let want: Vec<Option<u32>> = items.iter().map(|x| Some(x * 3)).collect();
        assert_eq!(made, want);
    }

    /// Issue 47: a check asks for one cubin's dump once per function it is the origin of (under
    /// adapt, plain tune's cubin for every original), and used to hash all its bytes each time.
    /// Now each cubin named is hashed once per check, and the tool still runs once per distinct
    /// content: a copy of the same bytes at another address is read from what the first
    /// printed.
    #[test]
    fn each_cubin_is_hashed_once_per_check_and_read_once_per_content() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runs");
        let tool = dir.path().join("cuobjdump");
        std::fs::write(
            &tool,
            format!("#!/bin/sh\necho run >> '{}'\necho x\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tools = Tools {
            cuobjdump: tool,
            nvdisasm: dir.path().join("nvdisasm"),
        };
        // Content no other test of this process reads (the listings are memoised per process).
        let origin: Vec<u8> = dir.path().as_os_str().as_encoded_bytes().repeat(4096);
        let copy = origin.clone();
        let mut other = origin.clone();
        other.push(1);
        let reader = Reader::new(&tools);
        reader.read_ahead(Read::Dump, &[&origin, &copy, &other, &origin]);
        for _ in 0..50 {
            let _ = reader.dump(&origin);
        }
        let _ = reader.dump(&copy);
        assert_eq!(
            reader.hashed(),
            3,
            "each cubin named hashed once, whatever it was asked for"
        );
        let runs = std::fs::read_to_string(&log).unwrap().lines().count();
        assert_eq!(runs, 2, "the tool runs once per distinct content");
    }
}
