//! Mutation testing of the transforms and the checker: proved rewrites of our own spilling
//! kernels (spill2smem on `tests/kernels/spill2smem/spills.cu` and on the spill corpus's
//! `c32_devcall`, whose 128-bit spills split in four, at `.maxnreg 31`, register
//! demotion on `tests/kernels/regdem/regdem.cu`, sm_80 and sm_90) are broken on purpose —
//! in the rewritten cubin's instruction words (a wrong slot, width, scoreboard, wait mask,
//! stall, base, stride, thread index, predicate, register...) or in what the transform claims
//! (base register, slots, inserted instructions, offset map, renaming) — and every mutant must
//! be rejected by `proven::recheck_spill2smem` / `proven::recheck_regdem`, the very checks the
//! rewrite loops run (oracle, checker, scheduling, base proof). The unmutated rewrites are
//! accepted (control). Each mutation prints its rejection; the test fails listing survivors,
//! and fails for a mutation that finds no place in any rewrite (it would test nothing).
//!
//! `every_mutation_of_a_proved_rewrite_is_rejected` (all kernels, both arches, every
//! mutation: about 10 minutes) is `#[ignore]`d; its run is recorded in
//! `bench/results/mutation.md`. `a_few_mutations_are_rejected` (sm_80, one kernel per
//! rewrite, ten mutations) runs in the normal suite.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use nvcc_orion::cubin::{Cubin, OffsetMap};
use nvcc_orion::sass::Op;
use nvcc_orion::sass::control::Control;
use nvcc_orion::sass::decode;
use nvcc_orion::sass::encode::{self, RegField};
use nvcc_orion::sass::ir::{Function, Instr};
use nvcc_orion::transform::area::Options;
use nvcc_orion::transform::regdem;
use nvcc_orion::transform::spill2smem::Rewrite;
use nvcc_orion::tune::proven::{self, NotProved, Refused};
use nvcc_orion::tune::ptx::{Budget, entries, with_budgets};

const ARCHS: &[u32] = &[80, 90];
const THREADS: u32 = 128;

/// `spill2smem` kernels: a plain chain, 64-bit spills (each split in two 32-bit shared
/// accesses), spills around calls, spilling callees, and 64-bit values passed to guarded
/// callees, where the stack moves values around the calls (a load and a store each way, and
/// the drain NOP ending each run of moves).
const SPILL_KERNELS: &[&str] = &[
    "_Z11s_chain_f32PKfPfi",
    "_Z10s_wide_f64PKdPdi",
    "_Z14s_around_callsPKfPfi",
    "_Z13s_stack_callsPKfPfi",
    "_Z16s_guarded_calleePKdPdi",
];

/// `regdem` kernels (to the first multiple of 8 below their count; the call kernel to
/// 32 registers, where its callees are renumbered).
const REGDEM_KERNELS: &[&str] = &[
    "_Z11r_chain_f32PKfPfi",
    "_Z10r_wide_f64PKdPdi",
    "_Z11r_with_callPKfPfi",
];

/// The spill kernels' file (`tests/kernels/`).
const SPILLS: &str = "spill2smem/spills.cu";

/// A kernel of the spill corpus whose 128-bit spills (`STL.128`, beside a local array passed
/// to a device function) are each moved as four 32-bit shared accesses: the three inserted
/// pieces after each image run under the original's schedule (`tests/kernels/spill_corpus/`).
const WIDE_SPILL: (&str, &str) = ("spill_corpus/cap32.cu", "_Z11c32_devcallPKfS0_Pfii");

/// The fast subset (in the normal suite): sm_80, the spill kernel that moves values around
/// calls, the corpus kernel with 128-bit spills and the regdem kernel with a call, and these
/// mutations.
const QUICK_SPILL: &str = "_Z16s_guarded_calleePKdPdi";
const QUICK_REGDEM: &str = "_Z11r_with_callPKfPfi";
const QUICK_MUTATIONS: &[&str] = &[
    "wrong slot on a moved store (STS offset + stride)",
    "wrong wait mask: an LDS's consumer does not wait for it",
    "off-by-one base: the base's dynamic-shared word one word off",
    "missing drain: the NOP before a call no longer waits",
    "wrong width: a moved STL.64 narrowed to 32 bits (its second STS made a NOP)",
    "claim: map off by one instruction",
    "claim: an inserted instruction missing",
    "wrong slot on an inserted STS",
    "dropped read scoreboard of an inserted STS",
    "claim: a renumbered register renamed wrongly",
    "a piece of a split 128-bit STS, away from its image, loses its read scoreboard",
];

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run tool");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels")
}

/// One proved rewrite of one kernel, and both cubins decoded.
struct Env<R> {
    arch: u32,
    kernel: String,
    original: Vec<u8>,
    rewritten: Vec<u8>,
    r: R,
    before: Vec<Function>,
    after: Vec<Function>,
}

