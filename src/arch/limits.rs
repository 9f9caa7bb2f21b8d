//! Per-architecture occupancy parameters (the occupancy half of the [`super`] seam), as one
//! data table, and [`Arch`]: a compute capability
//! that is known to have a row in it.
//!
//! Two sources feed the table, and every field says which one it comes from:
//! - **Guide**: CUDA C++ Programming Guide 13.1, Table 27 "Technical Specifications per Compute
//!   Capability" (§20.2) and the shared-memory sections of §20.6–20.10 (see docs/sass.md
//!   §Per-architecture differences). These are the values a real device reports in
//!   `cudaDeviceProp` (`maxThreadsPerMultiProcessor`, `sharedMemPerMultiprocessor`, ...).
//! - **header**: CUDA 13.5 `include/cuda_occupancy.h`, which hard-codes what the Guide's table
//!   does not say (allocation units, sub-partitions, carve-out steps, barrier and "virtual
//!   resource" limits). The function named on each field is where the value lives.
//!
//! Adding an architecture (sm_103, sm_110, sm_121, ...) is one more row in [`TABLE`]: copy the
//! Guide's column, and read the header's `switch (computeMajor/Minor)` cases for the rest. The
//! oracle test (`tests/oracles/occupancy_oracle.rs`) then checks the new row against the header, once its
//! own device-property row is added there too.

use std::fmt;
use std::str::FromStr;

/// Threads per warp on every architecture here (Guide, Table 27).
pub(crate) const WARP_SIZE: u32 = 32;

/// Bytes in a KiB, to write the table in the unit the Guide uses.
const KB: u32 = 1024;

/// One compute capability's occupancy parameters. Field docs name each value's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchParams {
    /// Compute capability (major, minor).
    pub(crate) cc: (u8, u8),
    /// Guide: "Maximum number of resident threads per SM" (`maxThreadsPerMultiProcessor`).
    pub(crate) max_threads_per_sm: u32,
    /// Guide: "Maximum number of resident blocks per SM"; equal to the header's
    /// `cudaOccMaxBlocksPerMultiprocessor`.
    pub(crate) max_blocks_per_sm: u32,
    /// Guide: "Maximum number of threads per block" (`maxThreadsPerBlock`).
    pub(crate) max_threads_per_block: u32,
    /// Guide: "Number of 32-bit registers per SM" (`regsPerMultiprocessor`).
    pub(crate) regs_per_sm: u32,
    /// Guide: "Maximum number of 32-bit registers per thread block" (`regsPerBlock`).
    pub(crate) regs_per_block: u32,
    /// Guide: "Maximum number of 32-bit registers per thread". The header's
    /// `cudaOccRegAllocationMaxPerThread` checks against 256 instead (see `occupancy`).
    pub(crate) max_regs_per_thread: u32,
    /// header `cudaOccRegAllocationGranularity`: registers are given to a warp in units of this.
    pub(crate) reg_alloc_unit: u32,
    /// header `cudaOccSubPartitionsPerMultiprocessor`: the register file is split evenly
    /// between this many warp schedulers, and a warp's registers come from one of them.
    pub(crate) sub_partitions: u32,
    /// Guide: "Maximum amount of shared memory per SM" (`sharedMemPerMultiprocessor`).
    pub(crate) smem_per_sm: u32,
    /// Guide: "Maximum amount of shared memory per thread block" without opt-in
    /// (`sharedMemPerBlock`, 48 KB everywhere).
    pub(crate) smem_per_block: u32,
    /// Guide: the per-block maximum with `cudaFuncAttributeMaxDynamicSharedMemorySize` opt-in
    /// (`sharedMemPerBlockOptin`).
    pub smem_per_block_optin: u32,
    /// header `cudaOccSMemAllocationGranularity`: a block's shared memory is rounded up to this.
    pub(crate) smem_alloc_unit: u32,
    /// Guide §20.7.3 and later ("1 KB of shared memory is reserved for system use"); the driver's
    /// `reservedSharedMemPerBlock`. The header adds it to every block's static size.
    pub reserved_smem_per_block: u32,
    /// header `cudaOccAlignUpShmemSizeVoltaPlus`: the shared-memory carve-outs an SM can be
    /// configured to, in bytes, ascending. A carve-out request is rounded up to the next one.
    pub(crate) carveouts: &'static [u32],
    /// header `cudaOccMaxBlocksPerSMBlockBarrierLimit`: barrier slots per resident-block slot
    /// (the SM has `max_blocks_per_sm` × this many); `None` where the header applies no barrier
    /// limit (it only does for `computeMajor >= 9`, in `cudaOccMaxActiveBlocksPerMultiprocessor`).
    pub(crate) barrier_slots_per_block: Option<u32>,
    /// header `cudaOccMaxVirtualResourceCountPerSM`: "virtual resources" per SM (0: no limit).
    pub(crate) virtual_resources_per_sm: u32,
    /// Observed with ptxas 13.5 (`cuobjdump -res-usage`, ELF section sizes): on sm_90 and later a
    /// linked cubin's per-kernel shared size already contains the driver's reserved 1 KB
    /// (`.nv.shared.reserved.0`) whenever it is non-zero. See `predict::SharedBytes`.
    pub cubin_shared_includes_reserved: bool,
}

