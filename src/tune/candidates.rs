//! Which register budgets to compile a kernel at: the occupancy cliffs below the budget ptxas
//! chose by itself (docs/papers.md §Orion, its §3.3), for the block size the kernel will run with.

use super::ptx::Budget;
use crate::arch::memory::MemoryParams;
use crate::cubin::FunctionInfo;
use crate::predict::memory::l1_left;
use crate::predict::{
    Arch, KernelResources, Launch, Residency, SharedBytes, occupancy, register_cliffs,
};

/// Block sizes assumed when neither the cubin nor the settings say; the worst case among them
/// decides (a budget must pay off at each).
pub const DEFAULT_BLOCKS: [u32; 3] = [128, 256, 512];

/// Budgets tried per kernel besides the baseline (so at most five variants per kernel); when
/// shared-memory spilling is tried, it takes the last place.
pub const MAX_CANDIDATES: usize = 4;

/// ptxas does not go below this many registers per thread in practice; budgets under it only
/// spill.
pub const MIN_BUDGET: u32 = 16;

/// Where the block size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockFrom {
    /// `.reqntid` (`EIATTR_REQNTID`): the only size the kernel launches with.
    Reqntid,
    /// `__launch_bounds__` (`EIATTR_MAX_THREADS`): its largest block.
    LaunchBounds,
    /// `--orion-block-size` / `NVCC_ORION_BLOCK_SIZE`.
    Setting,
    /// Nothing said: [`DEFAULT_BLOCKS`].
    Assumed,
}

/// Shared memory a kernel sizes at launch (`.extern .shared`, `extern __shared__`), which
/// ptxas never sees: how much the caller said it launches with
/// (`NVCC_ORION_DYNAMIC_SHARED`), or unknown. In the report: the bytes, or `"unknown"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DynamicShared {
    Given(u32),
    Unknown,
}

/// What a kernel is tuned for and with.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelPlan {
    pub(crate) name: String,
    pub(crate) baseline_regs: u32,
    /// ptxas's own local frame per thread (bytes).
    pub(crate) baseline_frame: u32,
    pub(crate) static_shared: u64,
    /// Block sizes the occupancy is computed for (one unless assumed).
    pub(crate) blocks: Vec<u32>,
    pub(crate) block_from: BlockFrom,
    /// Budgets to try, highest first, each below `baseline_regs`; the shared-memory spilling
    /// one (if any) last.
    pub(crate) budgets: Vec<Budget>,
    /// Its shared memory sized at launch, when it has any: given bytes are priced as part of
    /// every launch; unknown ones are not priced (the plan holds such a kernel's budget).
    pub(crate) dynamic_shared: Option<DynamicShared>,
}

impl KernelPlan {
    /// The kernel's resources at `regs` registers per thread.
    pub fn resources(&self, regs: u32, relocatable: bool) -> KernelResources {
        let shared = u32::try_from(self.static_shared).unwrap_or(u32::MAX);
        KernelResources::new(
            regs,
            if relocatable {
                SharedBytes::User(shared)
            } else {
                SharedBytes::FromCubin(shared)
            },
        )
    }

    /// A launch of `threads` per block, with the dynamic shared memory the caller gave.
    fn launch(&self, threads: u32) -> Launch {
        match self.dynamic_shared {
            Some(DynamicShared::Given(bytes)) => Launch::new(threads).with_dynamic_shared(bytes),
            _ => Launch::new(threads),
        }
    }

    /// Resident warps per SM at `regs`, for each block size (0 when it cannot launch).
    #[cfg(test)]
    pub fn warps(&self, arch: Arch, regs: u32, relocatable: bool) -> Vec<u32> {
        self.blocks
            .iter()
            .map(|&t| {
                occupancy(arch, &self.resources(regs, relocatable), &self.launch(t))
                    .map_or(0, |o| o.warps_per_sm)
            })
            .collect()
    }

    /// What a variant at `regs` registers with `static_shared` bytes of shared memory and a
    /// `frame_bytes` frame has of an SM (memory `m`), for each block size: its warps (0 when it
    /// cannot launch), its frame, and the L1 its resident blocks' shared memory leaves.
    pub fn residencies(
        &self,
        arch: Arch,
        m: &MemoryParams,
        regs: u32,
        static_shared: u64,
        frame_bytes: u32,
        relocatable: bool,
    ) -> Vec<Residency> {
        let k = KernelPlan {
            static_shared,
            ..self.clone()
        }
        .resources(regs, relocatable);
        self.blocks
            .iter()
            .map(|&t| {
                let o = occupancy(arch, &k, &self.launch(t)).ok();
                Residency {
                    warps_per_sm: o.map_or(0, |o| o.warps_per_sm),
                    frame_bytes,
                    l1_bytes: o.map_or(0, |o| l1_left(arch, m, &o)),
                }
            })
            .collect()
    }
}

