//! The per-thread spill area in shared memory, shared by every transform that keeps values
//! there (spill → shared, register demotion): its sizing and placement (docs/DESIGN.md §Spill
//! area placement; RegDem's equation 1, docs/papers.md §RegDem). Slot `s` of the thread with
//! linear index `t` is at `area + s × stride + 4t`, `stride` = threads per block × 4
//! (slot-major: a warp's access to one slot touches 32 consecutive words, one per bank); the
//! area lies after the kernel's static and dynamic shared memory and the static section grows
//! by `slots × stride`.

use super::spill_to_shared::{Options, STATIC_SHARED_LIMIT};
use super::{TransformError, not_applicable};

/// Where the slots lie, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Area {
    /// Bytes between slots (threads × 4).
    pub stride: u32,
    /// Offset of slot 0 from the base register: the kernel's static shared size.
    pub offset: u32,
    pub slots: u32,
    /// Shared bytes per block the area adds.
    pub added: u64,
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
    /// assumption ([`super::spill_to_shared::ThreadsSource::assumed`]): the kernel gets
    /// `EIATTR_MAX_THREADS` of that many threads, so the driver refuses a larger launch.
    pub fn enforce(
        &self,
        cubin: &mut crate::cubin::Cubin,
        kernel: &str,
        opts: &Options,
    ) -> Result<(), TransformError> {
        if opts.source.assumed() {
            cubin.set_max_threads(kernel, opts.threads)?;
        }
        Ok(())
    }

    /// The immediate of slot `s` (`[base + imm]`).
    pub fn imm(&self, slot: u32) -> u32 {
        self.offset + slot * self.stride
    }
}