/// What a mutation gives: the mutated bytes and claim, or `None` where the rewrite has no
/// place for it.
type Mutant<R> = Option<(Vec<u8>, R)>;
/// `proven::recheck_spill2smem` or `proven::recheck_regdem`.
type Recheck<R> = fn(&[u8], &[u8], &R) -> Result<usize, NotProved>;
type Mutation<R> = (&'static str, fn(&Env<R>) -> Mutant<R>);

/// The functions of text section `sec`, decoded from that section alone (nvdisasm's `-fun`),
/// for placing mutations: their instructions are the whole listing's (only the ABI columns
/// of a partial listing can differ, tests/decode/sass_decode.rs; no mutation reads them).
fn section(nvdisasm: &Path, dir: &Path, bytes: &[u8], sec: usize) -> Vec<Function> {
    use object::{Object, ObjectSymbol, SectionIndex, SymbolKind};
    let elf = object::File::parse(bytes).unwrap();
    let symbol = elf
        .symbols()
        .find(|s| s.kind() == SymbolKind::Text && s.section_index() == Some(SectionIndex(sec)))
        .unwrap()
        .index()
        .0;
    let p = dir.join("decode.cubin");
    std::fs::write(&p, bytes).unwrap();
    let only = nvcc_orion::sass::listing::Sections::of_symbols([symbol]);
    let mut fs: Vec<Function> = decode::decode_sections(nvdisasm, &p, &only)
        .unwrap()
        .functions
        .into_iter()
        .filter(|f| f.section == sec)
        .collect();
    fs.sort_by_key(|f| f.start);
    fs
}

fn instrs(fs: &[Function]) -> impl Iterator<Item = &Instr> {
    fs.iter().flat_map(|f| f.instrs.iter())
}

fn at(fs: &[Function], off: u64) -> Option<&Instr> {
    instrs(fs).find(|i| i.offset == off)
}

/// The instruction after `off` in its function.
fn next(fs: &[Function], off: u64) -> Option<&Instr> {
    fs.iter()
        .find_map(|f| f.index_of(off).and_then(|k| f.instrs.get(k + 1)))
}

/// Patch the 16-byte word at section offset `off` of the kernel's text section.
fn patch<R>(e: &Env<R>, off: u64, f: impl Fn(u128) -> u128) -> Vec<u8> {
    let mut cubin = Cubin::parse(&e.rewritten).unwrap();
    let sec = cubin.function_info(&e.kernel).unwrap().text_section;
    let mut code = cubin.elf().sections[sec].data.clone();
    let a = off as usize;
    let w = f(encode::from_bytes(code[a..a + 16].try_into().unwrap()));
    assert_ne!(
        w,
        encode::from_bytes(code[a..a + 16].try_into().unwrap()),
        "{}: mutation at {off:#x} changes nothing",
        e.kernel
    );
    code[a..a + 16].copy_from_slice(&encode::to_bytes(w));
    cubin
        .replace_text(&e.kernel, code, &OffsetMap::new())
        .unwrap();
    cubin.write().unwrap()
}

fn ctrl(w: u128, f: impl Fn(&mut Control)) -> u128 {
    let mut c = Control::from_bits(encode::get_bits(w, 105, 23) as u32);
    f(&mut c);
    encode::set_bits(w, 105, 23, u64::from(c.to_bits()))
}

/// `(original, image)` of the original instructions whose opcode was `from` and is `to`.
fn images<'a>(
    before: &'a [Function],
    after: &'a [Function],
    map: &OffsetMap,
    from: Op,
    to: Op,
) -> Vec<(&'a Instr, &'a Instr)> {
    instrs(before)
        .filter(|i| i.op() == from)
        .filter_map(|i| Some((i, at(after, map.map(i.offset)?)?)))
        .filter(|(_, a)| a.op() == to)
        .collect()
}

fn width(i: &Instr) -> u64 {
    encode::get_bits(i.raw, 73, 3)
}

fn slot_offset(w: u128) -> u64 {
    encode::get_bits(w, 40, 24)
}

/// Inserted instructions, in order.
/// Patch the prologue's `LEA base, lin, c[0x0][0x2c], 0x2`, the instruction that makes the
/// spill base.
fn patch_base_lea(e: &Env<Rewrite>, f: impl Fn(u128) -> u128) -> Option<(Vec<u8>, Rewrite)> {
    let p = inserted(&e.after, &e.r.inserted).into_iter().find(|i| {
        i.op() == Op::Lea
            && i.gpr_writes().contains(&e.r.base_reg)
            && i.operands.iter().any(|o| o.text.starts_with("c["))
    })?;
    Some((patch(e, p.offset, f), e.r.clone()))
}

