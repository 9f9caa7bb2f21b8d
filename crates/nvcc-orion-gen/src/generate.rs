//! Seed → [`Program`]. Every choice comes from the seed's stream, in a fixed order, so a seed
//! names one program forever (tests and bench/results quote seeds). Seeds from
//! [`HELPERS_FROM`] on also draw the operations that call the compiler's helper subroutines;
//! the programs of the seeds below it are the ones they always were.

use crate::ast::*;
use crate::rng::Rng;

/// What an expression may mention where it is generated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// A kernel body: everything.
    Kernel { template: bool },
    /// A device function of the first unit: parameters, constants, globals.
    Func,
    /// A function of the second unit (`-rdc`): parameters and literals only.
    Extern,
}

/// The first seed whose programs divide and take square roots the IEEE way, calling the
/// compiler's helper subroutines (`__cuda_sm20_sqrt_rn_f32_slowpath`, the single-precision
/// division and the double-precision reciprocal slow paths) from kernels and device
/// functions: what the SASS rewrites meet in numeric code (issue 46).
pub const HELPERS_FROM: u64 = 1_000_000;

struct Gen<'a> {
    r: Rng,
    p: &'a mut Program,
    /// Binary operations drawn from ([`HELPERS_FROM`]).
    ops: &'static [BinOp],
}

const OPS: &[BinOp] = &[
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Min,
    BinOp::Max,
    BinOp::Xor,
    BinOp::And,
    BinOp::Shr,
];

const OPS_WITH_HELPERS: &[BinOp] = &[
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Min,
    BinOp::Max,
    BinOp::Xor,
    BinOp::And,
    BinOp::Shr,
    BinOp::Div,
    BinOp::Sqrt,
    BinOp::DDiv,
];

pub fn generate(seed: u64) -> Program {
    let mut p = Program {
        seed,
        globals: Vec::new(),
        consts: Vec::new(),
        decls: Vec::new(),
        funcs: Vec::new(),
        tables: Vec::new(),
        kernels: Vec::new(),
        rdc: false,
    };
    let mut g = Gen {
        r: Rng::new(seed),
        p: &mut p,
        ops: if seed >= HELPERS_FROM {
            OPS_WITH_HELPERS
        } else {
            OPS
        },
    };
    g.module();
    p
}

