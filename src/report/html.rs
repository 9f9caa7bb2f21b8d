//! The `explain --html` page: one self-contained file (inline CSS, SVG and script, nothing
//! fetched), with per kernel the candidates table, the occupancy chart, the register
//! pressure along the program, the CFG with its loops, and the SASS listing with the
//! changed instructions highlighted.
//!
//! Everything that scales with the kernel's size is bounded here (charts aggregate, see
//! [`super::svg`]) or drawn lazily by the script: the listing is JSON that the script turns
//! into rows only for the lines in view.

use std::fmt::Write;

use nvcc_orion_schema::Record;

use super::svg::{cfg_chart, esc, occupancy_chart, pressure_chart};
use super::view::KernelView;
use super::{budget, checker, cycles, list, rejected};

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// Records script errors on `<html data-errors>`, so that a headless browser's DOM dump
/// shows them.
const ERROR_HOOK: &str = "window.addEventListener('error',function(e){var d=document.documentElement;d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+(e.message||'error')+';');});";

/// One kernel on the page: its record, and its code view or why there is none.
pub struct Kernel<'a> {
    pub(crate) record: &'a Record,
    pub(crate) view: Result<KernelView, String>,
}

/// The whole page; `what` names what was explained (the file).
pub fn page(what: &str, kernels: &[Kernel<'_>]) -> String {
    let mut s = String::with_capacity(1 << 16);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>nvcc-orion explain: {}</title><script>{ERROR_HOOK}</script><style>{CSS}</style></head><body>",
        esc(what)
    );
    let _ = write!(
        s,
        "<h1>nvcc-orion explain</h1><p class=\"note\">{}: {} kernel variant choice(s). Cycles are the static model's per-warp prediction; occupancy is the calculator's, per block size.</p><nav>",
        esc(what),
        kernels.len()
    );
    for (i, k) in kernels.iter().enumerate() {
        let _ = write!(
            s,
            "<a href=\"#k{i}\">{} {}</a>",
            esc(&k.record.arch),
            esc(&crate::cubin::symbols::short_name(&k.record.kernel))
        );
    }
    s.push_str("</nav>");
    for (i, k) in kernels.iter().enumerate() {
        section(&mut s, i, k);
    }
    let _ = writeln!(s, "<script>{JS}</script></body></html>");
    s
}

fn section(s: &mut String, i: usize, k: &Kernel<'_>) {
    let r = k.record;
    let _ = write!(
        s,
        "<section class=\"kernel\" id=\"k{i}\"><h2>{} {}</h2><p class=\"note\">block size {} ({})</p>",
        esc(&r.arch),
        esc(&r.kernel),
        esc(&list(&r.block_sizes)),
        esc(r.block_from.name()),
    );
    table(s, r);
    let _ = write!(
        s,
        "<p class=\"reason\"><b>chose {} registers:</b> {}</p>",
        r.chosen_registers,
        esc(&r.reason)
    );
    if let Some(t) = &r.transform {
        let _ = write!(s, "<p class=\"note\">{}</p>", esc(t));
    }
    if let Some(line) = super::assembly::line(r) {
        let _ = write!(s, "<p class=\"note\">{}</p>", esc(line.trim()));
    }
    let memory = super::memory::lines(r);
    if !memory.is_empty() {
        let text: Vec<String> = memory.iter().map(|l| esc(l.trim())).collect();
        let _ = write!(s, "<pre class=\"note memory\">{}</pre>", text.join("\n"));
    }
    let _ = write!(
        s,
        "<div class=\"charts\"><figure><figcaption>Occupancy against register budget</figcaption>{}<div class=\"legend\"><span>lines: warps/SM per block size ({}), dots on them: cliffs</span><span>red rings: candidates</span><span>green: chosen</span></div></figure></div>",
        occupancy_chart(r),
        esc(&list(&r.block_sizes))
    );
    match &k.view {
        Err(why) => {
            let _ = write!(
                s,
                "<p class=\"note\">no code views: {}</p></section>",
                esc(why)
            );
        }
        Ok(v) => {
            code_views(s, i, v);
            s.push_str("</section>");
        }
    }
}

fn table(s: &mut String, r: &Record) {
    s.push_str("<table class=\"cands\"><thead><tr><th></th><th class=\"l\">budget</th><th class=\"l\">kind</th><th>registers</th><th>spills</th><th>frame</th><th>shared</th><th>warps/SM</th><th>occupancy</th><th>cycles/warp</th><th class=\"l\">checker</th></tr></thead><tbody>");
    let max_warps = super::svg::arch_of(&r.arch).map(|a| a.params().max_warps_per_sm());
    let chosen = r.chosen;
    for (i, c) in r.candidates.iter().enumerate() {
        let (b, kind) = budget(r, c.budget.as_ref());
        let _ = write!(
            s,
            "<tr{}><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            if i == chosen { " class=\"chosen\"" } else { "" },
            if i == chosen { "★" } else { "" },
            esc(&b),
            esc(kind),
            c.registers,
            c.spill_instructions,
            c.frame_bytes,
            c.static_shared,
            esc(&list(&c.warps_per_sm)),
            occupancy(&c.warps_per_sm, max_warps),
            esc(&cycles(&c.cycles_per_warp)),
            esc(&checker(r, c)),
        );
    }
    if let Some((regs, why)) = rejected(r) {
        let _ = write!(
            s,
            "<tr class=\"rejected\"><td></td><td class=\"l\">{regs}</td><td class=\"l\">spill2smem</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td class=\"l\">rejected: {}</td></tr>",
            esc(&why)
        );
    }
    s.push_str("</tbody></table>");
    let pruned: Vec<String> = r
        .pruned
        .iter()
        .map(|p| format!("{} {}", p.budget.regs, super::pruned::at_best(p)))
        .collect();
    if !pruned.is_empty() {
        let _ = write!(
            s,
            "<p class=\"note\">not built: {}</p>",
            esc(&pruned.join(", "))
        );
    }
    if let Some(line) = super::pruned::kept_line(r) {
        let _ = write!(
            s,
            "<p class=\"note\">why ptxas's budget stays: {}</p>",
            esc(&line)
        );
    }
}

