//! [`Program`] → CUDA sources: `a.cu` (the module), and for `-rdc` programs `b.cu` (the
//! `Extern` functions) and `main.cu` (a host `main` launching every kernel).

use std::fmt::Write as _;

use crate::ast::*;

/// The sources of one program: (file name, text).
pub fn sources(p: &Program) -> Vec<(&'static str, String)> {
    let mut out = vec![("a.cu", module(p))];
    if p.rdc {
        out.push(("b.cu", second_unit(p)));
        out.push(("main.cu", host_main(p)));
    }
    out
}

/// Where a printed expression sits: in a kernel, or a function with parameters `a`, `b`.
#[derive(Clone, Copy, PartialEq)]
enum In {
    Kernel,
    Func,
}

struct Pr<'a> {
    p: &'a Program,
    at: In,
}

impl Pr<'_> {
    fn u(&self, e: &Expr) -> String {
        let s = self.e(e);
        match e.ty(self.p) {
            Ty::Uint => s,
            Ty::Int => format!("(unsigned)({s})"),
            Ty::Float => format!("__float_as_uint({s})"),
        }
    }

    fn f(&self, e: &Expr) -> String {
        let s = self.e(e);
        match e.ty(self.p) {
            Ty::Float => s,
            _ => format!("(float)({s})"),
        }
    }

    /// `e` converted to `ty`.
    fn to(&self, ty: Ty, e: &Expr) -> String {
        match ty {
            Ty::Float => self.f(e),
            Ty::Uint => self.u(e),
            Ty::Int => format!("(int)({})", self.u(e)),
        }
    }

    fn e(&self, e: &Expr) -> String {
        let p = self.p;
        match e {
            Expr::Acc => if self.at == In::Kernel { "acc" } else { "a" }.into(),
            Expr::Iv => if self.at == In::Kernel { "iv" } else { "b" }.into(),
            Expr::Tid => "threadIdx.x".into(),
            Expr::N => "n".into(),
            Expr::TArg => "T".into(),
            Expr::LitF(v) => format!("({:.4}f)", *v as f32 / 16.0),
            Expr::LitU(v) => format!("{v}u"),
            Expr::In(i) => format!("in[{} & 4095u]", self.u(i)),
            Expr::Const(c, i) => {
                let c = &p.consts[*c];
                format!("{}[{} & {}u]", c.name, self.u(i), c.vals.len() - 1)
            }
            Expr::Load(g, i) => {
                let g = &p.globals[*g];
                if g.len == 0 {
                    g.name.clone()
                } else {
                    format!("{}[{} & {}u]", g.name, self.u(i), g.len - 1)
                }
            }
            Expr::Bin(op, a, b) => {
                let float = e.ty(p) == Ty::Float;
                let (x, y) = if float {
                    (self.f(a), self.f(b))
                } else {
                    (self.u(a), self.u(b))
                };
                match op {
                    BinOp::Div => format!("({x} / {y})"),
                    BinOp::Sqrt => format!("sqrtf(fabsf({x} * {y}))"),
                    BinOp::DDiv => format!("(float)((double){x} / ((double){y} + 3.0))"),
                    BinOp::Add => format!("({x} + {y})"),
                    BinOp::Sub => format!("({x} - {y})"),
                    BinOp::Mul => format!("({x} * {y})"),
                    BinOp::Min if float => format!("fminf({x}, {y})"),
                    BinOp::Max if float => format!("fmaxf({x}, {y})"),
                    BinOp::Min => format!("min({x}, {y})"),
                    BinOp::Max => format!("max({x}, {y})"),
                    BinOp::Xor => format!("({x} ^ {y})"),
                    BinOp::And => format!("({x} & {y})"),
                    BinOp::Shr => format!("({x} >> ({y} & 31u))"),
                }
            }
            Expr::Call(f, a, b) => {
                let f = &p.funcs[*f];
                // Recursion depth is the second argument: keep it small.
                let mask = if f.kind == FuncKind::Recursive {
                    " & 7u"
                } else {
                    ""
                };
                format!("{}({}, {}{mask})", f.name, self.f(a), self.u(b))
            }
            Expr::CallTable(t, i, a, b) => {
                let t = &p.tables[*t];
                format!(
                    "{}[{} & {}u]({}, {} & 7u)",
                    t.name,
                    self.u(i),
                    t.funcs.len() - 1,
                    self.f(a),
                    self.u(b)
                )
            }
        }
    }
}

