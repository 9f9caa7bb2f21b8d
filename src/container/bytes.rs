//! Checked little-endian reads and writes on byte slices (never panic: `None` when out of range).

pub(crate) fn slice(b: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(off).ok()?;
    let len = usize::try_from(len).ok()?;
    b.get(start..start.checked_add(len)?)
}

fn array<const N: usize>(b: &[u8], off: u64) -> Option<[u8; N]> {
    slice(b, off, N as u64)?.try_into().ok()
}

pub(crate) fn u16_le(b: &[u8], off: u64) -> Option<u16> {
    array(b, off).map(u16::from_le_bytes)
}

pub(crate) fn u32_le(b: &[u8], off: u64) -> Option<u32> {
    array(b, off).map(u32::from_le_bytes)
}

pub(crate) fn u64_le(b: &[u8], off: u64) -> Option<u64> {
    array(b, off).map(u64::from_le_bytes)
}

pub(crate) fn u32_be(b: &[u8], off: u64) -> Option<u32> {
    array(b, off).map(u32::from_be_bytes)
}

pub(crate) fn u64_be(b: &[u8], off: u64) -> Option<u64> {
    array(b, off).map(u64::from_be_bytes)
}

/// Write `v` at `off`; `false` (nothing written) when it does not fit.
pub(crate) fn put(b: &mut [u8], off: u64, v: &[u8]) -> bool {
    let Ok(start) = usize::try_from(off) else {
        return false;
    };
    let Some(end) = start.checked_add(v.len()) else {
        return false;
    };
    match b.get_mut(start..end) {
        Some(dst) => {
            dst.copy_from_slice(v);
            true
        }
        None => false,
    }
}

/// `v` rounded up to a multiple of `align` (a power of two or any non-zero value); `None` on
/// overflow.
pub(crate) fn align_up(v: u64, align: u64) -> Option<u64> {
    if align <= 1 {
        return Some(v);
    }
    let rem = v % align;
    if rem == 0 {
        Some(v)
    } else {
        v.checked_add(align - rem)
    }
}

/// `first` and the first bytes of `b`, in hex, for messages.
pub(crate) fn hex_prefix(b: &[u8], n: usize) -> String {
    let shown: Vec<String> = b.iter().take(n).map(|x| format!("{x:02x}")).collect();
    if shown.is_empty() {
        "none: empty file".to_string()
    } else {
        shown.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_checked() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(u16_le(&b, 0), Some(0x0201));
        assert_eq!(u32_le(&b, 5), Some(0x0908_0706));
        assert_eq!(u32_le(&b, 6), None);
        assert_eq!(u64_le(&b, 1), Some(0x0908_0706_0504_0302));
        assert_eq!(u64_le(&b, u64::MAX), None);
        assert_eq!(slice(&b, u64::MAX, 2), None);
        assert_eq!(u32_be(&b, 0), Some(0x0102_0304));
        assert_eq!(align_up(17, 16), Some(32));
        assert_eq!(align_up(u64::MAX, 16), None);
        let mut m = b;
        assert!(!put(&mut m, 8, &[0, 0]));
        assert!(put(&mut m, 7, &[0, 0]));
        assert_eq!(m[7..], [0, 0]);
    }
}
