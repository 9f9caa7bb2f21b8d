//! Fatbin parse + write on a ~10 MB fatbin (target: under 100 ms).
//!
//! The input is the real fatbins of the fixture matrix (`target/fixtures/<key>/*.fatbin`, built
//! by `cargo test --test decode fixtures_matrix`) concatenated back to back until it passes 10 MB, as
//! the `.nv_fatbin` section of a linked executable holds them; without fixtures, synthetic
//! containers of the same shape (uncompressed ELF entries, ZSTD PTX entries). Prints the cold
//! first run and the median/min of the warm runs, and the ratio to the target.
//!
//! Run: `cargo bench --bench fatbin`.

use nvcc_orion::container::{self, Fatbin};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const TARGET_BYTES: usize = 10 * 1024 * 1024;
const TARGET: Duration = Duration::from_millis(100);
const RUNS: usize = 21;

fn fixture_fatbins() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/fixtures");
    let Ok(dirs) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    for d in dirs.flatten() {
        let p = d.path();
        if !p.join("COMPLETE").is_file() {
            continue;
        }
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&p)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|f| f.extension().is_some_and(|x| x == "fatbin"))
            .filter_map(|f| {
                Some((
                    f.file_name()?.to_string_lossy().into_owned(),
                    std::fs::read(&f).ok()?,
                ))
            })
            .collect();
        out.sort();
        if !out.is_empty() {
            return out;
        }
    }
    Vec::new()
}

/// One synthetic container: `n` uncompressed ELF-sized entries and one ZSTD PTX entry.
fn synthetic_container(seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut entries = Vec::new();
    for arch in [75u32, 80, 86, 90] {
        let payload: Vec<u8> = (0..96 * 1024).map(|_| (rnd() % 7) as u8).collect();
        let mut h = vec![0u8; 0x40];
        h[0..2].copy_from_slice(&2u16.to_le_bytes());
        h[4..8].copy_from_slice(&0x40u32.to_le_bytes());
        h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&arch.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes());
        entries.push((h, payload));
    }
    let ptx: Vec<u8> = (0..64 * 1024)
        .map(|i| b"add.f32 %f1, %f2;\n"[i % 18])
        .collect();
    let z =
        ruzstd::encoding::compress_to_vec(&ptx[..], ruzstd::encoding::CompressionLevel::Fastest);
    let mut payload = z.clone();
    payload.resize(z.len().div_ceil(8) * 8, 0);
    let mut h = vec![0u8; 0x50];
    h[0..2].copy_from_slice(&1u16.to_le_bytes());
    h[4..8].copy_from_slice(&0x50u32.to_le_bytes());
    h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    h[0x10..0x14].copy_from_slice(&(z.len() as u32).to_le_bytes());
    h[0x1c..0x20].copy_from_slice(&90u32.to_le_bytes());
    h[0x28..0x30].copy_from_slice(&0x8011u64.to_le_bytes());
    h[0x38..0x40].copy_from_slice(&(ptx.len() as u64).to_le_bytes());
    entries.push((h, payload));
    let fat: usize = entries.iter().map(|(h, p)| h.len() + p.len()).sum();
    let mut c = Vec::new();
    c.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    c.extend_from_slice(&1u16.to_le_bytes());
    c.extend_from_slice(&16u16.to_le_bytes());
    c.extend_from_slice(&(fat as u64).to_le_bytes());
    for (h, p) in entries {
        c.extend_from_slice(&h);
        c.extend_from_slice(&p);
    }
    c
}

fn time<T>(mut f: impl FnMut() -> T) -> (Duration, Vec<Duration>) {
    let t = Instant::now();
    black_box(f());
    let cold = t.elapsed();
    let mut warm: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .collect();
    warm.sort();
    (cold, warm)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn report(label: &str, (cold, warm): &(Duration, Vec<Duration>)) {
    let median = warm[warm.len() / 2];
    println!(
        "{label:<32} cold {:>8.2} ms   median {:>8.2} ms   min {:>8.2} ms   median/target {:.3}",
        ms(*cold),
        ms(median),
        ms(warm[0]),
        median.as_secs_f64() / TARGET.as_secs_f64()
    );
}

fn main() {
    let sources = fixture_fatbins();
    let (origin, unit): (String, Vec<u8>) = if sources.is_empty() {
        (
            "synthetic containers (no fixture fatbins found)".into(),
            (0..4).flat_map(synthetic_container).collect(),
        )
    } else {
        (
            format!(
                "fixture fatbins {}",
                sources
                    .iter()
                    .map(|(n, d)| format!("{n} ({} B)", d.len()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            sources.into_iter().flat_map(|(_, d)| d).collect(),
        )
    };
    let mut data = Vec::with_capacity(TARGET_BYTES + unit.len());
    while data.len() < TARGET_BYTES {
        data.extend_from_slice(&unit);
    }
    let fb = Fatbin::parse(&data).expect("the benchmark input parses");
    let containers = fb.containers().count();
    let entries = fb.entries().count();
    let compressed = fb
        .entries()
        .filter(|(_, _, e)| e.compressed_size() != 0)
        .count();
    assert!(fb.write() == data, "identity");
    drop(fb);
    println!("input: {origin}");
    println!(
        "fatbin: {} bytes ({:.2} MiB), {containers} containers, {entries} entries ({compressed} compressed); {RUNS} warm runs",
        data.len(),
        data.len() as f64 / (1024.0 * 1024.0)
    );
    report(
        "parse + write (Fatbin)",
        &time(|| Fatbin::parse(&data).unwrap().write()),
    );
    report(
        "read + write (container::read)",
        &time(|| container::read(data.clone()).unwrap().write().unwrap()),
    );
    report(
        "read + images (decompress all)",
        &time(|| {
            let a = container::read(data.clone()).unwrap();
            a.images()
                .unwrap()
                .iter()
                .map(|i| i.image.len())
                .sum::<usize>()
        }),
    );
}