/// An inserted 32-bit `STS` of a split wide spill store with inserted `STS` on both sides:
/// the third of the four pieces of an `STL.128`, two away from its image.
fn far_piece(e: &Env<Rewrite>) -> Option<&Instr> {
    let ins: BTreeSet<u64> = e.r.inserted.iter().copied().collect();
    let sts =
        |off: u64| at(&e.after, off).is_some_and(|i| i.op() == Op::Sts && ins.contains(&i.offset));
    instrs(&e.after).find(|i| {
        i.op() == Op::Sts
            && i.ctrl.read_sb.is_some()
            && ins.contains(&i.offset)
            && i.offset >= 16
            && sts(i.offset - 16)
            && sts(i.offset + 16)
            && at(&e.after, i.offset - 32).is_some_and(|x| x.op() == Op::Sts)
    })
}

fn inserted<'a>(after: &'a [Function], ins: &[u64]) -> Vec<&'a Instr> {
    let mut v: Vec<&Instr> = ins.iter().filter_map(|&o| at(after, o)).collect();
    v.sort_by_key(|i| i.offset);
    v
}

fn spill_mutations() -> Vec<Mutation<Rewrite>> {
    vec![
        ("wrong slot on a moved store (STS offset + stride)", |e| {
            let (_, s) = *images(&e.before, &e.after, &e.r.map, Op::Stl, Op::Sts).first()?;
            let stride = u64::from(e.r.stride);
            let b = patch(e, s.offset, |w| {
                encode::set_bits(w, 40, 24, slot_offset(w) + stride)
            });
            Some((b, e.r.clone()))
        }),
        ("wrong slot on a moved load (LDS offset + stride)", |e| {
            let (_, l) = *images(&e.before, &e.after, &e.r.map, Op::Ldl, Op::Lds).first()?;
            let stride = u64::from(e.r.stride);
            let b = patch(e, l.offset, |w| {
                encode::set_bits(w, 40, 24, slot_offset(w) + stride)
            });
            Some((b, e.r.clone()))
        }),
        // The rewrite never emits `STS.64`: a 64-bit spill store is two 32-bit shared stores
        // (its slots are a stride apart), the second inserted right after the first. Narrowed
        // to 32 bits, it stores the first word only: the second becomes a `NOP`.
        (
            "wrong width: a moved STL.64 narrowed to 32 bits (its second STS made a NOP)",
            |e| {
                let s2 = images(&e.before, &e.after, &e.r.map, Op::Stl, Op::Sts)
                    .into_iter()
                    .filter(|(o, _)| width(o) == 5)
                    .find_map(|(_, s)| {
                        at(&e.after, s.offset + 16)
                            .filter(|n| n.op() == Op::Sts && e.r.inserted.contains(&n.offset))
                    })?;
                let b = patch(e, s2.offset, |w| {
                    let c = encode::get_bits(w, 105, 23);
                    ctrl(encode::set_bits(encode::nop(1), 105, 23, c), |c| {
                        c.read_sb = None
                    })
                });
                Some((b, e.r.clone()))
            },
        ),
        ("wrong width: a moved 32-bit STS narrowed to STS.U16", |e| {
            let (_, s) = *images(&e.before, &e.after, &e.r.map, Op::Stl, Op::Sts)
                .iter()
                .find(|(_, s)| width(s) == 4)?;
            Some((
                patch(e, s.offset, |w| encode::set_bits(w, 73, 3, 2)),
                e.r.clone(),
            ))
        }),
        ("wrong width: moved 32-bit LDS made LDS.64", |e| {
            let (_, l) = *images(&e.before, &e.after, &e.r.map, Op::Ldl, Op::Lds)
                .iter()
                .find(|(_, l)| width(l) == 4)?;
            Some((
                patch(e, l.offset, |w| encode::set_bits(w, 73, 3, 5)),
                e.r.clone(),
            ))
        }),
        ("dropped write scoreboard of a moved LDS", |e| {
            let (_, l) = *images(&e.before, &e.after, &e.r.map, Op::Ldl, Op::Lds)
                .iter()
                .find(|(_, l)| l.ctrl.write_sb.is_some())?;
            Some((
                patch(e, l.offset, |w| ctrl(w, |c| c.write_sb = None)),
                e.r.clone(),
            ))
        }),
        ("dropped read scoreboard of a moved STS", |e| {
            let (_, s) = *images(&e.before, &e.after, &e.r.map, Op::Stl, Op::Sts)
                .iter()
                .find(|(_, s)| s.ctrl.read_sb.is_some())?;
            Some((
                patch(e, s.offset, |w| ctrl(w, |c| c.read_sb = None)),
                e.r.clone(),
            ))
        }),
        (
            "wrong wait mask: an LDS's consumer does not wait for it",
            |e| {
                let (_, l) = *images(&e.before, &e.after, &e.r.map, Op::Ldl, Op::Lds)
                    .iter()
                    .find(|(_, l)| l.ctrl.write_sb.is_some())?;
                let sb = l.ctrl.write_sb?;
                let waiter = instrs(&e.after)
                    .filter(|i| i.offset > l.offset)
                    .find(|i| i.ctrl.wait_mask & (1 << sb) != 0)?;
                let b = patch(e, waiter.offset, |w| ctrl(w, |c| c.wait_mask &= !(1 << sb)));
                Some((b, e.r.clone()))
            },
        ),
        ("reduced stall of a prologue instruction", |e| {
            let ins = inserted(&e.after, &e.r.inserted);
            let p = ins.iter().find(|i| {
                i.ctrl.stall > 1
                    && i.ctrl.write_sb.is_none()
                    && !i.gpr_writes().is_empty()
                    && next(&e.after, i.offset)
                        .is_some_and(|n| n.gpr_reads().iter().any(|r| i.gpr_writes().contains(r)))
            })?;
            Some((
                patch(e, p.offset, |w| ctrl(w, |c| c.stall = 1)),
                e.r.clone(),
            ))
        }),
        // The constant-bank word after the dynamic shared size (bits 40-53 hold offset / 4).
        (
            "off-by-one base: the base's dynamic-shared word one word off",
            |e| {
                patch_base_lea(e, |w| {
                    encode::set_bits(w, 40, 14, encode::get_bits(w, 40, 14) + 1)
                })
            },
        ),
        // LEA's shift amount is bits 75-79 (2: four bytes a thread).
        ("wrong stride: the base's LEA shifts by 3", |e| {
            patch_base_lea(e, |w| {
                encode::set_bits(w, 75, 5, encode::get_bits(w, 75, 5) + 1)
            })
        }),
        ("SR_TID.Y read as SR_TID.X in the prologue", |e| {
            let ins = inserted(&e.after, &e.r.inserted);
            let p = ins
                .iter()
                .find(|i| i.op() == Op::S2r && encode::get_bits(i.raw, 72, 8) == 0x22)?;
            Some((
                patch(e, p.offset, |w| encode::set_bits(w, 72, 8, 0x21)),
                e.r.clone(),
            ))
        }),
        (
            "missing drain: the NOP before a call no longer waits",
            |e| {
                let n = inserted(&e.after, &e.r.inserted)
                    .into_iter()
                    .find(|i| i.op() == Op::Nop && i.ctrl.wait_mask != 0)?;
                Some((
                    patch(e, n.offset, |w| ctrl(w, |c| c.wait_mask = 0)),
                    e.r.clone(),
                ))
            },
        ),
        ("swapped operands: data register of a moved STS", |e| {
            let (_, s) = *images(&e.before, &e.after, &e.r.map, Op::Stl, Op::Sts).first()?;
            let b = patch(e, s.offset, |w| {
                let d = encode::reg(w, RegField::B);
                encode::set_reg(w, RegField::B, if d == 255 { 0 } else { d ^ 2 })
            });
            Some((b, e.r.clone()))
        }),
        ("wrong predicate: @P0 added to a moved STS", |e| {
            let (_, s) = *images(&e.before, &e.after, &e.r.map, Op::Stl, Op::Sts)
                .iter()
                .find(|(_, s)| encode::guard(s.raw) == (7, false))?;
            Some((
                patch(e, s.offset, |w| encode::set_guard(w, 0, false)),
                e.r.clone(),
            ))
        }),
        (
            "wrong predicate: @!P0 added to a prologue instruction",
            |e| {
                let p = inserted(&e.after, &e.r.inserted)
                    .into_iter()
                    .find(|i| encode::guard(i.raw) == (7, false) && i.op() != Op::Nop)?;
                Some((
                    patch(e, p.offset, |w| encode::set_guard(w, 0, true)),
                    e.r.clone(),
                ))
            },
        ),
        ("an LDS turned back into LDL", |e| {
            let (_, l) = *images(&e.before, &e.after, &e.r.map, Op::Ldl, Op::Lds).first()?;
            let b = patch(e, l.offset, |w| encode::swap_local_shared(w).unwrap());
            Some((b, e.r.clone()))
        }),
        ("an image whose scoreboard changed (moved LDS)", |e| {
            let (_, l) = *images(&e.before, &e.after, &e.r.map, Op::Ldl, Op::Lds)
                .iter()
                .find(|(_, l)| l.ctrl.write_sb.is_some())?;
            let sb = l.ctrl.write_sb?;
            let b = patch(e, l.offset, |w| {
                ctrl(w, |c| c.write_sb = Some((sb + 1) % 6))
            });
            Some((b, e.r.clone()))
        }),
        ("claim: wrong base register", |e| {
            let mut r = e.r.clone();
            r.base_reg ^= 1;
            Some((e.rewritten.clone(), r))
        }),
        ("claim: too few slots", |e| {
            let mut r = e.r.clone();
            r.slots = r.slots.checked_sub(1)?;
            Some((e.rewritten.clone(), r))
        }),
        // Not a NOP: the checker takes an unclaimed NOP for padding, which it is (no effect
        // but its wait mask, which the scheduling check reads from the code itself), so
        // dropping a drain NOP from the claim is an equivalent mutant.
        ("claim: an inserted instruction missing", |e| {
            let mut r = e.r.clone();
            let k = r
                .inserted
                .iter()
                .rposition(|&o| at(&e.after, o).is_some_and(|i| i.op() != Op::Nop))?;
            r.inserted.remove(k);
            Some((e.rewritten.clone(), r))
        }),
        (
            "a piece of a split 128-bit STS, away from its image, loses its read scoreboard",
            |e| {
                let p = far_piece(e)?;
                Some((
                    patch(e, p.offset, |w| ctrl(w, |c| c.read_sb = None)),
                    e.r.clone(),
                ))
            },
        ),
        ("claim: map off by one instruction", |e| {
            let (o, s) = *images(&e.before, &e.after, &e.r.map, Op::Stl, Op::Sts).first()?;
            let mut r = e.r.clone();
            let next = e.r.map.map(o.offset + 16)?;
            r.map.insert(o.offset, s.offset + 16);
            r.map.insert(o.offset + 16, next);
            Some((e.rewritten.clone(), r))
        }),
    ]
}

