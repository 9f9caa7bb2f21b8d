//! The import graph of `src/` runs one way: down the floors, and never in a circle.
//!
//! This test reads the source (no toolkit, no build products) and collects every reference to
//! another part of the crate: `use crate::…`, `use super::…`, `use self::…`, a `use` of a child
//! module, and `crate::x::…` / `super::…` paths written inline. Re-exports (`pub use
//! child::Item` in a `mod.rs`) are followed to the file that defines the item, so
//! `super::Item` counts as an arrow to the sibling that owns `Item`.
//!
//! Two checks:
//! * **Module level.** Each top-level module sits on a floor of [`FLOORS`]; a module may use
//!   only modules on floors below its own (not its own floor, not above). The module graph has
//!   no circle.
//! * **File level.** Inside each module directory the files (sub-modules) form a graph of
//!   their own; it has no circle (`a.rs` → `b.rs` → `a.rs`). A file's arrows to its parent
//!   (`mod.rs`, the facade that declares the shared types) and the parent's arrows to its
//!   children are not part of this graph.
//!
//! Every violation is printed with its file and line. Known violations that another branch
//! of issue 19 removes are listed in [`PENDING`]; an entry that no longer occurs fails the
//! test, so the list only shrinks. `LAYERS_DUMP=1` prints every module and file arrow found.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::rust_text;

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use rust_text::{blank, walk};

/// The floors, top first. A module may use the modules on the floors below its own and no
/// others. Modules on one floor are independent of each other.
const FLOORS: &[(&[&str], &str)] = &[
    (
        &["commands"],
        "the binary's subcommands (`nvcc-orion debug …`): may use everything",
    ),
    (
        &["driver", "report"],
        "driver: replays nvcc's steps and hands each ptxas step to `tune`; report: renders tuning results",
    ),
    (
        &["tune"],
        "budgets, variants, selection: runs the rewrites and the checker",
    ),
    (
        &["transform", "verify", "audit"],
        "the rewrites, the checker that proves them and the assembly check: independent, so no check inherits the blind spot of what it checks",
    ),
    (&["predict"], "occupancy/latency model, the stall predictor"),
    (
        &["analysis"],
        "CFG, loops and loop weights, liveness, sub-function sections",
    ),
    (&["sass"], "SASS IR: decode, encode, relayout"),
    (
        &["cubin", "container"],
        "ELF cubins; fatbins, archives, host objects",
    ),
    (&["farm", "cli"], "remote build farm; nvcc's command line"),
    (
        &[
            "settings",
            "toolkit",
            "profile",
            "arch",
            "process",
            "jobs",
            "timings",
            "atomic_file",
        ],
        "leaves: user settings, the CUDA toolkit, measured profiles, per-architecture facts, running one step, job slots, where a build's time goes, writing a file whole",
    ),
];

/// Known violations that a parallel branch of issue 19 removes; the integrator deletes each
/// entry when that branch is merged. `(from, to, branch)`: module names (`tune`) for
/// module-level arrows, `module/file` paths for file-level ones.
const PENDING: &[(&str, &str, &str)] = &[];

/// One reference from a file to another part of the crate.
#[derive(Debug, Clone)]
struct Arrow {
    /// The module the referring file defines (`["cubin", "edit"]`).
    from: Vec<String>,
    /// The module of the file the reference lands in, after following re-exports.
    to: Vec<String>,
    file: PathBuf,
    line: usize,
}

