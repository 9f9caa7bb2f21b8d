"""Triton kernels of our own, in the style of Triton's tutorials (vector add, fused softmax,
matmul in several tile shapes, layer norm), compiled ahead of time with no GPU
(`triton.compile` with a `GPUTarget`) for sm_80 and sm_90. Writes each kernel's PTX to
`--out` and prints, per target, the ptxas Triton chose (`ptxas for 80: PATH`).

    python kernels.py --out DIR [--only NAME ...]

Triton runs ptxas itself while compiling: with TRITON_PTXAS_PATH and
TRITON_PTXAS_BLACKWELL_PATH at shims/ptxas that is nvcc-orion (tests/ptxas_shim.rs). The
PTX in tests/kernels/triton/ was written by this script (Triton 3.9.0).
"""

import argparse
import os

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia import compiler as nv


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + offs, mask=offs < n_cols, other=-float('inf'))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK * sak
        b += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))


@triton.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * stride + offs, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    d = tl.where(m, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    y = d * rstd * tl.load(w_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m)
    tl.store(y_ptr + row * stride + offs, y, mask=m)


MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
          "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32", "scm": "i32", "scn": "i32",
          "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}


def jobs():
    """(name, function, signature, constants, options) for every kernel."""
    yield ("add", add_kernel,
           {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
           {"BLOCK": 1024}, {"num_warps": 4})
    yield ("softmax", softmax_kernel,
           {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32",
            "n_cols": "i32", "BLOCK": "constexpr"},
           {"BLOCK": 1024}, {"num_warps": 8})
    yield ("layer_norm", layer_norm_kernel,
           {"x_ptr": "*fp32", "y_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "stride": "i32",
            "n": "i32", "eps": "fp32", "BLOCK": "constexpr"},
           {"BLOCK": 2048}, {"num_warps": 8})
    for bm, bn, bk, warps, stages in ((128, 128, 32, 4, 3), (128, 64, 32, 4, 4), (64, 64, 32, 4, 3),
                                      (128, 32, 32, 4, 4), (64, 128, 64, 4, 2)):
        yield (f"matmul_{bm}x{bn}x{bk}_s{stages}", matmul_kernel, MM_SIG,
               {"BM": bm, "BN": bn, "BK": bk}, {"num_warps": warps, "num_stages": stages})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--caps", default="80,90")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for cap in (int(c) for c in args.caps.split(",")):
        print(f"ptxas for {cap}: {nv.get_ptxas(cap).path}", flush=True)
        target = GPUTarget("cuda", cap, 32)
        for name, fn, sig, consts, opts in jobs():
            if args.only and name not in args.only:
                continue
            src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=consts)
            k = triton.compile(src, target=target, options=opts)
            with open(os.path.join(args.out, f"{name}_sm{cap}.ptx"), "w") as f:
                f.write(k.asm["ptx"])
            print(f"{name} sm_{cap}: {k.metadata.shared} bytes of shared memory at launch", flush=True)


if __name__ == "__main__":
    main()
