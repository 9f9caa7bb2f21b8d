//! Dynamic parallelism under `-rdc` (issue 48, point 4). `.nv.callgraph` holds four lists,
//! each after a sentinel `<0,-n>`; only the first is calls. A kernel launched from device code
//! is listed after `<0,-2>` as `<kernel,0>` (0: a kernel's prototype), which used to be read
//! as a call to symbol 0, so it was held at ptxas's budget "because it calls , which another
//! module defines". Here, on real `-rdc` builds (sm_80 and sm_90) of the tuning kernels plus
//! a kernel that launches one of them and one that calls through a pointer:
//! * the call-graph reader's lists are cuobjdump -elf's, and every function's callees as
//!   nvcc-orion reads them (`inspect`) are exactly cuobjdump's first list;
//! * through nvcc-orion the launched kernel is tuned like any other, the launching kernel is
//!   held naming the device runtime function it calls, and the objects device-link with
//!   cudadevrt.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use nvcc_orion::cubin::callgraph::CallGraph;

const CHILD: &str = "_Z16chase_live_statePKiPKfPfii";
const PARENT: &str = "_Z12launch_chasePKiPKfPfii";

/// The tuning kernels, a kernel that launches one of them from device code, and one that
/// calls through a function pointer (a prototype in lists 2 and 3).
fn source() -> String {
    let pressure = common::kernels_dir().join("tune").join("pressure.cu");
    format!(
        "#include \"{}\"\n{}",
        pressure.display(),
        r#"
__global__ void launch_chase(const int *next, const float *x, float *out, int n, int steps) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        chase_live_state<<<(n + 127) / 128, 128>>>(next, x, out, n, steps);
}
__device__ __noinline__ float twice(float v) { return 2.f * v; }
__device__ float (*pick)(float) = twice;
__global__ void through_pointer(float *out) { out[threadIdx.x] = pick(out[threadIdx.x]); }
"#
    )
}

