//! Every command block (the ```sh fences) of README.md and then of docs/usage.md runs, in
//! that order as one sequence, from the repository root, each in its own `bash -euo pipefail`
//! from this test's environment (which `scripts/test.sh` sets up with
//! `eval "$(scripts/setup.sh)"`). Later blocks use what earlier ones built, as a reader
//! following the README and then the usage page would. `scripts/test.sh` is the suite itself:
//! instead of running it, the test checks that `.ci/run` does; `bench/gpu/` commands are run
//! by `tests/builds/gpu_harness.rs`.
//!
//! Without the toolkit the test prints a skip line and passes, unless `CI` is set.
//!
//! The design documents are checked here too, without the toolkit: every `docs/X.md §Section`
//! the code cites names a heading of that page, nothing cites the old design, format notes
//! or papers outside the repository, and every link of README.md and `docs/*.md` resolves
//! (files and `#anchors`).

use crate::common;

use std::path::{Path, PathBuf};

/// The pages whose command blocks run, in order: the README's tour, then the usage page,
/// whose blocks use what the README's built.
const PAGES: [&str; 2] = ["README.md", "docs/usage.md"];

/// The ```sh blocks of `text` (the page `page`), in order (indented fences inside list items
/// included).
fn sh_blocks(page: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<(usize, Vec<String>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut current {
            None if trimmed == "```sh" => current = Some((indent, Vec::new())),
            Some(_) if trimmed == "```" => {
                if let Some((_, lines)) = current.take() {
                    out.push(lines.join("\n"));
                }
            }
            Some((ind, lines)) => lines.push(line.get(*ind..).unwrap_or(trimmed).to_string()),
            None => {}
        }
    }
    assert!(current.is_none(), "{page}: an unclosed ```sh block");
    out
}

#[test]
fn blocks_are_found() {
    let b = sh_blocks(
        "t.md",
        "a\n```sh\nx \\\n  y\n```\n- item\n\n  ```sh\n  z\n  ```\n```rust\nr\n```\n",
    );
    assert_eq!(b, vec!["x \\\n  y".to_string(), "z".to_string()]);
}

