//! The program a seed describes: small enough to print as CUDA, structured enough to reduce.
//! Every index into a list (`Global(g)`, `Call(f)`, ...) names an item of the [`Program`].

/// Scalar types. Integers are unsigned so that no arithmetic is undefined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Int,
    Uint,
    Float,
}

impl Ty {
    pub fn c(self) -> &'static str {
        match self {
            Ty::Int => "int",
            Ty::Uint => "unsigned",
            Ty::Float => "float",
        }
    }
}

/// A `__device__` global: an array of `len` (a power of two), or a scalar when `len` is 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Global {
    pub name: String,
    pub ty: Ty,
    pub len: u32,
}

/// A `__constant__` array with its initialiser (`len` = `vals.len()`, a power of two).
#[derive(Debug, Clone, PartialEq)]
pub struct ConstArr {
    pub name: String,
    pub ty: Ty,
    pub vals: Vec<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuncKind {
    /// `__forceinline__`.
    Inline,
    /// `__noinline__`: a real call (inside the kernel's section after ptxas).
    NoInline,
    /// `__noinline__` and calling itself with a bounded depth.
    Recursive,
    /// Defined in the second translation unit (`-rdc` programs only).
    Extern,
}

/// `float name(float a, unsigned b)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Func {
    pub name: String,
    pub kind: FuncKind,
    pub body: Expr,
}

/// `__device__ float (*name[len])(float, unsigned) = {funcs...}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: String,
    pub funcs: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounds {
    None,
    /// `__launch_bounds__(threads, min blocks)`.
    Launch(u32, Option<u32>),
    /// `__maxnreg__(n)`.
    MaxNreg(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    None,
    /// `__shared__ float sh[n]`.
    Static(u32),
    /// `extern __shared__ float dsh[]` (64 floats at launch).
    Dynamic,
}

/// The register-hungry core: `width` floats loaded up front, kept live across a loop of
/// dependent global loads, then folded into `acc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hungry {
    pub width: u32,
    /// Stride of the per-element load inside the loop (odd, so the addresses differ).
    pub stride: u32,
    /// Mix a constant array element into every update (`None`: plain fma).
    pub konst: Option<usize>,
    /// The loop only chases pointers and leaves the array alone: latency-bound code whose
    /// spills at a lower budget fall outside the loop, so the tuner is keen to retune it.
    pub chase: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub name: String,
    /// `template <int T>`, instantiated once with this value.
    pub template: Option<i32>,
    pub bounds: Bounds,
    pub shared: Shared,
    pub tex: bool,
    pub surf: bool,
    pub hungry: Option<Hungry>,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Max,
    Or,
    Exch,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// `acc = acc * 0.5f + e` (float) or `iv ^= e` (unsigned), by the type of `e`.
    Mix(Expr),
    /// `if (tid == 0u) printf(text, iv, acc)`.
    Printf(String),
    /// `assert(e != K)`.
    Assert(Expr, i32),
    /// `atomicOp(&g[i & mask], v)`; the result is folded into `iv` when `use_result`.
    Atomic {
        global: usize,
        op: AtomicOp,
        idx: Expr,
        val: Expr,
        use_result: bool,
    },
    /// `g[i & mask] = v`.
    Store { global: usize, idx: Expr, val: Expr },
    /// Through the kernel's shared memory, with barriers (top level or in loops only).
    SharedRoundTrip,
    /// `acc += tex1Dfetch<float>(tex, i)`.
    Tex(Expr),
    /// `surf1Dwrite(acc, surf, i)` then a read back into `acc`.
    Surf(Expr),
    /// `for (unsigned l = 0; l < (n & mask); ++l) body`.
    Loop { mask: u32, body: Vec<Stmt> },
    /// `if ((iv & 3u) == k) body`.
    If { k: u32, body: Vec<Stmt> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// The three below call the compiler's helper subroutines on their slow paths
    /// (generated only from [`crate::generate::HELPERS_FROM`] on): `x / y` in single
    /// precision (IEEE division), `sqrtf(fabsf(x * y))` (IEEE square root), and `x / (y + 3)`
    /// in double precision (the reciprocal and division slow paths).
    Div,
    Sqrt,
    DDiv,
    Add,
    Sub,
    Mul,
    Min,
    Max,
    Xor,
    And,
    Shr,
}

/// Expressions; each has a type ([`Expr::ty`]) and the printer converts where needed
/// (`__float_as_uint` / `(float)`), so any two can be combined.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// The kernel's float accumulator (`a` inside a function).
    Acc,
    /// The kernel's unsigned accumulator (`b` inside a function).
    Iv,
    Tid,
    N,
    /// The template argument (0 outside templates).
    TArg,
    LitF(i32),
    LitU(u32),
    /// `in[i & 4095]`.
    In(Box<Expr>),
    /// `c[i & (len-1)]`.
    Const(usize, Box<Expr>),
    /// `g[i & (len-1)]`, or the scalar.
    Load(usize, Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// `f(a, b)`: a function of [`Program::funcs`].
    Call(usize, Box<Expr>, Box<Expr>),
    /// `table[i & (len-1)](a, b)`.
    CallTable(usize, Box<Expr>, Box<Expr>, Box<Expr>),
}

impl Expr {
    pub fn ty(&self, p: &Program) -> Ty {
        match self {
            Expr::Acc | Expr::LitF(_) | Expr::In(_) | Expr::Call(..) | Expr::CallTable(..) => {
                Ty::Float
            }
            Expr::Iv | Expr::Tid | Expr::N | Expr::LitU(_) => Ty::Uint,
            Expr::TArg => Ty::Int,
            Expr::Const(c, _) => p.consts[*c].ty,
            Expr::Load(g, _) => p.globals[*g].ty,
            Expr::Bin(op, a, b) => match op {
                BinOp::Xor | BinOp::And | BinOp::Shr => Ty::Uint,
                BinOp::Div | BinOp::Sqrt | BinOp::DDiv => Ty::Float,
                _ if a.ty(p) == Ty::Float || b.ty(p) == Ty::Float => Ty::Float,
                _ => Ty::Uint,
            },
        }
    }

    /// Every direct sub-expression.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Expr::In(e) | Expr::Const(_, e) | Expr::Load(_, e) => vec![e.as_mut()],
            Expr::Bin(_, a, b) | Expr::Call(_, a, b) => vec![a.as_mut(), b.as_mut()],
            Expr::CallTable(_, i, a, b) => vec![i.as_mut(), a.as_mut(), b.as_mut()],
            _ => Vec::new(),
        }
    }

    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::In(e) | Expr::Const(_, e) | Expr::Load(_, e) => vec![e.as_ref()],
            Expr::Bin(_, a, b) | Expr::Call(_, a, b) => vec![a.as_ref(), b.as_ref()],
            Expr::CallTable(_, i, a, b) => vec![i.as_ref(), a.as_ref(), b.as_ref()],
            _ => Vec::new(),
        }
    }
}

