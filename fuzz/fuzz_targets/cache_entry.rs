#![no_main]
//! A variant cache entry damaged the ways disks and cache restores damage them, then read
//! back with `tune::cache_entry::decode`. The input is read twice: as a file found in the
//! cache (nothing may panic, and what decodes is exactly what `encode` writes for it), and
//! as the recipe of an entry (`op`, `at`, the split point, then the cubin and stderr bytes)
//! that is encoded, damaged by `op` at `at` (a bit flipped, cut short, bytes appended, read
//! under another key, its contents swapped with another entry's) and decoded: the result is
//! an error, never different bytes.
use nvcc_orion::tune::cache_entry::{Entry, decode, encode};

const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const OTHER: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(entry) = decode(KEY, data) {
        assert_eq!(
            encode(KEY, &entry),
            data,
            "an entry decodes from other bytes"
        );
    }
    let [op, a, b, split, rest @ ..] = data else {
        return;
    };
    let cut = usize::from(*split).min(rest.len());
    let entry = Entry {
        cubin: rest[..cut].to_vec(),
        stderr: rest[cut..].to_vec(),
    };
    let good = encode(KEY, &entry);
    let at = usize::from(u16::from_le_bytes([*a, *b])) % good.len();
    let (key, bad) = match op % 5 {
        0 => {
            let mut bad = good.clone();
            bad[at] ^= 1 << (op / 5 % 8);
            (KEY, bad)
        }
        1 => (KEY, good[..at].to_vec()),
        2 => (
            KEY,
            [&good[..], &rest[..1.min(rest.len())], &[*op]].concat(),
        ),
        3 => (OTHER, good.clone()),
        _ => {
            // Another key's entry renamed to this one.
            let other = Entry {
                cubin: entry.stderr.clone(),
                stderr: entry.cubin.clone(),
            };
            (KEY, encode(OTHER, &other))
        }
    };
    assert_eq!(decode(KEY, &good).as_ref(), Ok(&entry), "round trip");
    assert!(
        decode(key, &bad).is_err(),
        "damage {op} at {at} went unseen"
    );
});
