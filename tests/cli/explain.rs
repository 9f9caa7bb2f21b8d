//! `nvcc-orion explain`: snapshot tests of the terminal table for the example kernels (the
//! numbers are ptxas 13.5's and the predictor's, deterministic), the report and built-file
//! forms, the `--html` page in headless Chromium (rendered, no script errors, the charts'
//! points counted, a screenshot), a 50 000-instruction kernel's page (size and render time),
//! and the progress line of variant builds on a terminal.
//! `UPDATE_SNAPSHOTS=1` rewrites the snapshots (and `docs/explain.png`) from the current output.
//!
//! Without nvcc (or Chromium, for the page tests) the tests print a skip message and pass;
//! with `CI` set they fail.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The toolkit's nvcc, or `None` (skip) outside CI.
fn nvcc() -> Option<PathBuf> {
    common::nvcc_or_skip("explain")
}

fn explain(args: &[&str], dir: &Path) -> (bool, String, String) {
    let out = common::orion()
        .current_dir(dir)
        .arg("explain")
        .args(args)
        .env("NVCC_ORION_CACHE", dir.join("cache"))
        // What sgemm_dyn.cu's host code launches with (16 KiB of `extern __shared__`): a
        // kernel that sizes shared memory at launch is tuned only with its size.
        .env("NVCC_ORION_DYNAMIC_SHARED", "16384")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn snapshot(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 creates it)", path.display()));
    pretty_assertions::assert_eq!(want, got, "snapshot {name}");
}

#[test]
fn explain_tables_of_the_examples() {
    let Some(_) = nvcc() else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    for (file, arch, snap) in [
        ("walk.cu", "-arch=sm_90", "explain_walk_sm90.txt"),
        ("nbody.cu", "-arch=sm_86", "explain_nbody_sm86.txt"),
        ("sgemm_dyn.cu", "-arch=sm_90", "explain_sgemm_sm90.txt"),
    ] {
        let src = repo.join("examples/kernels").join(file);
        let (ok, out, err) = explain(&[src.to_str().unwrap(), arch], dir.path());
        assert!(ok, "{file}: {err}");
        snapshot(snap, &out);
    }
}

/// A report written before issue 50 (`rewrite-before-issue50.jsonl`: the old binary's
/// `nvcc-orion -c --orion-force=spill2smem --orion-block-size=128` of
/// tests/kernels/explain/rewrite.cu on sm_90) explains under the rewrite's one name: its old
/// budget field reads as `spill2smem` (the candidates' kind, `--json`'s field), and its notes,
/// in the old words, still count in the summary line. Needs no toolkit.
#[test]
fn a_report_from_before_issue_50_explains_under_the_key() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let report = repo.join("tests/kernels/explain/rewrite-before-issue50.jsonl");
    let report = report.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ok, table, err) = explain(&[report], dir.path());
    assert!(ok, "{err}");
    // The recursive kernel's refused candidate, and the chain kernel's chosen one.
    assert!(table.contains("\n    32      spill2smem  "), "{table}");
    assert!(table.contains("\n  * 32      spill2smem  "), "{table}");
    assert!(
        table.contains("\nspill2smem: 1 moved, 1 refused (1 other)\n"),
        "{table}"
    );
    let (ok, json, err) = explain(&["--json", report], dir.path());
    assert!(ok, "{err}");
    let budgets: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .flat_map(|r| r["candidates"].as_array().cloned().unwrap_or_default())
        .map(|c| c["budget"].clone())
        .filter(|b| b["spill2smem"] == true)
        .collect();
    assert_eq!(budgets.len(), 1, "{json}");
    assert!(!json.contains("spill_to_shared"), "{json}");
}

