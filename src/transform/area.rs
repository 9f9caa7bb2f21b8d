//! The per-thread spill area in shared memory, shared by every transform that keeps values
//! there (spill2smem, regdem): its sizing and placement (docs/DESIGN.md §Spill
//! area placement; RegDem's equation 1, docs/papers.md §RegDem). Slot `s` of the thread with linear index `t` is
//! at `area + s × stride + 4t`, `stride` = threads per block × 4 (slot-major: a warp's access
//! to one slot touches 32 consecutive words, one per bank); the area lies after the kernel's
//! static and dynamic shared memory and the static section grows by `slots × stride`.
//! Also the options both rewrites take ([`Options`]: the block size the slots are laid out
//! for and where it came from, the register bound) and the summary's note on the base proof.

use super::stack::Mode;
use super::{TransformError, not_applicable};
use crate::cubin::Cubin;

/// Static shared memory a kernel may declare without the opt-in launch attribute (48 KiB):
/// the spill area is static, so it must fit under this with the kernel's own.
pub const STATIC_SHARED_LIMIT: u64 = 48 * 1024;

/// Where the threads-per-block figure used for sizing came from (the report says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThreadsSource {
    /// `__launch_bounds__` / `.reqntid` (`EIATTR_REQNTID`).
    Reqntid,
    /// `__launch_bounds__` / `.maxntid` (`EIATTR_MAX_THREADS`).
    MaxThreads,
    /// `--orion-block-size`.
    Setting,
    /// Nothing declared: the largest block, 1024 threads.
    Assumed,
}

/// Options of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Threads per block the slots are laid out for (an upper bound on every launch).
    pub threads: u32,
    pub source: ThreadsSource,
    /// The block is known to be one-dimensional (`.reqntid` with y = z = 1).
    pub one_d: bool,
    /// Highest register count allowed (the tuning budget, under the user's `-maxrregcount`,
    /// `__launch_bounds__` and `__maxnreg__`); `None`: the kernel's count rounded up to the
    /// allocation unit of 8. The limit recorded in the cubin (`EIATTR_MAXREG_COUNT`) is
    /// raised to the new count.
    pub max_registers: Option<u32>,
    /// How the functions' frames share the area (compressed unless asked otherwise).
    pub stack: Mode,
}

impl ThreadsSource {
    /// Whether the threads figure is an assumption of ours that nothing in the kernel
    /// enforces: the rewritten kernel then carries it as its launch bound
    /// (`EIATTR_MAX_THREADS`), so a larger launch fails instead of overrunning the area.
    pub(crate) fn assumed(self) -> bool {
        matches!(self, ThreadsSource::Setting | ThreadsSource::Assumed)
    }

    /// For messages: where the block size came from.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            ThreadsSource::Reqntid => "from .reqntid",
            ThreadsSource::MaxThreads => "from __launch_bounds__",
            ThreadsSource::Setting => "from --orion-block-size",
            ThreadsSource::Assumed => "assumed: no block size declared",
        }
    }
}

impl Options {
    /// Threads and shape from the kernel's launch bounds, else `setting`, else 1024.
    pub fn for_kernel(cubin: &Cubin, kernel: &str, setting: Option<u32>) -> Options {
        let info = cubin.function_info(kernel).unwrap_or_default();
        let (dims, source) = match (info.reqntid, info.max_threads, setting) {
            (Some(d), _, _) => (Some(d), ThreadsSource::Reqntid),
            (None, Some(d), _) => (Some(d), ThreadsSource::MaxThreads),
            (None, None, Some(n)) => (Some([n, 1, 1]), ThreadsSource::Setting),
            (None, None, None) => (None, ThreadsSource::Assumed),
        };
        let threads = dims.map_or(1024, |d| d.iter().map(|&x| x.max(1)).product::<u32>());
        // Only `.reqntid` fixes the block's shape (the driver refuses any other). `.maxntid`
        // (`__launch_bounds__`) and the setting bound the number of threads, not their
        // shape: a `__launch_bounds__(256)` kernel may run as 16 × 16.
        let one_d =
            source == ThreadsSource::Reqntid && dims.is_some_and(|d| d[1] <= 1 && d[2] <= 1);
        Options {
            threads: threads.clamp(1, 1024),
            source,
            one_d,
            max_registers: None,
            stack: Mode::Compressed,
        }
    }
}

/// The summary's note on the base proof and the launch bound of a rewrite laid out for
/// `opts`, its base proved for `shapes` block shapes (0: no spill area).
pub(crate) fn proof_note(shapes: usize, opts: &Options) -> String {
    if shapes == 0 {
        return String::new();
    }
    let bound = if opts.source.assumed() {
        format!(
            "; launches above {} threads refused (EIATTR_MAX_THREADS)",
            opts.threads
        )
    } else {
        String::new()
    };
    let s = if shapes == 1 { "" } else { "s" };
    format!("; base proved for {shapes} block shape{s}{bound}")
}

/// Where the slots lie, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Area {
    /// Bytes between slots (threads × 4).
    pub(crate) stride: u32,
    /// Offset of slot 0 from the base register: the kernel's static shared size.
    pub(crate) offset: u32,
    pub(crate) slots: u32,
    /// Shared bytes per block the area adds.
    pub(crate) added: u64,
}

impl Area {
    /// The area for `slots` slots beside `static_shared` bytes of the kernel's own, refused
    /// when the static shared memory would exceed what a kernel may declare without opting in.
    pub fn plan(opts: &Options, static_shared: u64, slots: u32) -> Result<Area, TransformError> {
        let stride = opts
            .threads
            .checked_mul(4)
            .filter(|&s| s > 0)
            .ok_or_else(|| not_applicable("no threads"))?;
        let added = u64::from(slots) * u64::from(stride);
        if static_shared + added > STATIC_SHARED_LIMIT {
            return Err(not_applicable(format!(
                "{slots} slots × {} threads need {added} bytes of shared memory beside the kernel's {static_shared}; static shared memory is limited to {STATIC_SHARED_LIMIT}",
                opts.threads
            )));
        }
        let offset =
            u32::try_from(static_shared).map_err(|_| not_applicable("static shared size"))?;
        Ok(Area {
            stride,
            offset,
            slots,
            added,
        })
    }

    /// Make the block size the slots are laid out for a launch bound where it is an
    /// assumption ([`ThreadsSource::assumed`]): the kernel gets
    /// `EIATTR_MAX_THREADS` of that many threads, so the driver refuses a larger launch.
    pub(crate) fn enforce(
        &self,
        cubin: &mut Cubin,
        kernel: &str,
        opts: &Options,
    ) -> Result<(), TransformError> {
        if opts.source.assumed() {
            cubin.set_max_threads(kernel, opts.threads)?;
        }
        Ok(())
    }

    /// The immediate of slot `s` (`[base + imm]`).
    pub(crate) fn imm(&self, slot: u32) -> u32 {
        self.offset + slot * self.stride
    }
}
