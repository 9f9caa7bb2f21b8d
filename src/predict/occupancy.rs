//! Theoretical occupancy: how many blocks of a kernel one SM holds at once, and which resource
//! stops it holding more. This is `cudaOccMaxActiveBlocksPerMultiprocessor` from CUDA 13.5's
//! `cuda_occupancy.h`, rule for rule, so that a register budget chosen here is judged exactly as
//! NVIDIA's own calculator judges it (`tests/oracles/occupancy_oracle.rs` checks that on every point of a
//! large grid). Where this model and the header part ways it is said at the spot:
//! - more than 255 registers per thread cannot launch here (the header's bound is 256);
//! - the limiting factors are those whose own limit equals the result, whereas the header keeps
//!   the factors it found before it applied the barrier limit.
//!
//! Not modelled, because no architecture in the table has it: partitioned global caching
//! (cc 5.2, 5.3, 6.x). Not modelled by the header either: the kernel's own `maxThreadsPerBlock`
//! (`__launch_bounds__`; a launch above it fails, the header only checks it is positive), and
//! thread-block clusters.

use std::fmt;

use crate::arch::limits::{Arch, ArchParams, WARP_SIZE};

/// The most registers a thread can have (Guide, Table 27). ptxas never allocates more.
pub const MAX_REGS_PER_THREAD: u32 = 255;

/// A kernel's static shared memory, and where the number came from. The driver reserves
/// `reservedSharedMemPerBlock` (1 KB on sm_80 and later) in every block; the calculator adds it
/// once. On sm_90 and later a linked cubin already counts that kilobyte in the kernel's shared
/// size, so the two kinds of number differ by it there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedBytes {
    /// What the program declares: `ptxas -v` "N bytes smem", the sum of a kernel's `__shared__`
    /// variables, or the size in a relocatable (`-rdc`, ELF type `REL`) cubin, which has no
    /// reserved region yet. The header's `sharedSizeBytes`.
    User(u32),
    /// The per-kernel shared size of a linked (ELF type `EXEC`) cubin: `cuobjdump -res-usage`
    /// "SHARED:N", the size of its `.nv.shared.<kernel>` section. With ptxas 13.5 for sm_90,
    /// sm_100 and sm_120, every kernel of a module that uses shared memory anywhere (static or
    /// `extern`) gets the 1 KB `.nv.shared.reserved.0` region laid into that section: 4096
    /// declared bytes show as 5120, a kernel with none as 1024. After nvlink only kernels that
    /// use shared memory have it. Either way a non-zero size includes it and zero means the
    /// kernel has none. On sm_75–89 cubins carry no reserved region and this equals `User`.
    FromCubin(u32),
}

impl SharedBytes {
    /// The declared static size on `arch`: what `cuda_occupancy.h` takes as `sharedSizeBytes`,
    /// before it adds the reservation.
    pub(crate) fn declared(self, arch: Arch) -> Result<u32, OccupancyError> {
        let p = arch.params();
        match self {
            SharedBytes::User(n) => Ok(n),
            SharedBytes::FromCubin(0) => Ok(0),
            SharedBytes::FromCubin(n) if p.cubin_shared_includes_reserved => n
                .checked_sub(p.reserved_smem_per_block)
                .ok_or(OccupancyError::CubinSharedBelowReserved {
                    arch,
                    bytes: n,
                    reserved: p.reserved_smem_per_block,
                }),
            SharedBytes::FromCubin(n) => Ok(n),
        }
    }
}

/// What the compiled kernel needs per thread and per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelResources {
    /// Registers per thread as ptxas reports them (`REG:N`, "Used N registers"), unrounded.
    pub regs_per_thread: u32,
    pub static_shared: SharedBytes,
    /// Named barriers the kernel uses (`EIATTR_NUM_BARRIERS`, ptxas "used N barriers"); the
    /// header's `numBlockBarriers`. Limits blocks per SM on sm_90 and later only.
    pub barriers: u32,
    /// The header's `virtualResourceCount` (sm_100 and later have 128 per SM). The header does
    /// not say what they are and its `cudaFuncAttributes` conversion sets 0; leave it at 0
    /// unless a cubin attribute is found to carry it.
    pub virtual_resources: u32,
}

