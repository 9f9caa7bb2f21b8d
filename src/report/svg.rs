//! The page's charts, drawn here as inline SVG so that the page shows them without running
//! any script. Each chart has a bounded number of elements whatever the kernel's size: the
//! register-pressure line has one point per pixel column at most (the highest count in the
//! instructions it covers), marks are per column, and the CFG draws at most [`MAX_BLOCKS`]
//! blocks.
//!
//! Elements carry classes the browser test counts: `cand` (one circle per candidate),
//! `cliff` (one per occupancy cliff and block size), `chosen-label`, `live before|after`
//! polylines with `data-points`.

use std::fmt::Write;

use nvcc_orion_schema::{Candidate, Record};

use super::view::{Code, KernelView};
use crate::arch::Sm;
use crate::predict::{Arch, KernelResources, Launch, SharedBytes, occupancy, register_cliffs};

/// Escape text for HTML and SVG.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// `sm_86` → the occupancy tables of 8.6.
pub fn arch_of(name: &str) -> Option<Arch> {
    let sm: u32 = name
        .strip_prefix("sm_")?
        .trim_end_matches(['a', 'f'])
        .parse()
        .ok()?;
    Sm::of(sm).limits()
}

/// Register-budget axis: 0 to 256.
const OCC_W: f64 = 560.0;
const OCC_H: f64 = 220.0;
const PAD_L: f64 = 48.0;
const PAD_B: f64 = 34.0;
const PAD_T: f64 = 16.0;

/// Per block size, (register budget, warps per SM) points.
pub type Curves = Vec<(u32, Vec<(u32, u32)>)>;

/// Warps per SM at each register budget, per block size, from the baseline's shared size.
/// Returns (block size, [(budget, warps)] for budgets 1..=255).
pub fn occupancy_curves(record: &Record) -> Option<Curves> {
    let arch = arch_of(&record.arch)?;
    let shared = SharedBytes::FromCubin(baseline_shared(record));
    Some(
        record
            .block_sizes
            .iter()
            .map(|&t| {
                let pts = (1..=255)
                    .map(|r| {
                        let k = KernelResources::new(r, shared);
                        (
                            r,
                            occupancy(arch, &k, &Launch::new(t)).map_or(0, |o| o.warps_per_sm),
                        )
                    })
                    .collect();
                (t, pts)
            })
            .collect(),
    )
}

/// The occupancy cliffs per block size: the highest budget of each occupancy level.
pub fn cliffs(record: &Record) -> Curves {
    let Some(arch) = arch_of(&record.arch) else {
        return Vec::new();
    };
    let k = KernelResources::new(255, SharedBytes::FromCubin(baseline_shared(record)));
    record
        .block_sizes
        .iter()
        .map(|&t| {
            let c = register_cliffs(arch, &k, &Launch::new(t))
                .unwrap_or_default()
                .into_iter()
                .map(|(r, o)| (r, o.warps_per_sm))
                .collect();
            (t, c)
        })
        .collect()
}

/// ptxas's own static shared memory (the occupancy curves' shared size).
fn baseline_shared(record: &Record) -> u32 {
    let shared = record.baseline().map_or(0, |c| c.static_shared);
    u32::try_from(shared).unwrap_or(u32::MAX)
}

/// A candidate's registers and warps per SM at the first block size, as chart coordinates.
fn point(c: &Candidate) -> (f64, f64) {
    let wp = c.warps_per_sm.first().copied().unwrap_or(0);
    (f64::from(c.registers), f64::from(wp))
}

const LINE_COLOURS: [&str; 4] = ["#1f77b4", "#9467bd", "#8c564b", "#7f7f7f"];

