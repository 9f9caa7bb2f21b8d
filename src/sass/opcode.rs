//! Typed opcodes, the way Mesa NAK's `ir.rs` types its instructions: the mnemonic is an
//! [`Op`], parsed once when an instruction is decoded, and the modifiers follow it as
//! nvdisasm prints them (`IMAD.WIDE.U32`: [`Op::Imad`] with `WIDE` and `U32`). A mnemonic
//! not listed is [`Op::Other`] with its text kept, so decoding never fails on an opcode the
//! project does not model and printing gives back exactly what nvdisasm printed.

use std::borrow::Cow;
use std::fmt;

use crate::arch::OpClass;

/// One enum variant per mnemonic (CamelCase of nvdisasm's spelling) and its text.
macro_rules! ops {
    ($($v:ident = $s:literal,)*) => {
        /// A SASS mnemonic, without modifiers: every one the decoders, operand tables,
        /// classes and rewrites name (sm_75 to sm_120).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Op {
            $($v,)*
            /// A mnemonic not modelled here (its text stays in the [`Opcode`]).
            Other,
        }

        impl Op {
            /// The mnemonic for `base` (no modifiers); [`Op::Other`] if it is not listed.
            pub(crate) fn parse(base: &str) -> Op {
                match base {
                    $($s => Op::$v,)*
                    _ => Op::Other,
                }
            }

            /// nvdisasm's spelling; `None` for [`Op::Other`].
            #[cfg(test)]
            pub(crate) fn name(self) -> Option<&'static str> {
                match self {
                    $(Op::$v => Some($s),)*
                    Op::Other => None,
                }
            }
        }
    };
}