#[test]
fn explain_a_report_and_a_failed_compile() {
    let Some(_) = nvcc() else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    // A report written by a build explains the same as explaining the source.
    let report = dir.path().join("r.jsonl");
    let src = repo.join("examples/kernels/walk.cu");
    let status = common::orion()
        .current_dir(dir.path())
        .args(["-c", "-arch=sm_90"])
        .arg(&src)
        .args(["-o", "w.o"])
        .env("NVCC_ORION_REPORT", &report)
        .env("NVCC_ORION_CACHE", dir.path().join("cache"))
        .status()
        .unwrap();
    assert!(status.success());
    // The same kernels under adapt: variants embedded, how the cubin was assembled.
    let adapt = dir.path().join("adapt.jsonl");
    let status = Command::new(env!("CARGO_BIN_EXE_nvcc-orion"))
        .current_dir(dir.path())
        .args(["-c", "-arch=sm_90"])
        .arg(&src)
        .args(["-o", "adapt.o"])
        .env("NVCC_ORION_REPORT", &adapt)
        .env("NVCC_ORION_CACHE", dir.path().join("cache"))
        .env("NVCC_ORION", "adapt")
        .status()
        .unwrap();
    assert!(status.success());
    // Every line the tuner wrote reads through the report's schema (what `explain` and the
    // generator read with) and writes back with the same fields in the same order and the
    // same values: one definition of each field. (Values compare as read: serde_json reads
    // a float to within its last bit, `112564.79999999999` may write back as `112564.8`.)
    let written =
        std::fs::read_to_string(&report).unwrap() + &std::fs::read_to_string(&adapt).unwrap();
    assert!(
        written.contains("\"variants\"") && written.contains("\"unit\""),
        "{written}"
    );
    let keys = |line: &str| -> Vec<String> {
        line.split('"')
            .collect::<Vec<_>>()
            .windows(2)
            .filter(|w| w[1].starts_with(':'))
            .map(|w| w[0].to_string())
            .collect()
    };
    for line in written.lines() {
        let read = nvcc_orion_schema::Line::parse(line).unwrap();
        assert!(
            read.kernel().is_some_and(|r| !r.candidates.is_empty()),
            "{line}"
        );
        let back = serde_json::to_string(&read).unwrap();
        assert_eq!(keys(&back), keys(line));
        let value = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        assert_eq!(value(&back), value(line));
    }
    // A line whose field does not read is an error that names the file, the line and why.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        format!("{}{{\"kernel\":\"k\",\"chosen\":\"first\"}}\n", written),
    )
    .unwrap();
    let (ok, _, err) = explain(&[bad.to_str().unwrap()], dir.path());
    assert!(
        !ok && err.contains(&format!(
            "bad.jsonl: line {}: invalid type",
            written.lines().count() + 1
        )),
        "{err}"
    );
    let (ok, from_report, _) = explain(&[report.to_str().unwrap()], dir.path());
    assert!(ok);
    // A plain build keeps no cubins: the page has the tables and charts, and says why the
    // code views are missing.
    let (ok, _, err) = explain(&[report.to_str().unwrap(), "--html=p.html"], dir.path());
    assert!(ok, "{err}");
    let page = std::fs::read_to_string(dir.path().join("p.html")).unwrap();
    assert!(page.contains("<svg class=\"occupancy\""));
    assert!(
        page.contains("no code views: the report does not name the cubins"),
        "{page}"
    );
    let (_, from_source, _) = explain(&[src.to_str().unwrap(), "-arch=sm_90"], dir.path());
    assert_eq!(from_report, from_source);
    // The object that build wrote: the variant it holds (the tuned one), one candidate.
    let (ok, from_object, err) = explain(&["w.o"], dir.path());
    assert!(ok, "{err}");
    snapshot("explain_walk_object_sm90.txt", &from_object);
    let (ok, _, err) = explain(&["w.o", "--html"], dir.path());
    assert!(!ok && err.contains("--html needs a file name"), "{err}");
    // nvcc's own error, then one line of ours.
    let bad = dir.path().join("bad.cu");
    std::fs::write(&bad, "__global__ void k( { }\n").unwrap();
    let (ok, out, err) = explain(&[bad.to_str().unwrap(), "-arch=sm_90"], dir.path());
    assert!(!ok && out.is_empty());
    assert!(err.contains("error"), "{err}");
    assert!(
        err.contains("nvcc-orion: error: the compile failed"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// The page in a browser
// ---------------------------------------------------------------------------------------------

/// Debian's `chromium` (or `NVCC_ORION_CHROMIUM`); `None` (skip) outside CI. CI installs it
/// through `scripts/setup.sh` (`NVCC_ORION_SETUP_CHROMIUM=1`, set in `.ci/run`).
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("NVCC_ORION_CHROMIUM")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| {
            ["chromium", "chromium-browser", "google-chrome"]
                .iter()
                .find_map(|n| which::which(n).ok())
        });
    if found.is_none() {
        common::skip(
            "explain page",
            "no headless Chromium (NVCC_ORION_SETUP_CHROMIUM=1 scripts/setup.sh installs Debian's chromium)",
        );
    }
    found
}

/// Run headless Chromium on `page` with `extra` options (a fresh profile, nothing fetched:
/// the network is not there, and the page must not need it). (stdout, stderr, wall time)
fn chromium_run(bin: &Path, extra: &[String], page: &Path) -> (String, String, Duration) {
    chromium_at(bin, extra, &format!("file://{}", page.display()))
}

