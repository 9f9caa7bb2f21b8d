#![no_main]
//! The PTX editor and readers the tuner runs on a module it was given (`nvcc-orion --ptxas`
//! gets PTX from anyone: Triton, a user's `.ptx`): any text gives an answer or a typed error,
//! never a panic, and what the editor writes keeps the module's entries.
//!
//! The first byte picks the budget (its low 7 bits plus 16 registers; the high bit asks for
//! the spilling pragma), the second which entries a trimmed round keeps (bit i keeps the i-th);
//! the rest is the module. Checked:
//! - budgets on every entry: the result's entries are the module's, in order, each at the
//!   lower of its own `.maxnreg` and the budget; setting them again changes nothing;
//! - a copy of the first entry: every entry of the module is still there, in order, and the
//!   copy's name is there once for each entry of that name;
//! - a trimmed round: it holds exactly the kept entries, in order, and is the module's bytes
//!   in order with ranges taken out; what every round parses is no longer than the module.
use std::collections::BTreeMap;

use nvcc_orion::tune::ptx::{self, Budget};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let [budget_byte, keep_byte, module @ ..] = data else {
        return;
    };
    let text = String::from_utf8_lossy(module);
    let _ = ptx::dynamic_shared_users(&text);
    let _ = nvcc_orion::tune::function_pointers::uses_functions_as_values(&text);
    let Ok(decls) = ptx::entries(&text) else {
        return;
    };
    let names: Vec<&str> = decls.iter().map(|d| d.name.as_str()).collect();
    let lengths = ptx::entry_lengths(&text).expect("entries read once read twice");
    assert!(names.iter().all(|n| lengths.contains_key(*n)));

    let budget = Budget {
        smem_spill: budget_byte & 0x80 != 0,
        ..Budget::regs(16 + u32::from(budget_byte & 0x7f))
    };
    check_budgets(&text, &decls, budget);
    if let Some(first) = names.first() {
        check_copy(&text, &names, first);
    }
    let keep: Vec<&str> = names
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < 8 && keep_byte & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    check_trim(&text, &names, &keep);
});

fn names_of(text: &str) -> Vec<String> {
    match ptx::entries(text) {
        Ok(decls) => decls.into_iter().map(|d| d.name).collect(),
        Err(e) => panic!("the editor's output does not read as PTX ({e}):\n{text}"),
    }
}

fn check_budgets(text: &str, decls: &[ptx::EntryDecl], budget: Budget) {
    let all: BTreeMap<String, Budget> = decls.iter().map(|d| (d.name.clone(), budget)).collect();
    let Ok(once) = ptx::with_budgets(text, &all) else {
        return;
    };
    let after = ptx::entries(&once).expect("budgeted PTX reads as PTX");
    assert_eq!(after.len(), decls.len(), "{once}");
    for (a, d) in after.iter().zip(decls) {
        assert_eq!(a.name, d.name);
        let want = d.maxnreg.map_or(budget.regs, |m| m.min(budget.regs));
        assert_eq!(a.maxnreg, Some(want), "{}: {once}", d.name);
    }
    let twice = ptx::with_budgets(&once, &all).expect("budgeted PTX takes budgets again");
    assert_eq!(once, twice, "setting the same budgets again changed the module");
}

fn check_copy(text: &str, names: &[&str], first: &str) {
    let copy = format!("{first}_fz");
    let Ok(out) = ptx::with_copies(text, &[(first.to_string(), copy.clone())]) else {
        return;
    };
    let after = names_of(&out);
    let mut rest = after.iter();
    for n in names {
        assert!(rest.any(|a| a == n), "{n} lost or out of order: {out}");
    }
    let originals = names.iter().filter(|n| **n == first).count();
    let copies = after.iter().filter(|a| **a == copy).count();
    let copies_before = names.iter().filter(|n| **n == copy).count();
    assert!(copies >= copies_before + originals, "{out}");
}

fn check_trim(text: &str, names: &[&str], keep: &[&str]) {
    let (cut, shared) = nvcc_orion::tune::fuzz_trim(text, keep);
    assert!(shared <= text.len());
    let Some(cut) = cut else {
        return;
    };
    let want: Vec<&str> = names.iter().copied().filter(|n| keep.contains(n)).collect();
    assert_eq!(names_of(&cut), want, "{cut}");
    // Only whole ranges are removed: the cut is the module's bytes, in order, with gaps.
    let mut module = text.bytes();
    assert!(cut.bytes().all(|c| module.any(|m| m == c)), "{cut}");
    assert!(cut.len() < text.len());
}
