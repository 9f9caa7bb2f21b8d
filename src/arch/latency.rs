//! The numbers the stall predictor prices instructions with, per architecture, with where each
//! comes from. They are estimates for ranking variants of one kernel against each other, not
//! a cycle-accurate model: what matters is that a spill to local memory costs far more than a
//! register, that FP64 is slow where the chip has few FP64 units, and that more resident warps
//! hide more latency. The per-architecture rates and latencies are read from the
//! [`ShaderModel`](super::model::ShaderModel) table.

use super::Sm;
use super::class::OpClass;

/// Warp schedulers per SM (one warp instruction issued per scheduler per cycle) on every
/// architecture from sm_70 to sm_120 (NVIDIA's architecture whitepapers: four SM
/// sub-partitions).
pub const SCHEDULERS_PER_SM: u32 = 4;

/// Lanes per SM at full rate: 4 schedulers × 32 lanes. RegDem's `MAX_THROUGHPUT`.
pub const MAX_THROUGHPUT: f64 = 128.0;

/// Cycles from issue until a variable-latency producer releases its write scoreboard, by
/// class. Global, local and shared memory are RegDem's `GL_MEM_STALL` (200) and
/// `SH_MEM_STALL` (24) (RegDem §3, docs/papers.md §RegDem) here, but the predictor prices
/// memory producers at the level their data comes from instead ([`super::memory`],
/// `predict::stalls::Latencies`). The others are assumptions of the same order as the
/// shared-memory figure, for producers that stay on the SM.
pub fn scoreboard_latency(class: OpClass) -> f64 {
    match class {
        OpClass::Global | OpClass::Local | OpClass::Texture => 200.0,
        OpClass::Shared | OpClass::Constant | OpClass::WarpOp => 24.0,
        OpClass::Tensor => 32.0,
        OpClass::Mufu | OpClass::Conversion | OpClass::Fp64 | OpClass::IntSlow => 20.0,
        _ => 16.0,
    }
}

/// Cycles until a read scoreboard is released (the sources have been read and may be
/// overwritten). An assumption: a few cycles past issue for every producer.
pub const READ_RELEASE: f64 = 8.0;

/// Results per clock per SM for each class: the CUDA C++ Programming Guide's table
/// "Throughput of Native Arithmetic Instructions" (operations per clock cycle per
/// multiprocessor) for compute capabilities 7.5, 8.0, 8.6, 8.9, 9.0, 10.0 and 12.0.
/// Memory instructions use the 32 load/store lanes per SM of these architectures (four LSU
/// quads); control and uniform operations issue at full rate.
pub fn throughput(sm: u32, class: OpClass) -> f64 {
    let model = Sm::of(sm).model();
    let (fp32, fp64) = (model.fp32_per_clock, model.fp64_per_clock);
    match class {
        OpClass::Fp32 => fp32,
        OpClass::Int => 64.0,
        OpClass::IntSlow | OpClass::Mufu | OpClass::Conversion => 16.0,
        OpClass::Fp64 => fp64,
        OpClass::WarpOp => 32.0,
        OpClass::Global
        | OpClass::Local
        | OpClass::Shared
        | OpClass::Constant
        | OpClass::Texture => 32.0,
        // Tensor work is priced by issue only: a variant choice never changes MMA counts.
        OpClass::Tensor | OpClass::Uniform | OpClass::Sync | OpClass::Control | OpClass::Other => {
            MAX_THROUGHPUT
        }
    }
}

/// Cycles after a fixed-latency ("coupled") instruction issues until an instruction reading
/// its result may issue, when the producer carries no write scoreboard; `None` where the
/// class is variable-latency or the figure is not known for the architecture (a rewrite then
/// needs a scoreboard). Integer and FP32 ALU: 6, the longest of Mesa NAK's sm_80 table
/// (`sm80_instr_latencies.rs`: CoupledAlu/CoupledFMA 4-5, CoupledDisp64 6;
/// docs/sass.md §Control bits), which sm_75-90 code also meets (ptxas never needs more than
/// S06 between dependent ALU instructions there). FP64 without a scoreboard on sm_80: 10
/// (NAK's FP64 entry); on sm_90 also 10, above the 7 cycles ptxas 13.5 itself leaves between a
/// scoreboard-less `DADD`/`DFMA` and its first reader (measured on tests/kernels/regdem). On
/// the other architectures FP64 is not tabulated ([`super::model::ShaderModel::fp64_fixed_latency`]).
pub fn fixed_latency(sm: u32, class: OpClass) -> Option<u8> {
    match class {
        OpClass::Int | OpClass::Fp32 => Some(6),
        OpClass::Fp64 => Sm::of(sm).model().fp64_fixed_latency,
        _ => None,
    }
}