/// Registers the sub-functions of the kernel's section (ptxas places them after the kernel,
/// each at a symbol of its own) read or write, in the original code.
fn callee_registers(e: &Env<regdem::Rewrite>) -> BTreeSet<u8> {
    let first_sub = Cubin::parse(&e.original)
        .unwrap()
        .functions()
        .into_iter()
        .filter(|f| f.text_section == e.r.section && f.text_offset > 0)
        .map(|f| f.text_offset)
        .min();
    instrs(&e.before)
        .filter(|i| first_sub.is_some_and(|s| i.offset >= s))
        .flat_map(|i| i.gpr_reads().into_iter().chain(i.gpr_writes()))
        .collect()
}

/// `(original, renumbered)` of the renamed registers some sub-function reads or writes:
/// where the claim's renaming is consulted.
fn renamed_at_boundary(e: &Env<regdem::Rewrite>) -> Vec<(u8, u8)> {
    let touched = callee_registers(e);
    e.r.renamed
        .iter()
        .filter(|(k, _)| touched.contains(k))
        .map(|(&k, &v)| (k, v))
        .collect()
}

fn regdem_mutations() -> Vec<Mutation<regdem::Rewrite>> {
    fn access(e: &Env<regdem::Rewrite>, op: Op) -> Option<&Instr> {
        e.r.accesses
            .iter()
            .filter_map(|&o| at(&e.after, o))
            .find(|i| i.op() == op)
    }
    vec![
        ("dropped write scoreboard of an inserted LDS", |e| {
            let l = access(e, Op::Lds)?;
            Some((
                patch(e, l.offset, |w| ctrl(w, |c| c.write_sb = None)),
                e.r.clone(),
            ))
        }),
        ("dropped read scoreboard of an inserted STS", |e| {
            let s = access(e, Op::Sts)?;
            Some((
                patch(e, s.offset, |w| ctrl(w, |c| c.read_sb = None)),
                e.r.clone(),
            ))
        }),
        (
            "wrong wait mask: an inserted LDS's consumer does not wait",
            |e| {
                let l = access(e, Op::Lds)?;
                let sb = l.ctrl.write_sb?;
                let waiter = instrs(&e.after)
                    .filter(|i| i.offset > l.offset)
                    .find(|i| i.ctrl.wait_mask & (1 << sb) != 0)?;
                let b = patch(e, waiter.offset, |w| ctrl(w, |c| c.wait_mask &= !(1 << sb)));
                Some((b, e.r.clone()))
            },
        ),
        ("wrong slot on an inserted STS", |e| {
            let s = access(e, Op::Sts)?;
            let stride = u64::from(e.r.stride);
            let b = patch(e, s.offset, |w| {
                encode::set_bits(w, 40, 24, slot_offset(w) + stride)
            });
            Some((b, e.r.clone()))
        }),
        ("wrong predicate: @P0 added to an inserted LDS", |e| {
            let l =
                e.r.accesses
                    .iter()
                    .filter_map(|&o| at(&e.after, o))
                    .find(|i| i.op() == Op::Lds && encode::guard(i.raw) == (7, false))?;
            Some((
                patch(e, l.offset, |w| encode::set_guard(w, 0, false)),
                e.r.clone(),
            ))
        }),
        (
            "reuse flag set on the instruction before an inserted LDS",
            |e| {
                let l = access(e, Op::Lds)?;
                let f = e.after.iter().find(|f| f.index_of(l.offset).is_some())?;
                let k = f.index_of(l.offset)?;
                let prev = f.instrs[..k]
                    .iter()
                    .rev()
                    .find(|i| !e.r.inserted.contains(&i.offset) && !i.gpr_reads().is_empty())?;
                Some((
                    patch(e, prev.offset, |w| ctrl(w, |c| c.reuse = 1)),
                    e.r.clone(),
                ))
            },
        ),
        (
            "tuple misaligned: a 64-bit value moved to an odd register",
            |e| {
                let i = instrs(&e.after).find(|i| {
                    i.gpr_writes().len() == 2
                        && i.op() != Op::S2r
                        && encode::reg(i.raw, RegField::Dst).is_multiple_of(2)
                        && encode::reg(i.raw, RegField::Dst) != 255
                })?;
                let b = patch(e, i.offset, |w| {
                    encode::set_reg(w, RegField::Dst, encode::reg(w, RegField::Dst) + 1)
                });
                Some((b, e.r.clone()))
            },
        ),
        (
            "value register renamed wrongly: an inserted LDS loads into another register",
            |e| {
                let l = access(e, Op::Lds)?;
                let b = patch(e, l.offset, |w| {
                    encode::set_reg(w, RegField::Dst, encode::reg(w, RegField::Dst) ^ 1)
                });
                Some((b, e.r.clone()))
            },
        ),
        ("claim: a renumbered register renamed wrongly", |e| {
            // The claim's renaming is read only where functions meet (a callee's live-in, its
            // writes): an entry for a register no callee touches is never consulted, and
            // changing it is an equivalent mutant. Take a register a callee reads or writes.
            let mut r = e.r.clone();
            let (k, v) = renamed_at_boundary(e).into_iter().next()?;
            r.renamed.insert(k, v ^ 1);
            Some((e.rewritten.clone(), r))
        }),
        ("claim: an inserted access missing", |e| {
            let mut r = e.r.clone();
            let l = access(e, Op::Lds)?.offset;
            r.inserted.retain(|&o| o != l);
            Some((e.rewritten.clone(), r))
        }),
    ]
}