fn run(cmd: &mut Command, what: &str) -> String {
    let o = cmd.output().unwrap();
    common::assert_ok(&o, what);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// cuobjdump -elf's symbol names (by index) and `.nv.callgraph` rows, in order.
fn cuobjdump_view(nvcc: &Path, cubin: &Path) -> (Vec<String>, Vec<(i32, i32)>) {
    let text = run(
        Command::new(common::toolkit_tool(nvcc, "cuobjdump"))
            .arg("-elf")
            .arg(cubin),
        "cuobjdump -elf",
    );
    let block = |header: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| l.trim_end() != header)
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    };
    let symbols = block(".section .symtab")
        .iter()
        .skip(1)
        .map(|l| {
            let name = l.split_whitespace().last().unwrap_or("");
            if name == "(null)" { "" } else { name }.to_string()
        })
        .collect();
    let rows = block(".nv.callgraph")
        .iter()
        .map(|l| {
            let (a, b) = l.trim().trim_matches(['<', '>']).split_once(',').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    (symbols, rows)
}

/// The rows split at their sentinels: lists 1..=4.
fn lists(rows: &[(i32, i32)]) -> BTreeMap<i32, Vec<(i32, i32)>> {
    let mut out: BTreeMap<i32, Vec<(i32, i32)>> = BTreeMap::new();
    let mut list = 1;
    for &(a, b) in rows {
        match (a, b) {
            (0, s) if s < 0 => list = -s,
            r => out.entry(list).or_default().push(r),
        }
    }
    out
}

/// Each function's callees as `nvcc-orion inspect` prints them (`name  calls a, b  ...`).
fn inspected_callees(cubin: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let text = run(
        common::orion().arg("inspect").arg(cubin),
        "nvcc-orion inspect",
    );
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let parts: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if !matches!(parts.first(), Some(&"kernel") | Some(&"function")) {
            continue;
        }
        let Some(i) = parts
            .iter()
            .position(|p| p.starts_with('_') || p.starts_with('$'))
        else {
            continue;
        };
        let callees = parts
            .get(i + 1)
            .and_then(|p| p.strip_prefix("calls"))
            .map(|c| c.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default();
        out.insert(parts[i].to_string(), callees);
    }
    out
}

#[test]
fn the_reader_agrees_with_cuobjdump_on_device_launches() {
    let Some(nvcc) = common::nvcc_or_skip("callgraph_real") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("launch.cu");
    std::fs::write(&src, source()).unwrap();
    for sm in ["80", "90"] {
        let cubin = dir.path().join(format!("launch{sm}.cubin"));
        run(
            Command::new(&nvcc)
                .arg(format!("-arch=sm_{sm}"))
                .args(["-rdc=true", "-cubin"])
                .arg(&src)
                .arg("-o")
                .arg(&cubin),
            "nvcc -rdc -cubin",
        );
        let (symbols, rows) = cuobjdump_view(&nvcc, &cubin);
        let want = lists(&rows);
        // The reader, on the section's bytes, against cuobjdump's listing.
        let elf = std::fs::read(&cubin).unwrap();
        let section = {
            use object::{Object, ObjectSection};
            let file = object::File::parse(&elf[..]).unwrap();
            file.section_by_name(".nv.callgraph")
                .unwrap()
                .data()
                .unwrap()
                .to_vec()
        };
        let graph = CallGraph::parse(&section).unwrap();
        let at = |n: i32| want.get(&n).cloned().unwrap_or_default();
        assert_eq!(graph.calls, at(1), "sm_{sm}: calls");
        assert_eq!(graph.targets, at(2), "sm_{sm}: list 2");
        assert_eq!(graph.indirect, at(3), "sm_{sm}: list 3");
        assert_eq!(graph.references, at(4), "sm_{sm}: list 4");
        assert_eq!(graph.encode(), section, "sm_{sm}: the section as read");
        let name = |i: i32| symbols[i as usize].clone();
        let child = symbols.iter().position(|s| s == CHILD).unwrap() as i32;
        assert!(
            graph.targets.contains(&(child, 0)),
            "sm_{sm}: the launched kernel is listed after <0,-2> with prototype 0"
        );
        // Every function's callees as nvcc-orion reads them: exactly cuobjdump's first list.
        let mut calls: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for &(a, b) in &at(1) {
            calls.entry(name(a)).or_default().insert(name(b));
        }
        for (f, callees) in inspected_callees(&cubin) {
            let expected = calls.remove(&f).unwrap_or_default();
            assert_eq!(callees, expected, "sm_{sm}: callees of {f}");
        }
        assert!(
            calls.is_empty(),
            "sm_{sm}: callers not inspected: {calls:?}"
        );
    }
}

#[test]
fn a_kernel_launched_from_device_code_is_tuned() {
    let Some(nvcc) = common::nvcc_or_skip("callgraph_real") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("launch.cu"), source()).unwrap();
    std::fs::write(dir.path().join("main.cu"), "int main() { return 0; }\n").unwrap();
    let report = dir.path().join("report.jsonl");
    run(
        common::without_our_settings(common::orion(), &nvcc)
            .current_dir(dir.path())
            .env("NVCC_ORION_CACHE", dir.path().join("cache"))
            .env("NVCC_ORION_REPORT", &report)
            .args([
                "-arch=sm_90",
                "-rdc=true",
                "-c",
                "launch.cu",
                "-o",
                "launch.o",
            ]),
        "nvcc-orion -rdc -c",
    );
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let record = |k: &str| records.iter().find(|r| r["kernel"] == k).unwrap().clone();
    let child = record(CHILD);
    let reason = child["reason"].as_str().unwrap_or("");
    assert!(!reason.contains("another module"), "{child}");
    assert!(
        child["chosen_registers"].as_u64() < child["candidates"][0]["registers"].as_u64(),
        "the launched kernel is retuned: {child}"
    );
    let parent = record(PARENT);
    assert!(
        parent["reason"]
            .as_str()
            .unwrap_or("")
            .contains("calls __cudaCDP2"),
        "the launcher is held for the device runtime call it makes: {parent}"
    );
    // nvlink takes the tuned object with the device runtime.
    run(
        Command::new(&nvcc).current_dir(dir.path()).args([
            "-arch=sm_90",
            "-rdc=true",
            "launch.o",
            "main.cu",
            "-lcudadevrt",
            "-o",
            "app",
        ]),
        "nvcc device link with cudadevrt",
    );
}