/// Occupancy (warps per SM) against the register budget: a step line per block size, the
/// cliffs, every candidate, and the chosen one labelled.
pub fn occupancy_chart(record: &Record) -> String {
    let Some(curves) = occupancy_curves(record) else {
        return "<p class=\"note\">no occupancy table for this architecture</p>".to_string();
    };
    let max_warps = arch_of(&record.arch).map_or(64, |a| a.params().max_warps_per_sm());
    let w = OCC_W + PAD_L + 16.0;
    let h = OCC_H + PAD_T + PAD_B;
    let x = |r: f64| PAD_L + r / 256.0 * OCC_W;
    let y = |wp: f64| PAD_T + OCC_H - wp / f64::from(max_warps.max(1)) * OCC_H;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"occupancy\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"occupancy against register budget\">"
    );
    axes(&mut s, x(0.0), y(0.0), x(256.0), y(f64::from(max_warps)));
    for r in (0..=256).step_by(32) {
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{r}</text>",
            x(f64::from(r)),
            y(0.0) + 14.0
        );
    }
    for wp in (0..=max_warps).step_by(16) {
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{wp}</text><line class=\"grid\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
            x(0.0) - 4.0,
            y(f64::from(wp)) + 4.0,
            x(0.0),
            x(256.0),
            y(f64::from(wp)),
            y(f64::from(wp))
        );
    }
    let _ = write!(
        s,
        "<text class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">register budget (registers per thread)</text>",
        x(128.0),
        h - 4.0
    );
    let _ = write!(
        s,
        "<text class=\"axis-label\" transform=\"rotate(-90)\" x=\"{:.1}\" y=\"12\" text-anchor=\"middle\">warps per SM</text>",
        -(y(f64::from(max_warps) / 2.0))
    );
    // Step lines: a point where the level changes only (at most a few dozen per block size).
    for (n, (t, pts)) in curves.iter().enumerate() {
        let mut p = String::new();
        let mut last: Option<u32> = None;
        for &(r, wp) in pts {
            if last != Some(wp) {
                if let Some(l) = last {
                    let _ = write!(p, "{:.1},{:.1} ", x(f64::from(r) - 0.5), y(f64::from(l)));
                }
                let _ = write!(p, "{:.1},{:.1} ", x(f64::from(r) - 0.5), y(f64::from(wp)));
                last = Some(wp);
            }
        }
        if let Some(l) = last {
            let _ = write!(p, "{:.1},{:.1}", x(255.5), y(f64::from(l)));
        }
        let _ = write!(
            s,
            "<polyline class=\"occ-line\" data-block=\"{t}\" fill=\"none\" stroke=\"{}\" points=\"{}\"><title>{t} threads per block</title></polyline>",
            LINE_COLOURS[n % LINE_COLOURS.len()],
            p.trim_end()
        );
    }
    for (n, (t, cs)) in cliffs(record).iter().enumerate() {
        for &(r, wp) in cs {
            let _ = write!(
                s,
                "<circle class=\"cliff\" data-block=\"{t}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"><title>cliff at {t} threads: {r} registers or fewer, {wp} warps/SM</title></circle>",
                x(f64::from(r)),
                y(f64::from(wp)),
                LINE_COLOURS[n % LINE_COLOURS.len()],
            );
        }
    }
    let chosen = record.chosen;
    let cands = &record.candidates;
    for (i, c) in cands.iter().enumerate() {
        let (regs, wp) = point(c);
        let (b, kind) = super::budget(record, c.budget.as_ref());
        let _ = write!(
            s,
            "<circle class=\"cand\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\"{}><title>{} {}: {regs} registers, {wp} warps/SM</title></circle>",
            x(regs),
            y(wp),
            if i == chosen {
                " data-chosen=\"1\""
            } else {
                ""
            },
            esc(&b),
            esc(kind),
        );
    }
    if let Some(c) = cands.get(chosen) {
        let (regs, wp) = point(c);
        let (b, kind) = super::budget(record, c.budget.as_ref());
        let label = if b == "ptxas" || b == "-" {
            format!("chosen: {kind}, {regs} registers, {wp} warps/SM")
        } else {
            format!("chosen: budget {b} ({kind}), {regs} registers, {wp} warps/SM")
        };
        let anchor = if regs > 150.0 { "end" } else { "start" };
        let dx = if regs > 150.0 { -10.0 } else { 10.0 };
        let _ = write!(
            s,
            "<circle class=\"chosen\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"9\"/><text class=\"chosen-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
            x(regs),
            y(wp),
            x(regs) + dx,
            (y(wp) - 10.0).max(PAD_T + 10.0),
            esc(&label)
        );
    }
    s.push_str("</svg>");
    s
}