/// Headless Chromium on the address `url` with `extra` options.
fn chromium_at(bin: &Path, extra: &[String], url: &str) -> (String, String, Duration) {
    let profile = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let out = Command::new("timeout")
        .arg("120")
        .arg(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let wall = start.elapsed();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "chromium failed: {:?}\n{e}",
        out.status
    );
    (o, e, wall)
}

/// The value of attribute `name` on the first element that has it in `html`.
fn attr<'a>(html: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = html.find(&key)? + key.len();
    Some(&html[at..at + html[at..].find('"')?])
}

/// Script errors the page recorded (`<html data-errors>`) or that Chromium logged.
fn page_errors(dom: &str, log: &str) -> Vec<String> {
    let mut errors: Vec<String> = attr(dom, "data-errors")
        .into_iter()
        .map(String::from)
        .collect();
    errors.extend(
        log.lines()
            .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
            .map(String::from),
    );
    errors
}

fn read_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The occupancy cliffs the chart must mark: per block size, from the calculator.
fn expected_cliffs(r: &Value) -> usize {
    use nvcc_orion::predict::{Arch, KernelResources, Launch, SharedBytes, register_cliffs};
    let sm: u32 = r["arch"].as_str().unwrap()[3..].parse().unwrap();
    let arch = Arch::from_cc((sm / 10) as u8, (sm % 10) as u8).unwrap();
    let shared = r["candidates"][0]["static_shared"].as_u64().unwrap() as u32;
    let k = KernelResources::new(255, SharedBytes::FromCubin(shared));
    r["block_sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            register_cliffs(arch, &k, &Launch::new(t.as_u64().unwrap() as u32))
                .unwrap()
                .len()
        })
        .sum()
}