// Carve-out steps from `cudaOccAlignUpShmemSizeVoltaPlus`, one list per `switch` case there.
/// Turing: 32 or 64 KB; a request of 0 still gets 32 KB (no 0 step).
const CARVEOUT_TURING: &[u32] = &[32 * KB, 64 * KB];
/// GA10x, AD10x, GB20x (8.6, 8.9, 12.0/12.1).
const CARVEOUT_100K: &[u32] = &[0, 8 * KB, 16 * KB, 32 * KB, 64 * KB, 100 * KB];
/// GA100 and Orin (8.0, 8.7).
const CARVEOUT_164K: &[u32] = &[
    0,
    8 * KB,
    16 * KB,
    32 * KB,
    64 * KB,
    100 * KB,
    132 * KB,
    164 * KB,
];
/// Hopper and GB10x (9.0, 10.0/10.1/10.3).
const CARVEOUT_228K: &[u32] = &[
    0,
    8 * KB,
    16 * KB,
    32 * KB,
    64 * KB,
    100 * KB,
    132 * KB,
    164 * KB,
    196 * KB,
    228 * KB,
];

/// The rows. Values common to every row are spelled out on each so a row reads on its own.
pub(crate) static TABLE: &[ArchParams] = &[
    // sm_75 (Turing). Guide Table 27 column 7.5, §20.6.4 (shared memory 7.x); header cases
    // `case 7` with `computeMinor == 5` ("isTuring").
    ArchParams {
        cc: (7, 5),
        max_threads_per_sm: 1024,
        max_blocks_per_sm: 16,
        max_threads_per_block: 1024,
        regs_per_sm: 64 * KB,
        regs_per_block: 64 * KB,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        sub_partitions: 4,
        smem_per_sm: 64 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 64 * KB,
        smem_alloc_unit: 256,
        reserved_smem_per_block: 0,
        carveouts: CARVEOUT_TURING,
        barrier_slots_per_block: None,
        virtual_resources_per_sm: 0,
        cubin_shared_includes_reserved: false,
    },
    // sm_80 (GA100). Guide column 8.0, §20.7.3; header `case 8`, `computeMinor == 0`.
    ArchParams {
        cc: (8, 0),
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        max_threads_per_block: 1024,
        regs_per_sm: 64 * KB,
        regs_per_block: 64 * KB,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        sub_partitions: 4,
        smem_per_sm: 164 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 163 * KB,
        smem_alloc_unit: 128,
        reserved_smem_per_block: KB,
        carveouts: CARVEOUT_164K,
        barrier_slots_per_block: None,
        virtual_resources_per_sm: 0,
        cubin_shared_includes_reserved: false,
    },
    // sm_86 (GA10x). Guide column 8.6, §20.7.3; header `case 8`, other minors.
    ArchParams {
        cc: (8, 6),
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 16,
        max_threads_per_block: 1024,
        regs_per_sm: 64 * KB,
        regs_per_block: 64 * KB,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        sub_partitions: 4,
        smem_per_sm: 100 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 99 * KB,
        smem_alloc_unit: 128,
        reserved_smem_per_block: KB,
        carveouts: CARVEOUT_100K,
        barrier_slots_per_block: None,
        virtual_resources_per_sm: 0,
        cubin_shared_includes_reserved: false,
    },
    // sm_87 (Orin). Guide column 8.7 (merged cells with 8.6 for blocks/SM), §20.7.3; header
    // `case 8`: 16 blocks like 8.6, carve-outs like 8.0 (`computeMinor == 0 || == 7`).
    ArchParams {
        cc: (8, 7),
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 16,
        max_threads_per_block: 1024,
        regs_per_sm: 64 * KB,
        regs_per_block: 64 * KB,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        sub_partitions: 4,
        smem_per_sm: 164 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 163 * KB,
        smem_alloc_unit: 128,
        reserved_smem_per_block: KB,
        carveouts: CARVEOUT_164K,
        barrier_slots_per_block: None,
        virtual_resources_per_sm: 0,
        cubin_shared_includes_reserved: false,
    },
    // sm_89 (Ada). Guide column 8.9, §20.7.3; header `case 8`, `computeMinor == 9` (24 blocks).
    ArchParams {
        cc: (8, 9),
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 24,
        max_threads_per_block: 1024,
        regs_per_sm: 64 * KB,
        regs_per_block: 64 * KB,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        sub_partitions: 4,
        smem_per_sm: 100 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 99 * KB,
        smem_alloc_unit: 128,
        reserved_smem_per_block: KB,
        carveouts: CARVEOUT_100K,
        barrier_slots_per_block: None,
        virtual_resources_per_sm: 0,
        cubin_shared_includes_reserved: false,
    },
    // sm_90 (Hopper). Guide column 9.0, §20.8.3; header `case 9`.
    ArchParams {
        cc: (9, 0),
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        max_threads_per_block: 1024,
        regs_per_sm: 64 * KB,
        regs_per_block: 64 * KB,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        sub_partitions: 4,
        smem_per_sm: 228 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 227 * KB,
        smem_alloc_unit: 128,
        reserved_smem_per_block: KB,
        carveouts: CARVEOUT_228K,
        barrier_slots_per_block: Some(2),
        virtual_resources_per_sm: 0,
        cubin_shared_includes_reserved: true,
    },
    // sm_100 (GB10x). Guide column 10.0, §20.9.3; header `case 10`, `computeMinor == 0`.
    ArchParams {
        cc: (10, 0),
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        max_threads_per_block: 1024,
        regs_per_sm: 64 * KB,
        regs_per_block: 64 * KB,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        sub_partitions: 4,
        smem_per_sm: 228 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 227 * KB,
        smem_alloc_unit: 128,
        reserved_smem_per_block: KB,
        carveouts: CARVEOUT_228K,
        barrier_slots_per_block: Some(2),
        virtual_resources_per_sm: 128,
        cubin_shared_includes_reserved: true,
    },
    // sm_120 (GB20x). Guide column 12.0, §20.10.3; header `case 12`, `computeMinor == 0`.
    ArchParams {
        cc: (12, 0),
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 24,
        max_threads_per_block: 1024,
        regs_per_sm: 64 * KB,
        regs_per_block: 64 * KB,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        sub_partitions: 4,
        smem_per_sm: 100 * KB,
        smem_per_block: 48 * KB,
        smem_per_block_optin: 99 * KB,
        smem_alloc_unit: 128,
        reserved_smem_per_block: KB,
        carveouts: CARVEOUT_100K,
        barrier_slots_per_block: Some(1),
        virtual_resources_per_sm: 128,
        cubin_shared_includes_reserved: true,
    },
];