/// The block sizes for kernel `f`: its own declaration, then the settings
/// ([`crate::settings::block_size_for`]), else the defaults.
pub fn block_sizes(f: &FunctionInfo, settings: &[(Option<String>, u32)]) -> (Vec<u32>, BlockFrom) {
    let product = |d: [u32; 3]| d.iter().try_fold(1u32, |a, &x| a.checked_mul(x.max(1)));
    if let Some(t) = f.reqntid.and_then(product) {
        return (vec![t], BlockFrom::Reqntid);
    }
    if let Some(t) = f.max_threads.and_then(product) {
        return (vec![t], BlockFrom::LaunchBounds);
    }
    if let Some(n) = crate::settings::block_size_for(settings, &f.name) {
        return (vec![n], BlockFrom::Setting);
    }
    (DEFAULT_BLOCKS.to_vec(), BlockFrom::Assumed)
}

/// The plan for kernel `f` of a cubin for `arch`, or `None` when its register count is
/// unknown. With `smem_spilling`, the lowest register budget is also tried with ptxas's
/// shared-memory spilling (never for relocatable code, which ptxas refuses).
pub fn plan(
    arch: Arch,
    f: &FunctionInfo,
    relocatable: bool,
    settings: &[(Option<String>, u32)],
    smem_spilling: bool,
    dynamic_shared: Option<DynamicShared>,
) -> Option<KernelPlan> {
    let baseline_regs = f.registers?;
    let (blocks, block_from) = block_sizes(f, settings);
    let mut p = KernelPlan {
        name: f.name.clone(),
        baseline_regs,
        baseline_frame: f.frame_size.unwrap_or(0),
        static_shared: f.static_shared,
        blocks,
        block_from,
        budgets: Vec::new(),
        dynamic_shared,
    };
    let k = p.resources(baseline_regs, relocatable);
    let mut budgets: Vec<u32> = p
        .blocks
        .iter()
        .filter_map(|&t| register_cliffs(arch, &k, &p.launch(t)).ok())
        .flatten()
        .map(|(regs, _)| regs)
        .filter(|&r| r < baseline_regs && r >= MIN_BUDGET)
        .collect();
    budgets.sort_unstable_by(|a, b| b.cmp(a));
    budgets.dedup();
    let spill = smem_spilling && !relocatable && !budgets.is_empty();
    let budgets = spread(&budgets, MAX_CANDIDATES - usize::from(spill));
    p.budgets = budgets.iter().map(|&r| Budget::regs(r)).collect();
    if spill && let Some(&lowest) = budgets.last() {
        p.budgets.push(Budget {
            smem_spill: true,
            ..Budget::regs(lowest)
        });
    }
    Some(p)
}