#[test]
fn every_readme_command_runs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    if common::find_nvcc().is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "readme: no nvcc found and CI is set; run `eval \"$(scripts/setup.sh)\"`"
        );
        common::skipped("", "no nvcc found; run `eval \"$(scripts/setup.sh)\"`");
        return;
    }
    // The README's commands name `target/release/nvcc-orion`: it must be this build.
    let named = repo.join("target/release/nvcc-orion");
    let this = PathBuf::from(env!("CARGO_BIN_EXE_nvcc-orion"));
    if std::fs::canonicalize(&named).ok() != std::fs::canonicalize(&this).ok() {
        let msg = format!(
            "readme: {} is not the binary under test ({}): run the suite in release with the default target folder (scripts/test.sh)",
            named.display(),
            this.display()
        );
        if std::env::var_os("CI").is_some() {
            panic!("{msg}");
        }
        common::skipped("", &msg);
        return;
    }
    // Each block with the page it comes from, README's first.
    let mut blocks: Vec<(&str, String)> = Vec::new();
    for page in PAGES {
        let text = std::fs::read_to_string(repo.join(page)).expect(page);
        let found = sh_blocks(page, &text);
        // The README's tour and the usage page's reference each show commands.
        let least = if page == "README.md" { 5 } else { 10 };
        assert!(found.len() >= least, "{page}: {} blocks", found.len());
        blocks.extend(found.into_iter().map(|b| (page, b)));
    }
    assert!(blocks.len() >= 20, "{} blocks", blocks.len());
    let ci_run = std::fs::read_to_string(repo.join(".ci/run")).unwrap();
    let have = |tool: &str| which::which(tool).is_ok();
    let mut ran = 0;
    // Blocks of bench/gpu commands only (tests/builds/gpu_harness.rs runs them).
    let mut gpu_blocks = 0;
    for (page, block) in &blocks {
        // The test suite itself: what CI runs.
        let script: Vec<&str> = block
            .lines()
            .filter(|l| {
                let test_sh = l.trim_start().starts_with("scripts/test.sh");
                if test_sh {
                    assert!(
                        ci_run.contains("scripts/test.sh"),
                        ".ci/run does not run scripts/test.sh"
                    );
                }
                // The GPU harness's two commands: tests/builds/gpu_harness.rs runs both (the build
                // takes minutes; run.sh needs a GPU and is checked for its no-GPU exit).
                let gpu = l.trim_start().starts_with("bench/gpu/");
                if gpu {
                    let harness = std::fs::read_to_string(repo.join("tests/builds/gpu_harness.rs"))
                        .expect("tests/builds/gpu_harness.rs");
                    assert!(harness.contains("build.sh") && harness.contains("run.sh"));
                }
                !test_sh && !gpu
            })
            .collect();
        let script = script.join("\n");
        if script.trim().is_empty() {
            gpu_blocks += usize::from(block.trim_start().starts_with("bench/gpu/"));
            continue;
        }
        if script.contains("ccache") && !have("ccache") {
            assert!(
                std::env::var_os("CI").is_none(),
                "readme: ccache missing under CI (scripts/setup.sh installs it with NVCC_ORION_SETUP_CCACHE=1)"
            );
            common::skipped(&format!("{page} block"), "no ccache");
            eprintln!("{script}");
            continue;
        }
        let mut cmd = common::command("bash");
        cmd.args(["-euo", "pipefail", "-c", &script])
            .current_dir(repo)
            .env_remove("CUDACXX")
            .env_remove("CUDAARCHS");
        if script.contains("examples/cargo") {
            // The cargo example's own test builds in this folder: share its build, and not
            // the outer cargo's settings.
            cmd.env("CARGO_TARGET_DIR", repo.join("target/example-cargo"))
                .env_remove("CARGO_MAKEFLAGS")
                .env_remove("RUSTFLAGS");
        }
        let out = cmd.output().expect("run bash");
        assert!(
            out.status.success(),
            "{page} block failed ({}):\n{script}\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(
        ran + gpu_blocks + 1 >= blocks.len() && gpu_blocks == 2,
        "{ran} of {} blocks ran ({gpu_blocks} of bench/gpu)",
        blocks.len()
    );
    // What the blocks said they would make.
    let target = repo.join("target");
    for f in [
        "walk.o",
        "walk-shim.o",
        "walk-jit.cubin",
        "cmake-example/particles_demo",
        "cmake-example-compiler/particles_demo",
        "make-example/walk.o",
        "walk-smem.cubin",
        "walk-regdem.cubin",
        "explain.html",
        "project.html",
        "walk-adapt.o",
    ] {
        assert!(target.join(f).is_file(), "target/{f} missing");
    }
    let report = std::fs::read_to_string(target.join("cmake-report.jsonl")).unwrap();
    assert!(report.contains("chain_step"), "{report}");
}

// The design documents (`docs/*.md`): what the code cites of them exists, and their links
// resolve. No toolkit needed.

/// Files under the repository's code folders whose citations are checked: sources, tests,
/// scripts and the build inputs next to them (`target` folders skipped).
/// Each readable file of [`cited_files`]: its path relative to the repository, and its text.
fn cited_texts(repo: &Path) -> Vec<(String, String)> {
    cited_files(repo)
        .into_iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(&file).ok()?;
            let at = file
                .strip_prefix(repo)
                .unwrap_or(&file)
                .display()
                .to_string();
            Some((at, text))
        })
        .collect()
}

fn cited_files(repo: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&p, out);
                }
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("rs" | "sh" | "py" | "cpp" | "h" | "cu" | "cmake" | "toml" | "md")
            ) {
                out.push(p);
            }
        }
    }
    let mut out = vec![repo.join("README.md")];
    for d in [
        "src", "tests", "scripts", "benches", "bench", "examples", "cmake", "shims", "fuzz",
    ] {
        walk(&repo.join(d), &mut out);
    }
    // This file names the patterns it looks for.
    out.retain(|p| !p.ends_with("tests/house/readme.rs"));
    out
}

