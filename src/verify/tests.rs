//! Small hand-written cases; the real-code tests are in tests/rewrites/verify_checker.rs.

use super::*;
use crate::cubin::OffsetMap;
use std::collections::BTreeMap;

use crate::arch::Family;
use crate::sass::control::Control;
use crate::sass::ir::Instr;
use crate::sass::ir::Pred;
use crate::sass::operands;
use semantics::{escapes, parse_imm32, shape, sp_adjust, words};

/// `@P0 IADD3 R5, R2, R3, RZ` at `off`.
fn ins(off: u64, text: &str) -> Instr {
    let (pred, rest) = match text.strip_prefix('@') {
        Some(r) => {
            let (p, rest) = r.split_once(' ').unwrap();
            let (negated, p) = match p.strip_prefix('!') {
                Some(x) => (true, x),
                None => (false, p),
            };
            let index = p.trim_start_matches('P').parse().unwrap();
            (
                Some(Pred {
                    uniform: false,
                    index,
                    negated,
                }),
                rest,
            )
        }
        None => (None, text),
    };
    let (opcode, ops) = rest.split_once(' ').unwrap_or((rest, ""));
    let mut i = Instr {
        offset: off,
        raw: u128::from(off) << 64 | text.len() as u128,
        opcode: opcode.into(),
        predicate: pred,
        operands: operands::parse(ops).unwrap(),
        ctrl: Control::default(),
        target: None,
        targets: Vec::new(),
        callee: None,
        unknown: false,
    };
    i.unknown = !operands::apply(Family::Turing, &mut i);
    i
}

/// An offset map from `(original, rewritten)` pairs.
fn offsets(pairs: &[(u64, u64)]) -> OffsetMap {
    let mut map = OffsetMap::new();
    for &(o, n) in pairs {
        map.insert(o, n);
    }
    map
}

fn func(lines: &[&str]) -> Vec<Function> {
    vec![Function {
        name: "k".into(),
        section: 1,
        start: 0,
        instrs: lines
            .iter()
            .enumerate()
            .map(|(k, l)| ins(16 * k as u64, l))
            .collect(),
        kernel: true,
        regs: Some(24),
        abi_regs: None,
        abi_files: None,
        marked: Default::default(),
    }]
}

const ORIG: &[&str] = &[
    "STL [R1+0x8], R5",
    "MOV R5, 0x3",
    "LDL R5, [R1+0x8]",
    "FADD R6, R5, R5",
    "EXIT",
];

fn spill_claim() -> Claim {
    Claim {
        map: OffsetMap::shift_from(0, 16),
        inserted: vec![0],
        base: Some(SpillBase {
            reg: 40,
            defined_at: 0,
            stride: 0x400,
            slots: 2,
            area: 0,
        }),
        passed: Vec::new(),
        renamed: Default::default(),
    }
}