ops! {
    Acqbulk = "ACQBULK",
    Arrives = "ARRIVES",
    Atom = "ATOM",
    Atomg = "ATOMG",
    Atoms = "ATOMS",
    B2r = "B2R",
    Bar = "BAR",
    Bgmma = "BGMMA",
    Bmma = "BMMA",
    Bmov = "BMOV",
    Bmsk = "BMSK",
    Bpt = "BPT",
    Bra = "BRA",
    Break = "BREAK",
    Brev = "BREV",
    Brx = "BRX",
    Brxu = "BRXU",
    Bssy = "BSSY",
    Bsync = "BSYNC",
    Call = "CALL",
    Cctl = "CCTL",
    Cctll = "CCTLL",
    Cgaerrbar = "CGAERRBAR",
    Credux = "CREDUX",
    Cs2r = "CS2R",
    Cs2ur = "CS2UR",
    Dadd = "DADD",
    Depbar = "DEPBAR",
    Dfma = "DFMA",
    Dmma = "DMMA",
    Dmnmx = "DMNMX",
    Dmul = "DMUL",
    Dset = "DSET",
    Dsetp = "DSETP",
    Elect = "ELECT",
    Errbar = "ERRBAR",
    Exit = "EXIT",
    F2f = "F2F",
    F2fp = "F2FP",
    F2i = "F2I",
    F2ip = "F2IP",
    Fadd = "FADD",
    Fadd2 = "FADD2",
    Fchk = "FCHK",
    Fence = "FENCE",
    Ffma = "FFMA",
    Ffma2 = "FFMA2",
    Flo = "FLO",
    Fmnmx = "FMNMX",
    Fmnmx3 = "FMNMX3",
    Fmul = "FMUL",
    Fmul2 = "FMUL2",
    Frnd = "FRND",
    Fsel = "FSEL",
    Fset = "FSET",
    Fsetp = "FSETP",
    Fswzadd = "FSWZADD",
    Hadd2 = "HADD2",
    Hfma2 = "HFMA2",
    Hgmma = "HGMMA",
    Hmma = "HMMA",
    Hmnmx2 = "HMNMX2",
    Hmul2 = "HMUL2",
    Hset2 = "HSET2",
    Hsetp2 = "HSETP2",
    I2f = "I2F",
    I2fp = "I2FP",
    I2i = "I2I",
    I2ip = "I2IP",
    Iabs = "IABS",
    Iadd = "IADD",
    Iadd3 = "IADD3",
    Iadd32i = "IADD32I",
    Idp = "IDP",
    Idp4a = "IDP4A",
    Igmma = "IGMMA",
    Imad = "IMAD",
    Imma = "IMMA",
    Imnmx = "IMNMX",
    Imul = "IMUL",
    Iscadd = "ISCADD",
    Iset = "ISET",
    Isetp = "ISETP",
    Jmp = "JMP",
    Jmx = "JMX",
    Kill = "KILL",
    Ld = "LD",
    Ldc = "LDC",
    Ldcu = "LDCU",
    Ldg = "LDG",
    Ldgdepbar = "LDGDEPBAR",
    Ldgmc = "LDGMC",
    Ldgsts = "LDGSTS",
    Ldl = "LDL",
    Lds = "LDS",
    Ldsm = "LDSM",
    Ldtram = "LDTRAM",
    Lea = "LEA",
    Lepc = "LEPC",
    Lop = "LOP",
    Lop3 = "LOP3",
    Match = "MATCH",
    Membar = "MEMBAR",
    Mov = "MOV",
    Mov32i = "MOV32I",
    Mufu = "MUFU",
    Nanosleep = "NANOSLEEP",
    Nop = "NOP",
    Omma = "OMMA",
    P2r = "P2R",
    Plop3 = "PLOP3",
    Pmtrig = "PMTRIG",
    Popc = "POPC",
    Prmt = "PRMT",
    Psetp = "PSETP",
    Qgmma = "QGMMA",
    Qmma = "QMMA",
    R2b = "R2B",
    R2p = "R2P",
    R2ur = "R2UR",
    Red = "RED",
    Redas = "REDAS",
    Redg = "REDG",
    Redux = "REDUX",
    Ret = "RET",
    Rtt = "RTT",
    S2r = "S2R",
    S2ur = "S2UR",
    Sel = "SEL",
    Sgxt = "SGXT",
    Shf = "SHF",
    Shfl = "SHFL",
    Shl = "SHL",
    Shr = "SHR",
    St = "ST",
    Stg = "STG",
    Stl = "STL",
    Sts = "STS",
    Stsm = "STSM",
    Suatom = "SUATOM",
    Suld = "SULD",
    Suquery = "SUQUERY",
    Sured = "SURED",
    Sust = "SUST",
    Syncs = "SYNCS",
    Tex = "TEX",
    Tld = "TLD",
    Tld4 = "TLD4",
    Tmml = "TMML",
    Txd = "TXD",
    Txq = "TXQ",
    Ublkcp = "UBLKCP",
    Ublkred = "UBLKRED",
    Ubmsk = "UBMSK",
    Ubrev = "UBREV",
    Uffma = "UFFMA",
    Uflo = "UFLO",
    Uiadd3 = "UIADD3",
    Uimad = "UIMAD",
    Uimnmx = "UIMNMX",
    Uisetp = "UISETP",
    Uldc = "ULDC",
    Ulea = "ULEA",
    Ulop = "ULOP",
    Ulop3 = "ULOP3",
    Umov = "UMOV",
    Up2ur = "UP2UR",
    Uplop3 = "UPLOP3",
    Upopc = "UPOPC",
    Uprmt = "UPRMT",
    Usel = "USEL",
    Usgxt = "USGXT",
    Ushf = "USHF",
    Ushl = "USHL",
    Ushr = "USHR",
    Utchmma = "UTCHMMA",
    Utcimma = "UTCIMMA",
    Utcomma = "UTCOMMA",
    Utcqmma = "UTCQMMA",
    Utmaldg = "UTMALDG",
    Utmapf = "UTMAPF",
    Utmastg = "UTMASTG",
    Uvimnmx = "UVIMNMX",
    Vabsdiff = "VABSDIFF",
    Vabsdiff4 = "VABSDIFF4",
    Viadd = "VIADD",
    Viaddmnmx = "VIADDMNMX",
    Vimnmx = "VIMNMX",
    Vimnmx3 = "VIMNMX3",
    Vote = "VOTE",
    Voteu = "VOTEU",
    Warpgroup = "WARPGROUP",
    Warpsync = "WARPSYNC",
    Yield = "YIELD",
}

