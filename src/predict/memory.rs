//! Where a variant's memory accesses land and what they cost in throughput
//! (docs/DESIGN.md §Prediction and selection, the memory terms).
//!
//! - **Placement of local data** (RegDem and ICS'14 price spills by where they land;
//!   docs/papers.md): the variant's frame times its resident threads is the local working set
//!   of one SM. L1 holds what the shared-memory carve-out leaves of the unified array
//!   ([`l1_left`]); the fraction of local accesses that hit L1 is the share of the working
//!   set that fits (`min(1, L1 / working set)`, every frame word reused alike), and of the
//!   misses, L2 holds each SM's share of it likewise. A local load's latency is the mix of the
//!   three levels' latencies.
//! - **Throughput ceilings** (Resios' saturation model, docs/papers.md §Resios): every level
//!   delivers a fixed number of bytes per clock to one SM. All accesses pass L1/shared; global
//!   data and the local misses pass L2; global data and the local misses of L2 reach DRAM. A
//!   warp's bytes at a level take `SCHEDULERS × bytes / bandwidth` cycles of its scheduler's
//!   share, and once that is more than the warp's latency over the warps resident, more warps
//!   only queue.

use serde::Serialize;

use super::occupancy::Occupancy;
use super::stalls::{Latencies, Traffic};
use crate::arch::Arch;
use crate::arch::latency::SCHEDULERS_PER_SM;
use crate::arch::memory::MemoryParams;

/// Threads per warp.
const WARP: u64 = 32;

/// The memory level most of a variant's local accesses hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    L1,
    L2,
    Dram,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::L1 => "L1",
            Level::L2 => "L2",
            Level::Dram => "DRAM",
        }
    }
}

/// Where one variant's local data lives at its occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Placement {
    /// Local bytes resident on one SM: frame bytes × resident threads.
    pub working_set: u64,
    /// L1 bytes the shared-memory carve-out leaves.
    pub l1_bytes: u32,
    /// Fraction of local accesses that hit L1.
    pub l1_hit: f64,
    /// Fraction of L1 misses that hit L2.
    pub l2_hit: f64,
}

impl Placement {
    /// `frame_bytes` per thread of `warps_per_sm` resident warps, with `l1_bytes` of L1.
    pub fn new(m: &MemoryParams, frame_bytes: u32, warps_per_sm: u32, l1_bytes: u32) -> Self {
        let working_set = u64::from(frame_bytes) * u64::from(warps_per_sm) * WARP;
        let fits = |capacity: u64| {
            if working_set == 0 {
                1.0
            } else {
                (capacity as f64 / working_set as f64).min(1.0)
            }
        };
        Placement {
            working_set,
            l1_bytes,
            l1_hit: fits(u64::from(l1_bytes)),
            l2_hit: fits(u64::from(m.l2_bytes_per_sm)),
        }
    }

    /// Fraction of local accesses that reach L2, and DRAM.
    fn misses(&self) -> (f64, f64) {
        let l2 = 1.0 - self.l1_hit;
        (l2, l2 * (1.0 - self.l2_hit))
    }

    /// The expected latency of a local load.
    pub fn local_latency(&self, m: &MemoryParams) -> f64 {
        let (to_l2, to_dram) = self.misses();
        self.l1_hit * m.l1_latency + (to_l2 - to_dram) * m.l2_latency + to_dram * m.dram_latency
    }

    /// The level most local accesses hit.
    pub fn level(&self) -> Level {
        let (to_l2, to_dram) = self.misses();
        if self.l1_hit >= to_l2 {
            Level::L1
        } else if to_l2 - to_dram >= to_dram {
            Level::L2
        } else {
            Level::Dram
        }
    }

    /// The latencies of memory producers in this placement.
    pub fn latencies(&self, m: &MemoryParams) -> Latencies {
        Latencies {
            global: m.dram_latency,
            local: self.local_latency(m),
            shared: m.shared_latency,
        }
    }
}

/// Bytes per warp each level moves, and the cycles per warp its bandwidth needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Ceilings {
    /// Bytes per warp through L1/shared, L2 and DRAM.
    pub l1_bytes: f64,
    pub l2_bytes: f64,
    pub dram_bytes: f64,
    /// Cycles per warp (a scheduler's share) each level's bandwidth needs for them.
    pub l1: f64,
    pub l2: f64,
    pub dram: f64,
}

