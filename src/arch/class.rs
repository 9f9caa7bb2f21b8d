//! What kind of work an instruction is: the classes the stall predictor prices (throughput per
//! SM, latency of a scoreboard wait) and the fixed-latency table is keyed by. Which mnemonic
//! falls in which class is the SASS layer's business (`sass::opcode`, once per parsed
//! `Opcode`); the classes themselves are per-architecture facts' keys, so they live on this
//! floor.

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
    /// Memory classes whose result arrives through a scoreboard after a long wait.
    #[cfg(test)]
    pub(crate) fn is_memory(self) -> bool {
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
