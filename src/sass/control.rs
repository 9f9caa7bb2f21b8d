//! The scheduling control field of a Volta-and-later instruction: the 23 bits at 105..128 of
//! the 128-bit word (docs/sass.md §Control bits), the same on every architecture from
//! sm_70 to sm_120. ptxas writes the fixed-latency schedule here: how long to stall before the
//! next instruction issues, which scoreboard a variable-latency result or source read will
//! release, and which scoreboards to wait for first.

use std::fmt;

/// Scoreboards per warp (SB0-SB5).
pub(crate) const SCOREBOARDS: u8 = 6;

/// The control field of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Control {
    /// Cycles to wait before the warp may issue its next instruction (0-15).
    pub stall: u8,
    /// Bit 109. ptxas sets it on almost every instruction; 0 on NOP padding and in long
    /// fixed-latency chains. A scheduling hint only.
    pub(crate) yield_bit: bool,
    /// Scoreboard released when the destination is written (variable-latency producers).
    pub write_sb: Option<u8>,
    /// Scoreboard released when the sources have been read.
    pub read_sb: Option<u8>,
    /// Bit i: wait until scoreboard i is released before issuing.
    pub wait_mask: u8,
    /// Operand reuse-cache flags, slots A, B, C and 3.
    pub reuse: u8,
}

impl Control {
    /// Decode from the instruction's two little-endian 64-bit words (low word first, as
    /// `nvdisasm -hex` prints them and as they lie in `.text`).
    pub(crate) fn from_words(_lo: u64, hi: u64) -> Control {
        Control::from_bits((hi >> 41) as u32)
    }

    /// Decode from the instruction's 16 bytes. `None` when `bytes` is not 16 long.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Control> {
        let hi: [u8; 8] = bytes.get(8..16)?.try_into().ok()?;
        (bytes.len() == 16).then(|| Control::from_words(0, u64::from_le_bytes(hi)))
    }

    /// Decode the 23-bit field itself.
    pub fn from_bits(ctrl: u32) -> Control {
        let sb = |v: u32| (v < u32::from(SCOREBOARDS)).then_some(v as u8);
        Control {
            stall: (ctrl & 0xf) as u8,
            yield_bit: (ctrl >> 4) & 1 == 1,
            write_sb: sb((ctrl >> 5) & 7),
            read_sb: sb((ctrl >> 8) & 7),
            wait_mask: ((ctrl >> 11) & 0x3f) as u8,
            reuse: ((ctrl >> 17) & 0xf) as u8,
        }
    }

    /// Encode back to the 23-bit field (unused scoreboard = 7).
    pub fn to_bits(self) -> u32 {
        u32::from(self.stall & 0xf)
            | u32::from(self.yield_bit) << 4
            | u32::from(self.write_sb.unwrap_or(7)) << 5
            | u32::from(self.read_sb.unwrap_or(7)) << 8
            | u32::from(self.wait_mask & 0x3f) << 11
            | u32::from(self.reuse & 0xf) << 17
    }

    /// Scoreboards this instruction waits on.
    pub(crate) fn waits(self) -> impl Iterator<Item = u8> {
        (0..SCOREBOARDS).filter(move |b| self.wait_mask & (1 << b) != 0)
    }
}

/// CuAssembler's notation, `[B0-----:R-:W2:Y:S04]` (wait mask, read SB, write SB, yield
/// shown as `Y` when bit 109 is 0, stall). Used in reports and test messages.
impl fmt::Display for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[B")?;
        for b in 0..SCOREBOARDS {
            if self.wait_mask & (1 << b) != 0 {
                write!(f, "{b}")?;
            } else {
                write!(f, "-")?;
            }
        }
        let sb = |s: Option<u8>| s.map_or("-".to_string(), |b| b.to_string());
        write!(
            f,
            ":R{}:W{}:{}:S{:02}]",
            sb(self.read_sb),
            sb(self.write_sb),
            if self.yield_bit { "-" } else { "Y" },
            self.stall
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nop_padding() {
        // ptxas's padding NOP: lo 0x...7918, hi 0x000fc00000000000 (docs/sass.md §Re-layout and
        // padding).
        let c = Control::from_words(0x7918, 0x000f_c000_0000_0000);
        assert_eq!(
            c,
            Control {
                stall: 0,
                yield_bit: false,
                write_sb: None,
                read_sb: None,
                wait_mask: 0,
                reuse: 0
            }
        );
        assert_eq!(c.to_string(), "[B------:R-:W-:Y:S00]");
    }

    #[test]
    fn fields_round_trip() {
        // An LDL.LU spill reload and its consumer (docs/sass.md §Control bits).
        let reload = Control {
            stall: 4,
            yield_bit: true,
            write_sb: Some(2),
            read_sb: None,
            wait_mask: 0b1,
            reuse: 0,
        };
        assert_eq!(reload.to_string(), "[B0-----:R-:W2:-:S04]");
        let consumer = Control {
            stall: 4,
            yield_bit: true,
            write_sb: None,
            read_sb: Some(0),
            wait_mask: 0b100,
            reuse: 0b0101,
        };
        assert_eq!(consumer.to_string(), "[B--2---:R0:W-:-:S04]");
        for c in [reload, consumer] {
            assert_eq!(Control::from_bits(c.to_bits()), c);
            let hi = u64::from(c.to_bits()) << 41;
            let mut bytes = [0u8; 16];
            bytes[8..].copy_from_slice(&hi.to_le_bytes());
            assert_eq!(Control::from_bytes(&bytes), Some(c));
        }
        assert_eq!(consumer.waits().collect::<Vec<_>>(), vec![2]);
        assert_eq!(Control::from_bytes(&[0; 15]), None);
    }

    #[test]
    fn branch_control_from_ptxas() {
        // A ptxas branch: hi 0x000fea0003800000 (stall 5, yield set, no scoreboards).
        let c = Control::from_words(0, 0x000f_ea00_0380_0000);
        assert_eq!(
            (c.stall, c.yield_bit, c.write_sb, c.read_sb),
            (5, true, None, None)
        );
    }
}
