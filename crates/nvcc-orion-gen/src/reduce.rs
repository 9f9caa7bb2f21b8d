//! Shrink a failing program: drop kernels, statements, kernel features and module items, and
//! flatten expressions, keeping each edit while the same kind of mismatch (in the same mode)
//! persists. Greedy, first improvement, until no edit helps or the time is up.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::ast::*;
use crate::harness::{Harness, Mismatch, Mode};

/// The reduced program and how many checks it took.
pub struct Reduced {
    pub program: Program,
    pub checks: usize,
    pub finding: Mismatch,
}

/// Reduce `p`, which shows `target` on `target.arch`, within `time`.
pub fn reduce(h: &Harness, p: &Program, target: &Mismatch, time: Duration) -> Reduced {
    let start = Instant::now();
    let mut modes = vec![Mode::parse(&target.mode).unwrap_or(Mode::Default)];
    if target.kind.starts_with("adapt chose") {
        modes.insert(0, Mode::Default);
    }
    let h = Harness { modes, ..h.clone() };
    let mut checks = 0;
    let mut same = |q: &Program| -> Option<Mismatch> {
        checks += 1;
        let o = h.check(q, target.arch).ok()?;
        o.mismatches
            .into_iter()
            .find(|m| m.kind == target.kind && m.mode == target.mode)
    };
    let mut best = p.clone();
    let mut finding = target.clone();
    'outer: while start.elapsed() < time {
        for cand in edits(&best) {
            if start.elapsed() >= time {
                break 'outer;
            }
            let cand = gc(cand);
            if cand == best {
                continue;
            }
            if let Some(m) = same(&cand) {
                best = cand;
                finding = m;
                continue 'outer;
            }
        }
        break;
    }
    Reduced {
        program: best,
        checks,
        finding,
    }
}

/// Every single edit of `p`, largest first.
fn edits(p: &Program) -> Vec<Program> {
    let mut out = Vec::new();
    if p.kernels.len() > 1 {
        for i in 0..p.kernels.len() {
            let mut q = p.clone();
            q.kernels.remove(i);
            out.push(q);
        }
    }
    if p.rdc {
        let mut q = p.clone();
        q.rdc = false;
        for f in &mut q.funcs {
            if f.kind == FuncKind::Extern {
                f.kind = FuncKind::NoInline;
            }
        }
        out.push(q);
    }
    for i in 0..p.kernels.len() {
        for path in stmt_paths(&p.kernels[i].body, &mut Vec::new()) {
            let mut q = p.clone();
            remove_at(&mut q.kernels[i].body, &path);
            out.push(q);
            // A loop or branch replaced by its body.
            let mut q = p.clone();
            if splice_at(&mut q.kernels[i].body, &path) {
                out.push(q);
            }
        }
        let features: [fn(&mut Kernel); 8] = [
            |k| k.hungry = None,
            |k| {
                if let Some(h) = &mut k.hungry {
                    h.width = 32;
                    h.konst = None;
                }
            },
            |k| k.bounds = Bounds::None,
            |k| k.template = None,
            |k| {
                k.shared = Shared::None;
                strip(&mut k.body, &|s| matches!(s, Stmt::SharedRoundTrip));
            },
            |k| {
                k.tex = false;
                strip(&mut k.body, &|s| matches!(s, Stmt::Tex(_)));
            },
            |k| {
                k.surf = false;
                strip(&mut k.body, &|s| matches!(s, Stmt::Surf(_)));
            },
            |k| {
                if let Some(h) = &mut k.hungry {
                    h.chase = !h.chase;
                }
            },
        ];
        for f in features {
            let mut q = p.clone();
            f(&mut q.kernels[i]);
            out.push(q);
        }
    }
    // Expressions: each statement's expressions, then each function's body, made a leaf.
    for i in 0..p.kernels.len() {
        for path in stmt_paths(&p.kernels[i].body, &mut Vec::new()) {
            let n = stmt_at(&p.kernels[i].body, &path).exprs().len();
            for e in 0..n {
                let mut q = p.clone();
                let s = stmt_at_mut(&mut q.kernels[i].body, &path);
                let mut es = s.exprs_mut();
                if es[e].children().is_empty() {
                    continue;
                }
                *es[e] = Expr::Iv;
                out.push(q);
            }
        }
    }
    for f in 0..p.funcs.len() {
        let mut q = p.clone();
        q.funcs[f].body = Expr::Acc;
        out.push(q);
    }
    out
}

fn stmt_paths(body: &[Stmt], prefix: &mut Vec<usize>) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for (i, s) in body.iter().enumerate() {
        prefix.push(i);
        out.push(prefix.clone());
        if let Some(b) = s.body() {
            out.extend(stmt_paths(b, prefix));
        }
        prefix.pop();
    }
    out
}

fn stmt_at<'a>(body: &'a [Stmt], path: &[usize]) -> &'a Stmt {
    let s = &body[path[0]];
    if path.len() == 1 {
        s
    } else {
        stmt_at(s.body().expect("a path into a body"), &path[1..])
    }
}

fn stmt_at_mut<'a>(body: &'a mut [Stmt], path: &[usize]) -> &'a mut Stmt {
    let s = &mut body[path[0]];
    if path.len() == 1 {
        s
    } else {
        stmt_at_mut(s.body_mut().expect("a path into a body"), &path[1..])
    }
}