#[test]
fn arrows_point_down_and_never_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let crate_ = Crate::read(&src);
    let arrows = crate_.arrows();
    assert!(
        arrows.len() > 100,
        "the scanner found only {} arrows: it no longer understands the source",
        arrows.len()
    );

    let mut violations: Vec<String> = Vec::new();
    let mut pending_seen: BTreeSet<(String, String)> = BTreeSet::new();
    let is_pending = |from: &str, to: &str| PENDING.iter().any(|(f, t, _)| *f == from && *t == to);

    // Module level: every top-level module is on a floor; arrows go strictly down.
    let floor_of: BTreeMap<&str, usize> = FLOORS
        .iter()
        .enumerate()
        .flat_map(|(i, (mods, _))| mods.iter().map(move |m| (*m, i)))
        .collect();
    for top in crate_.top_modules() {
        if !floor_of.contains_key(top.as_str()) {
            violations.push(format!(
                "module `{top}` is on no floor: add it to FLOORS in tests/house/layers.rs"
            ));
        }
    }
    let mut module_edges: BTreeMap<(String, String), Vec<&Arrow>> = BTreeMap::new();
    for a in &arrows {
        let (Some(f), Some(t)) = (a.from.first(), a.to.first()) else {
            continue;
        };
        if f != t {
            module_edges
                .entry((f.clone(), t.clone()))
                .or_default()
                .push(a);
        }
    }
    if std::env::var_os("LAYERS_DUMP").is_some() {
        for ((f, t), at) in &module_edges {
            eprintln!("M {f} -> {t} ({})", at.len());
        }
    }
    for ((f, t), at) in &module_edges {
        let (Some(&ff), Some(&ft)) = (floor_of.get(f.as_str()), floor_of.get(t.as_str())) else {
            continue;
        };
        if ft > ff {
            continue;
        }
        if is_pending(f, t) {
            pending_seen.insert((f.clone(), t.clone()));
            continue;
        }
        let how = if ft == ff { "sideways" } else { "upward" };
        violations.push(format!("{how} arrow {f} → {t}:{}", places(at)));
    }
    let kept: Vec<(&String, &String)> = module_edges
        .keys()
        .filter(|(f, t)| !is_pending(f, t))
        .map(|(f, t)| (f, t))
        .collect();
    for scc in circles(&kept) {
        violations.push(format!("circle between modules: {}", scc.join(" ↔ ")));
    }

    // File level: inside each directory, the sibling files form an acyclic graph.
    let mut file_edges: BTreeMap<(String, String), Vec<&Arrow>> = BTreeMap::new();
    for a in &arrows {
        let common = a.from.iter().zip(&a.to).take_while(|(x, y)| x == y).count();
        if common == 0 || a.from.len() == common || a.to.len() == common {
            continue; // another top-level module (above), or an ancestor/descendant
        }
        let f = a.from[..=common].join("/");
        let t = a.to[..=common].join("/");
        file_edges.entry((f, t)).or_default().push(a);
    }
    if std::env::var_os("LAYERS_DUMP").is_some() {
        for ((f, t), at) in &file_edges {
            eprintln!("F {f} -> {t} ({})", at.len());
        }
    }
    let mut kept: Vec<(&String, &String)> = Vec::new();
    for (f, t) in file_edges.keys() {
        if is_pending(f, t) {
            pending_seen.insert((f.clone(), t.clone()));
        } else {
            kept.push((f, t));
        }
    }
    for scc in circles(&kept) {
        let mut lines = String::new();
        for (f, t) in &kept {
            if scc.contains(f) && scc.contains(t) {
                lines.push_str(&format!(
                    "\n    {f} → {t}:{}",
                    places(&file_edges[&((*f).clone(), (*t).clone())])
                ));
            }
        }
        violations.push(format!("circle between files: {}{lines}", scc.join(" ↔ ")));
    }

    for (f, t, branch) in PENDING {
        if !pending_seen.contains(&(f.to_string(), t.to_string())) {
            violations.push(format!(
                "PENDING lists {f} → {t} ({branch}) but that arrow is gone: remove the entry"
            ));
        }
    }
    assert!(
        violations.is_empty(),
        "{} layering violation(s):\n{}",
        violations.len(),
        violations.join("\n")
    );
}

