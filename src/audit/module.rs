//! The parts of a cubin no function owns: module-level banks, globals and their initial
//! values, objects, the records of `.nv.info` that name no function. In the shipped cubin
//! they must be what ptxas made for the module its kernels were placed in.

use std::collections::BTreeSet;

use super::Difference;
use super::dump::{Dump, Section};

/// Debug information and the tables cuobjdump prints elsewhere (symbols, relocations, call
/// graph, notes with the command line) are not compared here.
fn compared(s: &Section) -> bool {
    let skipped_kind = matches!(
        s.kind.as_str(),
        "STRTAB" | "SYMTAB" | "NOTE" | "REL" | "RELA" | "CUDA_CALLGRAPH"
    );
    let debug = s.name.starts_with(".debug_") || s.name.starts_with(".nv_debug_");
    !skipped_kind && !debug && s.name != ".nv.info"
}

/// The function names that own sections (`.text.<f>`) in `d`.
pub(crate) fn owners(d: &Dump) -> Vec<String> {
    d.sections
        .iter()
        .filter_map(|s| s.name.strip_prefix(".text.").map(str::to_string))
        .collect()
}

/// `shipped`'s module-level parts against `module`'s.
pub(crate) fn compare(shipped: &Dump, module: &Dump) -> Result<(), Difference> {
    let mut owned: BTreeSet<String> = owners(shipped)
        .into_iter()
        .map(|f| format!(".{f}"))
        .collect();
    owned.extend(owners(module).into_iter().map(|f| format!(".{f}")));
    let module_level = |d: &Dump| -> Vec<Section> {
        d.sections
            .iter()
            .filter(|s| {
                compared(s) && !owned.iter().any(|suffix| s.name.ends_with(suffix.as_str()))
            })
            .cloned()
            .collect()
    };
    let (a, b) = (module_level(shipped), module_level(module));
    let names = |v: &[Section]| v.iter().map(|s| s.name.clone()).collect::<BTreeSet<_>>();
    if let Some(n) = names(&a).symmetric_difference(&names(&b)).next() {
        return Err(Difference::ModuleSectionOneSide(n.clone()));
    }
    for s in &a {
        let Some(o) = b.iter().find(|o| o.name == s.name) else {
            continue;
        };
        if (s.size, &s.kind, s.flags) != (o.size, &o.kind, o.flags)
            || shipped.data.get(&s.name) != module.data.get(&s.name)
            || shipped.relocs.get(&s.name) != module.relocs.get(&s.name)
        {
            return Err(Difference::ModuleSection(s.name.clone()));
        }
    }
    objects(shipped, module)?;
    unnamed_records(shipped, module)
}

/// Data objects: the same names, places and sizes.
fn objects(shipped: &Dump, module: &Dump) -> Result<(), Difference> {
    let rows = |d: &Dump| -> BTreeSet<(String, u64, u64, String, String)> {
        d.symbols
            .iter()
            .filter(|s| s.kind == "OBJECT")
            .map(|s| {
                let section = d
                    .section_at(s.section)
                    .map_or(String::new(), |x| x.name.clone());
                (s.name.clone(), s.value, s.size, s.bind.clone(), section)
            })
            .collect()
    };
    match rows(shipped).symmetric_difference(&rows(module)).next() {
        Some(o) => Err(Difference::Object(o.0.clone())),
        None => Ok(()),
    }
}

/// `.nv.info` records that name no function.
fn unnamed_records(shipped: &Dump, module: &Dump) -> Result<(), Difference> {
    let rows = |d: &Dump| {
        let mut v: Vec<_> = d
            .records
            .get(".nv.info")
            .into_iter()
            .flatten()
            .filter(|r| !r.text.contains("function: "))
            .cloned()
            .collect();
        v.sort();
        v
    };
    if rows(shipped) != rows(module) {
        return Err(Difference::ModuleAttributes);
    }
    Ok(())
}
