//! Reading a training profile of 300,000 entries (about 90 MB, issue 31) and finding every
//! kernel's measured winner, as a profile-guided build does once per compile (target: under
//! one second). Entries: 10,000 kernels x 5 variants x 6 launch configurations.
//!
//! Run: `cargo bench --bench profile`.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use nvcc_orion::profile::Profile;

const KERNELS: usize = 10_000;
const VARIANTS: u32 = 5;
const CONFIGS: u32 = 6;
const TARGET: Duration = Duration::from_secs(1);
const RUNS: usize = 5;

/// The profile as the selector writes it.
fn profile_text() -> String {
    let mut s = String::from("{\"format\":\"nvcc-orion-profile\",\"version\":1,\"entries\":[");
    let mut first = true;
    for k in 0..KERNELS {
        for c in 0..CONFIGS {
            for v in 0..VARIANTS {
                if !first {
                    s.push(',');
                }
                first = false;
                let name = if v == 0 {
                    format!("_Z6kernel{k}Pf")
                } else {
                    format!("_Z6kernel{k}Pf__orion_v{v}")
                };
                s.push_str(&format!(
                    "{{\"kernel\":\"_Z6kernel{k}Pf\",\"arch\":\"sm_90\",\"device\":\"NVIDIA H100 80GB HBM3\",\
                     \"key\":{{\"kernel_id\":{k},\"device\":0,\"grid\":[{},1,1],\"block\":[256,1,1],\"shared\":0}},\
                     \"variant\":{v},\"variant_name\":\"{name}\",\"registers\":{},\"local_bytes\":0,\
                     \"launches\":80,\"samples\":64,\"median_us\":{}.5,\"spread\":0.01}}",
                    64 << c,
                    96 - 16 * v,
                    100 + (k as u32 * 7 + v * 13 + c) % 50
                ));
            }
        }
    }
    s.push_str("]}");
    s
}

fn main() {
    let text = profile_text();
    let names: Vec<Vec<String>> = (0..KERNELS)
        .map(|k| {
            (0..VARIANTS)
                .map(|v| match v {
                    0 => format!("_Z6kernel{k}Pf"),
                    _ => format!("_Z6kernel{k}Pf__orion_v{v}"),
                })
                .collect()
        })
        .collect();
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let p = Profile::parse(text.as_bytes(), Path::new("bench.json")).expect("a valid profile");
        let mut found = 0;
        for (k, n) in names.iter().enumerate() {
            let refs: Vec<&str> = n.iter().map(String::as_str).collect();
            let kernel = format!("_Z6kernel{k}Pf");
            found += usize::from(
                black_box(p.winner(&kernel, "sm_90", &refs)).is_ok_and(|w| w.is_some()),
            );
        }
        assert_eq!(found, KERNELS);
        times.push(start.elapsed());
    }
    times.sort();
    let median = times[RUNS / 2];
    println!(
        "profile: {} entries, {:.1} MB: parse + {} winners median {:.3} s (min {:.3} s); target {:.1} s: {:.2}x of target",
        KERNELS as u32 * VARIANTS * CONFIGS,
        text.len() as f64 / 1e6,
        KERNELS,
        median.as_secs_f64(),
        times[0].as_secs_f64(),
        TARGET.as_secs_f64(),
        median.as_secs_f64() / TARGET.as_secs_f64()
    );
}