/// At most `n` of `cliffs` (highest first), evenly spread and always keeping both ends: the
/// nearest cliff (fewest spills) and the one with the most warps.
fn spread(cliffs: &[u32], n: usize) -> Vec<u32> {
    if cliffs.len() <= n || n < 2 {
        return cliffs
            .iter()
            .copied()
            .take(n.max(1).min(cliffs.len()))
            .collect();
    }
    let last = cliffs.len() - 1;
    let mut picked: Vec<u32> = (0..n)
        .map(|i| cliffs[(i * last + (n - 1) / 2) / (n - 1)])
        .collect();
    picked.dedup();
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(regs: u32, shared: u64) -> FunctionInfo {
        FunctionInfo {
            name: "k".into(),
            is_kernel: true,
            registers: Some(regs),
            static_shared: shared,
            ..FunctionInfo::default()
        }
    }

    #[test]
    fn budgets_are_the_cliffs_below_the_baseline() {
        let sm86 = Arch::from_cc(8, 6).unwrap();
        let mut f = kernel(96, 0);
        f.max_threads = Some([256, 1, 1]);
        let p = plan(sm86, &f, false, &[], false, None).unwrap();
        assert_eq!(
            (p.blocks.clone(), p.block_from),
            (vec![256], BlockFrom::LaunchBounds)
        );
        // sm_86: 64K registers, 1536 threads. At 256 threads: 96 regs → 2 blocks, 80 → 3,
        // 64 → 4, 48 → 5, 40 → 6 (the thread limit).
        let regs: Vec<u32> = p.budgets.iter().map(|b| b.regs).collect();
        assert_eq!(regs, vec![80, 64, 48, 40]);
        // Each budget really raises occupancy.
        let w: Vec<u32> = std::iter::once(96)
            .chain(regs.iter().copied())
            .map(|r| p.warps(sm86, r, false)[0])
            .collect();
        assert!(w.windows(2).all(|x| x[0] < x[1]), "{w:?}");
        // With shared-memory spilling: three register budgets, then the spilling one at the
        // lowest of them; never for relocatable code.
        let s = plan(sm86, &f, false, &[], true, None).unwrap();
        let got: Vec<String> = s.budgets.iter().map(|b| b.to_string()).collect();
        assert_eq!(got, ["80", "48", "40", "40+smem"]);
        let rel = plan(sm86, &f, true, &[], true, None).unwrap();
        assert!(rel.budgets.iter().all(|b| !b.smem_spill));
    }

    #[test]
    fn spread_keeps_both_ends() {
        assert_eq!(spread(&[80, 72, 64, 56, 48], 3), vec![80, 64, 48]);
        assert_eq!(spread(&[80, 72, 64, 56, 48, 40], 4), vec![80, 64, 56, 40]);
        assert_eq!(spread(&[80, 72], 3), vec![80, 72]);
        assert_eq!(spread(&[80, 72, 64], 1), vec![80]);
        assert_eq!(spread(&[], 3), Vec::<u32>::new());
    }

    #[test]
    fn block_size_sources_in_order() {
        let mut f = kernel(64, 0);
        let s = vec![
            (None, 128),
            (Some("k".to_string()), 64),
            (Some("other".to_string()), 32),
        ];
        assert_eq!(block_sizes(&f, &s), (vec![64], BlockFrom::Setting));
        assert_eq!(block_sizes(&f, &s[..1]), (vec![128], BlockFrom::Setting));
        assert_eq!(
            block_sizes(&f, &[]),
            (DEFAULT_BLOCKS.to_vec(), BlockFrom::Assumed)
        );
        f.max_threads = Some([16, 16, 1]);
        assert_eq!(block_sizes(&f, &s), (vec![256], BlockFrom::LaunchBounds));
        f.reqntid = Some([32, 4, 1]);
        assert_eq!(block_sizes(&f, &s), (vec![128], BlockFrom::Reqntid));
    }

    #[test]
    fn nothing_to_gain_means_no_budgets() {
        let sm90 = Arch::from_cc(9, 0).unwrap();
        // 32 registers at 256 threads is already full occupancy.
        let mut f = kernel(32, 0);
        f.max_threads = Some([256, 1, 1]);
        assert!(
            plan(sm90, &f, false, &[], true, None)
                .unwrap()
                .budgets
                .is_empty()
        );
        f.registers = None;
        assert!(plan(sm90, &f, false, &[], true, None).is_none());
    }

    /// Dynamic shared memory the caller gave is priced: the sm_90 matmul (128
    /// threads, 40 KiB at launch) fits 5 blocks, 20 warps, not the 32 its registers allow,
    /// and no lower budget can add a warp.
    #[test]
    fn given_dynamic_shared_limits_the_warps() {
        let sm90 = Arch::from_cc(9, 0).unwrap();
        // sm_90's cubins count the 1 KB reserved region in a kernel that uses shared memory.
        let mut f = kernel(64, 1024);
        f.reqntid = Some([128, 1, 1]);
        let free = plan(sm90, &f, false, &[], false, None).unwrap();
        assert_eq!(free.warps(sm90, 64, false), [32]);
        let given = plan(
            sm90,
            &f,
            false,
            &[],
            false,
            Some(DynamicShared::Given(40 * 1024)),
        )
        .unwrap();
        assert_eq!(given.warps(sm90, 64, false), [20]);
        assert!(given.budgets.is_empty(), "{:?}", given.budgets);
        let mut heavy = kernel(128, 1024);
        heavy.reqntid = Some([128, 1, 1]);
        assert!(
            !plan(sm90, &heavy, false, &[], false, None)
                .unwrap()
                .budgets
                .is_empty()
        );
    }
}