/// `explain --html` on a file with a rewritten kernel (s_chain_f32: spill2smem, proved)
/// and a refused one: the table (snapshot), the page's charts counted against the report,
/// then Chromium runs the page's script (no errors, listing rows drawn) and screenshots it.
#[test]
fn explain_html_page_in_chromium() {
    let Some(nvcc) = nvcc() else { return };
    let Some(chrome) = chromium() else { return };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    // A copy beside the outputs: the page (and the screenshot) name it `rewrite.cu`.
    let src = PathBuf::from("rewrite.cu");
    std::fs::copy(
        repo.join("tests/kernels/explain/rewrite.cu"),
        dir.path().join(&src),
    )
    .unwrap();
    let flags = [
        "-arch=sm_90",
        "--orion-force=spill2smem",
        "--orion-block-size=128",
    ];
    // The same build with its report and kept cubins: what the page must show.
    let report = dir.path().join("r.jsonl");
    let status = common::orion()
        .current_dir(dir.path())
        .arg("-c")
        .arg(&src)
        .args(flags)
        .args(["-o", "r.o"])
        .env("NVCC_ORION_REPORT", &report)
        .env("NVCC_ORION_KEEP_CUBINS", dir.path().join("kept"))
        .env("NVCC_ORION_CACHE", dir.path().join("cache"))
        .status()
        .unwrap();
    assert!(status.success());
    let records = read_records(&report);
    assert_eq!(records.len(), 2, "{records:?}");

    let page = dir.path().join("page.html");
    let mut args = vec![src.to_str().unwrap()];
    args.extend(flags);
    args.extend(["--html", page.to_str().unwrap()]);
    let (ok, table, err) = explain(&args, dir.path());
    assert!(ok, "{err}");
    snapshot("explain_rewrite_sm90.txt", &table);
    assert!(table.contains("proved\n"), "{table}");
    assert!(table.contains("rejected: "), "{table}");
    // The report (with its kept cubins) explains the same.
    let page2 = dir.path().join("page2.html");
    let (ok, table2, _) = explain(
        &[report.to_str().unwrap(), "--html", page2.to_str().unwrap()],
        dir.path(),
    );
    assert!(ok);
    assert_eq!(table, table2);

    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing to fetch.
    for fetch in ["src=\"http", "href=\"http", "url(http", "@import", "<link "] {
        assert!(!html.contains(fetch), "{fetch}");
    }
    // Chromium: the DOM after the page's script ran; the charts are counted in it.
    let (dom, log, _) = chromium_run(&chrome, &["--dump-dom".to_string()], &page);
    let errors = page_errors(&dom, &log);
    assert!(errors.is_empty(), "{errors:?}");
    let nvdisasm = common::toolkit_tool(&nvcc, "nvdisasm");
    let sections: Vec<&str> = dom.split("<section class=\"kernel\"").skip(1).collect();
    assert_eq!(sections.len(), records.len());
    // The kernel whose code changed comes first.
    assert!(sections[0].contains("s_chain_f32"));
    for sec in &sections {
        let r = records
            .iter()
            .find(|r| sec.contains(&format!("{}</h2>", r["kernel"].as_str().unwrap())))
            .unwrap();
        let kernel = r["kernel"].as_str().unwrap();
        let ncand = r["candidates"].as_array().unwrap().len();
        assert_eq!(
            sec.matches("<circle class=\"cand\"").count(),
            ncand,
            "{kernel}"
        );
        assert_eq!(
            sec.matches("<circle class=\"cliff\"").count(),
            expected_cliffs(r),
            "{kernel}"
        );
        let label = attr(sec, "class=\"chosen-label\"").map(|_| ());
        assert!(label.is_some() || sec.contains("class=\"chosen-label\""));
        let chosen_label = sec
            .split("class=\"chosen-label\"")
            .nth(1)
            .and_then(|t| t.split('>').nth(1))
            .and_then(|t| t.split('<').next())
            .unwrap();
        assert!(
            chosen_label.contains(&format!("{} registers", r["chosen_registers"])),
            "{kernel}: {chosen_label}"
        );
        // Register pressure: one point per instruction up to 1000 columns, before and after.
        let chosen = r["chosen"].as_u64().unwrap() as usize;
        let kept = r["cubins"]["candidates"][chosen].as_str().unwrap();
        let d = nvcc_orion::sass::decode::decode_file(&nvdisasm, Path::new(kept)).unwrap();
        let n = d
            .functions
            .iter()
            .find(|f| f.name == kernel)
            .unwrap()
            .instrs
            .len();
        let after = sec
            .split("<polyline class=\"live after\"")
            .nth(1)
            .expect("after line");
        let points: usize = attr(after, "data-points").unwrap().parse().unwrap();
        let coords = attr(after, "points").unwrap().split(' ').count();
        assert_eq!(points, coords);
        let rewritten = r["candidates"][chosen]["budget"]["spill2smem"] == true;
        if rewritten {
            // Before has fewer instructions (no prologue): the after line spans them all.
            assert_eq!(points, n.min(1000), "{kernel}");
            assert!(sec.contains("<polyline class=\"live before\""), "{kernel}");
            assert!(sec.contains("class=\"mark demoted\""), "{kernel}");
            assert!(sec.contains("class=\"mark local before\""), "{kernel}");
            assert!(sec.contains("changed by the rewrite"), "{kernel}");
            assert!(sec.contains("max live"), "{kernel}");
            assert!(sec.contains("<rect class=\"loop\""), "{kernel}");
        }
    }
    assert_eq!(
        records
            .iter()
            .filter(|r| r["verdict"]["proved"] == true)
            .count(),
        1
    );

    // The listings were drawn (rows in view only), then a screenshot.
    assert_eq!(attr(&dom, "data-rendered"), Some("2"), "{}", &dom[..500]);
    assert!(dom.matches("<div class=\"row").count() >= 20);
    assert!(dom.contains("<div class=\"row changed demoted"));
    assert!(dom.matches("<svg class=\"occupancy\"").count() == 2);
    let shot = dir.path().join("explain.png");
    let (_, log, _) = chromium_run(
        &chrome,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,2000".to_string(),
            "--hide-scrollbars".to_string(),
        ],
        &page,
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot: {e}\n{log}"));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{}",
        png.len()
    );
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(repo.join("docs/explain.png"), &png).unwrap();
    }
}

/// A kernel of about 50 000 instructions: one loop around a long unrolled body of FMAs over
/// 40 values, written as PTX (cicc takes many minutes over the same body in CUDA C++; ptxas
/// a few seconds).
fn big_kernel_ptx() -> String {
    const STATEMENTS: usize = 50_400;
    const VALUES: u64 = 40;
    let mut s = String::from(
        "// Generated by tests/explain.rs: a 50 000-instruction kernel for the page's size and speed.\n\
         .version 9.0\n.target sm_90\n.address_size 64\n\n\
         .visible .entry big_unrolled(.param .u64 in, .param .u64 out, .param .u32 n)\n{\n",
    );
    s += &format!(
        "    .reg .f32 %a<{VALUES}>;\n    .reg .b64 %rd<8>;\n    .reg .b32 %r<8>;\n    .reg .pred %p<2>;\n"
    );
    s += "    ld.param.u64 %rd1, [in];\n    ld.param.u64 %rd2, [out];\n    ld.param.u32 %r1, [n];\n\
          cvta.to.global.u64 %rd1, %rd1;\n    cvta.to.global.u64 %rd2, %rd2;\n\
          mov.u32 %r2, %tid.x;\n    mul.wide.u32 %rd3, %r2, 4;\n    add.u64 %rd4, %rd1, %rd3;\n";
    for k in 0..VALUES {
        s += &format!("    ld.global.f32 %a{k}, [%rd4+{}];\n", 1024 * k);
    }
    s += "    mov.u32 %r3, 0;\nLOOP:\n";
    let mut x: u64 = 12345;
    for _ in 0..STATEMENTS {
        x = (x * 1_103_515_245 + 12_345) % (1 << 31);
        let (d, p, q) = (x % VALUES, (x >> 8) % VALUES, (x >> 16) % VALUES);
        s += &format!("    fma.rn.f32 %a{d}, %a{p}, %a{q}, %a{d};\n");
    }
    s += "    add.u32 %r3, %r3, 1;\n    setp.lt.u32 %p1, %r3, %r1;\n    @%p1 bra LOOP;\n\
          add.u64 %rd5, %rd2, %rd3;\n";
    for k in 1..VALUES {
        s += &format!("    add.f32 %a0, %a0, %a{k};\n");
    }
    s += "    st.global.f32 [%rd5], %a0;\n    ret;\n}\n";
    s
}

