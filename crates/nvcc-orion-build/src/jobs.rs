//! Sources side by side within cargo's jobserver. cc runs a build's sources in parallel only
//! when it compiles several `.cu` files into relocatable device code; each source here is its
//! own whole-program compile, so this module schedules them: the first (and any started when
//! nothing runs) on the build script's own slot, each further one on a jobserver token that is
//! free, else after the oldest finishes. Without a jobserver (not under cargo or make), one at
//! a time. The compilers inherit the jobserver (`CARGO_MAKEFLAGS` and its descriptors), so
//! nvcc-orion's variant builds draw on the same tokens.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::thread::ScopedJoinHandle;

use crate::BuildError;

/// The jobserver cargo (or make) handed this process, once per process.
fn client() -> Option<&'static jobserver::Client> {
    static CLIENT: OnceLock<Option<jobserver::Client>> = OnceLock::new();
    // SAFETY: `from_env_ext` reads the descriptors MAKEFLAGS / CARGO_MAKEFLAGS name; with
    // `check_pipe` set it verifies they are the jobserver's pipe or fifo before using them, so
    // stale numbers that now name other files of this process are refused, not read.
    CLIENT
        .get_or_init(|| unsafe { jobserver::Client::from_env_ext(true) }.client.ok())
        .as_ref()
}

type Running<'s, T> = (
    usize,
    ScopedJoinHandle<'s, Result<T, BuildError>>,
    Option<jobserver::Acquired>,
);

/// Run `jobs`, as many at once as the jobserver allows, returning their results in order, or
/// the first failure once every started job has finished (no new job starts after one fails).
pub(crate) fn run_side_by_side<T, F>(jobs: Vec<F>) -> Result<Vec<T>, BuildError>
where
    T: Send,
    F: FnOnce() -> Result<T, BuildError> + Send,
{
    let client = client();
    let mut results: Vec<Option<Result<T, BuildError>>> = jobs.iter().map(|_| None).collect();
    std::thread::scope(|s| {
        let mut running: VecDeque<Running<T>> = VecDeque::new();
        let finish = |(i, handle, token): Running<T>, results: &mut Vec<_>| {
            let r = handle
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            drop(token);
            let failed = r.is_err();
            results[i] = Some(r);
            failed
        };
        let mut failed = false;
        for (i, job) in jobs.into_iter().enumerate() {
            // A slot: our own when it is free, else a free token, else wait for the oldest.
            let token = loop {
                if running.iter().all(|(_, _, t)| t.is_some()) {
                    break None;
                }
                if let Some(t) = client.and_then(|c| c.try_acquire().ok().flatten()) {
                    break Some(t);
                }
                let oldest = running.pop_front().expect("a job holds our slot");
                failed |= finish(oldest, &mut results);
            };
            if failed {
                break;
            }
            running.push_back((i, s.spawn(job), token));
        }
        for r in running {
            finish(r, &mut results);
        }
    });
    let mut out = Vec::with_capacity(results.len());
    for r in results.into_iter().flatten() {
        out.push(r?);
    }
    Ok(out)
}

/// Run one compiler command (handed the jobserver explicitly), its failure naming `file`.
pub(crate) fn run_command(mut cmd: Command, program: &str, file: &Path) -> Result<(), BuildError> {
    if let Some(c) = client() {
        c.configure(&mut cmd);
    }
    let status = cmd.status().map_err(|source| BuildError::Spawn {
        program: program.to_string(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(BuildError::Failed {
            program: program.to_string(),
            file: file.display().to_string(),
            status,
        })
    }
}