/// Checks that must not share code with what they check: each may use only the listed
/// modules of the crate (the leaves that find and run toolkit programs), so a bug in the
/// assembler cannot hide in the checker's reading of the result.
const INDEPENDENT: &[(&str, &[&str], &str)] = &[(
    "audit",
    &["toolkit", "process", "jobs", "atomic_file"],
    "the assembly check reads cubins only through cuobjdump and nvdisasm, and `.debug_frame` \
     through the `object` and `gimli` crates (on the build's job slots; its verdicts are \
     written whole)",
)];

#[test]
fn checks_import_nothing_they_check() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let crate_ = Crate::read(&src);
    let mut violations = Vec::new();
    for (checker, allowed, why) in INDEPENDENT {
        assert!(
            crate_.top_modules().contains(*checker),
            "INDEPENDENT names `{checker}`, which is no module of the crate"
        );
        for a in crate_.arrows() {
            let (Some(f), Some(t)) = (a.from.first(), a.to.first()) else {
                continue;
            };
            if f == checker && t != checker && !allowed.contains(&t.as_str()) {
                violations.push(format!(
                    "{}:{}: `{checker}` uses `{t}` ({why})",
                    a.file.display(),
                    a.line
                ));
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// The modules docs/DESIGN.md's floors table (§Floors) puts on each floor: its rows
/// `| N | \`module\` | ... |`, N counted from the top as in [`FLOORS`].
fn design_floors(design: &str) -> BTreeMap<usize, BTreeSet<String>> {
    let section = design
        .split("\n## ")
        .find(|s| s.starts_with("Floors\n"))
        .expect("docs/DESIGN.md has a `## Floors` section");
    let mut floors: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, floor, module, ..] = cells[..] else {
            continue;
        };
        let (Ok(floor), Some(module)) = (
            floor.parse::<usize>(),
            module.strip_prefix('`').and_then(|m| m.strip_suffix('`')),
        ) else {
            continue;
        };
        floors.entry(floor).or_default().insert(module.to_string());
    }
    floors
}

/// The floors the docs show are the ones this test enforces, and the layout table of
/// docs/usage.md names every module (room) of `src/`.
#[test]
fn the_docs_show_these_floors_and_every_room() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = fs::read_to_string(root.join("docs/DESIGN.md")).unwrap();
    let shown = design_floors(&design);
    let enforced: BTreeMap<usize, BTreeSet<String>> = FLOORS
        .iter()
        .enumerate()
        .map(|(i, (mods, _))| (i + 1, mods.iter().map(|m| m.to_string()).collect()))
        .collect();
    assert_eq!(
        shown, enforced,
        "docs/DESIGN.md §Floors (left) disagrees with FLOORS in tests/layers.rs (right)"
    );
    let usage = fs::read_to_string(root.join("docs/usage.md")).unwrap();
    let row = usage
        .lines()
        .find(|l| l.starts_with("| `src/` |"))
        .expect("docs/usage.md's layout table has a `src/` row");
    let crate_ = Crate::read(&root.join("src"));
    let missing: Vec<String> = crate_
        .top_modules()
        .into_iter()
        .filter(|m| !row.contains(&format!("`{m}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/usage.md's `src/` row does not name {missing:?}"
    );
}

#[test]
fn the_floors_table_reads_as_the_docs_write_it() {
    let doc = "# x\n\n## Floors\n\n| floor | module | owns |\n|---|---|---|\n| 1 | `a` | x |\n| 2 | `b` | y |\n| 2 | `c` | z |\n| side | `r/` | w |\n\n## Next\n\n| 3 | `d` | v |\n";
    let got = design_floors(doc);
    let want: BTreeMap<usize, BTreeSet<String>> = [(1, vec!["a"]), (2, vec!["b", "c"])]
        .into_iter()
        .map(|(f, m)| (f, m.into_iter().map(String::from).collect()))
        .collect();
    assert_eq!(got, want);
}

/// The circles of a crate's import graph: between its top-level modules, and between the
/// files of each module (as [`arrows_point_down_and_never_circle`] reads them), in words.
fn circles_of(crate_: &Crate) -> Vec<String> {
    let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
    for a in crate_.arrows() {
        let common = a.from.iter().zip(&a.to).take_while(|(x, y)| x == y).count();
        if a.from.len() == common || a.to.len() == common {
            continue; // an ancestor or descendant: the facade and its children
        }
        edges.insert((a.from[..=common].join("/"), a.to[..=common].join("/")));
    }
    let kept: Vec<(&String, &String)> = edges.iter().map(|(f, t)| (f, t)).collect();
    circles(&kept).into_iter().map(|c| c.join(" ↔ ")).collect()
}

/// No circles anywhere else either: the helper crates (the generator, the cargo helper, the
/// report's schema), the integration tests' shared helpers, and the scripts (one naming
/// another it runs or sources).
#[test]
fn no_circles_in_the_helper_crates_test_helpers_or_scripts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .collect();
    dirs.push(root.join("tests/common"));
    dirs.sort();
    for dir in &dirs {
        let crate_ = Crate::read(dir);
        found.extend(
            circles_of(&crate_)
                .into_iter()
                .map(|c| format!("{}: {c}", dir.display())),
        );
    }
    found.extend(script_circles(&root.join("scripts")));
    assert!(found.is_empty(), "circles:\n{}", found.join("\n"));
}

/// Circles among the scripts: `a.sh` naming `scripts/b.sh` (to run or source it) is an arrow.
fn script_circles(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut edges: Vec<(String, String)> = Vec::new();
    for from in &names {
        let text = fs::read_to_string(dir.join(from)).unwrap_or_default();
        for to in &names {
            let named = [
                format!("scripts/{to}"),
                format!("/{to}\""),
                format!("/{to} "),
            ];
            if to != from && named.iter().any(|n| text.contains(n.as_str())) {
                edges.push((from.clone(), to.clone()));
            }
        }
    }
    let kept: Vec<(&String, &String)> = edges.iter().map(|(f, t)| (f, t)).collect();
    circles(&kept)
        .into_iter()
        .map(|c| format!("scripts: {}", c.join(" ↔ ")))
        .collect()
}

#[test]
fn a_circle_between_two_files_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("lib.rs"), "pub mod a; pub mod b; pub mod c;").unwrap();
    fs::write(d.join("a.rs"), "use crate::b::B; pub struct A;").unwrap();
    fs::write(d.join("b.rs"), "use crate::a::A; pub struct B;").unwrap();
    fs::write(d.join("c.rs"), "use crate::a::A;").unwrap();
    assert_eq!(circles_of(&Crate::read(d)), ["a ↔ b"]);
    fs::write(d.join("b.rs"), "pub struct B;").unwrap();
    assert!(circles_of(&Crate::read(d)).is_empty());
}