/// The 50 000-instruction kernel's page: under 5 MB, rendered by Chromium in under 2 s (the
/// page's own `performance.now()` when its script is done, from navigation start). The cubin
/// is built once per source and toolkit, under `CARGO_TARGET_TMPDIR`.
#[test]
fn explain_html_of_a_50k_instruction_kernel() {
    let Some(nvcc) = nvcc() else { return };
    let Some(chrome) = chromium() else { return };
    let src = big_kernel_ptx();
    let h = common::fnv(src.as_bytes(), 0xcbf2_9ce4_8422_2325);
    let h = common::fnv(nvcc.to_string_lossy().as_bytes(), h);
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("explain-50k-{h:016x}"));
    std::fs::create_dir_all(&root).unwrap();
    let cubin = root.join("big.cubin");
    if !cubin.exists() {
        std::fs::write(root.join("big.ptx"), &src).unwrap();
        let tmp = root.join(format!("big.{}.cubin", std::process::id()));
        let status = Command::new(common::toolkit_tool(&nvcc, "ptxas"))
            .current_dir(&root)
            .args(["-arch=sm_90", "big.ptx", "-o"])
            .arg(&tmp)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::rename(&tmp, &cubin).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("big.html");
    let start = Instant::now();
    let (ok, table, err) = explain(
        &[cubin.to_str().unwrap(), "--html", page.to_str().unwrap()],
        dir.path(),
    );
    let explain_s = start.elapsed().as_secs_f64();
    assert!(ok, "{err}");
    assert!(table.contains("as built"), "{table}");
    let html = std::fs::read_to_string(&page).unwrap();
    let n: usize = attr(&html, "data-n").unwrap().parse().unwrap();
    assert!(n >= 50_000, "{n} instructions");
    assert!(html.len() < 5_000_000, "{} bytes", html.len());
    let (dom, log, wall) = chromium_run(&chrome, &["--dump-dom".to_string()], &page);
    let errors = page_errors(&dom, &log);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(attr(&dom, "data-rendered"), Some("1"));
    let ms: f64 = attr(&dom, "data-render-ms").unwrap().parse().unwrap();
    // Only the rows in view are DOM nodes.
    assert!(dom.matches("<div class=\"row").count() < 200);
    println!(
        "explain-50k: {n} instructions, page {} bytes, explain {explain_s:.2} s, \
         rendered at {ms:.0} ms (performance.now), chromium --dump-dom wall {:.2} s",
        html.len(),
        wall.as_secs_f64()
    );
    assert!(ms < 2000.0, "rendered at {ms} ms");
}

// ---------------------------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------------------------

