//! What kind of work an instruction is, from its mnemonic. The classes themselves are keys of
//! the per-architecture tables ([`crate::arch::OpClass`]); which mnemonic is in which class is
//! decided once per instruction when its [`Opcode`](super::Opcode) is parsed. This spelling
//! (`OpClass::of`, on the text) is kept for the unit tests below.

#[cfg(test)]
use super::opcode::{Op, class_of};
pub(crate) use crate::arch::OpClass;

impl OpClass {
    /// The class of a mnemonic with its modifiers (`LDG.E.64`, `IMAD.WIDE.U32`).
    #[cfg(test)]
    pub(crate) fn of(opcode: &str) -> OpClass {
        let base = opcode.split('.').next().unwrap_or("");
        class_of(Op::parse(base), base)
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