impl Gen<'_> {
    fn module(&mut self) {
        let r = &mut self.r;
        self.p.rdc = r.chance(25);
        let (ng, nc) = (r.range(0, 4), r.range(0, 3));
        for i in 0..ng {
            let ty = *r.pick(&[Ty::Int, Ty::Uint, Ty::Float]);
            let len = if r.chance(30) { 0 } else { 1 << r.range(2, 7) };
            self.p.globals.push(Global {
                name: format!("g{i}"),
                ty,
                len,
            });
            self.p.decls.push(Decl::Global(i as usize));
        }
        for i in 0..nc {
            let ty = *r.pick(&[Ty::Int, Ty::Uint, Ty::Float]);
            let len = 1 << r.range(2, 6);
            let vals = (0..len).map(|_| r.range(0, 200) as i32 - 100).collect();
            self.p.consts.push(ConstArr {
                name: format!("c{i}"),
                ty,
                vals,
            });
            self.p.decls.push(Decl::Const(i as usize));
        }
        r.shuffle(&mut self.p.decls);
        let nf = self.r.range(0, 4);
        for i in 0..nf {
            let kind = *self
                .r
                .pick(&[FuncKind::Inline, FuncKind::NoInline, FuncKind::Recursive]);
            let body = self.expr(Scope::Func, 2);
            self.p.funcs.push(Func {
                name: format!("f{i}"),
                kind,
                body,
            });
        }
        if self.p.rdc {
            for i in 0..self.r.range(1, 2) {
                let body = self.expr(Scope::Extern, 2);
                self.p.funcs.push(Func {
                    name: format!("ext{i}"),
                    kind: FuncKind::Extern,
                    body,
                });
            }
        }
        if !self.p.funcs.is_empty() {
            for i in 0..self.r.range(0, 2) {
                let len = 1 << self.r.range(1, 2);
                let n = self.p.funcs.len() as u64;
                let funcs = (0..len).map(|_| self.r.below(n) as usize).collect();
                self.p.tables.push(Table {
                    name: format!("tbl{i}"),
                    funcs,
                });
            }
        }
        let nk = self.r.range(2, 5);
        for i in 0..nk {
            let k = self.kernel(i);
            self.p.kernels.push(k);
        }
        self.r.shuffle(&mut self.p.kernels);
    }

    fn kernel(&mut self, i: u32) -> Kernel {
        let template = self.r.chance(20).then(|| self.r.range(1, 9) as i32);
        let bounds = match self.r.weighted(&[50, 30, 20]) {
            0 => Bounds::None,
            1 => Bounds::Launch(
                *self.r.pick(&[128, 256, 512, 1024]),
                self.r.chance(30).then(|| self.r.range(1, 2)),
            ),
            _ => Bounds::MaxNreg(*self.r.pick(&[64, 96, 128, 168])),
        };
        let shared = match self.r.weighted(&[55, 30, 15]) {
            0 => Shared::None,
            1 => Shared::Static(1 << self.r.range(5, 8)),
            _ => Shared::Dynamic,
        };
        let mut k = Kernel {
            name: format!("k{i}"),
            template,
            bounds,
            shared,
            tex: self.r.chance(15),
            surf: self.r.chance(10),
            hungry: None,
            body: Vec::new(),
        };
        // Small kernels too: the splice bug needs modules where only some kernels retune.
        match self.r.weighted(&[65, 15, 20]) {
            0 => {
                let konst = (!self.p.consts.is_empty() && self.r.chance(40))
                    .then(|| self.r.below(self.p.consts.len() as u64) as usize);
                k.hungry = Some(Hungry {
                    width: *self.r.pick(&[32, 40, 48, 56, 64]),
                    stride: 2 * self.r.range(0, 3) + 1,
                    konst,
                    chase: self.r.chance(60),
                });
                let n = self.r.range(1, 6);
                k.body = self.stmts(&k, n, 0);
            }
            1 => k.body = vec![Stmt::Printf(self.text(i))],
            _ => {
                let n = self.r.range(1, 3);
                k.body = self.stmts(&k, n, 1);
            }
        }
        k
    }

    fn text(&mut self, k: u32) -> String {
        let words = ["sum", "acc", "tid", "val", "chk", "out", "res"];
        let w = *self.r.pick(&words);
        format!("k{k} {w}{}", self.r.range(0, 999))
    }

    fn stmts(&mut self, k: &Kernel, n: u32, depth: u32) -> Vec<Stmt> {
        (0..n).map(|_| self.stmt(k, depth)).collect()
    }

    fn stmt(&mut self, k: &Kernel, depth: u32) -> Stmt {
        let scope = Scope::Kernel {
            template: k.template.is_some(),
        };
        let has_g = !self.p.globals.is_empty();
        let nest = if depth < 2 { 8 } else { 0 };
        let shared = if k.shared != Shared::None && depth == 0 {
            8
        } else {
            0
        };
        let weights = [
            20,
            10,
            8,
            if has_g { 14 } else { 0 },
            if has_g { 6 } else { 0 },
            shared,
            if k.tex { 8 } else { 0 },
            if k.surf { 8 } else { 0 },
            nest,
            nest,
        ];
        match self.r.weighted(&weights) {
            0 => Stmt::Mix(self.expr(scope, 3)),
            1 => {
                let id: u32 = k.name[1..].parse().unwrap_or(0);
                Stmt::Printf(self.text(id))
            }
            2 => Stmt::Assert(self.expr(scope, 2), self.r.range(1000, 99999) as i32),
            3 => {
                let g = self.r.below(self.p.globals.len() as u64) as usize;
                let op = if self.p.globals[g].ty == Ty::Float {
                    *self.r.pick(&[AtomicOp::Add, AtomicOp::Exch])
                } else {
                    *self
                        .r
                        .pick(&[AtomicOp::Add, AtomicOp::Max, AtomicOp::Or, AtomicOp::Exch])
                };
                Stmt::Atomic {
                    global: g,
                    op,
                    idx: self.expr(scope, 1),
                    val: self.expr(scope, 2),
                    use_result: self.r.chance(50),
                }
            }
            4 => Stmt::Store {
                global: self.r.below(self.p.globals.len() as u64) as usize,
                idx: self.expr(scope, 1),
                val: self.expr(scope, 2),
            },
            5 => Stmt::SharedRoundTrip,
            6 => Stmt::Tex(self.expr(scope, 1)),
            7 => Stmt::Surf(self.expr(scope, 1)),
            8 => {
                let n = self.r.range(1, 3);
                Stmt::Loop {
                    mask: *self.r.pick(&[3, 7, 15]),
                    body: self.stmts(k, n, depth + 1),
                }
            }
            _ => {
                let n = self.r.range(1, 3);
                // No barriers under a branch: keep shared round trips out of it.
                let body = self.stmts(
                    &Kernel {
                        shared: Shared::None,
                        ..k.clone()
                    },
                    n,
                    depth + 1,
                );
                Stmt::If {
                    k: self.r.range(0, 3),
                    body,
                }
            }
        }
    }

    fn expr(&mut self, scope: Scope, depth: u32) -> Expr {
        if depth == 0 || self.r.chance(25) {
            return self.leaf(scope);
        }
        let kernel = matches!(scope, Scope::Kernel { .. });
        let calls = if kernel && !self.p.funcs.is_empty() {
            6
        } else {
            0
        };
        let tables = if kernel && !self.p.tables.is_empty() {
            4
        } else {
            0
        };
        let consts = if scope != Scope::Extern && !self.p.consts.is_empty() {
            6
        } else {
            0
        };
        let loads = if scope != Scope::Extern && !self.p.globals.is_empty() {
            4
        } else {
            0
        };
        let input = if kernel { 8 } else { 0 };
        let d = depth - 1;
        match self.r.weighted(&[20, input, consts, loads, calls, tables]) {
            0 => {
                let op = *self.r.pick(self.ops);
                Expr::Bin(
                    op,
                    Box::new(self.expr(scope, d)),
                    Box::new(self.expr(scope, d)),
                )
            }
            1 => Expr::In(Box::new(self.expr(scope, d))),
            2 => {
                let c = self.r.below(self.p.consts.len() as u64) as usize;
                Expr::Const(c, Box::new(self.expr(scope, d)))
            }
            3 => {
                let g = self.r.below(self.p.globals.len() as u64) as usize;
                Expr::Load(g, Box::new(self.expr(scope, d)))
            }
            4 => {
                let f = self.r.below(self.p.funcs.len() as u64) as usize;
                Expr::Call(
                    f,
                    Box::new(self.expr(scope, d)),
                    Box::new(self.expr(scope, d)),
                )
            }
            _ => {
                let t = self.r.below(self.p.tables.len() as u64) as usize;
                Expr::CallTable(
                    t,
                    Box::new(self.leaf(scope)),
                    Box::new(self.expr(scope, d)),
                    Box::new(self.expr(scope, d)),
                )
            }
        }
    }

    fn leaf(&mut self, scope: Scope) -> Expr {
        let kernel = matches!(scope, Scope::Kernel { .. });
        let targ = if scope == (Scope::Kernel { template: true }) {
            3
        } else {
            0
        };
        let kw = if kernel { 4 } else { 0 };
        match self.r.weighted(&[6, 6, kw, kw, targ, 4, 4]) {
            0 => Expr::Acc,
            1 => Expr::Iv,
            2 => Expr::Tid,
            3 => Expr::N,
            4 => Expr::TArg,
            5 => Expr::LitF(self.r.range(0, 64) as i32 - 32),
            _ => Expr::LitU(self.r.range(0, 255)),
        }
    }
}
