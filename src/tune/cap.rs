//! The object-size cap on a step's variants (issue 45, docs/selector.md §Ranking, "The
//! object-size cap"): under adapt/train the cubin a ptxas step ships, the tuned originals and
//! every `__orion_v<k>` entry together, is at most [`CAP_PERCENT`] of ptxas's own cubin for
//! the step (what nvcc ships), or the tuned originals and [`FLOOR_BYTES`] of variants where
//! that is more. The variants that do not fit are left out of the cubin, and the report says
//! so (`left_out: object-size`).
//!
//! Which variants fit is decided on estimates, before anything is emitted, so that both ways
//! of emitting ([`super::multi`]) ship the same set: each variant costs the bytes of its
//! kernel's own sections in the cubin its candidate was built in, with their headers,
//! symbols and names ([`entry_bytes`]), a little more than adding the entry takes.

use std::cmp::Ordering;

use crate::cubin::Cubin;

/// The most a step's shipped cubin may be, in percent of ptxas's own cubin. An object is
/// nvcc's host code, the fatbin (one such cubin per architecture) and, under adapt/train,
/// the selector's glue (about 50 KB, `runtime/`): three quarters of the device code more
/// keeps the object of a template-heavy file within 2x nvcc's (issue 45's target) with a
/// quarter of it left for the glue (bench/results/measured-path.md).
pub(crate) const CAP_PERCENT: u64 = 175;

/// The room a step's variants always have, whatever [`CAP_PERCENT`] leaves: 64 KiB. A module
/// that small has an object dominated by nvcc's host code and the glue (itself about 50 KB),
/// which no cap on variants brings within 2x, while one large kernel (an unrolled gather is
/// 41 KB of a 42 KB cubin) would otherwise never be measured at all.
pub(crate) const FLOOR_BYTES: u64 = 64 * 1024;

/// One variant the ranking asks for, as the cap weighs it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item<'a> {
    pub(crate) kernel: &'a str,
    /// `k` of `__orion_v<k>`: a kernel's first variant goes before any kernel's second.
    pub(crate) variant: usize,
    /// What adding it costs the cubin, estimated ([`entry_bytes`]).
    pub(crate) bytes: u64,
    /// What measuring it can teach ([`occupancy_gap`]): the larger first.
    pub(crate) worth: f64,
}

/// Which of `items` fit (same order as `items`), given the size of ptxas's own cubin
/// (`own`) and of the tuned cubin the variants are added to (`tuned`): their room is what
/// [`CAP_PERCENT`] of `own` leaves beside `tuned`, [`FLOOR_BYTES`] at least. Taken in this order:
/// by `variant` (every kernel's first variant before any second, so that as many kernels as
/// possible are measured at all), then by `worth` (largest first), then the cheaper, then by
/// kernel name; each is kept while the total fits. A kernel whose variant is left out keeps
/// none after it, so what a kernel ships is a prefix of its ranking.
pub(crate) fn fitting(own: u64, tuned: u64, items: &[Item<'_>]) -> Vec<bool> {
    let room = room(own, tuned);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&items[a], &items[b]);
        x.variant
            .cmp(&y.variant)
            .then(y.worth.total_cmp(&x.worth))
            .then(x.bytes.cmp(&y.bytes))
            .then(x.kernel.cmp(y.kernel))
            .then(a.cmp(&b))
    });
    let mut keep = vec![false; items.len()];
    let mut used = 0u64;
    let mut closed: Vec<&str> = Vec::new();
    for i in order {
        let it = &items[i];
        if closed.contains(&it.kernel) {
            continue;
        }
        if used.saturating_add(it.bytes) <= room {
            used += it.bytes;
            keep[i] = true;
        } else {
            closed.push(it.kernel);
        }
    }
    keep
}

/// The bytes a step's variants may add ([`fitting`]).
pub(crate) fn room(own: u64, tuned: u64) -> u64 {
    (own.saturating_mul(CAP_PERCENT) / 100)
        .saturating_sub(tuned)
        .max(FLOOR_BYTES)
}