impl KernelResources {
    /// One barrier and no virtual resources: what the header's conversion from
    /// `cudaFuncAttributes` assumes, and what a kernel with `__syncthreads()` has.
    pub fn new(regs_per_thread: u32, static_shared: SharedBytes) -> Self {
        KernelResources {
            regs_per_thread,
            static_shared,
            barriers: 1,
            virtual_resources: 0,
        }
    }
}

/// How much dynamic shared memory the host let the kernel have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DynamicSharedLimit {
    /// No opt-in: static, dynamic and reserved together must fit `sharedMemPerBlock` (48 KB)
    /// plus the reservation. The header's `FUNC_SHMEM_LIMIT_DEFAULT`.
    Default,
    /// `cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n)`: a launch
    /// may ask for up to `n` dynamic bytes, and the per-block limit becomes
    /// `sharedMemPerBlockOptin` once static + reserved + `n` passes 48 KB. The header's
    /// `FUNC_SHMEM_LIMIT_OPTIN` with `maxDynamicSharedSizeBytes = n`.
    OptIn(u32),
}

/// The preferred split of the unified L1/shared array (`cudaFuncAttributePreferredSharedMemoryCarveout`).
/// The SM gets the smallest carve-out that holds the preference, or, when one block needs more
/// than that, the smallest that holds one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carveout {
    /// No preference: the header assumes all of the SM's shared memory.
    Default,
    /// A percentage (0–100) of the SM's shared memory. The legacy `cudaFuncCachePreferL1`,
    /// `PreferShared` and `PreferEqual` are 0, 100 and 50.
    Percent(u8),
}

/// The launch configuration the occupancy is computed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub threads_per_block: u32,
    /// Dynamic (`extern __shared__`) bytes, the third `<<<>>>` argument.
    pub dynamic_shared: u32,
    pub dynamic_shared_limit: DynamicSharedLimit,
    pub carveout: Carveout,
}

impl Launch {
    /// A launch with no dynamic shared memory, no opt-in and no carve-out preference.
    pub fn new(threads_per_block: u32) -> Self {
        Launch {
            threads_per_block,
            dynamic_shared: 0,
            dynamic_shared_limit: DynamicSharedLimit::Default,
            carveout: Carveout::Default,
        }
    }

    /// The same launch with `bytes` of dynamic shared memory, opted in to exactly that much
    /// when it is more than the default limit allows.
    pub(crate) fn with_dynamic_shared(mut self, bytes: u32) -> Self {
        self.dynamic_shared = bytes;
        if bytes > 0 {
            self.dynamic_shared_limit = DynamicSharedLimit::OptIn(bytes);
        }
        self
    }
}

/// A resource that can bound the number of resident blocks (the header's `cudaOccLimitingFactor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Limiter {
    /// Warp slots of the SM (`maxThreadsPerMultiProcessor`), or a block larger than allowed.
    Warps,
    /// The register file (or more registers per thread or per block than allowed).
    Registers,
    /// Shared memory of the chosen carve-out (or a block that needs more than allowed).
    SharedMemory,
    /// The SM's resident-block slots.
    Blocks,
    /// Block barriers (sm_90 and later).
    Barriers,
    /// The header's "virtual resources" (sm_100 and later).
    VirtualResources,
}

impl Limiter {
    pub const ALL: [Limiter; 6] = [
        Limiter::Warps,
        Limiter::Registers,
        Limiter::SharedMemory,
        Limiter::Blocks,
        Limiter::Barriers,
        Limiter::VirtualResources,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::Blocks => "blocks",
            Limiter::Barriers => "barriers",
            Limiter::VirtualResources => "virtual resources",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The set of resources that limit a launch. Ties are common (a block-size-limited launch is
/// often register-limited at the same count), so it is a set, not one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limiters(u8);

impl Limiters {
    pub fn contains(self, l: Limiter) -> bool {
        self.0 & l.bit() != 0
    }

    pub(crate) fn insert(&mut self, l: Limiter) {
        self.0 |= l.bit();
    }

    pub fn iter(self) -> impl Iterator<Item = Limiter> {
        Limiter::ALL.into_iter().filter(move |&l| self.contains(l))
    }
}

impl FromIterator<Limiter> for Limiters {
    fn from_iter<I: IntoIterator<Item = Limiter>>(iter: I) -> Self {
        let mut set = Limiters::default();
        for l in iter {
            set.insert(l);
        }
        set
    }
}

impl fmt::Display for Limiters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.iter().map(Limiter::name).collect();
        f.write_str(&names.join(" + "))
    }
}

/// Blocks per SM that each resource alone allows; `None` where it sets no limit (the header's
/// `INT_MAX`: no registers, no shared memory, no barriers, no virtual resources).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockLimits {
    pub(crate) warps: u32,
    pub registers: Option<u32>,
    pub(crate) shared_memory: Option<u32>,
    pub(crate) blocks: u32,
    pub barriers: Option<u32>,
    pub virtual_resources: Option<u32>,
}

