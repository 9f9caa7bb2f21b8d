//! The project page (`explain --project --html`): one self-contained file led by one overview
//! table of every kernel of the build (file, architecture, registers, spills, occupancy and
//! its limiter, launch bounds, what the tuner tried, what shipped and why, how the cubin was
//! assembled, what changed since the previous report), sortable and filterable by its script,
//! with buttons for the questions a team asks, then the totals per limiter, reason and file,
//! the compiles passed to nvcc untuned and the changes.
//!
//! Rows are plain HTML (a 1,000-kernel page is about 1 MB); the script only sorts and hides
//! them. A fragment in the address applies a filter as the page opens (`#q=spills`,
//! `#q=limiter:registers`, `#sort=regs`), so a link can answer one question.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::changes::{Change, percents};
use super::project::{Project, Totals};
use super::row::Row;
use super::svg::esc;

const CSS: &str = include_str!("page.css");
const PROJECT_CSS: &str = include_str!("project.css");
const JS: &str = include_str!("project.js");

/// Records script errors on `<html data-errors>` (as the per-kernel page does).
const ERROR_HOOK: &str = "window.addEventListener('error',function(e){var d=document.documentElement;d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+(e.message||'error')+';');});";

/// The page for `what` (the report or build folder), with the changes since `since` when a
/// second report was given.
pub fn page(what: &str, p: &Project, since: Option<(&str, &[Change])>) -> String {
    let mut s = String::with_capacity(1 << 20);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>nvcc-orion: {}</title><script>{ERROR_HOOK}</script><style>{CSS}{PROJECT_CSS}</style></head><body>",
        esc(what)
    );
    let t = p.totals();
    let _ = write!(
        s,
        "<h1>nvcc-orion: the build's kernels</h1><p class=\"note\">{}: {} kernel(s) in {} file(s) ({}); {} retuned, {} spill, {} below 50% occupancy. Registers and spills read ptxas's own → what ships; occupancy is the calculator's per block size; the limiter is what stops one more block fitting on an SM.</p>",
        esc(what),
        t.kernels,
        p.files(),
        esc(&p.arches().join(", ")),
        t.retuned,
        t.spilling,
        t.low_occupancy
    );
    let changed: BTreeMap<(String, String, String), &Change> = since
        .map(|(_, c)| {
            c.iter()
                .map(|c| ((c.file.clone(), c.arch.clone(), c.kernel.clone()), c))
                .collect()
        })
        .unwrap_or_default();
    questions(&mut s, p, since.map(|(_, c)| c.len()));
    overview(&mut s, p, since.map(|_| &changed));
    totals_section(&mut s, "Totals per limiter", "limiter", &p.per_limiter());
    s.push_str("<h2>Why: what ships</h2><table class=\"cands\"><thead><tr><th class=\"l\">reason</th><th>kernels</th></tr></thead><tbody>");
    for (why, n) in p.per_why() {
        let _ = write!(
            s,
            "<tr><td class=\"l\"><a href=\"#q=why:{0}\">{0}</a></td><td>{n}</td></tr>",
            esc(why)
        );
    }
    s.push_str("</tbody></table>");
    totals_section(&mut s, "Totals per file", "file", &p.per_file());
    if !p.passed.is_empty() {
        s.push_str("<h2 id=\"passed\">Passed to nvcc untuned</h2><table class=\"cands\"><thead><tr><th class=\"l\">inputs</th><th class=\"l\">why</th></tr></thead><tbody>");
        for x in &p.passed {
            let _ = write!(
                s,
                "<tr class=\"passed\"><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                esc(&x.inputs),
                esc(&x.reason)
            );
        }
        s.push_str("</tbody></table>");
    }
    if let Some((name, changes)) = since {
        let _ = write!(
            s,
            "<h2 id=\"changes\">Changed since {} ({})</h2>",
            esc(name),
            changes.len()
        );
        if changes.is_empty() {
            s.push_str("<p class=\"note\">nothing changed</p>");
        } else {
            s.push_str("<table class=\"cands\"><thead><tr><th class=\"l\">file</th><th class=\"l\">arch</th><th class=\"l\">kernel</th><th class=\"l\">change</th></tr></thead><tbody>");
            for c in changes {
                let _ = write!(
                    s,
                    "<tr class=\"change\"><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\" title=\"{}\">{}</td><td class=\"l\">{}</td></tr>",
                    esc(&c.file),
                    esc(&c.arch),
                    esc(&c.kernel),
                    esc(&c.name),
                    esc(&c.what)
                );
            }
            s.push_str("</tbody></table>");
        }
    }
    let assembled: Vec<(&str, usize)> = assembly_counts(p);
    if !assembled.is_empty() {
        s.push_str("<h2>How the tuned cubins were assembled</h2><p class=\"note\">");
        let parts: Vec<String> = assembled
            .iter()
            .map(|(h, n)| format!("{n} kernel(s) {h}"))
            .collect();
        s.push_str(&esc(&parts.join(", ")));
        s.push_str("; each passed the assembly check</p>");
    }
    let _ = writeln!(s, "<script>{JS}</script></body></html>");
    s
}

