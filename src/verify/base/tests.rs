//! Hand-written prologues: the proof accepts a right base and refuses each kind of wrong one.

use super::*;
use crate::arch::Family;
use crate::sass::control::Control;
use crate::sass::operands;

/// An instruction from nvdisasm-like text, with its scoreboard (`w`: write scoreboard set,
/// `wait`: mask waited for) and stall.
fn ins(off: u64, text: &str, stall: u8, w: Option<u8>, wait: u8) -> Instr {
    let (opcode, ops) = text.split_once(' ').unwrap_or((text, ""));
    let mut i = Instr {
        offset: off,
        raw: 0,
        opcode: opcode.into(),
        predicate: None,
        operands: operands::parse(ops).unwrap(),
        ctrl: Control {
            stall,
            yield_bit: true,
            write_sb: w,
            read_sb: None,
            wait_mask: wait,
            reuse: 0,
        },
        target: None,
        targets: Vec::new(),
        callee: None,
        unknown: false,
    };
    i.unknown = !operands::apply(Family::Turing, &mut i);
    i
}

/// A kernel starting with `lines` (text, stall, write scoreboard, wait mask), then the
/// original code.
fn kernel(lines: &[(&str, u8, Option<u8>, u8)]) -> Function {
    let mut instrs: Vec<Instr> = lines
        .iter()
        .enumerate()
        .map(|(k, &(t, s, w, m))| ins(16 * k as u64, t, s, w, m))
        .collect();
    let n = instrs.len() as u64;
    instrs.push(ins(16 * n, "MOV R1, c[0x0][0x28]", 1, None, 0));
    instrs.push(ins(16 * (n + 1), "EXIT", 5, None, 0));
    Function {
        name: "k".into(),
        section: 1,
        start: 0,
        instrs,
        kernel: true,
        regs: Some(24),
        abi_regs: None,
        abi_files: None,
        marked: Vec::new(),
    }
}

/// The 3-D prologue the transforms insert: base R9 = (tid.x + ntid.x·(tid.y + ntid.y·tid.z))·4 + D.
const PRO_3D: &[(&str, u8, Option<u8>, u8)] = &[
    ("S2R R0, SR_TID.Z", 1, Some(0), 0),
    ("S2R R2, SR_TID.Y", 1, Some(1), 0),
    ("IMAD R0, R0, c[0x0][0x4], R2", 6, None, 0b011),
    ("S2R R2, SR_TID.X", 1, Some(2), 0),
    ("IMAD R0, R0, c[0x0][0x0], R2", 6, None, 0b100),
    ("LEA R9, R0, c[0x0][0x2c], 0x2", 6, None, 0),
];

const PRO_1D: &[(&str, u8, Option<u8>, u8)] = &[
    ("S2R R0, SR_TID.X", 1, Some(0), 0),
    ("LEA R9, R0, c[0x0][0x2c], 0x2", 6, None, 0b001),
];

fn spill_base(defined_at: u64, threads: u32, slots: u32, area: u32) -> SpillBase {
    SpillBase {
        reg: 9,
        defined_at,
        stride: threads * 4,
        slots,
        area,
    }
}

fn launch(sm: u32, reqntid: Option<[u32; 3]>, max_threads: u32, before: u64, added: u64) -> Launch {
    Launch {
        sm,
        reqntid,
        max_threads,
        shared_before: before,
        shared_after: before + added,
    }
}

fn last(p: &[(&str, u8, Option<u8>, u8)]) -> u64 {
    16 * (p.len() as u64 - 1)
}

#[test]
fn the_3d_prologue_is_proved_for_every_block_shape() {
    let f = kernel(PRO_3D);
    let b = spill_base(last(PRO_3D), 256, 3, 0x40);
    let p = prove(&f, &b, &launch(80, None, 256, 0x40, 3 * 1024)).unwrap();
    assert!(p.shapes > 1000, "{p:?}");
    assert!(p.base.contains("4·tid.y·ntid.x"), "{}", p.base);
    // And for the largest block (no bound: 1024 threads, 1024-byte stride ×4).
    let b = spill_base(last(PRO_3D), 1024, 2, 0);
    prove(&f, &b, &launch(86, None, 1024, 0, 8192)).unwrap();
    // Under `.reqntid` one shape is checked.
    let b = spill_base(last(PRO_3D), 128, 2, 0);
    let p = prove(&f, &b, &launch(75, Some([8, 4, 4]), 128, 0, 1024)).unwrap();
    assert_eq!(p.shapes, 1);
}