/// The headings of a markdown text (outside code fences), without their `#`s.
fn headings(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && t.starts_with('#') {
            let h = t.trim_start_matches('#');
            if h.starts_with(' ') {
                out.push(h.trim().to_string());
            }
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, spaces to `-`, punctuation other than `-` and
/// `_` dropped; a repeated heading gets `-1`, `-2`, ...
fn anchors(text: &str) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    headings(text)
        .iter()
        .map(|h| {
            let slug: String = h
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect();
            let n = seen.entry(slug.clone()).or_insert(0);
            let a = if *n == 0 {
                slug.clone()
            } else {
                format!("{slug}-{n}")
            };
            *n += 1;
            a
        })
        .collect()
}

/// Every `docs/NAME.md` a line cites, with the text after its `§` if it names a section.
/// The section name may run on to the next comment line, which is joined (comment markers
/// removed).
fn citations(text: &str) -> Vec<(usize, String, Option<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let uncomment = |l: &str| -> String {
        let t = l.trim_start();
        let t = t
            .strip_prefix("//!")
            .or_else(|| t.strip_prefix("///"))
            .or_else(|| t.strip_prefix("//"))
            .or_else(|| t.strip_prefix('#'))
            .unwrap_or(t);
        t.trim().to_string()
    };
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let mut rest = *line;
        while let Some(at) = rest.find("docs/") {
            let after = &rest[at + 5..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                .collect();
            rest = &after[name.len()..];
            // A citation at the end of a sentence: `docs/sass.md.`
            let name = name.trim_end_matches('.');
            if !name.ends_with(".md") {
                continue;
            }
            let section = rest.trim_start_matches(' ').strip_prefix('§').map(|s| {
                let next = lines.get(i + 1).map(|l| uncomment(l)).unwrap_or_default();
                format!("{} {next}", s.trim_end())
            });
            out.push((i + 1, name.to_string(), section));
        }
    }
    out
}

#[test]
fn citations_are_found() {
    let c = citations(
        "//! see docs/DESIGN.md §Spill area\n//! placement, and docs/sass.md.\n// docs/x.png",
    );
    assert_eq!(
        c,
        vec![
            (
                1,
                "DESIGN.md".to_string(),
                Some("Spill area placement, and docs/sass.md.".to_string())
            ),
            (2, "sass.md".to_string(), None),
        ]
    );
    assert_eq!(
        anchors("# A b\n```\n# not\n```\n## ICS'14\n### A b\n"),
        ["a-b", "ics14", "a-b-1"]
    );
}

#[test]
fn docs_sections_cited_in_the_code_exist() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    let mut cited = 0;
    for (at, text) in cited_texts(repo) {
        for (line, name, section) in citations(&text) {
            cited += 1;
            let Ok(doc) = std::fs::read_to_string(repo.join("docs").join(&name)) else {
                bad.push(format!("{at}:{line}: docs/{name} does not exist"));
                continue;
            };
            if let Some(s) = section {
                let found = headings(&doc).iter().any(|h| {
                    s.strip_prefix(h.as_str())
                        .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric()))
                });
                if !found {
                    bad.push(format!(
                        "{at}:{line}: no section of docs/{name} begins §{s}"
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(cited >= 20, "only {cited} citations of docs/ found");
}

#[test]
fn nothing_cites_the_design_outside_the_repository() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The design, the format notes and the papers used to live outside the repository;
    // the code cites docs/DESIGN.md, docs/sass.md and docs/papers.md instead.
    let outside = [
        "reference/",
        "papers/0",
        "notes-00",
        "sass_formats.md",
        "ecosystem.md",
        "oracles.md",
    ];
    let mut bad = Vec::new();
    for (at, text) in cited_texts(repo) {
        for (i, line) in text.lines().enumerate() {
            let design = line
                .match_indices("DESIGN.md")
                .any(|(p, _)| !line[..p].ends_with("docs/"));
            if design || outside.iter().any(|o| line.contains(o)) {
                bad.push(format!("{at}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(bad.is_empty(), "cite docs/ instead:\n{}", bad.join("\n"));
}

#[test]
fn docs_links_resolve() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![repo.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    for name in ["DESIGN.md", "sass.md", "papers.md", "usage.md"] {
        assert!(
            docs.contains(&repo.join("docs").join(name)),
            "docs/{name} missing"
        );
    }
    pages.extend(docs);
    let mut bad = Vec::new();
    let mut links = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let at = page.strip_prefix(repo).unwrap().display().to_string();
        let mut fenced = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            for (p, _) in line.match_indices("](") {
                let Some(end) = line[p + 2..].find(')') else {
                    continue;
                };
                let target = &line[p + 2..p + 2 + end];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                links += 1;
                let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
                let dest = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(file)
                };
                if !dest.exists() {
                    bad.push(format!("{at}:{}: {target}: no such file", i + 1));
                    continue;
                }
                if !anchor.is_empty() {
                    let t = std::fs::read_to_string(&dest).unwrap_or_default();
                    if !anchors(&t).iter().any(|a| a == anchor) {
                        bad.push(format!("{at}:{}: {target}: no such heading", i + 1));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(links >= 10, "only {links} links checked");
}
