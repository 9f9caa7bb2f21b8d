//! Opcode numbers (bits 0-11 of an instruction) to mnemonics, as ptxas 13.5 emits them for
//! sm_75 to sm_120 (docs/sass.md §Opcode numbers, collected from real cubins and checked
//! against nvdisasm). No value names different mnemonics on different architectures, so one
//! table serves all. For ALU operations the low 9 bits name the operation and the high 3 the
//! operand form, so an unseen form of a known ALU operation is found by its low 9 bits. Used to
//! classify instructions for the stall predictor without running nvdisasm (which costs about
//! 0.3 s per call); anything not here is "unknown", never guessed.

/// `(opcode, mnemonic)`, sorted by opcode.
const TABLE: &[(u16, &str)] = &[
    (0x202, "MOV"),
    (0x207, "SEL"),
    (0x208, "FSEL"),
    (0x20b, "FSETP"),
    (0x20c, "ISETP"),
    (0x210, "IADD3"),
    (0x211, "LEA"),
    (0x212, "LOP3"),
    (0x217, "IMNMX"),
    (0x219, "SHF"),
    (0x220, "FMUL"),
    (0x221, "FADD"),
    (0x223, "FFMA"),
    (0x224, "IMAD"),
    (0x228, "DMUL"),
    (0x229, "DADD"),
    (0x22a, "DSETP"),
    (0x22b, "DFMA"),
    (0x231, "HFMA2"),
    (0x235, "IADD"),
    (0x245, "I2FP"),
    (0x248, "VIMNMX"),
    (0x28c, "UISETP"),
    (0x290, "UIADD3"),
    (0x291, "ULEA"),
    (0x2bd, "UFLO"),
    (0x2ca, "R2UR"),
    (0x2cc, "CREDUX"),
    (0x300, "FLO"),
    (0x301, "BREV"),
    (0x305, "F2I"),
    (0x306, "I2F"),
    (0x308, "MUFU"),
    (0x309, "POPC"),
    (0x310, "F2F"),
    (0x343, "CALL"),
    (0x34e, "LEPC"),
    (0x355, "BMOV"),
    (0x381, "LDG"),
    (0x386, "STG"),
    (0x387, "STL"),
    (0x388, "STS"),
    (0x3a9, "ATOMG"),
    (0x3c2, "R2UR"),
    (0x3c4, "REDUX"),
    (0x402, "MOV"),
    (0x421, "FADD"),
    (0x423, "FFMA"),
    (0x424, "IMAD"),
    (0x42b, "DFMA"),
    (0x431, "HFMA2"),
    (0x435, "HFMA2"),
    (0x446, "VIADDMNMX"),
    (0x455, "UFFMA"),
    (0x547, "BRA"),
    (0x5ab, "CGAERRBAR"),
    (0x616, "PRMT"),
    (0x624, "IMAD"),
    (0x625, "IMAD"),
    (0x7ac, "LDCU"),
    (0x802, "MOV"),
    (0x805, "CS2R"),
    (0x806, "VOTE"),
    (0x807, "SEL"),
    (0x809, "FMNMX"),
    (0x80b, "FSETP"),
    (0x80c, "ISETP"),
    (0x810, "IADD3"),
    (0x812, "LOP3"),
    (0x816, "PRMT"),
    (0x817, "IMNMX"),
    (0x819, "SHF"),
    (0x81c, "PLOP3"),
    (0x820, "FMUL"),
    (0x823, "FFMA"),
    (0x824, "IMAD"),
    (0x825, "IMAD"),
    (0x828, "DMUL"),
    (0x82b, "DFMA"),
    (0x835, "IADD"),
    (0x836, "VIADD"),
    (0x848, "VIMNMX"),
    (0x84a, "UVIMNMX"),
    (0x882, "UMOV"),
    (0x886, "VOTEU"),
    (0x88c, "UISETP"),
    (0x890, "UIADD3"),
    (0x892, "ULOP3"),
    (0x899, "USHF"),
    (0x89c, "UPLOP3"),
    (0x8cb, "CS2UR"),
    (0x902, "FCHK"),
    (0x908, "MUFU"),
    (0x918, "NOP"),
    (0x919, "S2R"),
    (0x941, "BSYNC"),
    (0x942, "BREAK"),
    (0x944, "CALL"),
    (0x945, "BSSY"),
    (0x947, "BRA"),
    (0x949, "BRX"),
    (0x94d, "EXIT"),
    (0x94e, "LEPC"),
    (0x950, "RET"),
    (0x958, "BRXU"),
    (0x95c, "BPT"),
    (0x981, "LDG"),
    (0x983, "LDL"),
    (0x984, "LDS"),
    (0x986, "STG"),
    (0x988, "STS"),
    (0x98f, "CCTL"),
    (0x992, "MEMBAR"),
    (0x9a8, "ATOMG"),
    (0x9ab, "ERRBAR"),
    (0x9c3, "S2UR"),
    (0xa02, "MOV"),
    (0xa10, "IADD3"),
    (0xa17, "IMNMX"),
    (0xa24, "IMAD"),
    (0xa25, "IMAD"),
    (0xab9, "ULDC"),
    (0xb82, "LDC"),
    (0xc02, "MOV"),
    (0xc0c, "ISETP"),
    (0xc10, "IADD3"),
    (0xc12, "LOP3"),
    (0xc23, "FFMA"),
    (0xc24, "IMAD"),
    (0xc35, "IADD"),
    (0xc45, "I2FP"),
    (0xc48, "VIMNMX"),
    (0xc82, "UMOV"),
    (0xd06, "I2F"),
    (0xd08, "MUFU"),
    (0xe21, "FADD"),
    (0xe24, "IMAD"),
    (0xf89, "SHFL"),
];

/// The mnemonic (without modifiers) of opcode `op` (bits 0-11).
pub fn mnemonic(op: u16) -> Option<&'static str> {
    let op = op & 0xfff;
    if let Ok(i) = TABLE.binary_search_by_key(&op, |&(o, _)| o) {
        return Some(TABLE[i].1);
    }
    // Another operand form of a known ALU operation: same low 9 bits, and every known form
    // agrees on the mnemonic.
    let low = op & 0x1ff;
    let mut forms = TABLE
        .iter()
        .filter(|&&(o, _)| o & 0x1ff == low)
        .map(|&(_, m)| m);
    let first = forms.next()?;
    forms.all(|m| m == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_known_values_decode() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(mnemonic(0x387), Some("STL"));
        assert_eq!(mnemonic(0x983), Some("LDL"));
        assert_eq!(mnemonic(0x984), Some("LDS"));
        assert_eq!(mnemonic(0x947), Some("BRA"));
        assert_eq!(mnemonic(0x94d), Some("EXIT"));
        assert_eq!(mnemonic(0x918), Some("NOP"));
        // An FFMA form not in the table (0x623, C operand from a cbuf) by its low 9 bits.
        assert_eq!(mnemonic(0x623), Some("FFMA"));
        assert_eq!(mnemonic(0x000), None);
    }
}
