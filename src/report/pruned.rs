//! Why a kernel kept ptxas's budget, in words (the record's typed `kept_by`, `pruned[].limit`
//! and `train_would_measure`, written by `tune::step` and `tune::plan`): the assumption that
//! decided (the model's DRAM floor without reuse, its issue bound, no occupancy to gain, ...)
//! and what a training run would measure instead (issue 45).

use nvcc_orion_schema::{Limit, Pruned, Record};

/// A limit's words; `None` for a name this version does not know (a report from another
/// version).
pub fn words(limit: &Limit) -> Option<&'static str> {
    Some(match limit {
        Limit::NoOccupancyGain => "no occupancy to gain: no lower budget buys more resident warps",
        Limit::DramWithoutReuse => {
            "DRAM-bound if no data is reused (the model counts every global byte as DRAM traffic)"
        }
        Limit::Issue => "issue-bound: the warps' own instructions already fill the issue slots",
        Limit::Latency => "latency-bound, but the warps a lower budget buys hide too little of it",
        Limit::L1 => "L1-bound: more warps share the same L1 bandwidth",
        Limit::L2 => "L2-bound: more warps share the same L2 bandwidth",
        Limit::BelowMargin => "built, but no lower budget is predicted to clear the margin",
        Limit::BuildCost => "left out by the measured build's cost rule",
        Limit::Stopped => {
            "not built: the descent stopped, a higher budget did not improve on the best built"
        }
        Limit::Outbid => "not built: a built budget is predicted at least as fast as its bound",
        Limit::ObjectSize => "left out of the cubin by the object-size cap on variants",
        Limit::Other(_) => return None,
    })
}

/// A pruned budget's limit in a few words, for the `not built` line: `DRAM without reuse`.
pub fn short(limit: &Limit) -> Option<&'static str> {
    Some(match limit {
        Limit::NoOccupancyGain => "no warps gained at its worst block size",
        Limit::DramWithoutReuse => "DRAM without reuse",
        Limit::Issue => "issue bound",
        Limit::Latency => "latency",
        Limit::L1 => "L1 bound",
        Limit::L2 => "L2 bound",
        Limit::BuildCost => "build cost",
        Limit::Stopped => "descent stopped",
        Limit::Outbid => "outbid by a built budget",
        Limit::ObjectSize => "object-size cap",
        Limit::BelowMargin | Limit::Other(_) => return None,
    })
}

/// What a pruned budget could have gained at best and why it was not built, as the tables
/// and the page print it after the budget: `(at best +3.2%, DRAM without reuse)`.
pub fn at_best(p: &Pruned) -> String {
    let limit = p
        .limit
        .as_ref()
        .and_then(short)
        .map_or(String::new(), |l| format!(", {l}"));
    format!("(at best {:+.1}%{limit})", p.bound_percent)
}

/// The line `explain` prints for a kernel that kept ptxas's budget: why, and the budgets a
/// training run would measure (`pruned: DRAM-bound if no data is reused ...; a training run
/// (NVCC_ORION=train) would measure 40, 32`). `None` when the record says nothing of it.
pub fn kept_line(r: &Record) -> Option<String> {
    let limit = r.kept_by.as_ref()?;
    let why = words(limit).unwrap_or(limit.name());
    let pruned = !matches!(limit, Limit::NoOccupancyGain | Limit::BelowMargin);
    let measure: Vec<String> = r
        .train_would_measure
        .iter()
        .map(|b| b.regs.to_string())
        .collect();
    let mut line = format!("{}{why}", if pruned { "pruned: " } else { "" });
    if !measure.is_empty() {
        line.push_str(&format!(
            "; a training run (NVCC_ORION=train) would measure {}",
            measure.join(", ")
        ));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kept_line(v: serde_json::Value) -> Option<String> {
        super::kept_line(&super::super::record(v))
    }

    #[test]
    fn why_nothing_changed_and_what_training_would_measure() {
        let r = json!({"kept_by": "dram-without-reuse",
            "train_would_measure": [{"regs": 40, "smem_spill": false}, {"regs": 32, "smem_spill": false}]});
        assert_eq!(
            kept_line(r).unwrap(),
            "pruned: DRAM-bound if no data is reused (the model counts every global byte as \
             DRAM traffic); a training run (NVCC_ORION=train) would measure 40, 32"
        );
        let r = json!({"kept_by": "no-occupancy-gain"});
        assert_eq!(
            kept_line(r).unwrap(),
            "no occupancy to gain: no lower budget buys more resident warps"
        );
        // Another version's limit: its name, not nothing.
        assert_eq!(
            kept_line(json!({"kept_by": "bandwidth"})).unwrap(),
            "pruned: bandwidth"
        );
        assert_eq!(kept_line(json!({"chosen": 0})), None);
        assert_eq!(short(&Limit::Issue), Some("issue bound"));
        assert_eq!(short(&Limit::BelowMargin), None);
    }
}