#[test]
fn a_1d_prologue_needs_reqntid() {
    let f = kernel(PRO_1D);
    let b = spill_base(last(PRO_1D), 256, 3, 0);
    // `__launch_bounds__(256)` alone: a 16×16 block gives threads with the same x one slot.
    let e = prove(&f, &b, &launch(80, None, 256, 0, 3 * 1024)).unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::SameSlot { .. },
                ..
            }
        ),
        "{e}"
    );
    // `.reqntid 256, 1, 1` fixes the shape.
    let p = prove(&f, &b, &launch(80, Some([256, 1, 1]), 256, 0, 3 * 1024)).unwrap();
    assert_eq!(p.shapes, 1);
    // `.reqntid 128, 2, 1` does not make it 1-D.
    let e = prove(&f, &b, &launch(80, Some([128, 2, 1]), 256, 0, 3 * 1024)).unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::SameSlot { .. },
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn an_off_by_one_base_is_refused() {
    // base + 4: the last thread's word is the next slot's first.
    let mut p = PRO_3D.to_vec();
    p.push(("IADD3 R9, R9, 0x4, RZ", 6, None, 0));
    let f = kernel(&p);
    let b = spill_base(last(&p), 256, 3, 0x40);
    let e = prove(&f, &b, &launch(80, None, 256, 0x40, 3 * 1024)).unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::OutsideRow { .. },
                ..
            }
        ),
        "{e}"
    );
    // An area that starts inside the kernel's own static shared memory.
    let f = kernel(PRO_3D);
    let b = spill_base(last(PRO_3D), 256, 3, 0x3c);
    let e = prove(&f, &b, &launch(80, None, 256, 0x40, 3 * 1024)).unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::OutsideArea { before: 0x40, .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("static shared memory is 0x40"),
        "{e}"
    );
    // An area the grown section does not cover.
    let b = spill_base(last(PRO_3D), 256, 3, 0x40);
    let e = prove(&f, &b, &launch(80, None, 256, 0x40, 2 * 1024)).unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::OutsideArea { .. },
                ..
            }
        ),
        "{e}"
    );
    // A base that forgets the dynamic shared memory.
    let mut p = PRO_3D.to_vec();
    p[5] = ("LEA R9, R0, RZ, 0x2", 6, None, 0);
    let f = kernel(&p);
    let b = spill_base(last(&p), 256, 3, 0);
    let e = prove(&f, &b, &launch(80, None, 256, 0, 3 * 1024)).unwrap_err();
    assert!(e.to_string().contains("dynamic shared memory"), "{e}");
}

#[test]
fn a_stride_below_the_thread_count_is_refused() {
    let f = kernel(PRO_3D);
    // Slots laid out for 128 threads, launches of up to 256.
    let b = spill_base(last(PRO_3D), 128, 3, 0);
    let e = prove(&f, &b, &launch(80, None, 256, 0, 3 * 512)).unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::OutsideRow { .. },
                ..
            }
        ),
        "{e}"
    );
    let p = prove(&f, &b, &launch(80, None, 128, 0, 3 * 512)).unwrap();
    assert!(p.shapes > 100);
}