impl ArchParams {
    /// Warps an SM can hold (`maxThreadsPerMultiProcessor / warpSize`).
    pub(crate) fn max_warps_per_sm(&self) -> u32 {
        self.max_threads_per_sm / WARP_SIZE
    }

    /// The smallest carve-out that holds `bytes`, as `cudaOccAlignUpShmemSizeVoltaPlus` picks it;
    /// `None` when `bytes` is larger than every carve-out (the header's INVALID_INPUT).
    pub(crate) fn carveout_for(&self, bytes: u64) -> Option<u32> {
        self.carveouts
            .iter()
            .copied()
            .find(|&c| u64::from(c) >= bytes)
    }
}

/// A compute capability that has a row in [`TABLE`]. Only [`Arch::from_cc`] and parsing make
/// one, so every `Arch` has parameters. The `a`/`f` feature suffixes do not change occupancy and
/// are dropped: `sm_90a` is `sm_90`.
#[derive(Clone, Copy)]
pub struct Arch(&'static ArchParams);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArchError {
    #[error(
        "cannot read {0:?} as a GPU architecture (expected sm_XY, sm_XYa, sm_XYf, compute_XY or XY)"
    )]
    Syntax(String),
    #[error("no occupancy data for {name} (compute capability {major}.{minor}); known: {known}")]
    Unknown {
        name: String,
        major: u8,
        minor: u8,
        known: String,
    },
}

