//! What stops one more block of a kernel fitting on an SM, from a report record: the
//! occupancy calculator's limiting resources for the shipped candidate, in the words a user
//! acts on (registers, shared memory, the block size, the SM's warp slots).

use nvcc_orion_schema::{Candidate, Record};

use crate::predict::occupancy::{Limiter, Limiters};
use crate::predict::{KernelResources, Launch, SharedBytes, occupancy};

/// The word for one limiting resource. The SM's block slots run out only for small blocks,
/// so that limit is the block size's.
fn word(l: Limiter) -> &'static str {
    match l {
        Limiter::Registers => "registers",
        Limiter::SharedMemory => "shared memory",
        Limiter::Blocks => "block size",
        Limiter::Warps => "warps",
        Limiter::Barriers => "barriers",
        Limiter::VirtualResources => "virtual resources",
    }
}

/// `registers + warps`: every resource whose own limit is the result (ties are common).
fn words(set: Limiters) -> String {
    let w: Vec<&str> = set.iter().map(word).collect();
    w.join(" + ")
}

/// The limiter of candidate `c` of `record` at each of the record's block sizes, joined with
/// `/` where they differ (`registers/warps` for 128/256/512 threads), or `None` for an
/// architecture without an occupancy table. A cubin counts the reserved shared kilobyte on
/// sm_90+ and a relocatable one does not: the reading whose warps match the record's is used.
pub fn of(record: &Record, c: &Candidate) -> Option<String> {
    let arch = super::svg::arch_of(&record.arch)?;
    let regs = c.registers;
    let shared = u32::try_from(c.static_shared).unwrap_or(u32::MAX);
    let recorded: Vec<u64> = c.warps_per_sm.iter().map(|&w| u64::from(w)).collect();
    let blocks = &record.block_sizes;
    if blocks.is_empty() {
        return None;
    }
    let readings = [SharedBytes::FromCubin(shared), SharedBytes::User(shared)];
    let per_block = readings.iter().find_map(|&s| {
        let k = KernelResources::new(regs, s);
        let occ: Option<Vec<_>> = blocks
            .iter()
            .map(|&t| occupancy(arch, &k, &Launch::new(t)).ok())
            .collect();
        let occ = occ?;
        let warps: Vec<u64> = occ.iter().map(|o| u64::from(o.warps_per_sm)).collect();
        (recorded.is_empty() || warps == recorded).then_some(occ)
    })?;
    let mut seen: Vec<String> = Vec::new();
    for o in &per_block {
        let w = if o.blocks_per_sm == 0 {
            "cannot launch".to_string()
        } else {
            words(o.limiters)
        };
        if !seen.contains(&w) {
            seen.push(w);
        }
    }
    Some(seen.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(
        arch: &str,
        blocks: &[u32],
        regs: u32,
        shared: u32,
        warps: &[u32],
    ) -> (Record, Candidate) {
        let c = json!({"registers": regs, "static_shared": shared, "warps_per_sm": warps});
        let r = super::super::record(
            json!({"arch": arch, "block_sizes": blocks, "candidates": [c.clone()]}),
        );
        let c = r.candidates[0].clone();
        (r, c)
    }

    #[test]
    fn names_the_resource_that_binds() {
        // sm_90, 64 registers at 256 threads: 4 blocks of 8 warps, the register file full.
        let (r, c) = rec("sm_90", &[256], 64, 0, &[32]);
        assert_eq!(of(&r, &c).unwrap(), "registers");
        // 32 registers: 64 warps, every warp slot taken.
        let (r, c) = rec("sm_90", &[256], 32, 0, &[64]);
        assert!(
            of(&r, &c).unwrap().starts_with("registers + warps")
                || of(&r, &c).unwrap().contains("warps")
        );
        // 32 threads a block: the 32 block slots run out first.
        let (r, c) = rec("sm_90", &[32], 32, 0, &[32]);
        assert_eq!(of(&r, &c).unwrap(), "block size");
        // 40 KB of static shared memory: five blocks.
        let (r, c) = rec("sm_90", &[128], 32, 40 * 1024, &[]);
        assert_eq!(of(&r, &c).unwrap(), "shared memory");
    }

    #[test]
    fn differs_by_block_size_and_needs_a_table() {
        let (r, c) = rec("sm_90", &[128, 1024], 64, 0, &[32, 32]);
        assert_eq!(of(&r, &c).unwrap(), "registers");
        let (r, c) = rec("sm_110", &[], 64, 0, &[]);
        assert_eq!(of(&r, &c), None);
    }
}
