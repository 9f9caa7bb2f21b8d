//! The profile-guided part of a record (`measured`, written by `tune::guided` when a
//! profile measured the kernel): per variant, the measured time beside the predicted cycles,
//! and the predictor's rank error (docs/selector.md §Profile-guided builds).

use nvcc_orion_schema::Record;

use super::cycles;

/// The lines `explain` prints under a kernel's table; empty when nothing was measured.
pub fn lines(record: &Record) -> Vec<String> {
    let Some(m) = &record.measured else {
        return Vec::new();
    };
    let file = &m.profile;
    let mut out = vec![match m.rank_error {
        Some(e) => format!(
            "    measured ({file}, {} launch configuration(s)); rank error {e} (the measured winner's place in the model's order)",
            m.configurations,
        ),
        None => format!("    not measured in {file}; the variants a training build embeds:"),
    }];
    for v in &m.variants {
        let us = v.measured_us.map_or_else(
            || "not measured".to_string(),
            |t| format!("measured {t:.3} µs"),
        );
        // The registers unpadded: the line as explain has always printed it.
        out.push(format!(
            "    {} v{} {:<40} {} REG  predicted {:>20} cycles/warp  {us}",
            if Some(v.variant) == m.winner {
                "*"
            } else {
                " "
            },
            v.variant,
            v.name,
            v.registers,
            cycles(&v.cycles_per_warp),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    fn lines(v: Value) -> Vec<String> {
        super::lines(&super::super::record(v))
    }

    #[test]
    fn measured_beside_predicted() {
        let r: Value = serde_json::from_str(
            r#"{"measured":{"profile":"run.json","configurations":2,"winner":1,"rank_error":1,
            "variants":[
              {"variant":0,"name":"k","candidate":1,"registers":32,"cycles_per_warp":[3102.3],"measured_us":120.5},
              {"variant":1,"name":"k__orion_v1","candidate":0,"registers":64,"cycles_per_warp":[5828.1],"measured_us":100.25},
              {"variant":2,"name":"k__orion_v2","candidate":2,"registers":40,"cycles_per_warp":[4032.9],"measured_us":null}]}}"#,
        )
        .unwrap();
        let l = lines(r);
        assert_eq!(l.len(), 4, "{l:#?}");
        assert!(
            l[0].contains("run.json, 2 launch configuration(s)); rank error 1"),
            "{}",
            l[0]
        );
        assert!(
            l[1].starts_with("      v0 k ") && l[1].ends_with("measured 120.500 µs"),
            "{}",
            l[1]
        );
        assert!(
            l[1].contains("predicted                 3102 cycles/warp"),
            "{}",
            l[1]
        );
        assert!(l[2].starts_with("    * v1 k__orion_v1"), "{}", l[2]);
        assert!(l[3].ends_with("cycles/warp  not measured"), "{}", l[3]);
        assert!(lines(serde_json::json!({})).is_empty());
        let none: Value = serde_json::from_str(
            r#"{"measured":{"profile":"run.json","configurations":0,
            "variants":[{"variant":0,"name":"k","candidate":0,"registers":32,"cycles_per_warp":[1.0],"measured_us":null}]}}"#,
        )
        .unwrap();
        let l = lines(none);
        assert_eq!(
            l[0],
            "    not measured in run.json; the variants a training build embeds:"
        );
        assert!(l[1].ends_with("not measured"), "{}", l[1]);
    }
}
