#![no_main]
//! nvcc's `--dryrun` text as the driver reads it (`driver::dryrun::parse`): any text gives a
//! plan or a typed error, never a panic. The first line, if any, is taken as `NAME=VALUE`
//! pairs of the environment nvcc runs in, so `$NAME` references resolve against both.
use std::collections::HashMap;

use nvcc_orion::driver::dryrun;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (first, rest) = text.split_once('\n').unwrap_or(("", &text));
    let env: HashMap<String, String> = first
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let _ = dryrun::parse(rest, &env);
    let _ = dryrun::parse(&text, &HashMap::new());
});