/// `NVCC_ORION_VERBOSE=1`: a progress line for the variant builds on a terminal (rewritten in
/// place with `\r`), nothing of it when stderr is not one.
#[test]
fn progress_line_only_on_a_terminal() {
    let Some(_) = nvcc() else { return };
    let Ok(script) = which::which("script") else {
        assert!(std::env::var_os("CI").is_none(), "no `script` (util-linux)");
        common::skipped("", "no `script` to give the build a terminal");
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let src = repo.join("examples/kernels/walk.cu");
    let cmd = |cache: &str| {
        let mut c = common::orion();
        c.current_dir(dir.path())
            .args(["-c", "-arch=sm_90"])
            .arg(&src)
            .args(["-o", "w.o"])
            .env("NVCC_ORION_VERBOSE", "1")
            .env("NVCC_ORION_CACHE", dir.path().join(cache));
        c
    };
    let out = cmd("c1").output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("variant(s) built"), "{err}");
    assert!(
        !err.contains("variant 1/") && !err.contains('\r'),
        "{err:?}"
    );
    // The same under a terminal (`script` gives it a pseudo-terminal).
    let c = cmd("c2");
    let line = shell_words::join(
        std::iter::once(c.get_program().to_string_lossy().into_owned())
            .chain(c.get_args().map(|a| a.to_string_lossy().into_owned())),
    );
    let mut s = Command::new(script);
    s.current_dir(dir.path())
        .args(["-qec", &line, "/dev/null"])
        .env("NVCC_ORION_VERBOSE", "1")
        .env("NVCC_ORION_CACHE", dir.path().join("c2"));
    let out = s.output().unwrap();
    assert!(out.status.success());
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(tty.contains("\rnvcc-orion: sm_90: variant 1/"), "{tty:?}");
    assert!(tty.contains(" left): walk_features="), "{tty:?}");
    assert!(tty.contains("\r\x1b[K"), "{tty:?}");
    assert!(tty.contains("variant(s) built"), "{tty:?}");
}

// ---------------------------------------------------------------------------------------------
// A whole build: the project page
// ---------------------------------------------------------------------------------------------

/// Source file `f` of the generated project: 25 kernels of varied register pressure (4 to 64
/// live values), launch bounds (none, 32, 128, 256, 1024 threads) and static shared memory,
/// so that every limiter occurs. `edit` changes a few kernels (the "next build").
fn project_source(f: usize, edit: bool) -> String {
    let mut s =
        format!("// Generated by tests/explain.rs: file {f} of the 1,000-kernel project.\n");
    for k in 0..25 {
        let i = f * 25 + k;
        let mut vals = 4 + (i * 7 % 13) * 5;
        if edit && k.is_multiple_of(6) {
            vals += 12;
        }
        let bounds = match i % 5 {
            0 => "__launch_bounds__(256) ",
            1 => "__launch_bounds__(1024) ",
            2 => "__launch_bounds__(32) ",
            3 => "",
            _ => "__launch_bounds__(128) ",
        };
        let smem = if i.is_multiple_of(6) {
            256 * (8 + i % 40)
        } else {
            0
        };
        s += &format!(
            "extern \"C\" __global__ void {bounds}k{i}(const float *in, float *out, int n, int steps) {{\n\
             \x20   int t = blockIdx.x * blockDim.x + threadIdx.x;\n\
             \x20   float v[{vals}];\n\
             #pragma unroll\n\
             \x20   for (int j = 0; j < {vals}; ++j) v[j] = in[(size_t)j * n + t];\n\
             \x20   int p = t % n;\n\
             \x20   unsigned h = 0;\n"
        );
        // Every third kernel walks dependent loads while it holds its values (more warps
        // hide them: the tuner retunes such kernels); the others compute on them.
        if i % 3 == 1 {
            s += "    for (int s = 0; s < steps; ++s) {\n        p = ((const int *)in)[p];\n        h = h * 33u + (unsigned)p;\n    }\n";
        } else {
            s += &format!(
                "    for (int s = 0; s < steps; ++s) {{\n#pragma unroll\n        for (int j = 0; j < {vals}; ++j) v[j] = fmaf(v[j], v[(j + 1) % {vals}], v[(j + 3) % {vals}]);\n    }}\n"
            );
        }
        if smem > 0 {
            s += &format!(
                "    __shared__ float sh[{}];\n    sh[threadIdx.x % {0}] = v[0];\n    __syncthreads();\n    v[0] += sh[(threadIdx.x + 1) % {0}];\n",
                smem / 4
            );
        }
        s += &format!(
            "    float r = (float)(h & 0xffff);\n#pragma unroll\n    for (int j = 0; j < {vals}; ++j) r = fmaf(r, v[j], v[(j + 3) % {vals}]);\n    out[t] = r;\n}}\n"
        );
    }
    s
}

const PROJECT_FILES: usize = 10;
const PROJECT_ARCHES: [&str; 4] = ["75", "80", "86", "90"];

/// Compile `files` (named `src/f<N>.cu`) in `dir` through nvcc-orion for four architectures,
/// appending to `report`.
fn build_project(nvcc: &Path, dir: &Path, files: &[(usize, String)], report: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    for (f, text) in files {
        let src = format!("src/f{f}.cu");
        std::fs::write(dir.join(&src), text).unwrap();
        let mut cmd = common::without_our_settings(common::orion(), nvcc);
        cmd.current_dir(dir)
            .args(["-c", &src, "-o", &format!("f{f}.o")])
            .env("NVCC_ORION_REPORT", report)
            .env("NVCC_ORION_CACHE", dir.join("cache"));
        for a in PROJECT_ARCHES {
            cmd.arg(format!("-gencode=arch=compute_{a},code=sm_{a}"));
        }
        let out = cmd.output().unwrap();
        common::assert_ok(&out, &src);
    }
}