/// Compile `src` to a cubin for `arch` at the given per-kernel budgets: nvcc's PTX, the
/// budgets written in, ptxas.
fn compile(nvcc: &Path, dir: &Path, src: &Path, arch: u32, budget: fn(&str) -> u32) -> Vec<u8> {
    let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
    let out = dir.join(format!("{stem}_{arch}.cubin"));
    let raw = dir.join(format!("{stem}_{arch}.ptx"));
    run(Command::new(nvcc)
        .args(["-ptx", &format!("-arch=compute_{arch}"), "-o"])
        .arg(&raw)
        .arg(src));
    let text = std::fs::read_to_string(&raw).unwrap();
    let budgets: BTreeMap<String, Budget> = entries(&text)
        .unwrap()
        .into_iter()
        .map(|e| {
            let n = budget(&e.name);
            (e.name, Budget::regs(n))
        })
        .collect();
    let ptx = dir.join(format!("{stem}_{arch}_b.ptx"));
    std::fs::write(&ptx, with_budgets(&text, &budgets).unwrap()).unwrap();
    run(Command::new(common::toolkit_tool(nvcc, "ptxas"))
        .arg(format!("-arch=sm_{arch}"))
        .arg(&ptx)
        .arg("-o")
        .arg(&out));
    std::fs::read(&out).unwrap()
}

