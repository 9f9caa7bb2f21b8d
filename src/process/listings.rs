//! What the toolkit's readers (`nvdisasm`, `cuobjdump`) print of a cubin, run at most once per
//! process for each distinct (tool, arguments, input bytes), shared by whoever asks: the
//! proof of a rewrite (`sass::decode`, `verify::plr`) and the assembly check (`audit`) list
//! the same bytes with the same arguments (the rewritten cubin is the shipped one), and each
//! `nvdisasm` run costs about 0.4 s of start-up alone (bench/results/suite.md). Neutral
//! ground: the check takes a listing from here, never from the code it checks.
//!
//! A listing is keyed by the SHA-256 of the tool's path, the arguments and every byte of the
//! input, never by a path or a size, and the tool always reads this module's own copy of the
//! bytes it hashed. What the tools print does not depend on the input file's name or folder
//! (`-json`, `-c -plr`, `-g -gp`, `-c`, `cuobjdump -elf` of the same bytes at two paths are
//! byte for byte the same: `tests/assembly/assembly_check.rs`,
//! `a_listing_does_not_depend_on_the_input_path`), so the arguments are kept
//! without the input path.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use sha2::{Digest, Sha256};

use super::Captured;

/// The key of one listing: SHA-256 of the tool, its arguments and the input bytes, each part
/// preceded by its length so that no two different triples meet (`["-c -plr"]` is not
/// `["-c", "-plr"]`).
pub fn key(tool: &Path, args: &[&str], bytes: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut part = |p: &[u8]| {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    };
    part(tool.as_os_str().as_encoded_bytes());
    part(&(args.len() as u64).to_le_bytes());
    for a in args {
        part(a.as_bytes());
    }
    part(bytes);
    h.finalize().into()
}

/// How much printed output the memo holds at most: beyond it the oldest listings go. What it
/// saves is a listing asked for again soon (the check reading the cubin the proof just
/// listed), while everything it holds stays resident for the process: a few MiB for one
/// build's rewrites, but a `rewrite` of a large archive reads many cubins, and the build's
/// peak memory is held to 1.2x nvcc's (issue 24), so the cap is small.
const KEPT_BYTES: usize = 64 << 20;

/// One listing: empty until its first asker has run the tool; a later asker waits on it.
type Entry = Arc<Mutex<Option<Arc<Captured>>>>;

#[derive(Default)]
struct Memo {
    entries: HashMap<[u8; 32], Entry>,
    /// Keys in the order their listings were made, with the size each holds.
    order: VecDeque<([u8; 32], usize)>,
    held: usize,
}

fn memo() -> MutexGuard<'static, Memo> {
    static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
    MEMO.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// `tool ARGS FILE` with FILE holding `bytes`: what it printed and how it ended, run once per
/// process for the same key ([`key`]); a second asker of a listing under way waits for it.
/// A run the tool finished with an exit code is kept whatever the code (the tools are
/// deterministic); one that could not start, or that a signal ended, is not.
pub fn print(tool: &Path, args: &[&str], bytes: &[u8]) -> std::io::Result<Arc<Captured>> {
    let k = key(tool, args, bytes);
    let entry = Arc::clone(memo().entries.entry(k).or_default());
    let mut slot = entry.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(done) = slot.as_ref() {
        return Ok(Arc::clone(done));
    }
    let out = Arc::new(run(tool, args, bytes)?);
    if out.status.code().is_some() {
        *slot = Some(Arc::clone(&out));
        drop(slot);
        keep(k, out.stdout.len() + out.stderr.len());
    }
    Ok(out)
}

/// The tool on a temporary copy of `bytes` (in memory where `/dev/shm` exists), its output
/// read back from a file ([`super::output_via_file`]); the copy goes when this returns.
fn run(tool: &Path, args: &[&str], bytes: &[u8]) -> std::io::Result<Captured> {
    let mut b = tempfile::Builder::new();
    b.prefix("nvcc-orion-").suffix(".cubin");
    let file = b.tempfile_in("/dev/shm").or_else(|_| b.tempfile())?;
    std::fs::write(file.path(), bytes)?;
    super::output_via_file(Command::new(tool).args(args).arg(file.path()))
}

/// Record that listing `k` holds `size` bytes, and let the oldest go while the memo holds more
/// than [`KEPT_BYTES`] (never the newest).
fn keep(k: [u8; 32], size: usize) {
    let mut m = memo();
    m.order.push_back((k, size));
    m.held += size;
    while m.held > KEPT_BYTES && m.order.len() > 1 {
        let Some((old, n)) = m.order.pop_front() else {
            break;
        };
        m.entries.remove(&old);
        m.held -= n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_every_byte_the_arguments_and_the_tool() {
        let tool = Path::new("/t/nvdisasm");
        let bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        let base = key(tool, &["-json"], &bytes);
        assert_eq!(
            base,
            key(tool, &["-json"], &bytes.clone()),
            "same input, same key"
        );
        for i in [0, 1, 2047, 4095] {
            let mut other = bytes.clone();
            other[i] ^= 1;
            assert_ne!(base, key(tool, &["-json"], &other), "byte {i} differs");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_ne!(base, key(tool, &["-json"], &longer), "one byte more");
        assert_ne!(base, key(tool, &["-json"], &bytes[1..]), "one byte less");
        assert_ne!(base, key(tool, &["-c"], &bytes), "other arguments");
        assert_ne!(
            base,
            key(Path::new("/u/nvdisasm"), &["-json"], &bytes),
            "other tool"
        );
        assert_ne!(
            key(tool, &["-c", "-plr"], &bytes),
            key(tool, &["-c -plr"], &bytes),
            "arguments are not run together"
        );
        assert_ne!(
            key(tool, &["-c", "-plr"], &bytes),
            key(tool, &["-plr", "-c"], &bytes),
            "arguments in order"
        );
        assert_ne!(
            key(tool, &["-json"], b"x"),
            key(tool, &["-jsonx"], b""),
            "an argument does not run into the bytes"
        );
    }

    #[test]
    fn a_listing_is_run_once_per_tool_arguments_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("count");
        let log = dir.path().join("log");
        std::fs::write(
            &tool,
            format!(
                "#!/bin/sh\nfor f; do :; done\necho run >> '{}'\necho \"$1\"; cat \"$f\"\n",
                log.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let a = print(&tool, &["-x"], b"one").unwrap();
        let again = print(&tool, &["-x"], b"one").unwrap();
        let other_bytes = print(&tool, &["-x"], b"two").unwrap();
        let other_args = print(&tool, &["-y"], b"one").unwrap();
        assert_eq!(a.stdout, b"-x\none");
        assert!(
            Arc::ptr_eq(&a, &again),
            "the second asker gets the first listing"
        );
        assert_eq!(
            other_bytes.stdout, b"-x\ntwo",
            "other bytes are listed anew"
        );
        assert_eq!(
            other_args.stdout, b"-y\none",
            "other arguments are listed anew"
        );
        let runs = std::fs::read_to_string(&log).unwrap().lines().count();
        assert_eq!(runs, 3);

        // Past the cap the oldest listings go, and are made again when asked for.
        keep([0xAB; 32], KEPT_BYTES);
        let after = print(&tool, &["-x"], b"one").unwrap();
        assert!(!Arc::ptr_eq(&a, &after), "the oldest listing was let go");
        assert_eq!(after.stdout, a.stdout);
        let runs = std::fs::read_to_string(&log).unwrap().lines().count();
        assert_eq!(runs, 4, "listed again after it went");
    }
}