impl Ceilings {
    /// The traffic `t` of one warp, with its local part split by `p`.
    pub fn new(m: &MemoryParams, p: &Placement, t: &Traffic) -> Ceilings {
        let (to_l2, to_dram) = p.misses();
        let l1_bytes = t.global + t.local + t.shared;
        let l2_bytes = t.global + t.local * to_l2;
        let dram_bytes = t.global + t.local * to_dram;
        let per_warp =
            |bytes: f64, per_clock: f64| f64::from(SCHEDULERS_PER_SM) * bytes / per_clock;
        Ceilings {
            l1_bytes,
            l2_bytes,
            dram_bytes,
            l1: per_warp(l1_bytes, m.l1_bytes_per_clock),
            l2: per_warp(l2_bytes, m.l2_bytes_per_clock),
            dram: per_warp(dram_bytes, m.dram_bytes_per_clock),
        }
    }
}

/// The L1 bytes `m`'s unified array leaves beside the shared memory of `o`'s resident blocks.
/// Without a preference the driver picks the carve-out that keeps shared memory from limiting
/// occupancy (CUDA Programming Guide, "Shared Memory" of compute capabilities 8.x and 9.0):
/// the smallest one that holds the resident blocks' shared memory.
pub fn l1_left(arch: Arch, m: &MemoryParams, o: &Occupancy) -> u32 {
    let p = arch.params();
    let needed = u64::from(o.blocks_per_sm) * o.shared_per_block;
    let carveout = p.carveout_for(needed).unwrap_or(p.smem_per_sm);
    m.l1_shared_bytes.saturating_sub(carveout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Sm;
    use crate::predict::{KernelResources, Launch, SharedBytes, occupancy};

    /// The walk example on sm_90 (issue 32): a 176-byte frame at 64 warps per SM is 352 KiB
    /// of local data, more than the 240 KiB of L1 a kernel without shared memory has there
    /// (16 blocks of 128 threads each hold the driver's reserved kilobyte: the 16 KB
    /// carve-out).
    #[test]
    fn walk_spills_overflow_l1_at_full_occupancy() {
        let m = Sm::of(90).memory();
        let arch: Arch = "sm_90".parse().unwrap();
        let o = occupancy(
            arch,
            &KernelResources::new(32, SharedBytes::User(0)),
            &Launch::new(128),
        )
        .unwrap();
        assert_eq!(o.warps_per_sm, 64);
        assert_eq!(l1_left(arch, &m, &o), 240 * 1024);
        let p = Placement::new(&m, 176, 64, l1_left(arch, &m, &o));
        assert_eq!(p.working_set, 176 * 64 * 32);
        assert!((p.l1_hit - 245_760.0 / 360_448.0).abs() < 1e-12);
        assert_eq!((p.l2_hit, p.level()), (1.0, Level::L1));
        // 68 % at L1's 40 cycles, 32 % at L2's 263.
        let lat = p.local_latency(&m);
        assert!((lat - (p.l1_hit * 40.0 + (1.0 - p.l1_hit) * 263.0)).abs() < 1e-9);
        // Half the warps: everything fits.
        assert_eq!(Placement::new(&m, 176, 32, 256 * 1024).l1_hit, 1.0);
        // No frame: nothing to place.
        assert_eq!(Placement::new(&m, 0, 64, 0).local_latency(&m), m.l1_latency);
    }

    /// Shared memory takes its carve-out from L1: 40 KB blocks, five resident on sm_90, need
    /// the 228 KB carve-out, which leaves 28 KB.
    #[test]
    fn shared_memory_takes_l1() {
        let m = Sm::of(90).memory();
        let arch: Arch = "sm_90".parse().unwrap();
        let o = occupancy(
            arch,
            &KernelResources::new(32, SharedBytes::User(40 * 1024)),
            &Launch::new(256),
        )
        .unwrap();
        assert_eq!(o.blocks_per_sm, 5);
        assert_eq!(l1_left(arch, &m, &o), 28 * 1024);
    }

    /// Ceilings: every byte through L1, global and the local misses through L2, global and
    /// the local misses of L2 to DRAM.
    #[test]
    fn ceilings_follow_the_placement() {
        let m = Sm::of(80).memory();
        let t = Traffic {
            global: 128.0,
            local: 1000.0,
            shared: 64.0,
        };
        let p = Placement {
            working_set: 4,
            l1_bytes: 2,
            l1_hit: 0.5,
            l2_hit: 0.5,
        };
        let c = Ceilings::new(&m, &p, &t);
        assert_eq!(
            (c.l1_bytes, c.l2_bytes, c.dram_bytes),
            (1192.0, 628.0, 378.0)
        );
        assert_eq!(c.l1, 4.0 * 1192.0 / 128.0);
        assert!((c.dram - 4.0 * 378.0 / m.dram_bytes_per_clock).abs() < 1e-9);
        assert_eq!(p.level(), Level::L1);
        let far = Placement {
            l1_hit: 0.1,
            l2_hit: 0.2,
            ..p
        };
        assert_eq!(far.level(), Level::Dram);
    }
}