/// What a run found: one line per mutant, the survivors, the mutations with no place.
#[derive(Default)]
struct Tally {
    lines: Vec<String>,
    survivors: Vec<String>,
    unplaced: Vec<&'static str>,
    mutations: usize,
    applied: usize,
}

impl Tally {
    /// A mutant no check refused.
    fn survived(&mut self, name: &str, at: &str, why: &NotProved) {
        self.lines.push(format!(
            "SURVIVED | {name} | {at} | not refused by a check: {why}"
        ));
        self.survivors.push(format!("{name} ({at}): {why}"));
    }
}

/// Apply each mutation to every environment (a mutation with no place anywhere is noted).
fn apply<R: Clone>(
    envs: &[Env<R>],
    muts: &[Mutation<R>],
    recheck: Recheck<R>,
    nvdisasm: &Path,
    t: &mut Tally,
) {
    for (name, m) in muts {
        t.mutations += 1;
        let mut placed = false;
        for e in envs {
            let Some((bytes, claim)) = m(e) else { continue };
            placed = true;
            t.applied += 1;
            let at = format!("sm_{} {}", e.arch, e.kernel);
            match recheck(&e.original, &bytes, &claim) {
                Ok(n) => {
                    t.lines
                        .push(format!("SURVIVED | {name} | {at} | accepted ({n} checked)"));
                    t.survivors.push(format!("{name} ({at})"));
                }
                // Refused by one of the checks, which the line names; anything else (our
                // decoder failed, no nvdisasm) tests nothing and counts as a survivor, but for
                // words the toolkit's own nvdisasm refuses to read: the product decodes every
                // rewritten cubin before it ships one, so such a mutant never ships.
                Err(NotProved::Rejected(why)) => {
                    let check = check_of(&why);
                    let why = why.to_string().replace('\n', " ");
                    t.lines
                        .push(format!("rejected | {name} | {at} | {check} | {why}"));
                }
                Err(NotProved::Decode(e)) => match toolkit_refuses(nvdisasm, &bytes) {
                    Some(why) => t.lines.push(format!(
                        "rejected | {name} | {at} | toolkit | nvdisasm refuses the words: {why}"
                    )),
                    None => t.survived(name, &at, &NotProved::Decode(e)),
                },
                Err(other) => t.survived(name, &at, &other),
            }
        }
        if !placed {
            t.unplaced.push(name);
        }
    }
}

