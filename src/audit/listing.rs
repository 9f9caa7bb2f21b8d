//! `nvdisasm -json`, read into instruction text per function: only what the disassembler
//! printed (guard, opcode with modifiers, operands), never our own decoding.

use serde_json::Value;

/// One instruction as nvdisasm printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Instr {
    pub(crate) guard: String,
    pub(crate) opcode: String,
    pub(crate) operands: String,
}

/// One function of the listing: its name, where it starts in its section, its code.
#[derive(Debug, Clone)]
pub(crate) struct Function {
    pub(crate) name: String,
    pub(crate) start: u64,
    pub(crate) instrs: Vec<Instr>,
}

/// The listing could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nvdisasm -json: {0}")]
pub(crate) struct ListingError(String);

/// Every function of nvdisasm's JSON listing (`[header, [function, ...]]`).
pub(crate) fn parse(json: &[u8]) -> Result<Vec<Function>, ListingError> {
    let v: Value = serde_json::from_slice(json).map_err(|e| ListingError(e.to_string()))?;
    let functions = v
        .get(1)
        .and_then(Value::as_array)
        .ok_or_else(|| ListingError("no function list".into()))?;
    functions.iter().map(function).collect()
}

fn function(f: &Value) -> Result<Function, ListingError> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let name = f
        .get("function-name")
        .and_then(Value::as_str)
        .ok_or_else(|| ListingError("a function without a name".into()))?
        .to_string();
    let start = f
        .get("start")
        .and_then(Value::as_u64)
        .ok_or_else(|| ListingError(format!("{name}: no start")))?;
    let instrs = f
        .get("sass-instructions")
        .and_then(Value::as_array)
        .ok_or_else(|| ListingError(format!("{name}: no instructions")))?
        .iter()
        .map(|i| Instr {
            guard: text(i, "predicate"),
            opcode: text(i, "opcode"),
            operands: text(i, "operands"),
        })
        .collect();
    Ok(Function {
        name,
        start,
        instrs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_functions_and_instructions() {
        let json = br#"[{"SM":{}},[{"function-name":"k","start":0,"length":32,"sass-instructions":[
            {"opcode":"LDC","operands":"R1,c[0x0][0x28]"},
            {"predicate":"@P0","opcode":"BRA","operands":"0x190","other-attributes":{}}]}]]"#;
        let f = parse(json).unwrap();
        assert_eq!(
            (f[0].name.as_str(), f[0].start, f[0].instrs.len()),
            ("k", 0, 2)
        );
        assert_eq!(f[0].instrs[1].guard, "@P0");
        assert!(parse(b"[{}]").is_err());
    }
}
