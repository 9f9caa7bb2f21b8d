//! The memory system the predictor prices against, per architecture: how much L1 an SM has
//! beside its shared memory, how much L2 each SM's share is, how long a load takes from each
//! level, and how many bytes per clock each level delivers to one SM. Resios' model needs
//! exactly these (docs/papers.md §Resios): a latency per level, and a throughput past which more
//! warps only queue. Every value names where it comes from; `nvcc-orion calibrate` measures
//! them on the user's GPU and a calibration file replaces them (`predict::calibration`).
//!
//! The reference part of each row is the one its sources measured or specify; a value that no
//! source gives for the row is taken from a named neighbour and says so. Bandwidths per SM are
//! the part's total over its SM count and boost clock (`GB/s / (SMs × GHz)`).

use serde::{Deserialize, Serialize};

const KB: u32 = 1024;
const MB: u64 = 1024 * 1024;

/// One architecture's memory parameters (cycles, bytes, bytes per clock per SM).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryParams {
    /// The unified L1 data cache and shared memory array of one SM, in bytes; L1 gets what the
    /// shared-memory carve-out leaves.
    pub l1_shared_bytes: u32,
    /// The reference part's L2 over its SM count: each SM's share when all SMs spill alike.
    pub l2_bytes_per_sm: u32,
    /// Load-to-use cycles of a hit in L1.
    pub l1_latency: f64,
    /// Load-to-use cycles of an L1 miss that hits L2.
    pub l2_latency: f64,
    /// Load-to-use cycles of a miss in L2 (DRAM, TLB hit). Global loads pay it: no reuse of
    /// global data is visible in the SASS.
    pub dram_latency: f64,
    /// Load-to-use cycles of shared memory (RegDem's `SH_MEM_STALL`).
    pub shared_latency: f64,
    /// Bytes per clock one SM's L1/shared array delivers.
    pub l1_bytes_per_clock: f64,
    /// Bytes per clock of L2 bandwidth per SM.
    pub l2_bytes_per_clock: f64,
    /// Bytes per clock of DRAM bandwidth per SM.
    pub dram_bytes_per_clock: f64,
}

/// One row: the SM numbers it covers, its parameters, and their sources.
struct Row {
    sms: (u32, u32),
    params: MemoryParams,
}

/// CUDA C++ Programming Guide, "Shared Memory" (compute capability 5.x and later): 32 banks,
/// each delivering 32 bits per clock: 128 bytes per clock per SM, for shared memory and, in
/// the same array, L1 hits.
const L1_BYTES_PER_CLOCK: f64 = 128.0;
/// RegDem §3, `SH_MEM_STALL` (docs/papers.md §RegDem): the predictor's shared-memory figure
/// before this table existed, kept so shared accesses price as before.
const SHARED_LATENCY: f64 = 24.0;
/// NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): L2 read bandwidth of 5120
/// bytes per clock over 108 SMs. The only per-clock L2 figure NVIDIA publishes; taken for
/// every row (the L2 ceiling binds local misses only, and is well above DRAM's everywhere).
const L2_BYTES_PER_CLOCK: f64 = 5120.0 / 108.0;

/// `GB/s` over `sms` SMs at `ghz`: bytes per clock per SM.
const fn per_sm(gb_per_s: f64, sms: f64, ghz: f64) -> f64 {
    gb_per_s / (sms * ghz)
}

/// Ampere's latencies (Abdelkhalik, Arafa, Santhi, Badawy, "Demystifying the Nvidia Ampere
/// Architecture through Microbenchmarking and Instruction-level Analysis", HPEC 2022, arXiv
/// 2208.11174, memory-unit latencies on A100): L1 33, L2 200, global 290 cycles.
const AMPERE_LATENCY: (f64, f64, f64) = (33.0, 200.0, 290.0);

/// Hopper's latencies (Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU
/// Architecture", IPDPS 2024, arXiv 2402.13499, p-chase latencies on H800): about 40 (L1),
/// 263 (L2) and 479 (global) cycles.
const HOPPER_LATENCY: (f64, f64, f64) = (40.0, 263.0, 479.0);