impl BlockLimits {
    pub fn get(&self, l: Limiter) -> Option<u32> {
        match l {
            Limiter::Warps => Some(self.warps),
            Limiter::Registers => self.registers,
            Limiter::SharedMemory => self.shared_memory,
            Limiter::Blocks => Some(self.blocks),
            Limiter::Barriers => self.barriers,
            Limiter::VirtualResources => self.virtual_resources,
        }
    }
}

/// The result for one kernel, launch and architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occupancy {
    /// Resident blocks per SM; 0 when the launch cannot run at all.
    pub blocks_per_sm: u32,
    /// Resident warps per SM (blocks × warps per block).
    pub warps_per_sm: u32,
    /// The SM's warp slots, the denominator of [`Occupancy::fraction`].
    pub(crate) max_warps_per_sm: u32,
    /// Every resource whose own limit equals `blocks_per_sm`.
    pub limiters: Limiters,
    pub limits: BlockLimits,
    /// Registers given to one block (per-warp allocation × warps; the header's
    /// `allocatedRegistersPerBlock`).
    pub regs_per_block: u64,
    /// Shared memory given to one block: static + dynamic + reserved, rounded up to the
    /// allocation unit (the header's `allocatedSharedMemPerBlock`).
    pub shared_per_block: u64,
    /// The carve-out the SM runs with; `None` when not even one block fits.
    pub(crate) shared_per_sm: Option<u32>,
}

impl Occupancy {
    /// Theoretical occupancy: resident warps over warp slots, 0.0–1.0.
    pub(crate) fn fraction(&self) -> f64 {
        f64::from(self.warps_per_sm) / f64::from(self.max_warps_per_sm)
    }
}

impl fmt::Display for Occupancy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} blocks/SM, {}/{} warps ({:.0}%), limited by {}",
            self.blocks_per_sm,
            self.warps_per_sm,
            self.max_warps_per_sm,
            100.0 * self.fraction(),
            self.limiters
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OccupancyError {
    #[error("a block needs at least one thread")]
    NoThreads,
    #[error("shared-memory carve-out of {0}% is out of range (0 to 100)")]
    CarveoutOutOfRange(u8),
    #[error(
        "{bytes} bytes of shared memory from an {arch} cubin cannot include the {reserved} \
         reserved bytes such a cubin counts; for a relocatable (-rdc) cubin or a ptxas -v \
         figure use SharedBytes::User"
    )]
    CubinSharedBelowReserved {
        arch: Arch,
        bytes: u32,
        reserved: u32,
    },
    #[error("no {arch} shared-memory carve-out holds {bytes} bytes")]
    NoCarveout { arch: Arch, bytes: u64 },
}