/// A mnemonic with its modifiers: the typed [`Op`], its [`OpClass`], and the text as printed.
/// Code asks [`Opcode::op`] and [`Opcode::has_mod`]/[`Opcode::modifiers`]; the text is only
/// for printing ([`Display`](fmt::Display), [`Opcode::as_str`]).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Opcode {
    op: Op,
    class: OpClass,
    /// Bytes of the mnemonic in `text` (up to the first `.`).
    base_len: usize,
    /// Borrowed when it comes from a static table (`raw`'s mnemonics: no allocation on the
    /// predictor's hot path), owned when decoded from nvdisasm's text.
    text: Cow<'static, str>,
}

impl Opcode {
    /// Parse nvdisasm's spelling: `LDG.E.64.CONSTANT`.
    pub(crate) fn new(text: impl Into<Cow<'static, str>>) -> Opcode {
        let text = text.into();
        let base_len = text.find('.').unwrap_or(text.len());
        let base = &text[..base_len];
        let op = Op::parse(base);
        Opcode {
            op,
            class: class_of(op, base),
            base_len,
            text,
        }
    }

    pub(crate) fn op(&self) -> Op {
        self.op
    }

    /// What kind of work it is, for the stall predictor and the latency tables.
    pub fn class(&self) -> OpClass {
        self.class
    }

    /// The mnemonic without modifiers: `IMAD`.
    pub(crate) fn base(&self) -> &str {
        &self.text[..self.base_len]
    }

    /// The modifiers after the mnemonic, in order: `WIDE`, `U32`.
    pub(crate) fn modifiers(&self) -> impl Iterator<Item = &str> {
        self.text
            .get(self.base_len + 1..)
            .into_iter()
            .flat_map(|m| m.split('.'))
    }

    pub(crate) fn has_mod(&self, m: &str) -> bool {
        self.modifiers().any(|x| x == m)
    }