const fn params(
    l1_shared_kb: u32,
    l2_bytes_per_sm: u64,
    latency: (f64, f64, f64),
    dram_bytes_per_clock: f64,
) -> MemoryParams {
    MemoryParams {
        l1_shared_bytes: l1_shared_kb * KB,
        l2_bytes_per_sm: l2_bytes_per_sm as u32,
        l1_latency: latency.0,
        l2_latency: latency.1,
        dram_latency: latency.2,
        shared_latency: SHARED_LATENCY,
        l1_bytes_per_clock: L1_BYTES_PER_CLOCK,
        l2_bytes_per_clock: L2_BYTES_PER_CLOCK,
        dram_bytes_per_clock,
    }
}

/// The rows, ascending and covering every SM number.
static TABLE: &[Row] = &[
    // Volta and older are never tuned; Turing's numbers stand in.
    // sm_75, Turing (Tesla T4: 40 SMs, 4 MB L2, 320 GB/s at 1.59 GHz, NVIDIA T4 datasheet).
    // Turing Tuning Guide and Turing whitepaper: "L1 can be as large as 64 KB with a
    // 32 KB shared-memory allocation, or 32 KB with 64 KB": 96 KB in all. Latencies: the
    // gpu-arch-microbenchmark measurements on TU106 (github.com/sjfeng1999/
    // gpu-arch-microbenchmark, README "Memory Load Latency": L1 32, L2 236, and 472 cycles
    // for a miss of L2 with a TLB hit), in line with Jia et al., "Dissecting the NVidia
    // Turing T4 GPU via Microbenchmarking", arXiv 1903.07486.
    Row {
        sms: (0, 79),
        params: params(
            96,
            4 * MB / 40,
            (32.0, 236.0, 472.0),
            per_sm(320.0, 40.0, 1.59),
        ),
    },
    // sm_80, GA100 (A100 40 GB: 108 SMs, 40 MB L2, 1555 GB/s at 1.41 GHz, A100 whitepaper).
    // NVIDIA Ampere Tuning Guide: 192 KB combined L1/shared memory per SM.
    Row {
        sms: (80, 80),
        params: params(
            192,
            40 * MB / 108,
            AMPERE_LATENCY,
            per_sm(1555.0, 108.0, 1.41),
        ),
    },
    // sm_86, GA10x (RTX 3090: 82 SMs, 6 MB L2, 936 GB/s at 1.695 GHz, GA102 whitepaper):
    // 128 KB L1/shared per SM (NVIDIA Ampere Tuning Guide). Ampere's latencies (the same
    // SM memory pipeline as GA100; no GA10x-specific figures found).
    Row {
        sms: (81, 86),
        params: params(128, 6 * MB / 82, AMPERE_LATENCY, per_sm(936.0, 82.0, 1.695)),
    },
    // sm_87, Orin (Jetson AGX Orin: 16 SMs, 4 MB L2, 204.8 GB/s at 1.3 GHz, Jetson AGX Orin
    // datasheet): GA100's 192 KB L1/shared (its carve-outs are sm_80's, cuda_occupancy.h),
    // Ampere's latencies.
    Row {
        sms: (87, 87),
        params: params(192, 4 * MB / 16, AMPERE_LATENCY, per_sm(204.8, 16.0, 1.3)),
    },
    // sm_89, Ada (RTX 4090: 128 SMs, 72 MB L2, 1008 GB/s at 2.52 GHz, Ada Lovelace
    // whitepaper): 128 KB L1/shared per SM (Ada Tuning Guide). L2 hit latency about
    // 279 cycles on L40 ("Non-Uniform L2 Cache Latency Across the Streaming Multiprocessors of
    // an NVIDIA L40", arXiv 2606.22588: 222-339 across SMs); L1 as Ampere's; DRAM as
    // Hopper's (no Ada-specific figure found).
    Row {
        sms: (88, 89),
        params: params(
            128,
            72 * MB / 128,
            (AMPERE_LATENCY.0, 279.0, HOPPER_LATENCY.2),
            per_sm(1008.0, 128.0, 2.52),
        ),
    },
    // sm_90, Hopper (H100 SXM5: 132 SMs, 50 MB L2, 3350 GB/s at 1.98 GHz, H100 whitepaper
    // and datasheet): 256 KB combined L1/shared per SM (Hopper Tuning Guide).
    Row {
        sms: (90, 99),
        params: params(
            256,
            50 * MB / 132,
            HOPPER_LATENCY,
            per_sm(3350.0, 132.0, 1.98),
        ),
    },
    // sm_100, data-centre Blackwell (B200: 148 SMs, 8 TB/s at about 1.965 GHz, DGX B200
    // datasheet): 256 KB L1/shared per SM (Blackwell Tuning Guide, as Hopper);
    // Hopper's per-SM L2 share and latencies (no Blackwell figures found).
    Row {
        sms: (100, 119),
        params: params(
            256,
            50 * MB / 132,
            HOPPER_LATENCY,
            per_sm(8000.0, 148.0, 1.965),
        ),
    },
    // sm_120, consumer Blackwell (RTX 5090: 170 SMs, 96 MB L2, 1792 GB/s at 2.41 GHz, RTX
    // Blackwell whitepaper): 128 KB L1/shared per SM (Blackwell Tuning Guide, compute
    // capability 12.0); Ada's latencies.
    Row {
        sms: (120, u32::MAX),
        params: params(
            128,
            96 * MB / 170,
            (AMPERE_LATENCY.0, 279.0, HOPPER_LATENCY.2),
            per_sm(1792.0, 170.0, 2.41),
        ),
    },
];

