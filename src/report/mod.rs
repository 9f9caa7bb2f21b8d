//! Reports for people, from the tuner's JSON records (`NVCC_ORION_REPORT`): the terminal table
//! of candidates ([`table`]), records for an already built file ([`file`]), and the
//! self-contained HTML page ([`html`]) with its SVG charts ([`svg`]) drawn from per-kernel
//! views of the SASS ([`view`]). A whole build's records make a [`project`]: one [`row`] per
//! kernel (with its occupancy [`limiter`]), a terminal [`summary`], the overview page
//! ([`project_html`]) and what [`changes`] between two builds.
//!
//! Records stay `serde_json::Value`s here: a report may come from another nvcc-orion version,
//! and a missing field must cost one cell of a table, not the whole explanation.

pub mod assembly;
pub mod changes;
pub mod file;
pub mod html;
pub mod limiter;
pub mod measured;
pub mod memory;
pub mod project;
pub mod project_html;
pub mod pruned;
pub mod row;
pub mod spills;
pub mod summary;
pub mod svg;
pub mod table;
pub mod variants;
pub mod view;

use serde_json::Value;

/// `128/256` from a JSON array of numbers (floats rounded), `-` when absent.
pub fn list(v: &Value) -> String {
    v.as_array().map_or_else(
        || "-".to_string(),
        |a| {
            a.iter()
                .map(|x| match x.as_f64() {
                    Some(f) if x.is_f64() => format!("{f:.0}"),
                    _ => x.to_string(),
                })
                .collect::<Vec<_>>()
                .join("/")
        },
    )
}

/// A candidate's budget column and kind, from its `budget` (null: ptxas's own choice, or the
/// only variant a built file holds).
pub fn budget(record: &Value, c: &Value) -> (String, &'static str) {
    let b = &c["budget"];
    if b.is_null() {
        return if record["source"] == "file" {
            ("-".to_string(), "as built")
        } else {
            ("ptxas".to_string(), "baseline")
        };
    }
    let regs = b["regs"].as_u64().unwrap_or(0);
    let kind = if b["spill_to_shared"] == true {
        "spill → shared"
    } else if !b["regdem_from"].is_null() {
        "register demotion"
    } else if b["smem_spill"] == true {
        ".maxnreg+smem spill"
    } else {
        ".maxnreg"
    };
    (regs.to_string(), kind)
}

/// The checker's column for a candidate: only our SASS rewrites are checked; what ptxas made
/// alone is `n/a`.
pub fn checker(record: &Value, c: &Value) -> String {
    // A register-demotion candidate exists only once proved (and scheduling-checked).
    if !c["budget"]["regdem_from"].is_null() {
        return "proved".to_string();
    }
    if c["budget"]["spill_to_shared"] != true {
        return "n/a".to_string();
    }
    match (&record["verdict"]["proved"], record["transform"].as_str()) {
        (Value::Bool(true), _) => "proved".to_string(),
        (Value::Bool(false), _) => format!(
            "rejected: {}",
            record["verdict"]["detail"].as_str().unwrap_or("?")
        ),
        // A report from before the structured verdict: the note says it.
        (_, Some(t)) if t.contains("not applied") => "rejected".to_string(),
        (_, Some(_)) => "proved".to_string(),
        _ => "?".to_string(),
    }
}

/// The spill → shared candidate the checker refused: it never became a candidate, but the
/// table shows it with the reason. `(budget, reason)`.
pub fn rejected(record: &Value) -> Option<(u64, String)> {
    let v = &record["verdict"];
    (v["proved"] == false).then(|| {
        (
            v["budget"].as_u64().unwrap_or(0),
            v["detail"].as_str().unwrap_or("?").to_string(),
        )
    })
}