fn axes(s: &mut String, x0: f64, y0: f64, x1: f64, y1: f64) {
    let _ = write!(
        s,
        "<line class=\"axis\" x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x1:.1}\" y2=\"{y0:.1}\"/><line class=\"axis\" x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x0:.1}\" y2=\"{y1:.1}\"/>"
    );
}

/// Pixel columns of the register-pressure plot: the most points a line gets.
pub const PRESSURE_COLUMNS: usize = 1000;
const PR_H: f64 = 200.0;
/// Above the pressure plot: the max-live line.
const PR_T: f64 = 22.0;

/// Columns for `n` instructions: one per instruction up to [`PRESSURE_COLUMNS`].
pub fn columns(n: usize) -> usize {
    n.clamp(1, PRESSURE_COLUMNS)
}

/// The highest value in each of `cols` equal spans of `v` (spans over `n` instructions).
fn binned_max(v: &[u32], n: usize, cols: usize) -> Vec<u32> {
    let mut out = vec![0u32; cols];
    for (i, &x) in v.iter().enumerate() {
        let c = i * cols / n.max(1);
        out[c.min(cols - 1)] = out[c.min(cols - 1)].max(x);
    }
    out
}

/// Live registers along the program (before and after), max-live marked, loops shaded,
/// local (spill) and demoted accesses marked under the plot.
pub fn pressure_chart(v: &KernelView) -> String {
    let f = PressureFrame::of(v);
    let marks_h = 40.0;
    let total_h = PR_T + PR_H + PAD_B + marks_h;
    // Room on the right for the names of the mark rows.
    let total_w = PAD_L + f.w + 130.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"pressure\" data-n=\"{}\" data-x0=\"{PAD_L}\" data-w=\"{}\" viewBox=\"0 0 {total_w} {total_h}\" width=\"{total_w}\" height=\"{total_h}\" role=\"img\" aria-label=\"live registers per instruction\">",
        f.n, f.w
    );
    // Loops first, under the lines; nested loops darken.
    loop_shades(&mut s, &f, v);
    pressure_axes(&mut s, &f);
    if let Some(b) = &v.before {
        live_line(&mut s, &f, b, "before");
    }
    live_line(&mut s, &f, &v.after, "after");
    max_live(&mut s, &f, v);
    // Access marks, one per column that has any, in rows under the axis label.
    let row0 = PR_T + PR_H + PAD_B;
    if let Some(b) = &v.before {
        access_marks(
            &mut s,
            &f,
            &b.local,
            ("local before", "LDL/STL before"),
            row0,
        );
    }
    access_marks(
        &mut s,
        &f,
        &v.after.local,
        ("local after", "LDL/STL after"),
        row0 + 14.0,
    );
    if v.rewritten {
        access_marks(
            &mut s,
            &f,
            &v.after.demoted,
            ("demoted", "LDS/STS (moved)"),
            row0 + 28.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// The pressure plot's scales: `n` instructions over `cols` columns `w` wide, live
/// registers up to `ymax`.
struct PressureFrame {
    n: usize,
    cols: usize,
    w: f64,
    ymax: f64,
}

impl PressureFrame {
    fn of(v: &KernelView) -> PressureFrame {
        let n = v
            .after
            .live
            .len()
            .max(v.before.as_ref().map_or(0, |b| b.live.len()))
            .max(1);
        let top = v
            .after
            .max_live
            .1
            .max(v.before.as_ref().map_or(0, |b| b.max_live.1))
            .max(8);
        PressureFrame {
            n,
            cols: columns(n),
            w: PRESSURE_COLUMNS as f64,
            ymax: f64::from(top.next_multiple_of(8)),
        }
    }

    /// The x of instruction `i`.
    fn x(&self, i: usize) -> f64 {
        PAD_L + (i as f64 + 0.5) * self.w / self.n as f64
    }

    /// The x of column `c`.
    fn xc(&self, c: usize) -> f64 {
        PAD_L + (c as f64 + 0.5) * self.w / self.cols as f64
    }

    /// The y of `l` live registers.
    fn y(&self, l: f64) -> f64 {
        PR_T + PR_H - l / self.ymax * PR_H
    }
}

fn loop_shades(s: &mut String, f: &PressureFrame, v: &KernelView) {
    let (n, w) = (f.n, f.w);
    for l in &v.loops {
        let _ = write!(
            s,
            "<rect class=\"loop\" x=\"{:.1}\" y=\"{PR_T}\" width=\"{:.1}\" height=\"{PR_H}\"><title>loop at {:#x}: {} instructions, depth {}</title></rect>",
            f.x(l.first) - 0.5 * w / n as f64,
            ((l.last + 1 - l.first) as f64 * w / n as f64).max(1.0),
            v.start + 16 * l.first as u64,
            l.instrs,
            l.depth
        );
    }
}

/// The axes, the live-register ticks and grid, and both axis labels.
fn pressure_axes(s: &mut String, f: &PressureFrame) {
    let (n, cols, w, ymax) = (f.n, f.cols, f.w, f.ymax);
    axes(s, PAD_L, f.y(0.0), PAD_L + w, f.y(ymax));
    let step = if ymax > 128.0 {
        32
    } else if ymax > 48.0 {
        16
    } else {
        8
    };
    for t in (0..=ymax as u32).step_by(step) {
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{t}</text><line class=\"grid\" x1=\"{PAD_L}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
            PAD_L - 4.0,
            f.y(f64::from(t)) + 4.0,
            PAD_L + w,
            f.y(f64::from(t)),
            f.y(f64::from(t))
        );
    }
    let _ = write!(
        s,
        "<text class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">instruction ({n} in all{})</text>",
        PAD_L + w / 2.0,
        PR_T + PR_H + 28.0,
        if cols < n {
            format!(", {} per point, highest count shown", n.div_ceil(cols))
        } else {
            String::new()
        }
    );
    let _ = write!(
        s,
        "<text class=\"axis-label\" transform=\"rotate(-90)\" x=\"{:.1}\" y=\"12\" text-anchor=\"middle\">live registers</text>",
        -(PR_T + PR_H / 2.0)
    );
}

/// One code's live registers, the highest of each column.
fn live_line(s: &mut String, f: &PressureFrame, c: &Code, class: &str) {
    let m = binned_max(&c.live, f.n, f.cols);
    let pts: Vec<String> = m
        .iter()
        .enumerate()
        .filter(|(col, _)| col * f.n / f.cols < c.live.len())
        .map(|(col, &l)| format!("{:.1},{:.1}", f.xc(col), f.y(f64::from(l))))
        .collect();
    let _ = write!(
        s,
        "<polyline class=\"live {class}\" data-points=\"{}\" fill=\"none\" points=\"{}\"><title>{}</title></polyline>",
        pts.len(),
        pts.join(" "),
        esc(&c.label)
    );
}

/// Max-live: a dot on each line, the numbers in one line at the top right (two labels at
/// the same place would overlap).
fn max_live(s: &mut String, f: &PressureFrame, v: &KernelView) {
    let mut said = Vec::new();
    for (c, class) in v
        .before
        .iter()
        .map(|b| (b, "before"))
        .chain(std::iter::once((&v.after, "after")))
    {
        let (i, l) = c.max_live;
        let _ = write!(
            s,
            "<circle class=\"maxlive {class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"><title>max live {l} at {:#x}</title></circle>",
            f.x(i),
            f.y(f64::from(l)),
            v.start + 16 * i as u64,
        );
        said.push(if v.before.is_some() {
            format!("{l} {class} (at {:#x})", v.start + 16 * i as u64)
        } else {
            format!("{l} (at {:#x})", v.start + 16 * i as u64)
        });
    }
    let _ = write!(
        s,
        "<text class=\"maxlive-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">max live: {}</text>",
        PAD_L + f.w,
        PR_T - 4.0,
        said.join(", ")
    );
}

/// A row of marks at `row`, one per column holding any of instructions `idx`, named `what`.
fn access_marks(
    s: &mut String,
    f: &PressureFrame,
    idx: &[usize],
    (class, what): (&str, &str),
    row: f64,
) {
    let (n, cols, w) = (f.n, f.cols, f.w);
    let mut seen = vec![false; cols];
    for &i in idx {
        let c = (i * cols / n).min(cols - 1);
        if !seen[c] {
            seen[c] = true;
            let _ = write!(
                s,
                "<rect class=\"mark {class}\" x=\"{:.1}\" y=\"{row:.1}\" width=\"{:.1}\" height=\"10\"/>",
                f.xc(c) - 0.5 * (w / cols as f64).max(1.0),
                (w / cols as f64).max(1.0)
            );
        }
    }
    let _ = write!(
        s,
        "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\">{what}</text>",
        PAD_L + w + 6.0,
        row + 9.0
    );
}

/// Blocks drawn at most; a larger CFG shows its first ones and says so.
pub const MAX_BLOCKS: usize = 400;

/// The CFG: blocks top to bottom in address order (height by size), coloured by loop depth;
/// branches as arcs on the right, back edges (the loops) as thick arcs on the left.
pub fn cfg_chart(v: &KernelView) -> String {
    let shown = v.blocks.len().min(MAX_BLOCKS);
    let heights: Vec<f64> = v.blocks[..shown]
        .iter()
        .map(|b| 14.0 + ((b.end - b.first) as f64).sqrt().min(30.0))
        .collect();
    let mut tops = Vec::with_capacity(shown);
    let mut yy = 8.0;
    for h in &heights {
        tops.push(yy);
        yy += h + 6.0;
    }
    let (bx, bw) = (240.0, 200.0);
    let width = 640.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"cfg\" viewBox=\"0 0 {width} {yy:.0}\" width=\"{width}\" height=\"{yy:.0}\" role=\"img\" aria-label=\"control-flow graph\">"
    );
    let mid = |i: usize| tops[i] + heights[i] / 2.0;
    for (i, b) in v.blocks[..shown].iter().enumerate() {
        for &t in &b.succ {
            if t >= shown || t == i + 1 {
                continue; // fall-through is the next block down
            }
            // A block that branches to itself gets a loop from its top to its bottom.
            let (y0, y1) = if t == i {
                (tops[i] + 3.0, tops[i] + heights[i] - 3.0)
            } else {
                (mid(i), mid(t))
            };
            let back = t <= i;
            let reach = 20.0 + ((t as f64 - i as f64).abs().sqrt() * 8.0).min(90.0);
            let (x0, xr) = if back {
                (bx, bx - reach)
            } else {
                (bx + bw, bx + bw + reach)
            };
            let _ = write!(
                s,
                "<path class=\"edge{}\" d=\"M{x0:.1},{y0:.1} C{xr:.1},{y0:.1} {xr:.1},{y1:.1} {x0:.1},{y1:.1}\"/>",
                if back { " back" } else { "" }
            );
        }
    }
    for (i, b) in v.blocks[..shown].iter().enumerate() {
        let _ = write!(
            s,
            "<rect class=\"block d{}\" x=\"{bx}\" y=\"{:.1}\" width=\"{bw}\" height=\"{:.1}\" rx=\"3\"><title>block {:#x}: {} instructions, loop depth {}</title></rect><text class=\"blabel\" x=\"{:.1}\" y=\"{:.1}\">{:#06x} · {}</text>",
            b.depth.min(3),
            tops[i],
            heights[i],
            v.start + 16 * b.first as u64,
            b.end - b.first,
            b.depth,
            bx + 6.0,
            tops[i] + heights[i] / 2.0 + 4.0,
            v.start + 16 * b.first as u64,
            b.end - b.first
        );
    }
    s.push_str("</svg>");
    if shown < v.blocks.len() {
        let _ = write!(
            s,
            "<p class=\"note\">first {shown} of {} blocks drawn</p>",
            v.blocks.len()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::view::{Block, Code, Loop};

    fn code(n: usize, label: &str) -> Code {
        Code {
            label: label.to_string(),
            live: (0..n).map(|i| (i % 50) as u32).collect(),
            local: vec![3, 4, n - 1],
            demoted: vec![7],
            max_live: (49, 49),
        }
    }

    fn view(n: usize, blocks: usize) -> KernelView {
        let per = n / blocks;
        KernelView {
            start: 0,
            lines: vec!["NOP".to_string(); n],
            flags: vec![0; n],
            after: code(n, "after"),
            before: Some(code(n - 2, "before")),
            rewritten: true,
            blocks: (0..blocks)
                .map(|b| Block {
                    first: b * per,
                    end: if b + 1 == blocks { n } else { (b + 1) * per },
                    succ: vec![(b + 1).min(blocks - 1), b / 2],
                    depth: (b % 3) as u32,
                })
                .collect(),
            loops: vec![Loop {
                header: 0,
                first: 0,
                last: 2 * per - 1,
                blocks: 2,
                instrs: 2 * per,
                depth: 1,
            }],
        }
    }

    /// The charts' sizes do not grow with the kernel: columns, marks and blocks are capped.
    #[test]
    fn pressure_and_cfg_are_bounded() {
        for (n, points) in [(300, 300), (60_000, PRESSURE_COLUMNS)] {
            let v = view(n, 10);
            let svg = pressure_chart(&v);
            let after = svg.split("<polyline class=\"live after\"").nth(1).unwrap();
            assert!(after.contains(&format!("data-points=\"{points}\"")), "{n}");
            assert_eq!(svg.matches("<rect class=\"loop\"").count(), 1);
            assert!(svg.contains("max live: 49 before"), "{svg}");
            assert!(svg.contains("<rect class=\"mark demoted\""));
            assert!(svg.len() < 100_000, "{}", svg.len());
        }
        let big = view(60_000, 1000);
        let cfg = cfg_chart(&big);
        assert_eq!(cfg.matches("<rect class=\"block").count(), MAX_BLOCKS);
        assert!(cfg.contains("first 400 of 1000 blocks drawn"));
        assert!(cfg.contains("class=\"edge back\""));
    }

    #[test]
    fn occupancy_points() {
        let r: Record = serde_json::from_str(
            r#"{"arch":"sm_90","kernel":"k","block_sizes":[128,256],"chosen":1,"chosen_registers":32,
            "candidates":[{"budget":null,"registers":64,"static_shared":0,"warps_per_sm":[32,32]},
                          {"budget":{"regs":32,"smem_spill":false},"registers":32,"static_shared":0,"warps_per_sm":[64,64]}]}"#,
        )
        .unwrap();
        let svg = occupancy_chart(&r);
        assert_eq!(svg.matches("<circle class=\"cand\"").count(), 2);
        assert_eq!(svg.matches("<polyline class=\"occ-line\"").count(), 2);
        let cliffs: usize = cliffs(&r).iter().map(|(_, c)| c.len()).sum();
        assert!(cliffs > 4);
        assert_eq!(svg.matches("<circle class=\"cliff\"").count(), cliffs);
        assert!(
            svg.contains("chosen: budget 32 (.maxnreg), 32 registers, 64 warps/SM"),
            "{svg}"
        );
        assert!(arch_of("sm_90a").is_some() && arch_of("compute_90").is_none());
    }
}