/// What the toolkit's nvdisasm says when it refuses to list `bytes` the two ways the proof
/// lists a cubin (`-json`, `-c -plr`), or `None` when it lists them both: a reference we did
/// not produce, so a mutant counts as refused only where nvdisasm itself cannot read it.
fn toolkit_refuses(nvdisasm: &Path, bytes: &[u8]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let cubin = dir.path().join("mutant.cubin");
    std::fs::write(&cubin, bytes).unwrap();
    [&["-json"][..], &["-c", "-plr"][..]]
        .iter()
        .find_map(|args| {
            let out = Command::new(nvdisasm)
                .args(*args)
                .arg(&cubin)
                .output()
                .unwrap();
            (!out.status.success()).then(|| {
                let err = String::from_utf8_lossy(&out.stderr);
                format!(
                    "`nvdisasm {}`: {}",
                    args.join(" "),
                    err.trim().replace('\n', " ")
                )
            })
        })
}

/// The check that refused a mutant, for the table.
fn check_of(why: &Refused) -> &'static str {
    match why {
        Refused::Oracle(_) => "oracle",
        Refused::Checker(_) => "checker",
        Refused::Schedule(_) => "scheduling",
        Refused::NoLaunch { .. } | Refused::NotDecoded { .. } | Refused::Base { .. } => "base",
    }
}

/// Which rewrites to break, and how.
struct Plan<'a> {
    archs: &'a [u32],
    spill: &'a [&'a str],
    regdem: &'a [&'a str],
    /// Mutation names to apply (`None`: all).
    only: Option<&'a [&'a str]>,
}

/// `spill2smem` rewrites of `kernels`, each checked unmutated first.
fn spill_envs(
    nvcc: &Path,
    nvdisasm: &Path,
    dir: &Path,
    arch: u32,
    src: &str,
    kernels: &[&str],
) -> Vec<Env<Rewrite>> {
    if kernels.is_empty() {
        return Vec::new();
    }
    // `spills.cu` at 31 registers a kernel (63 for `s_bounds_128`) is the spill2smem tests'
    // shared build, made by these same commands once per run (issue 50).
    let original = if src == SPILLS {
        super::spill2smem::spills_cubin(arch).expect("the spill2smem build")
    } else {
        compile(nvcc, dir, &kernels_dir().join(src), arch, |k| {
            if k.contains("s_bounds_128") { 63 } else { 31 }
        })
    };
    let cubin = Cubin::parse(&original).unwrap();
    let requests: Vec<(String, Options)> = kernels
        .iter()
        .map(|k| (k.to_string(), Options::for_kernel(&cubin, k, Some(THREADS))))
        .collect();
    let outcome = proven::spill2smem(&original, &requests).unwrap();
    let mut envs = Vec::new();
    for (k, res) in &outcome.kernels {
        let p = res
            .as_ref()
            .unwrap_or_else(|e| panic!("sm_{arch} {k}: not proved: {e}"));
        let r = p.rewrite.clone();
        // Control: the unmutated rewrite is accepted.
        proven::recheck_spill2smem(&original, &outcome.bytes, &r)
            .unwrap_or_else(|e| panic!("sm_{arch} {k}: control rejected: {e}"));
        envs.push(Env {
            arch,
            kernel: k.clone(),
            before: section(nvdisasm, dir, &original, r.section),
            after: section(nvdisasm, dir, &outcome.bytes, r.section),
            original: original.clone(),
            rewritten: outcome.bytes.clone(),
            r,
        });
    }
    envs
}

