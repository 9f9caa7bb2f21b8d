//! The skip count `scripts/test.sh` prints at the end of a run (issue 50): a test that cannot
//! run here passes with a `SKIP` line (tests/common: `skipped`), so the count is what keeps a
//! missing tool from hiding behind a green run. `scripts/report-skips.sh` makes it from the
//! log the skip lines are appended to.

use std::path::Path;
use std::process::Command;

/// `report-skips.sh LOG`'s standard output, for a log holding `lines`.
fn report(test: &str, lines: &str) -> String {
    let dir = std::env::temp_dir().join(format!("orion-skips-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("skips.log");
    std::fs::write(&log, lines).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/report-skips.sh");
    let out = Command::new("bash").arg(script).arg(&log).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Each distinct skip is counted once (a test run twice, or two threads of one, skip alike)
/// and listed in a fixed order.
#[test]
fn skips_are_counted_and_listed_once_each() {
    let log = "SKIP fidelity::parity::c_sm80: no nvcc\n\
               SKIP builds::ccache_block: no ccache\n\
               SKIP fidelity::parity::c_sm80: no nvcc\n";
    assert_eq!(
        report("some", log),
        "\n== 2 skipped\nSKIP builds::ccache_block: no ccache\nSKIP fidelity::parity::c_sm80: no nvcc\n"
    );
}

/// A run that skipped nothing says so, with the count, not silence.
#[test]
fn no_skips_print_a_count_of_zero() {
    assert_eq!(report("none", ""), "\n== 0 skipped\n");
}
