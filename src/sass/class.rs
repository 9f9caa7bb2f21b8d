//! What kind of work an instruction is, from its mnemonic: the classes the stall predictor
//! prices (throughput per SM, latency of a scoreboard wait). Mnemonics are the same across
//! sm_75 to sm_120 where the operation is, so one table serves every architecture; a mnemonic
//! not listed is `Other` (priced as one issue slot, never a wait).

/// An instruction's class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum OpClass {
    /// FP32 and packed FP16 arithmetic.
    Fp32,
    /// Integer and logic on the full-rate integer path (`IADD3`, `LOP3`, `IMAD`, `MOV`, ...).
    Int,
    /// Lower-rate integer: bit counting and reversal.
    IntSlow,
    /// FP64 arithmetic.
    Fp64,
    /// Transcendentals (`MUFU`).
    Mufu,
    /// Conversions between number formats.
    Conversion,
    /// Tensor-core matrix operations.
    Tensor,
    /// Uniform-datapath operations (`UIADD3`, `UMOV`, `ULDC`, ...), issued once per warp.
    Uniform,
    /// Global and generic memory (`LDG`, `STG`, `ATOMG`, `RED`, `LD`, `ST`, ...).
    Global,
    /// Thread-local memory (`LDL`, `STL`): spills and local arrays.
    Local,
    /// Shared memory (`LDS`, `STS`, `ATOMS`, `LDSM`).
    Shared,
    /// Constant-bank loads through the register path (`LDC`).
    Constant,
    /// Texture and surface operations.
    Texture,
    /// Warp-level and special-register operations (`S2R`, `SHFL`, `VOTE`, `MATCH`, `REDUX`).
    WarpOp,
    /// Barriers and fences (`BAR`, `MEMBAR`, `DEPBAR`, `ERRBAR`, ...).
    Sync,
    /// Control flow (`BRA`, `CALL`, `RET`, `EXIT`, `BSSY`, `BSYNC`, ...) and `NOP`.
    Control,
    /// Anything else.
    Other,
}

impl OpClass {
    /// The class of a mnemonic with its modifiers (`LDG.E.64`, `IMAD.WIDE.U32`).
    pub fn of(opcode: &str) -> OpClass {
        use OpClass::*;
        let base = opcode.split('.').next().unwrap_or("");
        match base {
            "FADD" | "FMUL" | "FFMA" | "FMNMX" | "FSEL" | "FSET" | "FSETP" | "FSWZADD" | "FCHK"
            | "HADD2" | "HMUL2" | "HFMA2" | "HSET2" | "HSETP2" | "HMNMX2" | "FMNMX3" | "FADD2"
            | "FMUL2" | "FFMA2" => Fp32,
            "IADD3" | "IADD" | "IMAD" | "IMUL" | "IMNMX" | "VIMNMX" | "VIMNMX3" | "VIADD"
            | "VIADDMNMX" | "IABS" | "LOP3" | "LOP" | "SHF" | "SHL" | "SHR" | "LEA" | "ISETP"
            | "SEL" | "MOV" | "PRMT" | "PLOP3" | "P2R" | "R2P" | "CS2R" | "ISCADD" | "IDP"
            | "IDP4A" | "IADD32I" | "MOV32I" | "BMSK" | "SGXT" => Int,
            "POPC" | "FLO" | "BREV" => IntSlow,
            "DADD" | "DMUL" | "DFMA" | "DSETP" | "DMNMX" | "DSET" => Fp64,
            "MUFU" => Mufu,
            "F2F" | "F2I" | "I2F" | "I2FP" | "F2FP" | "FRND" | "I2I" | "I2IP" | "F2IP" => {
                Conversion
            }
            "HMMA" | "IMMA" | "DMMA" | "BMMA" | "HGMMA" | "IGMMA" | "QGMMA" | "BGMMA"
            | "UTCHMMA" | "UTCQMMA" | "UTCIMMA" | "UTCOMMA" | "OMMA" | "QMMA" => Tensor,
            "LDG" | "STG" | "LD" | "ST" | "ATOMG" | "ATOM" | "RED" | "REDG" | "LDGSTS" | "CCTL"
            | "CCTLL" | "UBLKCP" | "UTMALDG" | "UTMASTG" | "UBLKRED" | "UTMAPF" | "LDGMC"
            | "REDAS" => Global,
            "LDL" | "STL" => Local,
            "LDS" | "STS" | "ATOMS" | "LDSM" | "STSM" | "LDTRAM" => Shared,
            "LDC" => Constant,
            "TEX" | "TLD" | "TLD4" | "TMML" | "TXD" | "TXQ" | "SULD" | "SUST" | "SUATOM"
            | "SURED" | "SUQUERY" => Texture,
            "S2R" | "S2UR" | "SHFL" | "VOTE" | "VOTEU" | "MATCH" | "REDUX" | "CREDUX" | "B2R"
            | "R2B" | "BMOV" => WarpOp,
            "BAR" | "MEMBAR" | "DEPBAR" | "ERRBAR" | "CGAERRBAR" | "FENCE" | "SYNCS"
            | "ARRIVES" | "WARPSYNC" | "ELECT" => Sync,
            "BRA" | "BRX" | "BRXU" | "JMP" | "JMX" | "CALL" | "RET" | "EXIT" | "BSSY" | "BSYNC"
            | "BREAK" | "KILL" | "NOP" | "YIELD" | "BPT" | "RTT" | "ACQBULK" | "WARPGROUP"
            | "LEPC" | "PMTRIG" | "NANOSLEEP" => Control,
            b if b.starts_with('U') => Uniform,
            _ => Other,
        }
    }

    /// Memory classes whose result arrives through a scoreboard after a long wait.
    pub fn is_memory(self) -> bool {
        matches!(
            self,
            OpClass::Global
                | OpClass::Local
                | OpClass::Shared
                | OpClass::Constant
                | OpClass::Texture
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_of_common_mnemonics() {
        assert_eq!(OpClass::of("LDG.E.64.CONSTANT"), OpClass::Global);
        assert_eq!(OpClass::of("LDL.LU"), OpClass::Local);
        assert_eq!(OpClass::of("STS.128"), OpClass::Shared);
        assert_eq!(OpClass::of("IMAD.WIDE.U32"), OpClass::Int);
        assert_eq!(OpClass::of("FFMA.FTZ"), OpClass::Fp32);
        assert_eq!(OpClass::of("DFMA"), OpClass::Fp64);
        assert_eq!(OpClass::of("MUFU.RSQ"), OpClass::Mufu);
        assert_eq!(OpClass::of("ULDC.64"), OpClass::Uniform);
        assert_eq!(OpClass::of("UIADD3"), OpClass::Uniform);
        assert_eq!(OpClass::of("BRA"), OpClass::Control);
        assert_eq!(OpClass::of("BAR.SYNC.DEFER_BLOCKING"), OpClass::Sync);
        assert_eq!(OpClass::of("XYZZY"), OpClass::Other);
        assert!(OpClass::Local.is_memory() && !OpClass::Fp64.is_memory());
    }
}