#[test]
fn sm90_needs_the_cluster_rank() {
    let mut p = PRO_3D.to_vec();
    p.push(("S2R R2, SR_CgaCtaId", 1, Some(3), 0));
    p.push(("LEA R9, R2, R9, 0x18", 6, None, 0b1000));
    let f = kernel(&p);
    let b = spill_base(last(&p), 256, 3, 0x400);
    prove(&f, &b, &launch(90, None, 256, 0x400, 3 * 1024)).unwrap();
    // Without it, sm_90 is refused; with it, sm_80 is (no clusters there).
    let f3 = kernel(PRO_3D);
    let e = prove(
        &f3,
        &spill_base(last(PRO_3D), 256, 3, 0x400),
        &launch(90, None, 256, 0x400, 3 * 1024),
    )
    .unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::Rank { .. },
                ..
            }
        ),
        "{e}"
    );
    let e = prove(&f, &b, &launch(80, None, 256, 0x400, 3 * 1024)).unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::Value {
                problem: ValueProblem::Rank { .. },
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn unready_or_unknown_values_are_refused() {
    // The IMAD does not wait for the S2R of tid.y.
    let mut p = PRO_3D.to_vec();
    p[2].3 = 0b001;
    let f = kernel(&p);
    let b = spill_base(last(&p), 256, 3, 0);
    let e = prove(&f, &b, &launch(80, None, 256, 0, 3 * 1024)).unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::At {
                problem: AtProblem::ReadsPending { sb: 1, .. },
                ..
            }
        ),
        "{e}"
    );
    // The LEA issues one cycle after the IMAD it reads.
    let mut p = PRO_3D.to_vec();
    p[4].1 = 1;
    let e = prove(&kernel(&p), &b, &launch(80, None, 256, 0, 3 * 1024)).unwrap_err();
    assert!(
        matches!(
            &e,
            BaseError::At {
                problem: AtProblem::ReadsEarly { .. },
                ..
            }
        ),
        "{e}"
    );
    // The base itself is not ready when the original code starts.
    let mut p = PRO_3D.to_vec();
    p[5].1 = 2;
    let e = prove(&kernel(&p), &b, &launch(80, None, 256, 0, 3 * 1024)).unwrap_err();
    assert!(matches!(e, BaseError::NotReady { reg: 9, .. }), "{e}");
    // An instruction the proof does not model.
    let mut p = PRO_3D.to_vec();
    p[4] = ("LOP3.LUT R0, R0, R2, RZ, 0xfc, !PT", 6, None, 0b100);
    let e = prove(&kernel(&p), &b, &launch(80, None, 256, 0, 3 * 1024)).unwrap_err();
    assert!(e.to_string().contains("not modelled"), "{e}");
    // Another special register.
    let mut p = PRO_3D.to_vec();
    p[3] = ("S2R R2, SR_LANEID", 1, Some(2), 0);
    let e = prove(&kernel(&p), &b, &launch(80, None, 256, 0, 3 * 1024)).unwrap_err();
    assert!(
        matches!(&e, BaseError::At { problem: AtProblem::ReadsSpecial(s), .. } if s == "SR_LANEID"),
        "{e}"
    );
    // The base register is never written.
    let mut b2 = b;
    b2.reg = 10;
    let e = prove(&kernel(PRO_3D), &b2, &launch(80, None, 256, 0, 3 * 1024)).unwrap_err();
    assert!(matches!(e, BaseError::NotWritten { reg: 10, .. }), "{e}");
}

#[test]
fn equivalent_arithmetic_is_proved() {
    // The same base computed another way: shifts, IADD3 with a negated operand, IMAD.MOV.
    let p: &[(&str, u8, Option<u8>, u8)] = &[
        ("S2R R4, SR_TID.Y", 1, Some(0), 0),
        ("S2R R5, SR_TID.X", 1, Some(1), 0),
        ("MOV R6, c[0x0][0x0]", 6, None, 0),
        ("IMAD R4, R4, R6, R5", 6, None, 0b011),
        ("S2R R7, SR_TID.Z", 1, Some(2), 0),
        ("IMAD R6, R6, c[0x0][0x4], RZ", 6, None, 0b100),
        ("IMAD R4, R7, R6, R4", 6, None, 0),
        ("SHF.L.U32 R4, R4, 0x2, RZ", 6, None, 0),
        ("IADD3 R9, R4, c[0x0][0x2c], RZ", 6, None, 0),
        ("IADD3 R9, R9, 0x10, RZ", 6, None, 0),
        ("IADD3 R9, R9, -0x10, RZ", 6, None, 0),
    ];
    let f = kernel(p);
    let b = spill_base(last(p), 512, 1, 0);
    prove(&f, &b, &launch(89, None, 512, 0, 2048)).unwrap();
}