#[test]
fn a_spill_moved_to_shared_proves() {
    let orig = func(ORIG);
    assert!(check(&orig, &orig, &Claim::identity()).is_ok());
    let rew = func(&[
        "MOV R40, 0x0",
        "STS [R40], R5",
        "MOV R5, 0x3",
        "LDS R5, [R40]",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    let p = check(&orig, &rew, &spill_claim()).unwrap();
    assert_eq!((p.moves, p.shared_moves, p.inserted), (2, 2, 1));
}

#[test]
fn a_reload_from_the_wrong_slot_is_rejected() {
    let orig = func(ORIG);
    let rew = func(&[
        "MOV R40, 0x0",
        "STS [R40], R5",
        "MOV R5, 0x3",
        "LDS R5, [R40+0x400]",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    let e = check(&orig, &rew, &spill_claim()).unwrap_err();
    assert_eq!(e.offset, 0x40);
    assert!(e.reason.starts_with("R5 holds nothing known"), "{e}");
    assert_eq!(e.check, Check::Values, "{e}");
    // Off the slot grid, or past the last slot.
    for bad in [
        "LDS R5, [R40+0x4]",
        "LDS R5, [R40+0x800]",
        "LDS.64 R4, [R40]",
    ] {
        let mut rew = rew.clone();
        rew[0].instrs[3] = ins(0x30, bad);
        let e = check(&orig, &rew, &spill_claim()).unwrap_err();
        assert_eq!(e.offset, 0x30, "{bad}: {e}");
    }
}

#[test]
fn guarded_reloads_meet_both_paths() {
    let orig = func(&[
        "STL [R1+0x8], R5",
        "@P0 MOV R5, 0x3",
        "@P0 LDL R5, [R1+0x8]",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    assert!(check(&orig, &orig, &Claim::identity()).is_ok());
    let rew = func(&[
        "MOV R40, 0x0",
        "STS [R40], R5",
        "@P0 MOV R5, 0x3",
        "@P0 LDS R5, [R40]",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    assert!(check(&orig, &rew, &spill_claim()).is_ok());
    // The reload under the opposite guard leaves R5 = 3 on the path that set it.
    let mut bad = rew.clone();
    bad[0].instrs[3] = ins(0x30, "@!P0 LDS R5, [R40]");
    let e = check(&orig, &bad, &spill_claim()).unwrap_err();
    assert!(e.reason.contains("guard"), "{e}");
}

#[test]
fn an_inserted_write_of_a_live_register_is_rejected() {
    let orig = func(ORIG);
    let rew = func(&[
        "MOV R40, 0x0",
        "STS [R40], R5",
        "MOV R5, 0x3",
        "LDS R5, [R40]",
        "MOV R5, 0x7",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    let mut map = OffsetMap::new();
    map.insert(0, 16);
    map.insert(0x30, 0x50);
    let claim = Claim {
        map,
        inserted: vec![0, 0x40],
        ..spill_claim()
    };
    let e = check(&orig, &rew, &claim).unwrap_err();
    assert_eq!(e.offset, 0x50);
    assert!(e.reason.starts_with("R5 holds nothing known"), "{e}");
    assert_eq!(e.check, Check::Values, "{e}");
}

#[test]
fn the_frame_follows_stack_pointer_updates() {
    // The spill at [R1+0x8] is reloaded as [R1+0x10] after R1 moved down by 8.
    let orig = func(&[
        "STL [R1+0x8], R5",
        "MOV R5, 0x3",
        "IADD3 R1, R1, -0x8, RZ",
        "LDL R5, [R1+0x10]",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    assert!(check(&orig, &orig, &Claim::identity()).is_ok());
    let mut bad = orig.clone();
    bad[0].instrs[3] = ins(0x30, "LDL R5, [R1+0x8]");
    // Another frame word: refused even though the original uses it (it holds R1-relative
    // garbage here).
    assert!(check(&orig, &bad, &Claim::identity()).is_err());
}

#[test]
fn escaped_frames_forget_at_pointer_stores() {
    // R1 escapes into R2: a store through R2 may hit the spill word.
    let orig = func(&[
        "STL [R1+0x8], R5",
        "IADD3 R2, R1, 0x8, RZ",
        "STL [R2], R7",
        "LDL R5, [R1+0x8]",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    assert!(check(&orig, &orig, &Claim::identity()).is_ok());
    let rew = func(&[
        "MOV R40, 0x0",
        "STS [R40], R5",
        "IADD3 R2, R1, 0x8, RZ",
        "STL [R2], R7",
        "LDS R5, [R40]",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    let e = check(&orig, &rew, &spill_claim()).unwrap_err();
    assert!(e.reason.starts_with("R5 holds"), "{e}");
    assert_eq!(e.check, Check::Values, "{e}");
}

#[test]
fn operand_shapes_and_helpers() {
    assert_eq!(shape("-|R3.reuse|.H1"), "-|R#|.H1");
    assert_eq!(shape("[R12.64+UR4+0x10]"), "[R#.64+UR#+0x10]");
    assert_eq!(shape("RZ"), "RZ");
    assert_eq!(shape("!PT"), "!PT");
    assert_eq!(shape("0xB2"), "0xB2");
    assert_eq!(parse_imm32("0xfffffff8"), Some(-8));
    assert_eq!(parse_imm32("-0x90"), Some(-0x90));
    assert_eq!(sp_adjust(&ins(0, "IADD3 R1, R1, -0x90, RZ")), Some(-0x90));
    assert_eq!(sp_adjust(&ins(0, "VIADD R1, R1, 0xfffffff8")), Some(-8));
    assert_eq!(sp_adjust(&ins(0, "IADD3 R1, R2, -0x90, RZ")), None);
    assert_eq!(words(0x8, 8), vec![0x8, 0xc]);
    assert_eq!(words(0x9, 1), vec![0x8]);
    assert_eq!(words(0x6, 4), vec![0x4, 0x8]);
    assert_eq!(words(i64::MAX, 16).len(), 1);
    assert!(escapes(&func(&["IMAD.MOV.U32 R2, RZ, RZ, R1", "EXIT"])[0]));
    assert!(!escapes(
        &func(&["IADD3 R1, R1, -0x8, RZ", "STL [R1+0x4], R2", "EXIT"])[0]
    ));
}

/// ptxas spills a zero (`STL [R1+x], RZ`): moved to shared as `STS [base], RZ` it proves;
/// stored from any other register, or reloaded where a zero is not, it is rejected.
#[test]
fn a_spilled_zero_moves_like_a_register() {
    let orig = func(&[
        "STL [R1+0x8], RZ",
        "MOV R5, 0x3",
        "LDL R5, [R1+0x8]",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    assert!(check(&orig, &orig, &Claim::identity()).is_ok());
    let good = [
        "MOV R40, 0x0",
        "STS [R40], RZ",
        "MOV R5, 0x3",
        "LDS R5, [R40]",
        "FADD R6, R5, R5",
        "EXIT",
    ];
    let p = check(&orig, &func(&good), &spill_claim()).unwrap();
    assert_eq!(p.shared_moves, 2);
    // A register instead of RZ: the word holds a value, not the zero.
    let mut bad = func(&good);
    bad[0].instrs[1] = ins(0x10, "STS [R40], R7");
    let e = check(&orig, &bad, &spill_claim()).unwrap_err();
    assert_eq!(e.offset, 0x40, "{e}");
    assert!(e.reason.contains("R5 holds {orig R7}"), "{e}");
    assert_eq!(e.check, Check::Values, "{e}");
    // The zero stored to another slot than the reload reads.
    let mut bad = func(&good);
    bad[0].instrs[1] = ins(0x10, "STS [R40+0x400], RZ");
    let e = check(&orig, &bad, &spill_claim()).unwrap_err();
    assert_eq!(e.offset, 0x40, "{e}");
    assert!(e.reason.starts_with("R5 holds nothing known"), "{e}");
    assert_eq!(e.check, Check::Values, "{e}");
}

/// `regdem`'s shape: R5 lives in a slot, R10/R11 are value registers; the branch
/// to the original `FADD R6` enters the load inserted before it.
fn demoted() -> (Vec<Function>, Vec<Function>, Claim) {
    let mut orig = func(&[
        "MOV R5, 0x3",
        "@P0 BRA 0x30",
        "FADD R5, R5, R5",
        "FADD R6, R5, R5",
        "EXIT",
    ]);
    orig[0].instrs[1].target = Some(0x30);
    let mut rew = func(&[
        "MOV R40, 0x0",
        "MOV R10, 0x3",
        "STS [R40], R10",
        "@P0 BRA 0x70",
        "LDS R10, [R40]",
        "FADD R10, R10, R10",
        "STS [R40], R10",
        "LDS R11, [R40]",
        "FADD R6, R11, R11",
        "EXIT",
    ]);
    rew[0].instrs[3].target = Some(0x70);
    let claim = Claim {
        map: offsets(&[
            (0, 0x10),
            (0x10, 0x30),
            (0x20, 0x50),
            (0x30, 0x80),
            (0x40, 0x90),
        ]),
        inserted: vec![0, 0x20, 0x40, 0x60, 0x70],
        base: Some(SpillBase {
            reg: 40,
            defined_at: 0,
            stride: 0x400,
            slots: 1,
            area: 0,
        }),
        passed: Vec::new(),
        renamed: Default::default(),
    };
    (orig, rew, claim)
}

#[test]
fn a_branch_may_enter_the_loads_before_its_target() {
    let (orig, rew, claim) = demoted();
    check(&orig, &rew, &claim).unwrap();
}

#[test]
fn a_branch_into_other_inserted_code_or_past_the_loads_is_rejected() {
    let (orig, mut rew, claim) = demoted();
    // Into the load before the other FADD: falls into the image of 0x20, not of 0x30.
    rew[0].instrs[3].target = Some(0x40);
    let e = check(&orig, &rew, &claim).unwrap_err();
    assert!(e.reason.contains("goes to"), "{e}");
    assert_eq!(e.check, Check::Correspondence, "{e}");
    // Straight to the image, past the load: R11 holds nothing on that path.
    let (orig, mut rew, claim) = demoted();
    rew[0].instrs[3].target = Some(0x80);
    let e = check(&orig, &rew, &claim).unwrap_err();
    assert!(e.reason.contains("R11"), "{e}");
    // A BSSY may not be redirected that way.
    let (mut orig, mut rew, claim) = demoted();
    orig[0].instrs[1] = ins(0x10, "BSSY B0, 0x30");
    orig[0].instrs[1].target = Some(0x30);
    rew[0].instrs[3] = ins(0x30, "BSSY B0, 0x70");
    rew[0].instrs[3].target = Some(0x70);
    let e = check(&orig, &rew, &claim).unwrap_err();
    assert!(e.reason.contains("goes to"), "{e}");
    assert_eq!(e.check, Check::Correspondence, "{e}");
}

/// A kernel calling a sub-function, with the section's registers renumbered (register
/// demotion's compaction): `R5` (passed in), `R7` (returned) and `R20` (the return address).
fn renumbered(kernel_regs: [u8; 3], callee_regs: [u8; 3]) -> (Vec<Function>, Vec<Function>) {
    let section = |regs: [u8; 3]| {
        let [a, b, ret] = regs;
        let mut k = func(&[
            &format!("MOV R{a}, 0x3"),
            &format!("MOV R{ret}, 0x30"),
            "CALL.REL.NOINC 0x50",
            &format!("FADD R6, R{b}, R{b}"),
            "EXIT",
        ]);
        k[0].instrs[2].callee = Some("$k$f".into());
        k[0].instrs[2].target = Some(0x50);
        k
    };
    let callee = |regs: [u8; 3]| {
        let [a, b, ret] = regs;
        Function {
            name: "$k$f".into(),
            section: 1,
            start: 0x50,
            instrs: vec![
                ins(0x50, &format!("FADD R{b}, R{a}, R{a}")),
                ins(0x60, &format!("RET.REL.NODEC R{ret} 0x0")),
            ],
            kernel: false,
            regs: Some(24),
            abi_regs: None,
            abi_files: None,
            marked: Default::default(),
        }
    };
    let mut orig = section([5, 7, 20]);
    orig.push(callee([5, 7, 20]));
    let mut rew = section(kernel_regs);
    rew.push(callee(callee_regs));
    (orig, rew)
}

fn renaming() -> Claim {
    Claim {
        renamed: BTreeMap::from([(5, 2), (7, 3), (20, 4)]),
        ..Claim::default()
    }
}

#[test]
fn registers_renumbered_across_a_call_prove() {
    let (orig, rew) = renumbered([2, 3, 4], [2, 3, 4]);
    let p = check(&orig, &rew, &renaming()).unwrap();
    assert_eq!(p.calls, 1);
    // Identity, with no claim, proves too.
    let (orig, rew) = renumbered([5, 7, 20], [5, 7, 20]);
    check(&orig, &rew, &Claim::default()).unwrap();
}

#[test]
fn renumbering_that_does_not_match_at_a_call_is_rejected() {
    // The same rewrite without the claim: the callee's live-in is not where it was.
    let (orig, rew) = renumbered([2, 3, 4], [2, 3, 4]);
    assert!(check(&orig, &rew, &Claim::default()).is_err());
    // The kernel passes the value in a register the claim does not name.
    let (orig, rew) = renumbered([9, 3, 4], [2, 3, 4]);
    let e = check(&orig, &rew, &renaming()).unwrap_err();
    assert!(e.reason.contains("at the call"), "{e}");
    assert_eq!(e.check, Check::Values, "{e}");
    // The callee returns its result elsewhere.
    let (orig, rew) = renumbered([2, 3, 4], [2, 8, 4]);
    let e = check(&orig, &rew, &renaming()).unwrap_err();
    assert!(e.reason.contains("return"), "{e}");
    // A function other than a kernel may not be renumbered (its callers are elsewhere).
    let (mut orig, rew) = renumbered([2, 3, 4], [2, 3, 4]);
    orig[0].kernel = false;
    let mut rew = rew;
    rew[0].kernel = false;
    let e = check(&orig, &rew, &renaming()).unwrap_err();
    assert!(e.reason.contains("not a kernel"), "{e}");
    assert_eq!(e.check, Check::Summary, "{e}");
}

/// A kernel (`k`, with its stack pointer set up as ptxas does) and one sub-function `$k$f`
/// at `sub_at`, from their lines.
fn kernel_and_callee(kernel: &[&str], callee: &[&str], sub_at: u64) -> Vec<Function> {
    let mut fs = func(kernel);
    for i in &mut fs[0].instrs {
        if i.is_call() {
            i.callee = Some("$k$f".into());
            i.target = Some(sub_at);
        }
    }
    fs.push(Function {
        name: "$k$f".into(),
        section: 1,
        start: sub_at,
        instrs: callee
            .iter()
            .enumerate()
            .map(|(k, l)| ins(sub_at + 16 * k as u64, l))
            .collect(),
        kernel: false,
        regs: Some(24),
        abi_regs: None,
        abi_files: None,
        marked: Default::default(),
    });
    fs
}

#[test]
fn a_callee_may_read_a_frame_word_the_kernel_never_wrote() {
    // ptxas' complementary-guard idiom leaves such reads on paths that never run; the new
    // frame's words hold the same arbitrary values in both programs.
    let callee = ["LDL R7, [R1+0x8]", "RET.REL.NODEC R20 0x0"];
    let ok = kernel_and_callee(
        &[
            "MOV R1, c[0x0][0x28]",
            "IADD3 R1, R1, -0x10, RZ",
            "MOV R20, 0x40",
            "CALL.REL.NOINC 0x60",
            "FADD R6, R7, R7",
            "EXIT",
        ],
        &callee,
        0x60,
    );
    check(&ok, &ok, &Claim::identity()).unwrap();
    // A store before the frame is set up may have written anything: nothing is fresh.
    let stored = kernel_and_callee(
        &[
            "STL [R1+0x8], R5",
            "MOV R1, c[0x0][0x28]",
            "IADD3 R1, R1, -0x10, RZ",
            "MOV R20, 0x50",
            "CALL.REL.NOINC 0x70",
            "FADD R6, R7, R7",
            "EXIT",
        ],
        &callee,
        0x70,
    );
    let e = check(&stored, &stored, &Claim::identity()).unwrap_err();
    assert!(e.reason.contains("frame word"), "{e}");
    assert_eq!(e.check, Check::Values, "{e}");
}

#[test]
fn a_guarded_wide_spill_split_in_two_proves() {
    let orig = func(&[
        "STL.64 [R1+0x8], R2",
        "@P0 STL.64 [R1+0x8], R4",
        "LDL.64 R8, [R1+0x8]",
        "FADD R6, R9, R8",
        "EXIT",
    ]);
    let rew = |second: &str| {
        func(&[
            "MOV R40, 0x0",
            "STS [R40], R2",
            "STS [R40+0x400], R3",
            "@P0 STS [R40], R4",
            second,
            "LDS R8, [R40]",
            "LDS R9, [R40+0x400]",
            "FADD R6, R9, R8",
            "EXIT",
        ])
    };
    let claim = Claim {
        map: offsets(&[
            (0, 0x10),
            (0x10, 0x30),
            (0x20, 0x50),
            (0x30, 0x70),
            (0x40, 0x80),
        ]),
        inserted: vec![0, 0x20, 0x40, 0x60],
        base: Some(SpillBase {
            reg: 40,
            defined_at: 0,
            stride: 0x400,
            slots: 2,
            area: 0,
        }),
        ..Claim::default()
    };
    // Both halves under the guard run or skip together.
    check(&orig, &rew("@P0 STS [R40+0x400], R5"), &claim).unwrap();
    // The high half stored on both paths: R9 is wrong where P0 is false.
    let e = check(&orig, &rew("STS [R40+0x400], R5"), &claim).unwrap_err();
    assert!(e.reason.contains("R9"), "{e}");
}

#[test]
fn a_callee_writing_its_callers_frame_word_returns_it_where_the_claim_says() {
    let kernel = |reload: &str| {
        vec![
            "MOV R1, c[0x0][0x28]".to_string(),
            "IADD3 R1, R1, -0x10, RZ".into(),
            "MOV R40, 0x0".into(),
            "STS [R40], R5".into(),
            "MOV R20, 0x60".into(),
            "CALL.REL.NOINC 0x90".into(),
            reload.into(),
            "FADD R7, R6, R6".into(),
            "EXIT".into(),
        ]
    };
    let orig_k = [
        "MOV R1, c[0x0][0x28]",
        "IADD3 R1, R1, -0x10, RZ",
        "STL [R1+0x8], R5",
        "MOV R20, 0x50",
        "CALL.REL.NOINC 0x80",
        "LDL R6, [R1+0x8]",
        "FADD R7, R6, R6",
        "EXIT",
    ];
    let orig_f = ["MOV R9, 0x1", "STL [R1+0x8], R9", "RET.REL.NODEC R20 0x0"];
    let orig = kernel_and_callee(&orig_k, &orig_f, 0x80);
    check(&orig, &orig, &Claim::identity()).unwrap();
    // One instruction inserted at 0x20 (the base), everything after it one slot on.
    let moved: Vec<(u64, u64)> = (0..11u64)
        .map(|i| (16 * i, 16 * i + if i >= 2 { 16 } else { 0 }))
        .collect();
    let claim = Claim {
        map: offsets(&moved),
        inserted: vec![0x20],
        base: Some(SpillBase {
            reg: 40,
            defined_at: 0x20,
            stride: 0x400,
            slots: 1,
            area: 0,
        }),
        passed: vec![(8, 0)],
        ..Claim::default()
    };
    let k: Vec<String> = kernel("LDS R6, [R40]");
    let k: Vec<&str> = k.iter().map(String::as_str).collect();
    // The callee writes the passed word's spill word: the reload after the call sees it.
    let good = kernel_and_callee(
        &k,
        &["MOV R9, 0x1", "STS [R40], R9", "RET.REL.NODEC R20 0x0"],
        0x90,
    );
    check(&orig, &good, &claim).unwrap();
    // The callee still writes the frame word: the spill word holds the value from before
    // the call, which the original no longer has there.
    let stale = kernel_and_callee(&k, &orig_f, 0x90);
    let e = check(&orig, &stale, &claim).unwrap_err();
    assert!(e.reason.contains("at its return"), "{e}");
    assert_eq!(e.check, Check::Values, "{e}");
}

#[test]
fn a_callee_cannot_hide_its_frame_writes_behind_a_stack_pointer_copy() {
    // The kernel keeps R5 across the call; the callee writes the kernel's frame word 8.
    let orig = kernel_and_callee(
        &[
            "MOV R1, c[0x0][0x28]",
            "IADD3 R1, R1, -0x10, RZ",
            "STL [R1+0x8], R5",
            "MOV R20, 0x50",
            "CALL.REL.NOINC 0x70",
            "FADD R7, R5, R5",
            "EXIT",
        ],
        &["MOV R9, 0x1", "STL [R1+0x8], R9", "RET.REL.NODEC R20 0x0"],
        0x70,
    );
    check(&orig, &orig, &Claim::identity()).unwrap();
    // The rewrite drops R5 before the call and reloads it from word 8 after it, while its
    // callee copies R1 away and back (as if it kept a frame of its own) before overwriting
    // word 8: the reload sees the callee's value, not R5. (Whether a function keeps a frame
    // of its own is judged on the original, and a callee writing R1 leaves its callers
    // knowing nothing of R1: either way the reload is not taken for R5.)
    let rew = kernel_and_callee(
        &[
            "MOV R1, c[0x0][0x28]",
            "IADD3 R1, R1, -0x10, RZ",
            "STL [R1+0x8], R5",
            "MOV R5, 0x0",
            "MOV R20, 0x60",
            "CALL.REL.NOINC 0x90",
            "LDL R5, [R1+0x8]",
            "FADD R7, R5, R5",
            "EXIT",
        ],
        &[
            "MOV R30, R1",
            "MOV R1, R30",
            "MOV R9, 0x1",
            "STL [R1+0x8], R9",
            "RET.REL.NODEC R20 0x0",
        ],
        0x90,
    );
    let claim = Claim {
        map: offsets(&[
            (0, 0),
            (0x10, 0x10),
            (0x20, 0x20),
            (0x30, 0x40),
            (0x40, 0x50),
            (0x50, 0x70),
            (0x60, 0x80),
            (0x70, 0xb0),
            (0x80, 0xc0),
            (0x90, 0xd0),
        ]),
        inserted: vec![0x30, 0x60, 0x90, 0xa0],
        ..Claim::default()
    };
    let e = check(&orig, &rew, &claim).unwrap_err();
    assert_eq!(e.offset, 0x70, "{e}");
    assert!(e.reason.contains("R5"), "{e}");
}

/// A zeroed FP64 or vector accumulator: ptxas spills it as `STL.64/.128 [R1+x], RZ`, which
/// stores zero in every word. Split into one `STS [slot], RZ` per word it proves; a word
/// stored from a register, to the wrong slot, or by a wide shared store is rejected.
#[test]
fn a_wide_spilled_zero_split_into_words_proves() {
    for (width, regs) in [
        (2u64, ["R8", "R9"].as_slice()),
        (4, &["R8", "R9", "R10", "R11"]),
    ] {
        let m = if width == 2 { "64" } else { "128" };
        let orig = func(&[
            &format!("STL.{m} [R1+0x8], RZ"),
            &format!("LDL.{m} R8, [R1+0x8]"),
            &format!("FADD R6, {}, R8", regs[regs.len() - 1]),
            "EXIT",
        ]);
        assert!(check(&orig, &orig, &Claim::identity()).is_ok());
        let n = width as usize;
        let rew = |stores: &[String]| {
            let mut l = vec!["MOV R40, 0x0".to_string()];
            l.extend(stores.iter().cloned());
            l.extend((0..n).map(|w| format!("LDS {}, [R40+{:#x}]", regs[w], 0x400 * w)));
            l.push(format!("FADD R6, {}, R8", regs[n - 1]));
            l.push("EXIT".into());
            let refs: Vec<&str> = l.iter().map(String::as_str).collect();
            func(&refs)
        };
        let stores: Vec<String> = (0..n)
            .map(|w| format!("STS [R40+{:#x}], RZ", 0x400 * w))
            .collect();
        let at = |k: usize| 16 * k as u64;
        // Images: the first store, the first load, the FADD, the EXIT.
        let claim = Claim {
            map: offsets(&[
                (0, at(1)),
                (0x10, at(1 + n)),
                (0x20, at(1 + 2 * n)),
                (0x30, at(2 + 2 * n)),
            ]),
            inserted: std::iter::once(0)
                .chain((1..n).map(|w| at(1 + w)))
                .chain((1..n).map(|w| at(1 + n + w)))
                .collect(),
            base: Some(SpillBase {
                reg: 40,
                defined_at: 0,
                stride: 0x400,
                slots: width as u32,
                area: 0,
            }),
            ..Claim::default()
        };
        let p = check(&orig, &rew(&stores), &claim).unwrap();
        assert_eq!(p.shared_moves, 2, "{m}");
        let last = n - 1;
        // The last word stored from a register: the reload gets its value, not zero.
        let mut bad = stores.clone();
        bad[last] = format!("STS [R40+{:#x}], R7", 0x400 * last);
        let e = check(&orig, &rew(&bad), &claim).unwrap_err();
        assert!(e.reason.contains(regs[last]), "{m}: {e}");
        // The last word's zero stored to the first word's slot: its slot holds nothing.
        let mut bad = stores.clone();
        bad[last] = "STS [R40], RZ".into();
        let e = check(&orig, &rew(&bad), &claim).unwrap_err();
        assert!(
            e.reason
                .starts_with(&format!("{} holds nothing known", regs[last])),
            "{m}: {e}"
        );
        // A wide shared store is not a slot access.
        let mut bad = stores.clone();
        bad[0] = format!("STS.{m} [R40], RZ");
        let e = check(&orig, &rew(&bad), &claim).unwrap_err();
        assert_eq!(e.offset, at(1), "{m}: {e}");
    }
}

/// A kernel word read before any write (the never-stored half of a wide reload) holds an
/// arbitrary value; listed in `passed`, it starts in its slot, which holds one too. A word
/// listed with two slots cannot equal both: rejected.
#[test]
fn a_kernel_word_read_before_written_starts_in_its_passed_slot() {
    let orig = func(&[
        "MOV R1, c[0x0][0x28]",
        "IADD3 R1, R1, -0x10, RZ",
        "LDL R9, [R1+0xc]",
        "FADD R6, R9, R9",
        "EXIT",
    ]);
    let rew = func(&[
        "MOV R1, c[0x0][0x28]",
        "IADD3 R1, R1, -0x10, RZ",
        "MOV R40, 0x0",
        "LDS R9, [R40+0x400]",
        "FADD R6, R9, R9",
        "EXIT",
    ]);
    let claim = |passed: Vec<(i64, i64)>| Claim {
        map: offsets(&[
            (0, 0),
            (0x10, 0x10),
            (0x20, 0x30),
            (0x30, 0x40),
            (0x40, 0x50),
        ]),
        inserted: vec![0x20],
        base: Some(SpillBase {
            reg: 40,
            defined_at: 0x20,
            stride: 0x400,
            slots: 2,
            area: 0,
        }),
        passed,
        ..Claim::default()
    };
    check(&orig, &rew, &claim(vec![(0xc, 0x400)])).unwrap();
    for passed in [vec![], vec![(0xc, 0x400), (0xc, 0)], vec![(0xc, 0)]] {
        let e = check(&orig, &rew, &claim(passed.clone())).unwrap_err();
        assert!(
            e.reason.starts_with("R9 holds nothing known"),
            "{passed:?}: {e}"
        );
    }
}

/// A kernel whose frame address escapes keeps a spill in shared memory across a direct call
/// of a function that stores through no pointer; one that does may have overwritten the
/// original's word: rejected.
#[test]
fn an_escaped_frame_survives_a_call_that_stores_through_no_pointer() {
    let kernel = |shift: u64| {
        let ret = format!("MOV R20, {:#x}", 0x60 + shift);
        let call = format!("CALL.REL.NOINC {:#x}", 0x90 + shift);
        let (store, reload) = if shift == 0 {
            ("STL [R1+0x4], R5", "LDL R5, [R1+0x4]")
        } else {
            ("STS [R40], R5", "LDS R5, [R40]")
        };
        let mut l = vec![
            "MOV R1, c[0x0][0x28]".to_string(),
            "IADD3 R1, R1, -0x10, RZ".into(),
            "IADD3 R2, R1, 0x8, RZ".into(),
            store.into(),
            ret,
            call,
            reload.into(),
            "FADD R6, R5, R5".into(),
            "EXIT".into(),
        ];
        if shift != 0 {
            l.insert(0, "MOV R40, 0x0".into());
        }
        l
    };
    let build = |lines: Vec<String>, callee: &[&str], sub_at: u64| {
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        kernel_and_callee(&refs, callee, sub_at)
    };
    for (callee, proves) in [
        (["FADD R7, R7, R7", "RET.REL.NODEC R20 0x0"], true),
        (["ST.E [R2.64], R7", "RET.REL.NODEC R20 0x0"], false),
    ] {
        let orig = build(kernel(0), &callee, 0x90);
        check(&orig, &orig, &Claim::identity()).unwrap();
        let rew = build(kernel(0x10), &callee, 0xa0);
        let r = check(&orig, &rew, &spill_claim());
        if proves {
            r.unwrap();
        } else {
            let e = r.unwrap_err();
            assert!(e.reason.starts_with("R5 holds nothing known"), "{e}");
            assert_eq!(e.check, Check::Values, "{e}");
        }
    }
}