impl Stmt {
    /// Expressions directly in this statement (not in nested bodies).
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Stmt::Mix(e) | Stmt::Assert(e, _) | Stmt::Tex(e) | Stmt::Surf(e) => vec![e],
            Stmt::Atomic { idx, val, .. } | Stmt::Store { idx, val, .. } => vec![idx, val],
            _ => Vec::new(),
        }
    }

    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Stmt::Mix(e) | Stmt::Assert(e, _) | Stmt::Tex(e) | Stmt::Surf(e) => vec![e],
            Stmt::Atomic { idx, val, .. } | Stmt::Store { idx, val, .. } => vec![idx, val],
            _ => Vec::new(),
        }
    }

    pub fn body(&self) -> Option<&Vec<Stmt>> {
        match self {
            Stmt::Loop { body, .. } | Stmt::If { body, .. } => Some(body),
            _ => None,
        }
    }

    pub fn body_mut(&mut self) -> Option<&mut Vec<Stmt>> {
        match self {
            Stmt::Loop { body, .. } | Stmt::If { body, .. } => Some(body),
            _ => None,
        }
    }
}

/// Module-level declarations in file order (the order is the seed's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decl {
    Global(usize),
    Const(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub seed: u64,
    pub globals: Vec<Global>,
    pub consts: Vec<ConstArr>,
    /// Declaration order of globals and constants.
    pub decls: Vec<Decl>,
    /// Definition order is this order; every function is declared before any definition.
    pub funcs: Vec<Func>,
    pub tables: Vec<Table>,
    /// File order.
    pub kernels: Vec<Kernel>,
    /// Relocatable device code: a second translation unit defines the `Extern` functions and
    /// a third holds a host `main`.
    pub rdc: bool,
}

impl Program {
    /// Walk every expression of the program (kernels, functions), nested ones included.
    pub fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        fn expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
            f(e);
            for c in e.children() {
                expr(c, f);
            }
        }
        fn stmts(s: &[Stmt], f: &mut dyn FnMut(&Expr)) {
            for st in s {
                for e in st.exprs() {
                    expr(e, f);
                }
                if let Some(b) = st.body() {
                    stmts(b, f);
                }
            }
        }
        for fun in &self.funcs {
            expr(&fun.body, f);
        }
        for k in &self.kernels {
            stmts(&k.body, f);
        }
    }

    /// Walk every statement of every kernel, nested ones included.
    pub fn for_each_stmt(&self, f: &mut dyn FnMut(&Kernel, &Stmt)) {
        fn stmts(k: &Kernel, s: &[Stmt], f: &mut dyn FnMut(&Kernel, &Stmt)) {
            for st in s {
                f(k, st);
                if let Some(b) = st.body() {
                    stmts(k, b, f);
                }
            }
        }
        for k in &self.kernels {
            stmts(k, &k.body, f);
        }
    }
}