/// The buttons that answer the usual questions, each with its count.
fn questions(s: &mut String, p: &Project, changes: Option<usize>) {
    let count = |f: &dyn Fn(&Row) -> bool| p.rows.iter().filter(|r| f(r)).count();
    let mut q: Vec<(String, String, usize)> = vec![
        ("".into(), "all kernels".into(), p.rows.len()),
        ("spills".into(), "spill".into(), count(&|r| r.spills > 0)),
    ];
    for l in ["registers", "shared memory", "block size", "warps"] {
        q.push((
            format!("limiter:{l}"),
            format!("limited by {l}"),
            count(&|r| r.limiter.split(['/', '+']).any(|w| w.trim() == l)),
        ));
    }
    q.push(("retuned".into(), "retuned".into(), count(&|r| r.retuned)));
    q.push((
        "kept".into(),
        "ptxas's choice kept".into(),
        count(&|r| !r.retuned),
    ));
    if let Some(n) = changes {
        q.push(("changed".into(), "changed since the last build".into(), n));
    }
    s.push_str("<div class=\"questions\">");
    for (key, label, n) in q {
        let _ = write!(
            s,
            "<button type=\"button\" data-q=\"{}\">{} <b>{n}</b></button>",
            esc(&key),
            esc(&label)
        );
    }
    s.push_str("</div><div class=\"filters\"><input type=\"search\" id=\"filter\" placeholder=\"filter: file, kernel, limiter, reason…\" size=\"40\"> <span id=\"shown\"></span></div>");
}

const COLUMNS: &[(&str, &str, bool)] = &[
    ("file", "file", false),
    ("kernel", "kernel", false),
    ("arch", "arch", false),
    ("regs", "registers", true),
    ("spills", "spills", true),
    ("occ", "occupancy", true),
    ("limiter", "limiter", false),
    ("block", "block size", false),
    ("tried", "tried", false),
    ("ships", "ships", false),
    ("why", "why", false),
    ("assembly", "cubin", false),
    ("change", "change", false),
];