/// The project's reports, built once per generator and toolkit: `after.jsonl` (10 files, 25
/// kernels each, four architectures: 1,000 kernel records) and `before.jsonl`, the build
/// before two of the files were edited.
fn project_reports(nvcc: &Path) -> PathBuf {
    let sources: Vec<String> = (0..PROJECT_FILES)
        .flat_map(|f| [project_source(f, false), project_source(f, true)])
        .collect();
    let inputs: Vec<&[u8]> = sources.iter().map(|s| s.as_bytes()).collect();
    common::build_once("explain-project", nvcc, &inputs, |dir| {
        let before: Vec<(usize, String)> = (0..PROJECT_FILES)
            .map(|f| (f, project_source(f, false)))
            .collect();
        build_project(nvcc, dir, &before, &dir.join("before.jsonl"));
        // The next build recompiles the two edited files only; a report appends.
        std::fs::copy(dir.join("before.jsonl"), dir.join("after.jsonl")).unwrap();
        let edited: Vec<(usize, String)> = [3, 7]
            .iter()
            .map(|&f| (f, project_source(f, true)))
            .collect();
        build_project(nvcc, dir, &edited, &dir.join("after.jsonl"));
    })
}

/// The latest record of each kernel, architecture and file, as the page must count them.
fn latest(records: &[Value]) -> std::collections::BTreeMap<(String, String, String), Value> {
    records
        .iter()
        .map(|r| {
            (
                (
                    r["unit"].as_str().unwrap().to_string(),
                    r["arch"].as_str().unwrap().to_string(),
                    r["kernel"].as_str().unwrap().to_string(),
                ),
                r.clone(),
            )
        })
        .collect()
}

fn shipped(r: &Value) -> &Value {
    &r["candidates"][r["chosen"].as_u64().unwrap() as usize]
}

/// What limits the shipped candidate at any of the record's block sizes, from the occupancy
/// calculator, in the page's words (the SM's block slots run out for small blocks: "block
/// size").
fn limiters(r: &Value) -> std::collections::BTreeSet<&'static str> {
    use nvcc_orion::predict::{Arch, KernelResources, Launch, Limiter, SharedBytes, occupancy};
    let sm: u32 = r["arch"].as_str().unwrap()[3..].parse().unwrap();
    let arch = Arch::from_cc((sm / 10) as u8, (sm % 10) as u8).unwrap();
    let c = shipped(r);
    let k = KernelResources::new(
        c["registers"].as_u64().unwrap() as u32,
        SharedBytes::FromCubin(c["static_shared"].as_u64().unwrap() as u32),
    );
    let mut out = std::collections::BTreeSet::new();
    for t in r["block_sizes"].as_array().unwrap() {
        let o = occupancy(arch, &k, &Launch::new(t.as_u64().unwrap() as u32)).unwrap();
        for l in o.limiters.iter() {
            out.insert(match l {
                Limiter::Registers => "registers",
                Limiter::SharedMemory => "shared memory",
                Limiter::Blocks => "block size",
                Limiter::Warps => "warps",
                Limiter::Barriers => "barriers",
                Limiter::VirtualResources => "virtual resources",
            });
        }
    }
    out
}