/// How far a variant's occupancy is from the static winner's, the model's predicted
/// occupancy gain or loss: the largest relative difference in resident warps per SM over
/// the block sizes both launch at (`|a - b| / min(a, b)`; 0 where they never differ). A
/// measured-only budget at a higher occupancy, or ptxas's own build under a retuned
/// kernel's winner, is worth measuring by how much the occupancy the model's choice rests
/// on changes.
pub(crate) fn occupancy_gap(variant: &[u32], winner: &[u32]) -> f64 {
    variant
        .iter()
        .zip(winner)
        .filter(|(a, b)| **a > 0 && **b > 0)
        .map(|(a, b)| f64::from(a.abs_diff(*b)) / f64::from(*a.min(b)))
        .fold(0.0, |m, g| match g.partial_cmp(&m) {
            Some(Ordering::Greater) => g,
            _ => m,
        })
}

/// What adding `kernel` of `donor` as `name` costs a cubin, at most: each section the kernel
/// owns (`<kind>.<kernel>`: code, info, relocations, parameter bank) with its alignment, a
/// section header, a section symbol and its name under the new name; the entry symbol; and
/// the records of the global info, call graph and frame (`ENTRY_RECORDS`).
pub(crate) fn entry_bytes(donor: &Cubin, kernel: &str, name: &str) -> u64 {
    const HEADER: u64 = 64;
    const SYMBOL: u64 = 24;
    const ENTRY_RECORDS: u64 = 256;
    let suffix = format!(".{kernel}");
    let renamed = (name.len() + 1) as u64;
    let owned: u64 = donor
        .elf()
        .sections
        .iter()
        .filter(|s| s.name.ends_with(&suffix))
        .map(|s| {
            let prefix = (s.name.len() - suffix.len() + 1) as u64;
            s.file_size() + s.sh_addralign.min(128) + HEADER + SYMBOL + prefix + renamed
        })
        .sum();
    owned + SYMBOL + renamed + ENTRY_RECORDS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kernel: &str, variant: usize, bytes: u64, worth: f64) -> Item<'_> {
        Item {
            kernel,
            variant,
            bytes,
            worth,
        }
    }

    #[test]
    fn first_variants_first_then_the_larger_occupancy_change_then_the_cheaper() {
        // ptxas's own 100 KB, the tuned cubin 100 KB: 75 KB of room.
        const OWN: u64 = 100_000;
        let items = [
            item("a", 1, 30_000, 0.5), // no room left after b and c
            item("a", 2, 10_000, 2.0), // a's second: after every first, and a is closed
            item("b", 1, 30_000, 1.0), // the largest gap among the firsts
            item("c", 1, 20_000, 0.5), // a's equal: the cheaper first
            item("d", 1, 40_000, 0.1), // does not fit either
        ];
        assert_eq!(fitting(OWN, OWN, &items), [false, false, true, true, false]);
        // Exactly at the cap is within it.
        assert_eq!(fitting(OWN, OWN, &[item("e", 1, 75_000, 0.0)]), [true]);
        assert_eq!(fitting(OWN, OWN, &[item("e", 1, 75_001, 0.0)]), [false]);
        // A kernel left out keeps nothing after: d's second does not slip in.
        let items = [item("d", 1, 90_000, 1.0), item("d", 2, 10, 1.0)];
        assert_eq!(fitting(OWN, OWN, &items), [false, false]);
        // Tuned code already over the cap, or a small module: the floor's room.
        let at = |bytes| fitting(OWN, 180_000, &[item("a", 1, bytes, 1.0)]);
        assert_eq!(at(FLOOR_BYTES), [true]);
        assert_eq!(at(FLOOR_BYTES + 1), [false]);
        assert_eq!(room(10_000, 10_000), FLOOR_BYTES);
        // Ties all the way: by kernel name, whatever the input order.
        let items = [item("z", 1, 50_000, 1.0), item("y", 1, 50_000, 1.0)];
        assert_eq!(fitting(OWN, OWN, &items), [false, true]);
    }

    #[test]
    fn the_gap_is_the_largest_relative_change_in_warps() {
        assert_eq!(occupancy_gap(&[32, 48], &[32, 32]), 0.5);
        // ptxas's own under a retuned winner: a loss counts the same.
        assert_eq!(occupancy_gap(&[16], &[32]), 1.0);
        // A block size one of them cannot launch at says nothing.
        assert_eq!(occupancy_gap(&[0, 40], &[8, 32]), 0.25);
        assert_eq!(occupancy_gap(&[], &[]), 0.0);
    }
}