#[test]
fn the_scanner_reads_use_trees_reexports_and_inline_paths() {
    let file = |module: &[&str], text: &str| File {
        module: module.iter().map(|s| s.to_string()).collect(),
        path: PathBuf::from(module.join("/")),
        text: blank(text),
    };
    let crate_ = {
        let files = vec![
            file(&[], "pub mod a; pub mod b;"),
            file(&["a"], "pub mod x; pub mod y; pub use x::Thing;"),
            file(&["a", "x"], "pub struct Thing;"),
            file(
                &["a", "y"],
                "use super::{Thing, x::{self}};\n// use crate::b::C;\nfn f() { let _ = \"crate::b::D\"; crate::b::e(); }",
            ),
            file(&["b"], "mod t { use super::super::a::y; }"),
        ];
        let mut modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
        for f in &files {
            modules.extend(scopes(f).into_iter().map(|(m, _)| m));
        }
        let mut c = Crate {
            files,
            modules,
            reexports: BTreeMap::new(),
        };
        let mut r: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for f in &c.files {
            for u in uses(f) {
                for (path, name) in c.expand(&u) {
                    if let Some(name) = name {
                        r.entry(u.scope.clone()).or_default().insert(name, path);
                    }
                }
            }
        }
        c.reexports = r;
        c
    };
    let got: BTreeSet<(String, String, usize)> = crate_
        .arrows()
        .into_iter()
        .map(|a| (a.from.join("/"), a.to.join("/"), a.line))
        .collect();
    let want: BTreeSet<(String, String, usize)> = [
        ("a", "a/x", 1),   // pub use x::Thing
        ("a/y", "a/x", 1), // super::Thing through the re-export, and super::x
        ("a/y", "b", 3),   // crate::b::e(), not the comment or the string
        ("b", "a/y", 1),   // super::super from an inline module
    ]
    .into_iter()
    .map(|(f, t, l)| (f.to_string(), t.to_string(), l))
    .collect();
    assert_eq!(got, want);
}

