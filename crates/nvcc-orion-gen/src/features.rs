//! Which of the generator's features a program uses (coverage of a seed set).

use std::collections::BTreeSet;

use crate::ast::*;

/// The feature names a program exercises.
pub fn features(p: &Program) -> BTreeSet<&'static str> {
    let mut f = BTreeSet::new();
    if !p.globals.is_empty() {
        f.insert("device globals");
    }
    if !p.consts.is_empty() {
        f.insert("constant arrays");
    }
    if !p.tables.is_empty() {
        f.insert("function-pointer tables");
    }
    if p.rdc {
        f.insert("-rdc");
    }
    if p.kernels.len() > 1 {
        f.insert("several kernels");
    }
    for func in &p.funcs {
        f.insert(match func.kind {
            FuncKind::Inline => "inlined functions",
            FuncKind::NoInline => "__noinline__ functions",
            FuncKind::Recursive => "recursive functions",
            FuncKind::Extern => "extern functions (-rdc)",
        });
    }
    for k in &p.kernels {
        if k.template.is_some() {
            f.insert("templates");
        }
        match k.bounds {
            Bounds::Launch(..) => {
                f.insert("__launch_bounds__");
            }
            Bounds::MaxNreg(_) => {
                f.insert("__maxnreg__");
            }
            Bounds::None => {}
        }
        match k.shared {
            Shared::Static(_) => {
                f.insert("static shared");
            }
            Shared::Dynamic => {
                f.insert("dynamic shared");
            }
            Shared::None => {}
        }
        if k.hungry.is_some() {
            f.insert("register-hungry kernels");
        } else {
            f.insert("small kernels");
        }
    }
    p.for_each_stmt(&mut |k, s| {
        let name = match s {
            Stmt::Printf(_) => "printf",
            Stmt::Assert(..) => "assert",
            Stmt::Atomic { .. } => "atomics",
            Stmt::Store { .. } => "global stores",
            Stmt::SharedRoundTrip => "shared round trips",
            Stmt::Tex(_) if k.tex => "texture objects",
            Stmt::Surf(_) if k.surf => "surface objects",
            Stmt::Loop { .. } => "loops",
            Stmt::If { .. } => "branches",
            _ => return,
        };
        f.insert(name);
    });
    p.for_each_expr(&mut |e| match e {
        Expr::Call(..) => {
            f.insert("calls");
        }
        Expr::Bin(BinOp::Div | BinOp::Sqrt | BinOp::DDiv, ..) => {
            f.insert("helper subroutines");
        }
        Expr::CallTable(..) => {
            f.insert("calls through tables");
        }
        _ => {}
    });
    f
}

/// Every feature [`features`] can report.
pub const ALL: &[&str] = &[
    "device globals",
    "constant arrays",
    "function-pointer tables",
    "-rdc",
    "several kernels",
    "inlined functions",
    "__noinline__ functions",
    "recursive functions",
    "extern functions (-rdc)",
    "templates",
    "__launch_bounds__",
    "__maxnreg__",
    "static shared",
    "dynamic shared",
    "register-hungry kernels",
    "small kernels",
    "printf",
    "assert",
    "atomics",
    "global stores",
    "shared round trips",
    "texture objects",
    "surface objects",
    "loops",
    "branches",
    "calls",
    "calls through tables",
    "helper subroutines",
];

/// A few seeds from `seeds` that together use every feature of [`ALL`] (greedy set cover,
/// smallest programs preferred on ties); the features no seed uses are left out.
pub fn cover(seeds: impl Iterator<Item = u64>) -> Vec<u64> {
    let progs: Vec<(u64, BTreeSet<&'static str>, usize)> = seeds
        .map(|s| {
            let p = crate::generate(s);
            (s, features(&p), p.kernels.len())
        })
        .collect();
    let mut left: BTreeSet<&str> = ALL.iter().copied().collect();
    let mut out = Vec::new();
    while let Some((s, f, _)) = progs
        .iter()
        .filter(|(_, f, _)| f.iter().any(|x| left.contains(x)))
        .max_by_key(|(s, f, n)| {
            let gain = f.iter().filter(|x| left.contains(*x)).count();
            (gain, std::cmp::Reverse(*n), std::cmp::Reverse(*s))
        })
    {
        out.push(*s);
        for x in f {
            left.remove(x);
        }
    }
    out
}