/// The published parameters of sm_`sm` (every number has a row; callers read it through
/// [`super::Sm`]).
pub(super) fn row(sm: u32) -> Option<&'static MemoryParams> {
    TABLE
        .iter()
        .find(|r| (r.sms.0..=r.sms.1).contains(&sm))
        .map(|r| &r.params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::limits::TABLE as LIMITS;

    #[test]
    fn rows_are_ascending_and_cover_every_number() {
        let ranges: Vec<(u32, u32)> = TABLE.iter().map(|r| r.sms).collect();
        crate::arch::assert_covers_every_sm(&ranges);
    }

    /// Every tuned architecture's largest carve-out fits its unified array, the levels are
    /// ordered (L1 faster and wider than L2, L2 than DRAM), and each row is the one its
    /// comment names.
    #[test]
    fn the_levels_are_ordered_and_the_carveouts_fit() {
        let of = |sm| *row(sm).unwrap();
        for a in LIMITS {
            let sm = u32::from(a.cc.0) * 10 + u32::from(a.cc.1);
            let m = of(sm);
            let largest = *a.carveouts.last().unwrap();
            assert!(largest < m.l1_shared_bytes, "sm_{sm}: {largest}");
            assert!(
                m.l1_latency < m.l2_latency && m.l2_latency < m.dram_latency,
                "sm_{sm}"
            );
            assert!(m.l1_bytes_per_clock > m.l2_bytes_per_clock, "sm_{sm}");
            assert!(m.l2_bytes_per_clock > m.dram_bytes_per_clock, "sm_{sm}");
            assert!(m.l2_bytes_per_sm > 64 * KB, "sm_{sm}");
        }
        assert_eq!(of(90).l1_shared_bytes, 256 * KB);
        assert_eq!(of(86).l1_shared_bytes, 128 * KB);
        assert_eq!(of(75).l1_shared_bytes, 96 * KB);
        // H100 SXM5: 3350 GB/s over 132 SMs at 1.98 GHz is 12.8 bytes per clock per SM.
        assert!((of(90).dram_bytes_per_clock - 12.82).abs() < 0.01);
    }
}