/// Blocks of `k` launched as `launch` that one SM of `arch` holds, as
/// `cudaOccMaxActiveBlocksPerMultiprocessor` computes it with a default `cudaOccDeviceState`
/// (carve-out from `launch.carveout`).
pub fn occupancy(
    arch: Arch,
    k: &KernelResources,
    launch: &Launch,
) -> Result<Occupancy, OccupancyError> {
    let p = arch.params();
    if launch.threads_per_block == 0 {
        return Err(OccupancyError::NoThreads);
    }
    let warps_per_block = launch.threads_per_block.div_ceil(WARP_SIZE);
    let regs = register_limit(p, k.regs_per_thread, warps_per_block);
    let shared = shared_limit(arch, k.static_shared, launch)?;
    let limits = BlockLimits {
        warps: warp_limit(p, launch.threads_per_block, warps_per_block),
        registers: regs.blocks,
        shared_memory: shared.blocks,
        blocks: p.max_blocks_per_sm,
        // The header counts barrier slots from the SM's block slots, whatever else limits.
        barriers: p
            .barrier_slots_per_block
            .filter(|_| k.barriers > 0)
            .map(|slots| p.max_blocks_per_sm * slots / k.barriers),
        virtual_resources: (p.virtual_resources_per_sm > 0 && k.virtual_resources > 0)
            .then(|| p.virtual_resources_per_sm / k.virtual_resources),
    };
    let blocks_per_sm = Limiter::ALL
        .iter()
        .filter_map(|&l| limits.get(l))
        .min()
        .unwrap_or(0);
    let limiters = Limiter::ALL
        .into_iter()
        .filter(|&l| limits.get(l) == Some(blocks_per_sm))
        .collect();
    Ok(Occupancy {
        blocks_per_sm,
        warps_per_sm: blocks_per_sm * warps_per_block,
        max_warps_per_sm: p.max_warps_per_sm(),
        limiters,
        limits,
        regs_per_block: regs.per_block,
        shared_per_block: shared.per_block,
        shared_per_sm: shared.per_sm,
    })
}

/// The register budgets worth compiling `k` at: for each distinct number of resident blocks,
/// the largest register count per thread that still reaches it, with its occupancy, from the
/// fewest blocks (most registers) to the most. A budget between two entries gives the kernel
/// fewer registers for no gain, so a tuner tries exactly these.
///
/// `k.regs_per_thread` is the ceiling, since a budget above what a kernel uses changes nothing
/// and a user's `-maxrregcount` must never be exceeded: the list starts at the ceiling's own
/// level. Pass [`MAX_REGS_PER_THREAD`] for the list from 255 down. Budgets at which the launch
/// cannot run (0 blocks) are left out, so an empty list means no budget makes it launch.
pub fn register_cliffs(
    arch: Arch,
    k: &KernelResources,
    launch: &Launch,
) -> Result<Vec<(u32, Occupancy)>, OccupancyError> {
    let ceiling = k.regs_per_thread.min(MAX_REGS_PER_THREAD);
    let mut cliffs: Vec<(u32, Occupancy)> = Vec::new();
    // Fewer registers never lower occupancy, so walking down, each rise is a new level.
    for regs in (1..=ceiling).rev() {
        let budget = KernelResources {
            regs_per_thread: regs,
            ..*k
        };
        let occ = occupancy(arch, &budget, launch)?;
        let best = cliffs.last().map_or(0, |(_, o)| o.blocks_per_sm);
        if occ.blocks_per_sm > best {
            cliffs.push((regs, occ));
        }
    }
    Ok(cliffs)
}

/// `cudaOccMaxBlocksPerSMWarpsLimit` (partitioned global caching off).
fn warp_limit(p: &ArchParams, threads_per_block: u32, warps_per_block: u32) -> u32 {
    if threads_per_block > p.max_threads_per_block {
        0
    } else {
        p.max_warps_per_sm() / warps_per_block
    }
}

struct RegisterLimit {
    blocks: Option<u32>,
    per_block: u64,
}

/// `cudaOccMaxBlocksPerSMRegsLimit`: registers go to warps in units of `reg_alloc_unit`; each
/// sub-partition holds as many whole warps as its quarter of the register file allows.
fn register_limit(p: &ArchParams, regs_per_thread: u32, warps_per_block: u32) -> RegisterLimit {
    let per_warp = (u64::from(regs_per_thread) * u64::from(WARP_SIZE))
        .next_multiple_of(u64::from(p.reg_alloc_unit));
    let per_block = per_warp * u64::from(warps_per_block);
    // The hardware's per-block check assumes the block's warps are spread over every
    // sub-partition at once, so it rounds the warp count up to a multiple of them. While
    // `regs_per_block == regs_per_sm` (every row so far) a block failing it also fails to fit
    // the SM below, so it only decides the answer on a part with a smaller per-block file.
    let assumed = per_warp * u64::from(warps_per_block.next_multiple_of(p.sub_partitions));
    let blocks = if assumed > u64::from(p.regs_per_block)
        || per_block > u64::from(p.regs_per_block)
        // The header lets 256 through here (`cudaOccRegAllocationMaxPerThread`); no SASS
        // can name a 256th register, so such a kernel cannot exist, let alone launch.
        || regs_per_thread > p.max_regs_per_thread
    {
        Some(0)
    } else {
        // A kernel with no registers has no register limit (`None`, the header's INT_MAX).
        u64::from(p.regs_per_sm / p.sub_partitions)
            .checked_div(per_warp)
            // At most 64 K registers / 256 per warp per SM: the product fits.
            .map(|per_sub| (per_sub * u64::from(p.sub_partitions)) as u32 / warps_per_block)
    };
    RegisterLimit { blocks, per_block }
}