fn parent_mut<'a>(body: &'a mut Vec<Stmt>, path: &[usize]) -> &'a mut Vec<Stmt> {
    if path.len() == 1 {
        body
    } else {
        parent_mut(
            body[path[0]].body_mut().expect("a path into a body"),
            &path[1..],
        )
    }
}

fn remove_at(body: &mut Vec<Stmt>, path: &[usize]) {
    parent_mut(body, path).remove(*path.last().unwrap());
}

fn splice_at(body: &mut Vec<Stmt>, path: &[usize]) -> bool {
    let parent = parent_mut(body, path);
    let i = *path.last().unwrap();
    let Some(inner) = parent[i].body().cloned() else {
        return false;
    };
    parent.splice(i..=i, inner);
    true
}

fn strip(body: &mut Vec<Stmt>, drop: &dyn Fn(&Stmt) -> bool) {
    body.retain(|s| !drop(s));
    for s in body.iter_mut() {
        if let Some(b) = s.body_mut() {
            strip(b, drop);
        }
    }
}

fn keep<T>(v: &mut Vec<T>, m: &[Option<usize>]) {
    let mut i = 0;
    v.retain(|_| {
        i += 1;
        m[i - 1].is_some()
    });
}

/// Drop the globals, constants, functions and tables nothing uses any more, renumbering the
/// rest.
pub fn gc(mut p: Program) -> Program {
    let (mut g, mut c, mut f, mut t) = (
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
    );
    let mut note = |e: &Expr| match e {
        Expr::Const(i, _) => {
            c.insert(*i);
        }
        Expr::Load(i, _) => {
            g.insert(*i);
        }
        Expr::Call(i, ..) => {
            f.insert(*i);
        }
        Expr::CallTable(i, ..) => {
            t.insert(*i);
        }
        _ => {}
    };
    let mut atomics = BTreeSet::new();
    p.for_each_stmt(&mut |_, s| {
        if let Stmt::Atomic { global, .. } | Stmt::Store { global, .. } = s {
            atomics.insert(*global);
        }
        for e in s.exprs() {
            walk(e, &mut note);
        }
    });
    g.extend(atomics);
    for k in &p.kernels {
        if let Some(c0) = k.hungry.and_then(|h| h.konst) {
            c.insert(c0);
        }
    }
    for &ti in &t {
        f.extend(p.tables[ti].funcs.iter().copied());
    }
    // Only kernels' uses keep a function; its own body's uses count once it is kept.
    p.funcs
        .iter()
        .enumerate()
        .filter(|(i, _)| f.contains(i))
        .for_each(|(_, fun)| {
            walk(&fun.body, &mut |e| match e {
                Expr::Const(i, _) => {
                    c.insert(*i);
                }
                Expr::Load(i, _) => {
                    g.insert(*i);
                }
                _ => {}
            })
        });
    let map = |used: &BTreeSet<usize>, n: usize| -> Vec<Option<usize>> {
        let mut next = 0;
        (0..n)
            .map(|i| {
                used.contains(&i).then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect()
    };
    let (mg, mc, mf, mt) = (
        map(&g, p.globals.len()),
        map(&c, p.consts.len()),
        map(&f, p.funcs.len()),
        map(&t, p.tables.len()),
    );
    keep(&mut p.globals, &mg);
    keep(&mut p.consts, &mc);
    keep(&mut p.funcs, &mf);
    keep(&mut p.tables, &mt);
    p.decls = p
        .decls
        .iter()
        .filter_map(|d| match *d {
            Decl::Global(i) => mg[i].map(Decl::Global),
            Decl::Const(i) => mc[i].map(Decl::Const),
        })
        .collect();
    for tb in &mut p.tables {
        for x in &mut tb.funcs {
            *x = mf[*x].expect("a kept table's functions are kept");
        }
    }
    let mut re = |e: &mut Expr| match e {
        Expr::Const(i, _) => *i = mc[*i].expect("used"),
        Expr::Load(i, _) => *i = mg[*i].expect("used"),
        Expr::Call(i, ..) => *i = mf[*i].expect("used"),
        Expr::CallTable(i, ..) => *i = mt[*i].expect("used"),
        _ => {}
    };
    for fun in &mut p.funcs {
        walk_mut(&mut fun.body, &mut re);
    }
    for k in &mut p.kernels {
        if let Some(h) = &mut k.hungry {
            h.konst = h.konst.map(|c0| mc[c0].expect("used"));
        }
        stmts_mut(&mut k.body, &mut |s| {
            if let Stmt::Atomic { global, .. } | Stmt::Store { global, .. } = s {
                *global = mg[*global].expect("used");
            }
            for e in s.exprs_mut() {
                walk_mut(e, &mut re);
            }
        });
    }
    p
}

fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    for c in e.children() {
        walk(c, f);
    }
}

fn walk_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    f(e);
    for c in e.children_mut() {
        walk_mut(c, f);
    }
}

fn stmts_mut(body: &mut [Stmt], f: &mut dyn FnMut(&mut Stmt)) {
    for s in body {
        f(s);
        if let Some(b) = s.body_mut() {
            stmts_mut(b, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gc_keeps_programs_printable() {
        for seed in 0..200 {
            let p = crate::generate(seed);
            for q in edits(&p) {
                let q = gc(q);
                let _ = crate::print::sources(&q);
            }
        }
    }
}
