//! The per-family table: one row per run of architectures whose facts agree, so each row
//! reads on its own and a new architecture is one row. The rows split exactly where a fact
//! changes (sm_80's FP64 units, sm_86's doubled FP32 rate, sm_90's split branch offsets, ...);
//! every field names where its value comes from.

/// Families whose operand tables and encodings differ (docs/sass.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// sm_75 to sm_89.
    Turing,
    /// sm_90.
    Hopper,
}

/// The facts of one run of architectures.
#[derive(Debug, Clone, PartialEq)]
pub struct ShaderModel {
    /// The SM numbers this row covers, inclusive (`90` is sm_90).
    pub(crate) sms: (u32, u32),
    /// Operand tables (`sass::operands`, checked against `nvdisasm -plr` on sm_75-90); `None`
    /// where there are none and SASS is not decoded with operands.
    pub(crate) family: Option<Family>,
    /// `sass::relayout` rewrites this code (docs/DESIGN.md §Architectures: sm_100 and sm_120 are out of scope).
    pub(crate) relayout: bool,
    /// The rewrites (spill2smem, regdem) run on this code: sm_75 to sm_90,
    /// the architectures with operand tables and checked encodings.
    pub(crate) rewrites: bool,
    /// A shared-memory window address carries the CTA's rank in its cluster at bit 24
    /// (distributed shared memory, sm_90+), so a rewrite's shared base must add it.
    pub(crate) shared_cluster_rank: bool,
    /// Direct branches and calls keep their PC-relative offset split (docs/sass.md §Branches
    /// and calls): `delta >> 2` in bits 16-23 and `delta >> 10` in bits 34-81 from sm_90 on;
    /// a plain signed byte count at bits 34-81 (bits 32-33 flags) before.
    pub(crate) split_branch_offsets: bool,
    /// `LEPC Rd, label` names its label with an 8-bit immediate at bits 24-31 (sm_90+);
    /// before, `LEPC Rd` takes no label and two `MOV` immediates carry the offsets.
    pub(crate) lepc_label: bool,
    /// NOPs ptxas leaves after a function's last instruction before rounding the section to
    /// 128 bytes: at least 8 (128 bytes) on sm_80+, none on sm_75 (checked on every fixture).
    pub(crate) tail_nops: usize,
    /// A global access (`LDG.E R0, [R2.64]`) reads a uniform-register descriptor pair that
    /// nvdisasm does not print (sm_80-89; sm_90 prints it as `desc[UR4]`).
    pub(crate) implicit_memory_descriptor: bool,
    /// A function that owns its `.text` section has its register count in the section's
    /// `sh_info[31:24]` (below sm_90; 0 from sm_90 on).
    pub(crate) text_sh_info_regs: bool,
    /// nvdisasm's call model (the registers a call may touch) covers the highest register the
    /// section names plus three, capped by `SHI_REGISTERS`, which ptxas rounds up here
    /// (sm_90); below, it covers `SHI_REGISTERS` (found on the kernels of
    /// tests/decode/sass_decode.rs).
    pub(crate) call_regs_from_code: bool,
    /// FP32 results per clock per SM (CUDA C++ Programming Guide, "Throughput of Native
    /// Arithmetic Instructions"): 64 on 7.5 and 8.0, 128 from 8.6 on.
    pub(crate) fp32_per_clock: f64,
    /// FP64 results per clock per SM (same table): the data-centre parts (8.0, 9.0, 10.0,
    /// 10.3) have it at half the FP32 rate or better; the others at 2.
    pub(crate) fp64_per_clock: f64,
    /// Cycles before a reader may issue after a scoreboard-less FP64 producer: 10 on sm_80
    /// (Mesa NAK's `sm80_instr_latencies.rs`) and sm_90 (above the 7 ptxas 13.5 leaves,
    /// measured on tests/kernels/regdem); not tabulated elsewhere.
    pub(crate) fp64_fixed_latency: Option<u8>,
}

/// Volta and older: read, never rewritten; the rates of the oldest row.
const PRE_TURING: ShaderModel = ShaderModel {
    sms: (0, 74),
    family: None,
    relayout: false,
    rewrites: false,
    shared_cluster_rank: false,
    split_branch_offsets: false,
    lepc_label: false,
    tail_nops: 0,
    implicit_memory_descriptor: false,
    text_sh_info_regs: true,
    call_regs_from_code: false,
    fp32_per_clock: 64.0,
    fp64_per_clock: 2.0,
    fp64_fixed_latency: None,
};

/// sm_75 (Turing).
const TURING: ShaderModel = ShaderModel {
    sms: (75, 79),
    family: Some(Family::Turing),
    relayout: true,
    rewrites: true,
    ..PRE_TURING
};

/// sm_80 (GA100): FP64 units and the NOP tail.
const GA100: ShaderModel = ShaderModel {
    sms: (80, 80),
    tail_nops: 8,
    implicit_memory_descriptor: true,
    fp64_per_clock: 32.0,
    fp64_fixed_latency: Some(10),
    ..TURING
};