struct SharedLimit {
    blocks: Option<u32>,
    per_block: u64,
    per_sm: Option<u32>,
}

/// `cudaOccMaxBlocksPerSMSmemLimit`, with the carve-out choice of
/// `cudaOccSMemPreferenceVoltaPlus` and the per-block limit of `cudaOccSMemPerBlock`.
fn shared_limit(
    arch: Arch,
    shared: SharedBytes,
    launch: &Launch,
) -> Result<SharedLimit, OccupancyError> {
    let p = arch.params();
    let preference = carveout_preference(arch, launch.carveout)?;
    let reserved = u64::from(p.reserved_smem_per_block);
    let static_bytes = u64::from(shared.declared(arch)?) + reserved;
    let dynamic = u64::from(launch.dynamic_shared);
    let per_block = (static_bytes + dynamic).next_multiple_of(u64::from(p.smem_alloc_unit));

    let (dynamic_exceeded, base_limit) = match launch.dynamic_shared_limit {
        DynamicSharedLimit::Default => (false, p.smem_per_block),
        // The header compares static + reserved + the opt-in maximum with 48 KB, which itself
        // excludes the reservation, so an opt-in to exactly 48 KB - static already switches to
        // the opt-in limit. Kept as written, though it cannot change the answer: the dynamic
        // size is at most the maximum, so such a block fits the default limit anyway.
        DynamicSharedLimit::OptIn(max) => {
            let usage = static_bytes + u64::from(max);
            let limit = if usage > u64::from(p.smem_per_block) {
                p.smem_per_block_optin
            } else {
                p.smem_per_block
            };
            (dynamic > u64::from(max), limit)
        }
    };
    // The header adds the reservation to the per-block limit from sm_80 on; before that the
    // table's reservation is 0, so adding it always is the same rule.
    let block_limit = u64::from(base_limit) + reserved;
    if dynamic_exceeded || per_block > block_limit {
        return Ok(SharedLimit {
            blocks: Some(0),
            per_block,
            per_sm: None,
        });
    }
    // The preference stands when one block fits in it; otherwise the SM takes the smallest
    // carve-out that holds one block.
    let per_sm = if u64::from(preference) >= per_block {
        preference
    } else {
        p.carveout_for(per_block)
            .ok_or(OccupancyError::NoCarveout {
                arch,
                bytes: per_block,
            })?
    };
    Ok(SharedLimit {
        // Shared memory per SM / per block is at most 228 K / 128: it fits.
        blocks: (per_block > 0).then(|| (u64::from(per_sm) / per_block) as u32),
        per_block,
        per_sm: Some(per_sm),
    })
}