fn qualifiers(kind: FuncKind) -> &'static str {
    match kind {
        FuncKind::Inline => "__device__ __forceinline__",
        FuncKind::NoInline | FuncKind::Recursive => "__device__ __noinline__",
        FuncKind::Extern => "extern __device__",
    }
}

fn module(p: &Program) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// orion-gen seed {}\n#include <cstdio>\n#include <cassert>\n",
        p.seed
    );
    for d in &p.decls {
        match *d {
            Decl::Global(g) => {
                let g = &p.globals[g];
                let len = if g.len == 0 {
                    String::new()
                } else {
                    format!("[{}]", g.len)
                };
                let _ = writeln!(s, "__device__ {} {}{len};", g.ty.c(), g.name);
            }
            Decl::Const(c) => {
                let c = &p.consts[c];
                let vals: Vec<String> = c.vals.iter().map(|v| lit(c.ty, *v)).collect();
                let _ = writeln!(
                    s,
                    "__constant__ {} {}[{}] = {{{}}};",
                    c.ty.c(),
                    c.name,
                    c.vals.len(),
                    vals.join(", ")
                );
            }
        }
    }
    for f in &p.funcs {
        let _ = writeln!(
            s,
            "{} float {}(float, unsigned);",
            qualifiers(f.kind),
            f.name
        );
    }
    for t in &p.tables {
        let names: Vec<&str> = t.funcs.iter().map(|&f| p.funcs[f].name.as_str()).collect();
        let _ = writeln!(
            s,
            "__device__ float (*{}[{}])(float, unsigned) = {{{}}};",
            t.name,
            names.len(),
            names.join(", ")
        );
    }
    let pr = Pr { p, at: In::Func };
    for f in p.funcs.iter().filter(|f| f.kind != FuncKind::Extern) {
        let _ = write!(
            s,
            "\n{} float {}(float a, unsigned b)\n{{\n",
            qualifiers(f.kind),
            f.name
        );
        if f.kind == FuncKind::Recursive {
            let _ = writeln!(
                s,
                "    if (b == 0u) return a;\n    return {}(a * 0.75f + 1.0f, b - 1u) + {};",
                f.name,
                pr.f(&f.body)
            );
        } else {
            let _ = writeln!(s, "    return {};", pr.f(&f.body));
        }
        s.push_str("}\n");
    }
    for k in &p.kernels {
        kernel(&mut s, p, k);
    }
    if p.rdc {
        for k in p.kernels.iter().filter(|k| k.template.is_some()) {
            let _ = write!(
                s,
                "\nvoid launch_{}(float* out, const float* in, unsigned n)\n{{\n    {}\n}}\n",
                k.name,
                launch(k)
            );
        }
    }
    s
}

fn lit(ty: Ty, v: i32) -> String {
    match ty {
        Ty::Int => v.to_string(),
        Ty::Uint => format!("{}u", v.unsigned_abs()),
        Ty::Float => format!("{:.4}f", v as f32 / 8.0),
    }
}

fn params(k: &Kernel, names: bool) -> String {
    let n = |s: &str| {
        if names {
            format!(" {s}")
        } else {
            String::new()
        }
    };
    let mut s = format!(
        "float* __restrict__{}, const float* __restrict__{}, unsigned{}",
        n("out"),
        n("in"),
        n("n")
    );
    if k.tex {
        let _ = write!(s, ", cudaTextureObject_t{}", n("tex"));
    }
    if k.surf {
        let _ = write!(s, ", cudaSurfaceObject_t{}", n("surf"));
    }
    s
}

fn kernel(s: &mut String, p: &Program, k: &Kernel) {
    s.push('\n');
    if k.template.is_some() {
        s.push_str("template <int T>\n");
    }
    let bounds = match k.bounds {
        Bounds::None => String::new(),
        Bounds::Launch(t, None) => format!("__launch_bounds__({t}) "),
        Bounds::Launch(t, Some(m)) => format!("__launch_bounds__({t}, {m}) "),
        Bounds::MaxNreg(n) => format!("__maxnreg__({n}) "),
    };
    let _ = writeln!(
        s,
        "__global__ void {bounds}{}({})\n{{",
        k.name,
        params(k, true)
    );
    s.push_str("    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;\n");
    s.push_str("    float acc = in[tid & 4095u];\n    unsigned iv = tid ^ n;\n");
    match k.shared {
        Shared::None => {}
        Shared::Static(n) => {
            let _ = writeln!(s, "    __shared__ float sh[{n}];");
        }
        Shared::Dynamic => s.push_str("    extern __shared__ float dsh[];\n"),
    }
    if let Some(h) = &k.hungry {
        hungry_head(s, p, h);
    }
    let pr = Pr { p, at: In::Kernel };
    stmts(s, &pr, k, &k.body, 1);
    if k.shared != Shared::None && !k.body.contains(&Stmt::SharedRoundTrip) {
        stmt(s, &pr, k, &Stmt::SharedRoundTrip, 1);
    }
    if let Some(h) = &k.hungry {
        let _ = writeln!(
            s,
            "    float fold = 0.0f;\n#pragma unroll\n    for (int i = 0; i < {w}; ++i) fold += v[i] * (float)(i + 1) + in[(p + i) & 4095u];\n    acc += fold;",
            w = h.width
        );
    }
    s.push_str("    out[tid & 4095u] = acc + (float)iv;\n}\n");
    if let Some(t) = k.template {
        let _ = writeln!(
            s,
            "template __global__ void {}<{t}>({});",
            k.name,
            params(k, false)
        );
    }
}

