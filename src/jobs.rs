//! Job slots: how many processes one nvcc-orion runs at once (docs/DESIGN.md §Per-kernel budgets).
//!
//! The build started this process on one slot of its own (make, ninja and cargo count it), and
//! whatever runs on the calling thread uses that one. Every other process at the same time
//! needs an extra slot: a token of the build's jobserver when one is handed down (GNU make's
//! `MAKEFLAGS` or cargo's `CARGO_MAKEFLAGS`), else one of a local pool of the machine's
//! cores minus the own one. Both the driver (a ptxas step tuned in the background while the
//! next architecture's front end runs) and the variant builder (the variants of one step side
//! by side) draw from the same process-wide [`Slots`], so together they never exceed it.
//!
//! Extra slots are only ever *tried*, never waited for: waiting could deadlock a build whose
//! every job is an nvcc-orion waiting the same way, and the holder of the own slot finishes
//! the work alone anyway.
//!
//! A thread that holds the own slot and only waits (the driver joining a step tuned in the
//! background, whose output the next step needs) lends it ([`Slots::lend`]): while it
//! waits, the slot is one more extra slot, so the step it waits for can run its variant
//! rounds two at a time instead of one after another on the slot it took.

use std::sync::{Mutex, OnceLock};

/// Where extra slots come from.
#[derive(Debug)]
pub struct Slots {
    source: Source,
}

#[derive(Debug)]
enum Source {
    Jobserver(jobserver::Client),
    /// Free permits of a local pool; below zero while a lent slot is still in use after
    /// its lender took it back (the next slot to come back settles it).
    Local(Mutex<isize>),
}

/// An extra slot, held until dropped.
#[derive(Debug)]
pub struct Slot<'a> {
    held: Held<'a>,
}

#[derive(Debug)]
enum Held<'a> {
    /// The token goes back to the jobserver when dropped.
    Token {
        _token: jobserver::Acquired,
    },
    Local(&'a Mutex<isize>),
}

/// The own slot, lent to the pool until dropped ([`Slots::lend`]).
#[derive(Debug)]
pub struct Lent<'a> {
    slots: &'a Slots,
    /// Whether a token went to the jobserver (so one must come back).
    lent: bool,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if !self.lent {
            return;
        }
        match &self.slots.source {
            Source::Local(free) => *free.lock().unwrap_or_else(|e| e.into_inner()) -= 1,
            // The own slot is the token the build started this process with: it must be
            // held again before going on. Waiting here cannot deadlock: nothing this
            // process holds is waited for, and every holder of a token finishes its job.
            Source::Jobserver(client) => {
                let _ = client.acquire_raw();
            }
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Held::Local(free) = self.held {
            *free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        }
    }
}

impl Slots {
    /// This process's slots: the build's jobserver when one is handed down, else the
    /// machine's cores. Read once per process.
    pub fn of_process() -> &'static Slots {
        static SLOTS: OnceLock<Slots> = OnceLock::new();
        SLOTS.get_or_init(|| match jobserver_client() {
            Some(client) => Slots {
                source: Source::Jobserver(client),
            },
            None => Slots::local(cores().saturating_sub(1)),
        })
    }

    /// A local pool of `extra` slots besides the own one.
    pub fn local(extra: usize) -> Slots {
        Slots {
            source: Source::Local(Mutex::new(isize::try_from(extra).unwrap_or(isize::MAX))),
        }
    }

    /// An extra slot if one is free now.
    pub fn try_extra(&self) -> Option<Slot<'_>> {
        let held = match &self.source {
            Source::Jobserver(client) => Held::Token {
                _token: client.try_acquire().ok()??,
            },
            Source::Local(free) => {
                let mut n = free.lock().unwrap_or_else(|e| e.into_inner());
                if *n <= 0 {
                    return None;
                }
                *n -= 1;
                Held::Local(free)
            }
        };
        Some(Slot { held })
    }

    /// Lend the caller's own slot while it waits on other work: it is an extra slot until
    /// the returned guard drops (see the module docs). The caller must start no process of
    /// its own meanwhile.
    pub fn lend(&self) -> Lent<'_> {
        let lent = match &self.source {
            Source::Local(free) => {
                *free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                true
            }
            Source::Jobserver(client) => client.release_raw().is_ok(),
        };
        Lent { slots: self, lent }
    }
}

/// The machine's cores (the most processes worth running at once).
pub fn cores() -> usize {
    // Read once: the standard library reads the cgroup's quota files on every call.
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// The build's jobserver (GNU make's or cargo's), when one is handed down.
fn jobserver_client() -> Option<jobserver::Client> {
    // SAFETY: `from_env_ext` reads the descriptors named in MAKEFLAGS / CARGO_MAKEFLAGS. They
    // were inherited from the parent build for this purpose; with `check_pipe` the crate
    // checks that they really are the jobserver's pipe or fifo before using them, so a stale
    // MAKEFLAGS whose numbers now name one of our own files is refused rather than read.
    unsafe { jobserver::Client::from_env_ext(true) }.client.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_pool_gives_its_slots_once_and_takes_them_back() {
        let slots = Slots::local(2);
        let a = slots.try_extra().expect("first");
        let b = slots.try_extra().expect("second");
        assert!(slots.try_extra().is_none(), "only two extra slots");
        drop(a);
        let c = slots.try_extra().expect("a returned slot is free again");
        assert!(slots.try_extra().is_none());
        drop((b, c));
        assert!(slots.try_extra().is_some());
    }

    #[test]
    fn a_lent_slot_is_an_extra_one_until_taken_back() {
        let slots = Slots::local(1);
        let a = slots.try_extra().expect("the one extra slot");
        assert!(slots.try_extra().is_none());
        let lent = slots.lend();
        let b = slots.try_extra().expect("the lent slot");
        assert!(slots.try_extra().is_none());
        drop(b);
        drop(lent);
        assert!(slots.try_extra().is_none(), "taken back");
        // Taken back while still in use: the pool is short until that slot comes back.
        let lent = slots.lend();
        let c = slots.try_extra().expect("lent again");
        drop(lent);
        drop(a);
        assert!(slots.try_extra().is_none(), "c still runs on the lent slot");
        drop(c);
        assert!(slots.try_extra().is_some(), "all back");
    }
}