/// `explain --project` on a 1,000-kernel report with the previous build's: the page renders
/// in Chromium without script errors, holds every kernel once, and its question filters
/// (`#q=...`) show exactly the kernels that spill, that are limited by registers, by shared
/// memory and by the block size, that kept ptxas's choice, and that changed since the last
/// build, each counted here from the records alone. Render time is printed
/// (`bench/results/explain.md`).
#[test]
fn explain_project_page_of_1000_kernels() {
    let Some(nvcc) = nvcc() else { return };
    let Some(chrome) = chromium() else { return };
    let reports = project_reports(&nvcc);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("project.html");
    let start = Instant::now();
    let (ok, summary, err) = explain(
        &[
            "--project",
            reports.join("after.jsonl").to_str().unwrap(),
            "--since",
            reports.join("before.jsonl").to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ],
        dir.path(),
    );
    let explain_s = start.elapsed().as_secs_f64();
    assert!(ok, "{err}");
    let after = latest(&read_records(&reports.join("after.jsonl")));
    let before = latest(&read_records(&reports.join("before.jsonl")));
    assert!(after.len() >= 1000, "{} kernels", after.len());
    assert!(
        summary.starts_with(&format!(
            "{} kernel(s) in {PROJECT_FILES} file(s) (sm_75, sm_80, sm_86, sm_90)",
            after.len()
        )),
        "{summary}"
    );
    // What the page must answer, from the records alone.
    let spilling = after
        .values()
        .filter(|r| shipped(r)["spill_instructions"].as_u64().unwrap() > 0)
        .count();
    let kept = after.values().filter(|r| r["chosen"] == 0).count();
    let changed = after
        .iter()
        .filter(|(k, r)| {
            let Some(b) = before.get(*k) else { return true };
            shipped(b)["registers"] != shipped(r)["registers"]
                || shipped(b)["spill_instructions"] != shipped(r)["spill_instructions"]
                || b["candidates"][0]["registers"] != r["candidates"][0]["registers"]
                || b["chosen"] != r["chosen"]
                || shipped(b)["warps_per_sm"] != shipped(r)["warps_per_sm"]
                || b["block_sizes"] != r["block_sizes"]
        })
        .count();
    assert!(spilling > 0 && kept > 0 && changed > 0 && kept < after.len());
    assert!(
        summary.contains(&format!(", {spilling} spill, ")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "changed since {} ({changed}):",
            reports.join("before.jsonl").display()
        )),
        "{summary}"
    );

    let html = std::fs::read_to_string(&page).unwrap();
    for fetch in ["src=\"http", "href=\"http", "url(http", "@import", "<link "] {
        assert!(!html.contains(fetch), "{fetch}");
    }
    let (dom, log, wall) = chromium_run(&chrome, &["--dump-dom".to_string()], &page);
    let errors = page_errors(&dom, &log);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        attr(&dom, "data-rendered"),
        Some(after.len().to_string().as_str())
    );
    assert_eq!(dom.matches("<tr data-spills=").count(), after.len());
    let ms: f64 = attr(&dom, "data-render-ms").unwrap().parse().unwrap();
    // Each question, asked through the address: the rows left visible.
    let limited = |what: &str| {
        after
            .values()
            .filter(|r| limiters(r).contains(what))
            .count()
    };
    let by_limiter: Vec<(String, usize)> = ["registers", "shared memory", "block size", "warps"]
        .iter()
        .map(|l| (format!("limiter:{l}"), limited(l)))
        .collect();
    for (l, n) in &by_limiter {
        assert!(*n > 0, "no kernel {l}");
    }
    let mut questions = vec![
        ("spills".to_string(), spilling),
        ("kept".to_string(), kept),
        ("retuned".to_string(), after.len() - kept),
        ("changed".to_string(), changed),
    ];
    questions.extend(by_limiter);
    let url = format!("file://{}", page.display());
    for (q, want) in &questions {
        let (dom, log, _) =
            chromium_run_url(&chrome, &format!("{url}#q={}", q.replace(' ', "%20")));
        let errors = page_errors(&dom, &log);
        assert!(errors.is_empty(), "{q}: {errors:?}");
        assert_eq!(
            attr(&dom, "data-shown"),
            Some(want.to_string().as_str()),
            "#q={q}"
        );
    }
    // Sorted by registers, most first: the first visible row has the most.
    let (dom, _, _) = chromium_run_url(&chrome, &format!("{url}#sort=-regs"));
    let first = dom.split("<tr data-spills=").nth(1).unwrap();
    let most = after
        .values()
        .map(|r| shipped(r)["registers"].as_u64().unwrap())
        .max()
        .unwrap();
    let cell = first.split("<td data-v=\"").nth(1).unwrap();
    assert!(
        cell.starts_with(&format!("{most}\"")),
        "{}",
        &first[..300.min(first.len())]
    );
    println!(
        "explain-project: {} kernels, page {} bytes, explain --project {explain_s:.2} s, \
         rendered at {ms:.0} ms (performance.now), chromium --dump-dom wall {:.2} s",
        after.len(),
        html.len(),
        wall.as_secs_f64()
    );
    assert!(ms < 3000.0, "rendered at {ms} ms");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        let shot = dir.path().join("project.png");
        chromium_run(
            &chrome,
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1500,1100".to_string(),
                "--hide-scrollbars".to_string(),
            ],
            &page,
        );
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(&shot, repo.join("docs/explain-project.png")).unwrap();
    }
}

/// [`chromium_run`] of an address (a fragment asks the page a question), dumping the DOM.
fn chromium_run_url(bin: &Path, url: &str) -> (String, String, Duration) {
    chromium_at(bin, &["--dump-dom".to_string()], url)
}
