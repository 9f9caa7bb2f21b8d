//! Raw decode and re-layout of a ~20 000-instruction kernel (issue 5 target: under 1 s,
//! nvdisasm verification included).
//!
//! Compiles a straight-line kernel of 10 000 FFMA pairs (plus compare/add every 50 lines)
//! with the toolkit's nvcc for sm_80 (`NVCC_ORION_NVCC`, `$CUDA_HOME/bin/nvcc` or `PATH`;
//! skipped without one), then times: raw decode of every function (`sass::raw::functions`),
//! a re-layout inserting one NOP every ~10 instructions (`relayout::insert_random_nops`),
//! writing the cubin, and `nvdisasm` of the result. Prints cold and median-of-warm times.
//!
//! Run: `cargo bench --bench sass`.

use nvcc_orion::analysis::{Cfg, Liveness};
use nvcc_orion::cubin::Cubin;
use nvcc_orion::sass::{decode, raw, relayout};
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const LINES: usize = 10_000;
const RUNS: usize = 9;
const TARGET: Duration = Duration::from_secs(1);

fn find_nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC_ORION_NVCC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    if let Some(h) = std::env::var_os("CUDA_HOME").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(h).join("bin/nvcc");
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
}

fn source() -> String {
    let mut s = String::from(
        "__global__ void big(const float* in, float* out, int n) {\n int i = blockIdx.x * blockDim.x + threadIdx.x;\n if (i >= n) return;\n float a = in[i], b = in[i + n], c = in[i + 2 * n];\n",
    );
    for k in 0..LINES {
        s.push_str(&format!(
            "    a = fmaf(a, b, {}.5f); b = fmaf(b, c, -{}.25f);",
            k % 97,
            k % 89
        ));
        if k % 50 == 0 {
            s.push_str(&format!(" if (a > {}.0f) c += a;", k % 13));
        }
        s.push('\n');
    }
    s.push_str(" out[i] = a + b + c;\n}\n");
    s
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let Some(nvcc) = find_nvcc() else {
        println!("sass bench: no nvcc (set NVCC_ORION_NVCC or CUDA_HOME); skipped");
        return;
    };
    let nvdisasm = nvcc.with_file_name("nvdisasm");
    let dir = tempfile::tempdir().expect("temp dir");
    let cu = dir.path().join("big.cu");
    std::fs::write(&cu, source()).expect("write source");
    let cubin = dir.path().join("big.cubin");
    let t = Instant::now();
    let st = Command::new(&nvcc)
        .args(["-cubin", "-arch=sm_80", "-o"])
        .arg(&cubin)
        .arg(&cu)
        .status()
        .expect("run nvcc");
    assert!(st.success(), "nvcc failed");
    println!("compile (nvcc, once): {:.2?}", t.elapsed());
    let bytes = std::fs::read(&cubin).expect("read cubin");

    let c = Cubin::parse(&bytes).expect("parse");
    let instrs: usize = raw::functions(&c).iter().map(|f| f.instrs.len()).sum();
    let per_function = instrs / 10;
    println!("kernel: {instrs} instructions; inserting {per_function} NOPs");

    let mut decode = Vec::new();
    let mut edit = Vec::new();
    let mut total = Vec::new();
    let out = dir.path().join("big_relaid.cubin");
    for run in 0..RUNS {
        let t0 = Instant::now();
        let c = Cubin::parse(&bytes).expect("parse");
        let f = raw::functions(&c);
        black_box(&f);
        let t1 = Instant::now();
        let mut c = c;
        relayout::insert_random_nops(&mut c, per_function, run as u64 + 1).expect("relayout");
        let written = c.write().expect("write");
        let t2 = Instant::now();
        std::fs::write(&out, &written).expect("write cubin");
        let dis = Command::new(&nvdisasm)
            .args(["-c"])
            .arg(&out)
            .output()
            .expect("run nvdisasm");
        assert!(
            dis.status.success(),
            "nvdisasm rejected the re-laid-out cubin"
        );
        let t3 = Instant::now();
        if run == 0 {
            println!(
                "cold: decode {:.2?}, re-layout+write {:.2?}, total with nvdisasm {:.2?}",
                t1 - t0,
                t2 - t1,
                t3 - t0
            );
        }
        decode.push(t1 - t0);
        edit.push(t2 - t1);
        total.push(t3 - t0);
    }
    let (d, e, t) = (median(decode), median(edit), median(total));
    println!(
        "median of {RUNS}: parse+decode {d:.2?}, re-layout+write {e:.2?}, total with nvdisasm {t:.2?} (target {TARGET:?}: {:.2}x)",
        t.as_secs_f64() / TARGET.as_secs_f64()
    );

    // The whole issue-5 path: the IR from `nvdisasm -json` and the cubin, operand tables, the CFG
    // and liveness of every function, then re-layout, write and nvdisasm of the result.
    let mut full = Vec::new();
    let mut analysed = Vec::new();
    for run in 0..RUNS {
        let t0 = Instant::now();
        let decoded = decode::decode_file(&nvdisasm, &cubin).expect("decode");
        let mut max_live = 0;
        for f in &decoded.functions {
            let cfg = Cfg::build(f);
            let live = Liveness::compute(f, &cfg);
            max_live = max_live.max(live.max_live());
        }
        black_box(max_live);
        let t1 = Instant::now();
        let mut c = Cubin::parse(&bytes).expect("parse");
        relayout::insert_random_nops(&mut c, per_function, run as u64 + 1).expect("relayout");
        std::fs::write(&out, c.write().expect("write")).expect("write cubin");
        let dis = Command::new(&nvdisasm)
            .arg("-c")
            .arg(&out)
            .output()
            .expect("nvdisasm");
        assert!(dis.status.success());
        let t2 = Instant::now();
        if run == 0 {
            println!(
                "full, cold: IR decode + CFG + liveness {:.2?} (max live {max_live}), total {:.2?}",
                t1 - t0,
                t2 - t0
            );
        }
        analysed.push(t1 - t0);
        full.push(t2 - t0);
    }
    let (a, f) = (median(analysed), median(full));
    println!(
        "full, median of {RUNS}: IR decode + CFG + liveness {a:.2?}, total with re-layout and nvdisasm {f:.2?} (target {TARGET:?}: {:.2}x)",
        f.as_secs_f64() / TARGET.as_secs_f64()
    );
}