/// The live array and the loop of dependent loads that keeps it live.
fn hungry_head(s: &mut String, p: &Program, h: &Hungry) {
    let w = h.width;
    let _ = writeln!(
        s,
        "    float v[{w}];\n#pragma unroll\n    for (int i = 0; i < {w}; ++i) v[i] = in[(tid * {w}u + i) & 4095u] * acc;"
    );
    s.push_str(
        "    unsigned p = tid & 1023u;\n    for (unsigned it = 0u; it < (n & 15u); ++it) {\n",
    );
    s.push_str("        p = __float_as_uint(in[p & 4095u]) & 1023u;\n");
    if h.chase {
        let _ = writeln!(
            s,
            "        p = __float_as_uint(in[(p ^ it) * {}u & 4095u]) & 1023u;\n        acc += in[p];\n    }}",
            h.stride
        );
        return;
    }
    s.push_str("        const float x = in[(p ^ it) & 4095u];\n#pragma unroll\n");
    let extra = match h.konst {
        Some(c) => {
            let c = &p.consts[c];
            let v = format!("{}[i & {}]", c.name, c.vals.len() - 1);
            if c.ty == Ty::Float {
                format!(" + {v}")
            } else {
                format!(" + (float){v}")
            }
        }
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "        for (int i = 0; i < {w}; ++i) v[i] = fmaf(v[i], x, in[(p + i * {}u) & 4095u]){extra};\n    }}",
        h.stride
    );
}

fn stmts(s: &mut String, pr: &Pr, k: &Kernel, body: &[Stmt], depth: usize) {
    for st in body {
        stmt(s, pr, k, st, depth);
    }
}

