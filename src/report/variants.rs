//! The multi-variant part of a record (`variants`, written by `tune::multi` under
//! `NVCC_ORION=adapt|train`): which candidates the cubin carries as `__orion_v<k>` entries
//! beside the original, and which were dropped (docs/selector.md §The emitter).

use nvcc_orion_schema::Record;

/// The lines `explain` prints under a kernel's table; empty when nothing was embedded.
pub fn lines(record: &Record) -> Vec<String> {
    if let Some(why) = &record.selector {
        return vec![format!("    {why}")];
    }
    if record.variants.len() <= 1 {
        return Vec::new();
    }
    let mut out = vec!["    embedded for the launch-time selector:".to_string()];
    for v in &record.variants {
        let left_out = v.left_out.as_ref().and_then(super::pruned::short);
        let what = match (&v.dropped, v.same_code) {
            (Some(why), _) if left_out.is_some() => why.clone(),
            (Some(why), _) => format!("dropped: {why}"),
            (None, Some(false)) => "same resources, other code than its standalone build".into(),
            (None, _) => String::new(),
        };
        let line = format!(
            "      v{} {:<40} {:>4} REG {:>5} B frame  candidate {}  {what}",
            v.variant, v.name, v.registers, v.frame_bytes, v.candidate,
        );
        out.push(line.trim_end().to_string());
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
    fn embedded_and_dropped_variants() {
        let r: Value = serde_json::from_str(
            r#"{"variants":[
              {"variant":0,"name":"k","candidate":2,"registers":32,"frame_bytes":176,"spill_instructions":98,"same_code":true},
              {"variant":1,"name":"k__orion_v1","candidate":1,"registers":40,"frame_bytes":144,"spill_instructions":74,"same_code":false},
              {"variant":2,"name":"k__orion_v2","candidate":0,"registers":64,"frame_bytes":0,"spill_instructions":0,"dropped":"62 registers"}]}"#,
        )
        .unwrap();
        let l = lines(r.clone());
        assert_eq!(l.len(), 4, "{l:#?}");
        assert_eq!(l[0], "    embedded for the launch-time selector:");
        assert!(
            l[1].starts_with("      v0 k ") && l[1].ends_with("candidate 2"),
            "{}",
            l[1]
        );
        assert!(
            l[2].ends_with("other code than its standalone build"),
            "{}",
            l[2]
        );
        assert!(
            l[3].contains("  64 REG     0 B frame") && l[3].ends_with("dropped: 62 registers"),
            "{}",
            l[3]
        );
        // One the object-size cap left out says so, in its own words.
        let capped = serde_json::json!({"variants": [r["variants"][0], {
            "variant": 1, "name": "k__orion_v1", "candidate": 1, "registers": 40,
            "frame_bytes": 0, "spill_instructions": 0, "left_out": "object-size",
            "dropped": "left out by the object-size cap: ..."}]});
        let l = lines(capped);
        assert!(
            l[2].ends_with("candidate 1  left out by the object-size cap: ..."),
            "{}",
            l[2]
        );
        assert!(lines(serde_json::json!({})).is_empty());
        // A kernel with its original alone embeds nothing to show.
        assert!(lines(serde_json::json!({"variants": [r["variants"][0]]})).is_empty());
    }
}