/// `regdem` rewrites of `kernels` (each alone, so each rewritten cubin holds one rewrite),
/// each checked unmutated first.
fn regdem_envs(
    nvdisasm: &Path,
    dir: &Path,
    arch: u32,
    kernels: &[&str],
) -> Vec<Env<regdem::Rewrite>> {
    // Plain `nvcc -cubin -arch=sm_<arch>` of `regdem.cu`: the regdem tests' shared build, the
    // same command, made once per run (issue 50).
    let original = super::regdem::plain_cubin(arch).expect("the regdem build");
    let cubin = Cubin::parse(&original).unwrap();
    let mut envs = Vec::new();
    for k in kernels {
        let regs = cubin.function_info(k).unwrap().registers.unwrap();
        let target = if k.contains("with_call") {
            32
        } else {
            ((regs - 1) / 8 * 8).max(32)
        };
        let mut o = Options::for_kernel(&cubin, k, Some(THREADS));
        o.max_registers = Some(target);
        let outcome = proven::regdem(&original, &[(k.to_string(), o)]).unwrap();
        let r = outcome.kernels[0]
            .1
            .as_ref()
            .unwrap_or_else(|e| panic!("sm_{arch} {k} → {target}: not proved: {e}"))
            .rewrite
            .clone();
        proven::recheck_regdem(&original, &outcome.bytes, &r)
            .unwrap_or_else(|e| panic!("sm_{arch} {k}: control rejected: {e}"));
        envs.push(Env {
            arch,
            kernel: k.to_string(),
            before: section(nvdisasm, dir, &original, r.section),
            after: section(nvdisasm, dir, &outcome.bytes, r.section),
            original: original.clone(),
            rewritten: outcome.bytes.clone(),
            r,
        });
    }
    envs
}

/// Run `plan` and assert every mutant is rejected and every mutation placed. `None` where
/// the toolkit is missing (skipped; a failure under `CI`).
fn run_plan(test: &str, plan: &Plan) -> Option<Tally> {
    let nvcc = common::nvcc_or_skip(test)?;
    let nvdisasm = common::toolkit_tool(&nvcc, "nvdisasm");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut spill = Vec::new();
    let mut reg = Vec::new();
    for &arch in plan.archs {
        spill.extend(spill_envs(&nvcc, &nvdisasm, dir, arch, SPILLS, plan.spill));
        spill.extend(spill_envs(
            &nvcc,
            &nvdisasm,
            dir,
            arch,
            WIDE_SPILL.0,
            &[WIDE_SPILL.1],
        ));
        reg.extend(regdem_envs(&nvdisasm, dir, arch, plan.regdem));
    }
    let chosen = |n: &str| plan.only.is_none_or(|o| o.contains(&n));
    let spill_muts: Vec<Mutation<Rewrite>> = spill_mutations()
        .into_iter()
        .filter(|(n, _)| chosen(n))
        .collect();
    let reg_muts: Vec<Mutation<regdem::Rewrite>> = regdem_mutations()
        .into_iter()
        .filter(|(n, _)| chosen(n))
        .collect();
    if let Some(o) = plan.only {
        assert_eq!(
            spill_muts.len() + reg_muts.len(),
            o.len(),
            "unknown mutation name"
        );
    }
    let mut t = Tally::default();
    apply(
        &spill,
        &spill_muts,
        proven::recheck_spill2smem,
        &nvdisasm,
        &mut t,
    );
    apply(&reg, &reg_muts, proven::recheck_regdem, &nvdisasm, &mut t);
    for l in &t.lines {
        eprintln!("{l}");
    }
    let killed = t.applied - t.survivors.len();
    eprintln!(
        "{} mutations, {} mutants, {killed} rejected ({:.1} %)",
        t.mutations,
        t.applied,
        100.0 * killed as f64 / t.applied as f64,
    );
    assert!(
        t.unplaced.is_empty(),
        "mutations with no place in any rewrite (they test nothing): {:?}",
        t.unplaced
    );
    assert!(
        t.survivors.is_empty(),
        "surviving mutants: {:#?}",
        t.survivors
    );
    Some(t)
}

/// About 10 minutes on 2 cores (over 200 mutants, each decoded and checked): outside the
/// normal suite; run with `cargo test --release --test rewrites mutation:: -- --ignored --nocapture`.
#[test]
#[ignore = "slow: about 10 minutes; run with --ignored"]
fn every_mutation_of_a_proved_rewrite_is_rejected() {
    let plan = Plan {
        archs: ARCHS,
        spill: SPILL_KERNELS,
        regdem: REGDEM_KERNELS,
        only: None,
    };
    if let Some(t) = run_plan("mutation", &plan) {
        assert!(t.mutations >= 20);
    }
}

/// The normal suite's share: one rewrite of each kind on sm_80 (spill2smem with moves
/// around calls, regdem with a renumbered callee), a handful of mutations.
#[test]
fn a_few_mutations_are_rejected() {
    let plan = Plan {
        archs: &[80],
        spill: &[QUICK_SPILL],
        regdem: &[QUICK_REGDEM],
        only: Some(QUICK_MUTATIONS),
    };
    run_plan("mutation (quick)", &plan);
}