impl Arch {
    /// The row for compute capability `major.minor`.
    pub fn from_cc(major: u8, minor: u8) -> Result<Arch, ArchError> {
        TABLE
            .iter()
            .find(|p| p.cc == (major, minor))
            .map(Arch)
            .ok_or_else(|| ArchError::Unknown {
                name: format!("sm_{major}{minor}"),
                major,
                minor,
                known: Arch::all()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The row for sm_`sm` (`86` is 8.6); `None` without one. Callers outside `arch` ask
    /// [`super::Sm`], which looks up every table's row from the number.
    pub(super) fn from_sm(sm: u32) -> Option<Arch> {
        Arch::from_cc(u8::try_from(sm / 10).ok()?, (sm % 10) as u8).ok()
    }

    /// Every architecture with a row, oldest first.
    pub fn all() -> impl Iterator<Item = Arch> {
        TABLE.iter().map(Arch)
    }

    pub fn params(self) -> &'static ArchParams {
        self.0
    }

    pub fn major(self) -> u8 {
        self.0.cc.0
    }

    pub fn minor(self) -> u8 {
        self.0.cc.1
    }

    /// The SM number (`86` for 8.6), the key the handle `arch::Sm` is looked up by.
    pub fn sm_number(self) -> u32 {
        u32::from(self.major()) * 10 + u32::from(self.minor())
    }
}

impl PartialEq for Arch {
    fn eq(&self, other: &Self) -> bool {
        self.0.cc == other.0.cc
    }
}
impl Eq for Arch {}

impl std::hash::Hash for Arch {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.cc.hash(state);
    }
}

impl PartialOrd for Arch {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Arch {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cc.cmp(&other.0.cc)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major(), self.minor())
    }
}

impl fmt::Debug for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Arch {
    type Err = ArchError;

    /// Accepts what nvcc and ptxas spell: `sm_90`, `sm_90a`, `sm_100f`, `compute_90`, `lto_90`,
    /// and the bare number `90` (as in CMake's `CUDA_ARCHITECTURES`). The last digit is the
    /// minor version, the rest the major (`120` is 12.0).
    fn from_str(s: &str) -> Result<Arch, ArchError> {
        let syntax = || ArchError::Syntax(s.to_string());
        let body = ["sm_", "compute_", "lto_"]
            .iter()
            .find_map(|p| s.strip_prefix(p))
            .unwrap_or(s);
        let digits = body.strip_suffix(['a', 'f']).unwrap_or(body);
        if !(2..=3).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(syntax());
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        let major: u8 = major.parse().map_err(|_| syntax())?;
        let minor: u8 = minor.parse().map_err(|_| syntax())?;
        Arch::from_cc(major, minor).map_err(|e| match e {
            ArchError::Unknown {
                major,
                minor,
                known,
                ..
            } => ArchError::Unknown {
                name: s.to_string(),
                major,
                minor,
                known,
            },
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spelling() {
        for s in ["sm_90", "sm_90a", "compute_90", "lto_90", "90", "sm_90f"] {
            let a: Arch = s.parse().unwrap();
            assert_eq!((a.major(), a.minor()), (9, 0), "{s}");
        }
        assert_eq!("sm_100a".parse::<Arch>().unwrap().to_string(), "sm_100");
        assert_eq!("120".parse::<Arch>().unwrap().params().cc, (12, 0));
        assert_eq!("compute_75".parse::<Arch>().unwrap().params().cc, (7, 5));
    }

    #[test]
    fn rejects_bad_and_unknown() {
        for s in [
            "", "sm_", "sm_9", "sm_9000", "sm_90b", "gfx90a", "sm90", "sm_x0", "9.0",
        ] {
            assert!(
                matches!(s.parse::<Arch>(), Err(ArchError::Syntax(_))),
                "{s}"
            );
        }
        let e = "sm_88".parse::<Arch>().unwrap_err();
        assert!(matches!(
            e,
            ArchError::Unknown {
                major: 8,
                minor: 8,
                ..
            }
        ));
        let msg = e.to_string();
        assert!(
            msg.contains("sm_88") && msg.contains("sm_90") && msg.contains("sm_120"),
            "{msg}"
        );
        assert!(Arch::from_cc(7, 0).is_err());
    }

    /// The table's internal consistency, which the calculator relies on.
    #[test]
    fn table_is_consistent() {
        for (i, p) in TABLE.iter().enumerate() {
            let name = format!("sm_{}{}", p.cc.0, p.cc.1);
            assert!(
                TABLE[..i].iter().all(|q| q.cc < p.cc),
                "{name}: rows out of order"
            );
            assert_eq!(p.max_threads_per_sm % WARP_SIZE, 0, "{name}");
            assert!(p.carveouts.windows(2).all(|w| w[0] < w[1]), "{name}");
            // The largest carve-out is the SM's shared memory, so a default preference (all of
            // it) and any block the per-block limit admits always find a carve-out.
            assert_eq!(p.carveouts.last(), Some(&p.smem_per_sm), "{name}");
            assert!(
                p.smem_per_block_optin + p.reserved_smem_per_block <= p.smem_per_sm,
                "{name}"
            );
            assert!(p.smem_per_block <= p.smem_per_block_optin, "{name}");
            assert_eq!(
                p.regs_per_sm % (p.sub_partitions * p.reg_alloc_unit),
                0,
                "{name}"
            );
        }
    }
}