fn stmt(s: &mut String, pr: &Pr, k: &Kernel, st: &Stmt, depth: usize) {
    let ind = "    ".repeat(depth);
    let p = pr.p;
    match st {
        Stmt::Mix(e) => {
            if e.ty(p) == Ty::Float {
                let _ = writeln!(s, "{ind}acc = acc * 0.5f + {};", pr.f(e));
            } else {
                let _ = writeln!(s, "{ind}iv ^= {};", pr.u(e));
            }
        }
        Stmt::Printf(text) => {
            let _ = writeln!(
                s,
                "{ind}if (tid == 0u) printf(\"{text} %u %f\\n\", iv, (double)acc);"
            );
        }
        Stmt::Assert(e, k) => {
            if e.ty(p) == Ty::Float {
                let _ = writeln!(s, "{ind}assert({} != {k}.0f);", pr.f(e));
            } else {
                let _ = writeln!(s, "{ind}assert({} != {k}u);", pr.u(e));
            }
        }
        Stmt::Atomic {
            global,
            op,
            idx,
            val,
            use_result,
        } => {
            let g = &p.globals[*global];
            let f = match op {
                AtomicOp::Add => "atomicAdd",
                AtomicOp::Max => "atomicMax",
                AtomicOp::Or => "atomicOr",
                AtomicOp::Exch => "atomicExch",
            };
            let call = format!("{f}(&{}, {})", place(pr, g, idx), pr.to(g.ty, val));
            if *use_result {
                let r = match g.ty {
                    Ty::Float => format!("__float_as_uint({call})"),
                    _ => format!("(unsigned){call}"),
                };
                let _ = writeln!(s, "{ind}iv ^= {r};");
            } else {
                let _ = writeln!(s, "{ind}{call};");
            }
        }
        Stmt::Store { global, idx, val } => {
            let g = &p.globals[*global];
            let _ = writeln!(s, "{ind}{} = {};", place(pr, g, idx), pr.to(g.ty, val));
        }
        Stmt::SharedRoundTrip => {
            let (arr, mask) = match k.shared {
                Shared::Static(n) => ("sh", n - 1),
                Shared::Dynamic => ("dsh", 63),
                Shared::None => return,
            };
            let _ = writeln!(
                s,
                "{ind}{arr}[threadIdx.x & {mask}u] = acc;\n{ind}__syncthreads();\n{ind}acc += {arr}[(threadIdx.x + 1u) & {mask}u];\n{ind}__syncthreads();"
            );
        }
        Stmt::Tex(e) if k.tex => {
            let _ = writeln!(
                s,
                "{ind}acc += tex1Dfetch<float>(tex, (int)({} & 1023u));",
                pr.u(e)
            );
        }
        Stmt::Surf(e) if k.surf => {
            let _ = writeln!(
                s,
                "{ind}{{\n{ind}    const int x = (int)({} & 255u) * 4;\n{ind}    surf1Dwrite(acc, surf, x);\n{ind}    float r;\n{ind}    surf1Dread(&r, surf, x);\n{ind}    acc += r;\n{ind}}}",
                pr.u(e)
            );
        }
        Stmt::Tex(_) | Stmt::Surf(_) => {}
        Stmt::Loop { mask, body } => {
            let l = format!("l{depth}");
            let _ = writeln!(
                s,
                "{ind}for (unsigned {l} = 0u; {l} < (n & {mask}u); ++{l}) {{\n{ind}    iv += {l};"
            );
            stmts(s, pr, k, body, depth + 1);
            let _ = writeln!(s, "{ind}}}");
        }
        Stmt::If { k: v, body } => {
            let _ = writeln!(s, "{ind}if ((iv & 3u) == {v}u) {{");
            stmts(s, pr, k, body, depth + 1);
            let _ = writeln!(s, "{ind}}}");
        }
    }
}

fn place(pr: &Pr, g: &Global, idx: &Expr) -> String {
    if g.len == 0 {
        g.name.clone()
    } else {
        format!("{}[{} & {}u]", g.name, pr.u(idx), g.len - 1)
    }
}

fn second_unit(p: &Program) -> String {
    let mut s = format!(
        "// orion-gen seed {} (second unit)\n__device__ unsigned ext_calls;\n",
        p.seed
    );
    let pr = Pr { p, at: In::Func };
    for f in p.funcs.iter().filter(|f| f.kind == FuncKind::Extern) {
        let _ = write!(
            s,
            "\n__device__ float {}(float a, unsigned b)\n{{\n    atomicAdd(&ext_calls, 1u);\n    return {};\n}}\n",
            f.name,
            pr.f(&f.body)
        );
    }
    s
}

/// The launch of `k` with `out`, `in`, `n` in scope (texture and surface objects 0).
fn launch(k: &Kernel) -> String {
    let threads = match k.bounds {
        Bounds::Launch(t, _) => t.min(128),
        _ => 128,
    };
    let dynamic = if k.shared == Shared::Dynamic { 256 } else { 0 };
    let targ = k.template.map(|t| format!("<{t}>")).unwrap_or_default();
    let mut args = "out, in, n".to_string();
    if k.tex {
        args.push_str(", 0");
    }
    if k.surf {
        args.push_str(", 0");
    }
    format!("{}{targ}<<<2, {threads}, {dynamic}>>>({args});", k.name)
}

fn host_main(p: &Program) -> String {
    let mut s = format!(
        "// orion-gen seed {} (host)\n#include <cuda_runtime.h>\n\n",
        p.seed
    );
    for k in &p.kernels {
        if k.template.is_some() {
            let _ = writeln!(
                s,
                "void launch_{}(float* out, const float* in, unsigned n);",
                k.name
            );
        } else {
            let _ = writeln!(s, "__global__ void {}({});", k.name, params(k, false));
        }
    }
    s.push_str("\nint main()\n{\n    float* out = nullptr;\n    float* in = nullptr;\n    const unsigned n = 7u;\n");
    s.push_str(
        "    cudaMalloc(&out, 4096 * sizeof(float));\n    cudaMalloc(&in, 4096 * sizeof(float));\n",
    );
    for k in &p.kernels {
        if k.template.is_some() {
            let _ = writeln!(s, "    launch_{}(out, in, n);", k.name);
        } else {
            let _ = writeln!(s, "    {}", launch(k));
        }
    }
    s.push_str("    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;\n}\n");
    s
}