    /// The text as printed.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// As the text, so debug output is the same as when opcodes were strings.
impl fmt::Debug for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl From<&str> for Opcode {
    fn from(s: &str) -> Opcode {
        Opcode::new(s.to_string())
    }
}

impl From<String> for Opcode {
    fn from(s: String) -> Opcode {
        Opcode::new(s)
    }
}

/// The class of a mnemonic. Mnemonics are the same across sm_75 to sm_120 where the operation
/// is, so one table serves every architecture; an unlisted one is `Other` (priced as one
/// issue slot, never a wait), except the uniform datapath's `U...` operations.
pub(crate) fn class_of(op: Op, base: &str) -> OpClass {
    use Op::*;
    match op {
        Fadd | Fmul | Ffma | Fmnmx | Fsel | Fset | Fsetp | Fswzadd | Fchk | Hadd2 | Hmul2
        | Hfma2 | Hset2 | Hsetp2 | Hmnmx2 | Fmnmx3 | Fadd2 | Fmul2 | Ffma2 => OpClass::Fp32,
        Iadd3 | Iadd | Imad | Imul | Imnmx | Vimnmx | Vimnmx3 | Viadd | Viaddmnmx | Iabs | Lop3
        | Lop | Shf | Shl | Shr | Lea | Isetp | Sel | Mov | Prmt | Plop3 | P2r | R2p | Cs2r
        | Iscadd | Idp | Idp4a | Iadd32i | Mov32i | Bmsk | Sgxt => OpClass::Int,
        Popc | Flo | Brev => OpClass::IntSlow,
        Dadd | Dmul | Dfma | Dsetp | Dmnmx | Dset => OpClass::Fp64,
        Mufu => OpClass::Mufu,
        F2f | F2i | I2f | I2fp | F2fp | Frnd | I2i | I2ip | F2ip => OpClass::Conversion,
        Hmma | Imma | Dmma | Bmma | Hgmma | Igmma | Qgmma | Bgmma | Utchmma | Utcqmma | Utcimma
        | Utcomma | Omma | Qmma => OpClass::Tensor,
        Ldg | Stg | Ld | St | Atomg | Atom | Red | Redg | Ldgsts | Cctl | Cctll | Ublkcp
        | Utmaldg | Utmastg | Ublkred | Utmapf | Ldgmc | Redas => OpClass::Global,
        Ldl | Stl => OpClass::Local,
        Lds | Sts | Atoms | Ldsm | Stsm | Ldtram => OpClass::Shared,
        Ldc => OpClass::Constant,
        Tex | Tld | Tld4 | Tmml | Txd | Txq | Suld | Sust | Suatom | Sured | Suquery => {
            OpClass::Texture
        }
        S2r | S2ur | Shfl | Vote | Voteu | Match | Redux | Credux | B2r | R2b | Bmov => {
            OpClass::WarpOp
        }
        Bar | Membar | Depbar | Errbar | Cgaerrbar | Fence | Syncs | Arrives | Warpsync | Elect => {
            OpClass::Sync
        }
        Bra | Brx | Brxu | Jmp | Jmx | Call | Ret | Exit | Bssy | Bsync | Break | Kill | Nop
        | Yield | Bpt | Rtt | Acqbulk | Warpgroup | Lepc | Pmtrig | Nanosleep => OpClass::Control,
        _ if base.starts_with('U') => OpClass::Uniform,
        _ => OpClass::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonic_and_modifiers_are_parsed_once() {
        let o = Opcode::new("IMAD.WIDE.U32");
        assert_eq!(
            (o.op(), o.base(), o.class()),
            (Op::Imad, "IMAD", OpClass::Int)
        );
        assert_eq!(o.modifiers().collect::<Vec<_>>(), ["WIDE", "U32"]);
        assert!(o.has_mod("U32") && !o.has_mod("IMAD"));
        assert_eq!(o.to_string(), "IMAD.WIDE.U32");
        assert_eq!(format!("{o:?}"), "\"IMAD.WIDE.U32\"");
        let bare = Opcode::new("EXIT");
        assert_eq!((bare.op(), bare.modifiers().count()), (Op::Exit, 0));
        assert_eq!(Op::Exit.name(), Some("EXIT"));
    }

    #[test]
    fn classes_of_common_mnemonics() {
        let of = |text: &'static str| Opcode::new(text).class();
        assert_eq!(of("LDG.E.64.CONSTANT"), OpClass::Global);
        assert_eq!(of("LDL.LU"), OpClass::Local);
        assert_eq!(of("STS.128"), OpClass::Shared);
        assert_eq!(of("IMAD.WIDE.U32"), OpClass::Int);
        assert_eq!(of("FFMA.FTZ"), OpClass::Fp32);
        assert_eq!(of("DFMA"), OpClass::Fp64);
        assert_eq!(of("MUFU.RSQ"), OpClass::Mufu);
        assert_eq!(of("ULDC.64"), OpClass::Uniform);
        assert_eq!(of("UIADD3"), OpClass::Uniform);
        assert_eq!(of("BRA"), OpClass::Control);
        assert_eq!(of("BAR.SYNC.DEFER_BLOCKING"), OpClass::Sync);
        assert_eq!(of("XYZZY"), OpClass::Other);
        assert!(OpClass::Local.is_memory() && !OpClass::Fp64.is_memory());
    }

    #[test]
    fn unknown_mnemonics_are_kept_not_refused() {
        let o = Opcode::new("UNKNOWN_0x7ff.X");
        assert_eq!(
            (o.op(), o.base(), o.as_str()),
            (Op::Other, "UNKNOWN_0x7ff", "UNKNOWN_0x7ff.X")
        );
        // The uniform datapath's operations are priced as such even when not listed.
        assert_eq!(Opcode::new("UFOO.64").class(), OpClass::Uniform);
        assert_eq!(Opcode::new("XYZZY").class(), OpClass::Other);
        assert_eq!(Op::Other.name(), None);
    }

    #[test]
    fn every_name_parses_back_to_its_variant() {
        for op in [Op::Iadd3, Op::Tld4, Op::Mov32i, Op::Utmaldg, Op::R2ur] {
            assert_eq!(Op::parse(op.name().unwrap()), op);
        }
    }
}