/// `50%/25%`: warps per SM over the SM's warp slots, per block size.
fn occupancy(warps: &[u32], max: Option<u32>) -> String {
    let Some(max) = max.filter(|&m| m > 0) else {
        return "-".to_string();
    };
    warps
        .iter()
        .map(|&w| format!("{:.0}%", 100.0 * f64::from(w) / f64::from(max)))
        .collect::<Vec<_>>()
        .join("/")
}

fn code_views(s: &mut String, i: usize, v: &KernelView) {
    let before = v.before.as_ref().map_or(String::new(), |b| {
        format!(
            "<span><i style=\"background:#999\"></i>{}</span>",
            esc(&b.label)
        )
    });
    let _ = write!(
        s,
        "<figure><figcaption>Register pressure along the program</figcaption><div class=\"legend\">{before}<span><i style=\"background:#1f77b4\"></i>{}</span><span><i style=\"background:#ffbf00\"></i>loops</span><span><i style=\"background:#d62728\"></i>local (spill) accesses</span>{}<span>click to show the instruction in the listing</span></div>{}</figure>",
        esc(&v.after.label),
        if v.rewritten {
            "<span><i style=\"background:#2ca02c\"></i>shared accesses the rewrite put in their place</span>"
        } else {
            ""
        },
        pressure_chart(v)
    );
    let _ = write!(
        s,
        "<div class=\"charts\"><figure><figcaption>Control-flow graph ({} blocks, {} loops)</figcaption><div class=\"cfgbox\">{}</div></figure><div><h3>Loops (hottest first)</h3>",
        v.blocks.len(),
        v.loops.len(),
        cfg_chart(v)
    );
    if v.loops.is_empty() {
        s.push_str("<p class=\"note\">no loops</p>");
    } else {
        s.push_str("<table class=\"cands\"><thead><tr><th class=\"l\">header</th><th>depth</th><th>blocks</th><th>instructions</th><th>local accesses</th></tr></thead><tbody>");
        let mut order: Vec<&super::view::Loop> = v.loops.iter().collect();
        // Hot: deepest first (the stall model weighs a loop's body by its depth), then largest.
        order.sort_by_key(|l| (std::cmp::Reverse(l.depth), std::cmp::Reverse(l.instrs)));
        for l in order.iter().take(50) {
            let local = v
                .after
                .local
                .iter()
                .filter(|&&x| x >= l.first && x <= l.last)
                .count();
            let _ = write!(
                s,
                "<tr><td class=\"l\">{:#06x}</td><td>{}</td><td>{}</td><td>{}</td><td>{local}</td></tr>",
                v.start + 16 * v.blocks[l.header].first as u64,
                l.depth,
                l.blocks,
                l.instrs
            );
        }
        s.push_str("</tbody></table>");
        if v.loops.len() > 50 {
            let _ = write!(s, "<p class=\"note\">{} more loops</p>", v.loops.len() - 50);
        }
    }
    s.push_str("</div></div>");
    let changed = v
        .flags
        .iter()
        .filter(|&&f| f & super::view::CHANGED != 0)
        .count();
    let _ = write!(
        s,
        "<figure><figcaption>SASS ({} instructions{})</figcaption><div class=\"controls\">{}</div><div class=\"sass\" data-src=\"sass-{i}\"></div></figure>",
        v.lines.len(),
        if v.rewritten {
            format!(", {changed} changed by the rewrite, highlighted")
        } else {
            String::new()
        },
        if v.rewritten {
            "<label><input type=\"checkbox\" class=\"changed-only\"> changed only</label>"
        } else {
            "red: local-memory accesses; shaded: in a loop"
        }
    );
    let flags: String = v
        .flags
        .iter()
        .map(|&f| char::from_digit(u32::from(f & 15), 16).unwrap_or('0'))
        .collect();
    let data = serde_json::json!({ "start": v.start, "lines": v.lines, "flags": flags });
    // `<` only occurs inside JSON strings, where `\u003c` means the same: no `</script>`.
    let json = data.to_string().replace('<', "\\u003c");
    let _ = write!(
        s,
        "<script type=\"application/json\" id=\"sass-{i}\">{json}</script>"
    );
}