/// sm_81-85: no such parts; the sm_80 encodings with consumer rates.
const AMPERE_OTHER: ShaderModel = ShaderModel {
    sms: (81, 85),
    fp64_per_clock: 2.0,
    fp64_fixed_latency: None,
    ..GA100
};

/// sm_86, sm_87, sm_89 (consumer Ampere, Orin, Ada): FP32 at 128.
const AMPERE_CONSUMER: ShaderModel = ShaderModel {
    sms: (86, 89),
    fp32_per_clock: 128.0,
    ..AMPERE_OTHER
};

/// sm_90 (Hopper): the split branch form, labelled LEPC, its own operand tables.
const HOPPER: ShaderModel = ShaderModel {
    sms: (90, 90),
    family: Some(Family::Hopper),
    relayout: true,
    rewrites: true,
    shared_cluster_rank: true,
    split_branch_offsets: true,
    lepc_label: true,
    tail_nops: 8,
    implicit_memory_descriptor: false,
    text_sh_info_regs: false,
    call_regs_from_code: true,
    fp32_per_clock: 128.0,
    fp64_per_clock: 64.0,
    fp64_fixed_latency: Some(10),
};

/// sm_91-99: laid out like sm_90 but without operand tables or FP64 units.
const HOPPER_OTHER: ShaderModel = ShaderModel {
    sms: (91, 99),
    family: None,
    call_regs_from_code: false,
    rewrites: false,
    fp64_per_clock: 2.0,
    fp64_fixed_latency: None,
    ..HOPPER
};

/// sm_100 and sm_103 (data-centre Blackwell): read only.
const BLACKWELL_DC: ShaderModel = ShaderModel {
    sms: (100, 100),
    relayout: false,
    fp64_per_clock: 64.0,
    ..HOPPER_OTHER
};

/// Everything newer, and sm_101-102: read only, consumer FP64.
const LATER: ShaderModel = ShaderModel {
    sms: (101, u32::MAX),
    fp64_per_clock: 2.0,
    ..BLACKWELL_DC
};

/// The rows, ascending and covering every SM number.
static TABLE: &[ShaderModel] = &[
    PRE_TURING,
    TURING,
    GA100,
    AMPERE_OTHER,
    AMPERE_CONSUMER,
    HOPPER,
    HOPPER_OTHER,
    BLACKWELL_DC,
    ShaderModel {
        sms: (101, 102),
        ..LATER
    },
    ShaderModel {
        sms: (103, 103),
        ..BLACKWELL_DC
    },
    ShaderModel {
        sms: (104, u32::MAX),
        ..LATER
    },
];

/// The row for sm_`sm` (every number has one; callers read it through [`super::Sm`]).
pub(super) fn row(sm: u32) -> Option<&'static ShaderModel> {
    TABLE.iter().find(|m| (m.sms.0..=m.sms.1).contains(&sm))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_ascending_and_cover_every_number() {
        let ranges: Vec<(u32, u32)> = TABLE.iter().map(|r| r.sms).collect();
        crate::arch::assert_covers_every_sm(&ranges);
    }

    #[test]
    fn facts_change_where_the_architectures_do() {
        let m = |sm| row(sm).unwrap();
        // The comparisons this table replaced, on every number that matters.
        for sm in [
            0, 70, 75, 80, 82, 86, 89, 90, 95, 100, 101, 103, 110, 120, 121,
        ] {
            let row = m(sm);
            assert_eq!(row.split_branch_offsets, sm >= 90, "sm_{sm}");
            assert_eq!(row.lepc_label, sm >= 90, "sm_{sm}");
            assert_eq!(row.tail_nops, if sm >= 80 { 8 } else { 0 }, "sm_{sm}");
            assert_eq!(row.implicit_memory_descriptor, (80..=89).contains(&sm));
            assert_eq!(row.text_sh_info_regs, sm < 90, "sm_{sm}");
            // Decoded with operands only where there are tables: sm_90's family decides.
            assert_eq!(row.call_regs_from_code, sm == 90, "sm_{sm}");
            assert_eq!(row.relayout, (75..=99).contains(&sm), "sm_{sm}");
            assert_eq!(row.rewrites, (75..=90).contains(&sm), "sm_{sm}");
            assert_eq!(row.shared_cluster_rank, sm >= 90, "sm_{sm}");
            let family = match sm {
                75..=89 => Some(Family::Turing),
                90 => Some(Family::Hopper),
                _ => None,
            };
            assert_eq!(row.family, family, "sm_{sm}");
            assert_eq!(row.fp32_per_clock, if sm >= 86 { 128.0 } else { 64.0 });
            let fp64 = match sm {
                80 => 32.0,
                90 | 100 | 103 => 64.0,
                _ => 2.0,
            };
            assert_eq!(row.fp64_per_clock, fp64, "sm_{sm}");
            assert_eq!(row.fp64_fixed_latency.is_some(), sm == 80 || sm == 90);
        }
    }
}