/// `file:line` of each reference, one per line.
fn places(at: &[&Arrow]) -> String {
    let mut seen = BTreeSet::new();
    for a in at {
        seen.insert(format!("{}:{}", a.file.display(), a.line));
    }
    seen.iter().map(|s| format!("\n      {s}")).collect()
}

/// The strongly connected components with more than one node.
fn circles(edges: &[(&String, &String)]) -> Vec<Vec<String>> {
    let mut g = DiGraph::<String, ()>::new();
    let mut ix = BTreeMap::new();
    for (f, t) in edges {
        for n in [f, t] {
            if !ix.contains_key(*n) {
                ix.insert((*n).clone(), g.add_node((*n).clone()));
            }
        }
        g.add_edge(ix[*f], ix[*t], ());
    }
    let mut out: Vec<Vec<String>> = tarjan_scc(&g)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut names: Vec<String> = c.iter().map(|&n| g[n].clone()).collect();
            names.sort();
            names
        })
        .collect();
    out.sort();
    out
}

/// A source file: the module it defines and its text with comments and literals blanked.
struct File {
    module: Vec<String>,
    path: PathBuf,
    text: String,
}

struct Crate {
    files: Vec<File>,
    /// Every module path, from files and inline `mod x { … }` blocks.
    modules: BTreeSet<Vec<String>>,
    /// `module path → (name → target path)` from its `use` declarations (re-exports and
    /// the imports its children can name through `super::`).
    reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut paths = Vec::new();
        walk(src, &mut paths);
        paths.sort();
        let mut files = Vec::new();
        for path in paths {
            let rel = path.strip_prefix(src).unwrap();
            if rel == Path::new("main.rs") {
                continue; // the binary: a user of the library, not part of it
            }
            let mut module: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|l| l == "mod" || l == "lib") {
                module.pop();
            }
            let raw = fs::read_to_string(&path).unwrap();
            files.push(File {
                module,
                path: Path::new("src").join(rel),
                text: blank(&raw),
            });
        }
        let mut modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
        for f in &files {
            for (m, _) in scopes(f) {
                modules.insert(m);
            }
        }
        let mut crate_ = Crate {
            files,
            modules,
            reexports: BTreeMap::new(),
        };
        let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for f in &crate_.files {
            // Private imports count too: a child can name its parent's `use`d items.
            for u in uses(f) {
                for (path, alias) in crate_.expand(&u) {
                    if let (Some(name), Some(last)) = (alias, path.last())
                        && last != "*"
                        && last != "self"
                    {
                        reexports
                            .entry(u.scope.clone())
                            .or_default()
                            .insert(name, path);
                    }
                }
            }
        }
        crate_.reexports = reexports;
        crate_
    }

    fn top_modules(&self) -> BTreeSet<String> {
        self.modules
            .iter()
            .filter(|m| m.len() == 1)
            .map(|m| m[0].clone())
            .collect()
    }

    /// The absolute paths a `use` names, each with the name it binds (`None` for globs).
    fn expand(&self, u: &Use) -> Vec<(Vec<String>, Option<String>)> {
        let mut out = Vec::new();
        for (segs, alias) in &u.leaves {
            let Some(abs) = self.absolute(&u.scope, segs) else {
                continue;
            };
            let name = match alias {
                Some(a) => Some(a.clone()),
                None => match abs.last().map(String::as_str) {
                    Some("*") => None,
                    Some("self") => abs.get(abs.len().wrapping_sub(2)).cloned(),
                    other => other.map(str::to_string),
                },
            };
            let abs: Vec<String> = abs.into_iter().filter(|s| s != "self").collect();
            out.push((abs, name));
        }
        out
    }

    /// Resolves `crate::`, `super::`, `self::` and child-module paths written in `scope`;
    /// `None` for paths into other crates.
    fn absolute(&self, scope: &[String], segs: &[String]) -> Option<Vec<String>> {
        let first = segs.first()?;
        let (mut base, rest): (Vec<String>, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &segs[1..]),
            "self" => (scope.to_vec(), &segs[1..]),
            "super" => {
                let mut b = scope.to_vec();
                let mut i = 0;
                while segs.get(i).is_some_and(|s| s == "super") {
                    b.pop();
                    i += 1;
                }
                (b, &segs[i..])
            }
            _ => {
                let mut child = scope.to_vec();
                child.push(first.clone());
                if !self.modules.contains(&child) {
                    return None;
                }
                (scope.to_vec(), segs)
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file-defined module an absolute path lands in, following re-exports.
    fn target(&self, path: &[String]) -> Vec<String> {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let n = (0..=path.len())
                .rev()
                .find(|&n| self.modules.contains(&path[..n]))
                .unwrap_or(0);
            let redirect = path
                .get(n)
                .and_then(|item| self.reexports.get(&path[..n]).and_then(|r| r.get(item)));
            match redirect {
                Some(to) if to.as_slice() != &path[..=n] => {
                    let mut next = to.clone();
                    next.extend(path[n + 1..].iter().cloned());
                    path = next;
                }
                _ => return self.file_module(&path[..n]),
            }
        }
        self.file_module(&path)
    }

    /// The module of the file that holds `module` (inline modules belong to their file).
    fn file_module(&self, module: &[String]) -> Vec<String> {
        let mut m = module.to_vec();
        while !m.is_empty() && !self.files.iter().any(|f| f.module == m) {
            m.pop();
        }
        m
    }

    fn arrows(&self) -> Vec<Arrow> {
        let mut out = Vec::new();
        for f in &self.files {
            let mut push = |abs: Vec<String>, line: usize| {
                let to = self.target(&abs);
                if to != f.module && !to.is_empty() {
                    out.push(Arrow {
                        from: f.module.clone(),
                        to,
                        file: f.path.clone(),
                        line,
                    });
                }
            };
            for u in uses(f) {
                for (abs, _) in self.expand(&u) {
                    push(abs, u.line);
                }
            }
            for (scope, segs, line) in inline_paths(f) {
                if let Some(abs) = self.absolute(&scope, &segs) {
                    push(abs, line);
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
    PathSep,
}

/// Identifiers, `::` and single punctuation, each with its line.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let word = word.strip_prefix("r#").map(str::to_string).unwrap_or(word);
            out.push((Tok::Ident(word), line));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// The module scope of each token: the file's module plus the inline `mod x { … }` blocks
/// around it. Returns `(scope, token index range)` for each inline module.
fn scopes(f: &File) -> Vec<(Vec<String>, std::ops::Range<usize>)> {
    let toks = tokens(&f.text);
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<String>, usize, usize)> = Vec::new(); // (scope, start, depth)
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Ident(w) if w == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    let mut scope = stack
                        .last()
                        .map(|s| s.0.clone())
                        .unwrap_or_else(|| f.module.clone());
                    scope.push(name.clone());
                    depth += 1;
                    stack.push((scope, i + 3, depth));
                    i += 3;
                    continue;
                }
            }
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if stack.last().is_some_and(|s| s.2 == depth) {
                    let (scope, start, _) = stack.pop().unwrap();
                    out.push((scope, start..i));
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The innermost scope of token `i`.
fn scope_at(f: &File, inline: &[(Vec<String>, std::ops::Range<usize>)], i: usize) -> Vec<String> {
    inline
        .iter()
        .filter(|(_, r)| r.contains(&i))
        .max_by_key(|(s, _)| s.len())
        .map(|(s, _)| s.clone())
        .unwrap_or_else(|| f.module.clone())
}

/// One `use` declaration, flattened into its leaves.
struct Use {
    scope: Vec<String>,
    line: usize,
    /// Each leaf path (`crate::a::B`, `super::c::*`) with its `as` alias.
    leaves: Vec<(Vec<String>, Option<String>)>,
}

fn uses(f: &File) -> Vec<Use> {
    let toks = tokens(&f.text);
    let inline = scopes(f);
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if toks[i].0 != Tok::Ident("use".into()) {
            continue;
        }
        let mut leaves = Vec::new();
        let mut j = i + 1;
        use_tree(&toks, &mut j, Vec::new(), &mut leaves);
        out.push(Use {
            scope: scope_at(f, &inline, i),
            line: toks[i].1,
            leaves,
        });
    }
    out
}

/// Parses one use tree at `toks[*j]` with the path `prefix` above it.
fn use_tree(
    toks: &[(Tok, usize)],
    j: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut path = prefix;
    loop {
        match toks.get(*j).map(|t| &t.0) {
            Some(Tok::PathSep) => *j += 1,
            Some(Tok::Ident(w)) => {
                path.push(w.clone());
                *j += 1;
                if toks.get(*j).map(|t| &t.0) != Some(&Tok::PathSep) {
                    let alias = if toks.get(*j).map(|t| &t.0) == Some(&Tok::Ident("as".into())) {
                        *j += 2;
                        match toks.get(*j - 1).map(|t| &t.0) {
                            Some(Tok::Ident(a)) => Some(a.clone()),
                            _ => None,
                        }
                    } else {
                        None
                    };
                    out.push((path, alias));
                    return;
                }
            }
            Some(Tok::Punct('*')) => {
                *j += 1;
                path.push("*".into());
                out.push((path, None));
                return;
            }
            Some(Tok::Punct('{')) => {
                *j += 1;
                loop {
                    match toks.get(*j).map(|t| &t.0) {
                        Some(Tok::Punct('}')) => {
                            *j += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *j += 1,
                        None => return,
                        _ => use_tree(toks, j, path.clone(), out),
                    }
                }
            }
            _ => return,
        }
    }
}

/// Paths written outside `use`: `crate::a::b`, `super::x`, `self::y` (not `$crate`).
fn inline_paths(f: &File) -> Vec<(Vec<String>, Vec<String>, usize)> {
    let toks = tokens(&f.text);
    let inline = scopes(f);
    let mut in_use = vec![false; toks.len()];
    let mut i = 0;
    while i < toks.len() {
        if toks[i].0 == Tok::Ident("use".into()) {
            while i < toks.len() && toks[i].0 != Tok::Punct(';') {
                in_use[i] = true;
                i += 1;
            }
        }
        i += 1;
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let starts = matches!(&toks[i].0, Tok::Ident(w) if w == "crate" || w == "super" || w == "self")
            && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep)
            && !in_use[i]
            && !(i >= 1 && (toks[i - 1].0 == Tok::PathSep || toks[i - 1].0 == Tok::Punct('$')));
        if !starts {
            i += 1;
            continue;
        }
        let line = toks[i].1;
        let mut segs = Vec::new();
        let mut j = i;
        while let Some((Tok::Ident(w), _)) = toks.get(j) {
            segs.push(w.clone());
            if toks.get(j + 1).map(|t| &t.0) != Some(&Tok::PathSep) {
                break;
            }
            j += 2;
        }
        out.push((scope_at(f, &inline, i), segs, line));
        i = j + 1;
    }
    out
}