/// The overview table; the change column only with a previous build to compare with.
fn overview(
    s: &mut String,
    p: &Project,
    changed: Option<&BTreeMap<(String, String, String), &Change>>,
) {
    s.push_str("<table id=\"kernels\" class=\"cands overview\"><thead><tr>");
    let columns = &COLUMNS[..COLUMNS.len() - usize::from(changed.is_none())];
    for (key, label, numeric) in columns {
        let _ = write!(
            s,
            "<th data-col=\"{key}\"{}>{label}</th>",
            if *numeric { "" } else { " class=\"l\"" }
        );
    }
    s.push_str("</tr></thead><tbody>");
    for r in &p.rows {
        let change = changed
            .and_then(|c| c.get(&r.key()))
            .map_or("", |c| c.what.as_str());
        let _ = write!(
            s,
            "<tr data-spills=\"{}\" data-retuned=\"{}\" data-limiter=\"{}\" data-why=\"{}\" data-changed=\"{}\"{}>",
            r.spills,
            u8::from(r.retuned),
            esc(&r.limiter),
            esc(r.why),
            u8::from(!change.is_empty()),
            if r.retuned { " class=\"retuned\"" } else { "" }
        );
        let _ = write!(
            s,
            "<td class=\"l\">{}</td><td class=\"l\" title=\"{}\">{}</td><td class=\"l\">{}</td>",
            esc(&r.file),
            esc(&r.kernel),
            esc(&r.name),
            esc(&r.arch)
        );
        let arrow = |a: u64, b: u64| {
            if a == b {
                a.to_string()
            } else {
                format!("{a} → {b}")
            }
        };
        let _ = write!(
            s,
            "<td data-v=\"{}\">{}</td><td data-v=\"{}\"{}>{}</td><td data-v=\"{}\">{}</td>",
            r.regs,
            arrow(r.ptxas_regs, r.regs),
            r.spills,
            if r.spills > 0 { " class=\"spill\"" } else { "" },
            arrow(r.ptxas_spills, r.spills),
            r.occupancy.iter().min().copied().unwrap_or(0),
            percents(&r.occupancy)
        );
        let _ = write!(
            s,
            "<td class=\"l\">{}</td><td class=\"l\">{} ({})</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\" title=\"{}\">{}</td><td class=\"l\">{}</td>",
            esc(&r.limiter),
            esc(&r.blocks),
            esc(&r.bounds),
            esc(&r.tried),
            esc(&r.chose),
            esc(&r.reason),
            esc(r.why),
            esc(&r.assembly),
        );
        if changed.is_some() {
            let _ = write!(s, "<td class=\"l\">{}</td>", esc(change));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
}

fn totals_section(s: &mut String, title: &str, key: &str, rows: &[(String, Totals)]) {
    let _ = write!(
        s,
        "<h2>{title}</h2><table class=\"cands\"><thead><tr><th class=\"l\">{key}</th><th>kernels</th><th>retuned</th><th>spill</th><th>occupancy &lt; 50%</th></tr></thead><tbody>"
    );
    for (k, t) in rows {
        let _ = write!(
            s,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(k),
            t.kernels,
            t.retuned,
            t.spilling,
            t.low_occupancy
        );
    }
    s.push_str("</tbody></table>");
}

fn assembly_counts(p: &Project) -> Vec<(&str, usize)> {
    let mut m: BTreeMap<&str, usize> = BTreeMap::new();
    for r in p.rows.iter().filter(|r| !r.assembly.is_empty()) {
        *m.entry(r.assembly.as_str()).or_default() += 1;
    }
    m.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn page_holds_every_kernel_once_and_fetches_nothing() {
        let recs: Vec<_> = (0..3)
            .map(|i| {
                json!({"arch": "sm_90", "kernel": format!("k{i}<b>"), "unit": "a&b.cu", "block_sizes": [256], "block_from": "launch-bounds",
                    "candidates": [{"budget": null, "registers": 64, "spill_instructions": i, "static_shared": 0, "warps_per_sm": [32]}],
                    "pruned": [], "chosen": 0, "reason": "no lower budget raises occupancy", "assembly": "spliced"})
            })
            .collect();
        let p = Project::from_values(&recs);
        let html = page("r.jsonl", &p, Some(("old.jsonl", &[])));
        assert_eq!(html.matches("<tr data-spills=").count(), 3);
        assert!(html.contains("data-col=\"change\""));
        assert!(!page("r.jsonl", &p, None).contains("data-col=\"change\""));
        assert!(html.contains("k1&lt;b&gt;") && html.contains("a&amp;b.cu"));
        assert!(html.contains("data-q=\"spills\">spill <b>2</b>"));
        assert!(html.contains("Changed since old.jsonl (0)"));
        assert!(html.contains("3 kernel(s) spliced"));
        for fetch in ["src=\"http", "href=\"http", "url(http", "@import", "<link "] {
            assert!(!html.contains(fetch), "{fetch}");
        }
    }
}