/// `cudaOccSMemPreferenceVoltaPlus`: the preferred carve-out, rounded up to one that exists.
fn carveout_preference(arch: Arch, carveout: Carveout) -> Result<u32, OccupancyError> {
    let p = arch.params();
    let bytes = match carveout {
        Carveout::Default => u64::from(p.smem_per_sm),
        Carveout::Percent(pct) if pct > 100 => return Err(OccupancyError::CarveoutOutOfRange(pct)),
        Carveout::Percent(pct) => u64::from(pct) * u64::from(p.smem_per_sm) / 100,
    };
    p.carveout_for(bytes)
        .ok_or(OccupancyError::NoCarveout { arch, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch(s: &str) -> Arch {
        s.parse().unwrap()
    }

    fn occ(a: &str, regs: u32, shared: SharedBytes, launch: Launch) -> Occupancy {
        occupancy(arch(a), &KernelResources::new(regs, shared), &launch).unwrap()
    }

    fn levels(cliffs: &[(u32, Occupancy)]) -> Vec<(u32, u32)> {
        cliffs.iter().map(|(r, o)| (*r, o.blocks_per_sm)).collect()
    }

    /// `cuda_occupancy.h`'s allocation rules: at 256 threads (8 warps) on sm_90, registers
    /// allow 64, 48, 40, 36, 32, 28, 24, 20, 16, 12 or 8 warps; whole blocks of 8 warps make
    /// these the levels.
    #[test]
    fn sm90_256_threads_cliffs() {
        let k = KernelResources::new(MAX_REGS_PER_THREAD, SharedBytes::User(0));
        let cliffs = register_cliffs(arch("sm_90"), &k, &Launch::new(256)).unwrap();
        assert_eq!(
            levels(&cliffs),
            [
                (255, 1),
                (128, 2),
                (80, 3),
                (64, 4),
                (48, 5),
                (40, 6),
                (32, 8)
            ]
        );
        let (_, full) = cliffs.last().unwrap();
        assert_eq!(full.warps_per_sm, 64);
        assert_eq!(full.fraction(), 1.0);
        assert!(
            full.limiters.contains(Limiter::Warps) && full.limiters.contains(Limiter::Registers)
        );
        // 36 warps' worth of registers at 56 still holds only 4 blocks, as at 64.
        assert_eq!(
            occ("sm_90", 56, SharedBytes::User(0), Launch::new(256)).blocks_per_sm,
            4
        );
        for (regs, o) in &cliffs[..cliffs.len() - 1] {
            assert_eq!(
                o.limiters.iter().collect::<Vec<_>>(),
                [Limiter::Registers],
                "{regs}"
            );
        }
    }

    /// A 48-warp SM (sm_86) caps the register levels at 6 blocks of 8 warps.
    #[test]
    fn sm86_256_threads_cliffs() {
        let k = KernelResources::new(MAX_REGS_PER_THREAD, SharedBytes::User(0));
        let cliffs = register_cliffs(arch("sm_86"), &k, &Launch::new(256)).unwrap();
        assert_eq!(
            levels(&cliffs),
            [(255, 1), (128, 2), (80, 3), (64, 4), (48, 5), (40, 6)]
        );
    }

    /// 1024 threads on sm_75: above 64 registers a block needs more than 64 K registers and
    /// cannot launch; those budgets are not listed.
    #[test]
    fn cliffs_skip_budgets_that_cannot_launch() {
        let k = KernelResources::new(MAX_REGS_PER_THREAD, SharedBytes::User(0));
        let cliffs = register_cliffs(arch("sm_75"), &k, &Launch::new(1024)).unwrap();
        assert_eq!(levels(&cliffs), [(64, 1)]);
        let too_many = occ("sm_75", 65, SharedBytes::User(0), Launch::new(1024));
        assert_eq!(too_many.blocks_per_sm, 0);
        assert_eq!(
            too_many.limiters.iter().collect::<Vec<_>>(),
            [Limiter::Registers]
        );
    }

    /// The kernel's register count caps the list, and shared memory can flatten it.
    #[test]
    fn cliffs_respect_ceiling_and_shared_memory() {
        let launch = Launch::new(256);
        let k = KernelResources::new(70, SharedBytes::User(0));
        assert_eq!(
            levels(&register_cliffs(arch("sm_90"), &k, &launch).unwrap()),
            [(70, 3), (64, 4), (48, 5), (40, 6), (32, 8)]
        );
        // 40 KB + 1 KB reserved per block: 228 KB holds 5 blocks, so nothing beyond 48 regs.
        let k = KernelResources::new(255, SharedBytes::User(40 * 1024));
        let cliffs = register_cliffs(arch("sm_90"), &k, &launch).unwrap();
        assert_eq!(
            levels(&cliffs),
            [(255, 1), (128, 2), (80, 3), (64, 4), (48, 5)]
        );
        let (_, last) = cliffs.last().unwrap();
        assert!(last.limiters.contains(Limiter::SharedMemory));
        assert!(
            register_cliffs(
                arch("sm_90"),
                &KernelResources::new(0, SharedBytes::User(0)),
                &launch
            )
            .unwrap()
            .is_empty()
        );
    }

    /// ptxas -v says 4096 bytes, a linked sm_90 cubin says 5120: the same kernel, so the same
    /// occupancy, with the reserved kilobyte counted once.
    #[test]
    fn reserved_kilobyte_counted_once() {
        let launch = Launch::new(128);
        let user = occ("sm_90", 32, SharedBytes::User(4096), launch);
        let cubin = occ("sm_90", 32, SharedBytes::FromCubin(5120), launch);
        assert_eq!(user, cubin);
        assert_eq!(user.shared_per_block, 5120);
        // 228 KB / 5 KB = 45, above the 32-block cap: not shared-memory limited.
        assert_eq!(user.limits.shared_memory, Some(45));

        // A kernel with no shared memory in a module with some: the cubin says 1024.
        let none = occ("sm_90", 32, SharedBytes::User(0), launch);
        assert_eq!(none, occ("sm_90", 32, SharedBytes::FromCubin(1024), launch));
        assert_eq!(none, occ("sm_90", 32, SharedBytes::FromCubin(0), launch));
        assert_eq!(none.shared_per_block, 1024);

        // Before sm_90 the cubin's number is the declared one, and the driver adds 1 KB.
        for a in ["sm_80", "sm_86", "sm_89"] {
            let c = occ(a, 32, SharedBytes::FromCubin(4096), launch);
            assert_eq!(c, occ(a, 32, SharedBytes::User(4096), launch), "{a}");
            assert_eq!(c.shared_per_block, 5120, "{a}");
        }
        // Turing reserves nothing and allocates in 256-byte units.
        assert_eq!(
            occ("sm_75", 32, SharedBytes::FromCubin(4000), launch).shared_per_block,
            4096
        );

        // Counting twice would make the difference between 9 and 8 blocks here: 24 KB
        // declared, 25 KB per block in all, 228 KB per SM.
        let k = SharedBytes::FromCubin(25 * 1024);
        assert_eq!(occ("sm_90", 32, k, Launch::new(64)).blocks_per_sm, 9);

        let e = SharedBytes::FromCubin(512)
            .declared(arch("sm_100"))
            .unwrap_err();
        assert!(matches!(
            e,
            OccupancyError::CubinSharedBelowReserved {
                bytes: 512,
                reserved: 1024,
                ..
            }
        ));
        assert_eq!(SharedBytes::FromCubin(512).declared(arch("sm_89")), Ok(512));
    }

    #[test]
    fn shared_memory_limits_and_carveouts() {
        // 48 KB declared + 1 KB reserved is within the default 48 KB + 1 KB block limit.
        let o = occ("sm_86", 32, SharedBytes::User(48 * 1024), Launch::new(128));
        assert_eq!((o.blocks_per_sm, o.shared_per_sm), (2, Some(100 * 1024)));
        assert!(o.limiters.contains(Limiter::SharedMemory));
        // One byte more needs the opt-in.
        // With it, the per-block limit is 99 KB + 1 KB and two 49 KB blocks still fit.
        let o = occ(
            "sm_86",
            32,
            SharedBytes::User(48 * 1024),
            Launch::new(128).with_dynamic_shared(1),
        );
        assert_eq!((o.blocks_per_sm, o.shared_per_block), (2, 50304));
        let mut l = Launch::new(128);
        l.dynamic_shared = 1;
        let o = occ("sm_86", 32, SharedBytes::User(48 * 1024), l);
        assert_eq!((o.blocks_per_sm, o.shared_per_sm), (0, None));
        // Opt-in to the maximum: 99 KB + 1 KB is all of sm_86's 100 KB.
        let o = occ(
            "sm_86",
            32,
            SharedBytes::User(0),
            Launch::new(128).with_dynamic_shared(99 * 1024),
        );
        assert_eq!(o.blocks_per_sm, 1);
        let o = occ(
            "sm_86",
            32,
            SharedBytes::User(1),
            Launch::new(128).with_dynamic_shared(99 * 1024),
        );
        assert_eq!(o.blocks_per_sm, 0);

        // A 25% preference on sm_90 is 57 KB, rounded up to the 64 KB carve-out.
        let mut l = Launch::new(64);
        l.carveout = Carveout::Percent(25);
        let o = occ("sm_90", 32, SharedBytes::User(7 * 1024), l);
        assert_eq!((o.shared_per_sm, o.blocks_per_sm), (Some(64 * 1024), 8));
        // L1-preferred: no shared memory is preferred, so the SM takes the smallest carve-out
        // holding one block: 8 KB for 1 KB reserved + 4 KB.
        l.carveout = Carveout::Percent(0);
        let o = occ("sm_90", 32, SharedBytes::User(4096), l);
        assert_eq!((o.shared_per_sm, o.blocks_per_sm), (Some(8 * 1024), 1));
        l.carveout = Carveout::Percent(101);
        let k = KernelResources::new(32, SharedBytes::User(0));
        assert_eq!(
            occupancy(arch("sm_90"), &k, &l),
            Err(OccupancyError::CarveoutOutOfRange(101))
        );
        // Turing has no carve-out below 32 KB.
        let mut l = Launch::new(64);
        l.carveout = Carveout::Percent(0);
        assert_eq!(
            occ("sm_75", 32, SharedBytes::User(0), l).shared_per_sm,
            Some(32 * 1024)
        );
    }

    #[test]
    fn block_size_and_barrier_limits() {
        let o = occ("sm_90", 32, SharedBytes::User(0), Launch::new(1025));
        assert_eq!(o.blocks_per_sm, 0);
        assert!(o.limiters.contains(Limiter::Warps));
        assert_eq!(
            occupancy(
                arch("sm_90"),
                &KernelResources::new(32, SharedBytes::User(0)),
                &Launch::new(0)
            ),
            Err(OccupancyError::NoThreads)
        );
        // 16 named barriers on sm_90: 32 block slots × 2 barriers / 16 = 4 blocks.
        let mut k = KernelResources::new(32, SharedBytes::User(0));
        k.barriers = 16;
        let o = occupancy(arch("sm_90"), &k, &Launch::new(32)).unwrap();
        assert_eq!(o.blocks_per_sm, 4);
        assert_eq!(o.limiters.iter().collect::<Vec<_>>(), [Limiter::Barriers]);
        // The header applies no barrier limit before sm_90.
        let o = occupancy(arch("sm_89"), &k, &Launch::new(32)).unwrap();
        assert_eq!((o.blocks_per_sm, o.limits.barriers), (24, None));
        // sm_120 has one barrier slot per block slot, so a blocks-limited launch ties with it.
        let o = occ("sm_120", 16, SharedBytes::User(0), Launch::new(32));
        assert_eq!(o.blocks_per_sm, 24);
        assert_eq!(
            o.to_string(),
            "24 blocks/SM, 24/48 warps (50%), limited by blocks + barriers"
        );
    }

    #[test]
    fn register_allocation_rules() {
        // 14 registers round up to 16 per thread (512 per warp).
        let o = occ("sm_80", 14, SharedBytes::User(0), Launch::new(96));
        assert_eq!(o.regs_per_block, 3 * 512);
        // 3 warps per block at 128 registers: 4 warps per sub-partition, 16 per SM, so 5
        // blocks (15 warps); the per-block hardware check sees 4 warps × 4096 = 16 K.
        assert_eq!(
            occ("sm_80", 128, SharedBytes::User(0), Launch::new(96))
                .limits
                .registers,
            Some(5)
        );
        // No registers: no register limit.
        assert_eq!(
            occ("sm_80", 0, SharedBytes::User(0), Launch::new(96))
                .limits
                .registers,
            None
        );
        // 256 registers cannot exist.
        let o = occ("sm_90", 256, SharedBytes::User(0), Launch::new(32));
        assert_eq!((o.blocks_per_sm, o.limits.registers), (0, Some(0)));
        // 255 registers × 8 warps = exactly 64 K: fits; 9 warps (round up to 12) does not.
        assert_eq!(
            occ("sm_90", 255, SharedBytes::User(0), Launch::new(256)).blocks_per_sm,
            1
        );
        assert_eq!(
            occ("sm_90", 255, SharedBytes::User(0), Launch::new(257)).blocks_per_sm,
            0
        );
    }
}
