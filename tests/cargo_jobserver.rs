//! The cargo helper under a jobserver, as in a build script: with a token to spare, two
//! sources compile at the same time, and each compiler run is handed the jobserver
//! (`CARGO_MAKEFLAGS` naming it), so nvcc-orion's variant builds draw on the same tokens. The compiler here is a script that records what it saw. (A test binary
//! of its own: the helper takes the jobserver from the environment once per process.)

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

const FAKE_COMPILER: &str = r#"#!/bin/sh
# Writes, to its -o file, how many compiles had started when it looked (waiting up to 3 s for
# a second one), and "jobserver" when CARGO_MAKEFLAGS names the jobserver's fifo.
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
dir=$(dirname "$out")
touch "$out.start"
i=0; n=1
while [ $i -lt 60 ]; do
  n=$(ls "$dir"/*.start | wc -l)
  [ "$n" -ge 2 ] && break
  sleep 0.05; i=$((i + 1))
done
echo "$n" > "$out"
fifo=${CARGO_MAKEFLAGS##*--jobserver-auth=fifo:}
fifo=${fifo%% *}
if [ -p "$fifo" ]; then echo jobserver >> "$out"; else echo "no jobserver: $CARGO_MAKEFLAGS" >> "$out"; fi
"#;

#[test]
fn sources_compile_side_by_side_within_the_jobserver() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let compiler = d.join("fake-nvcc");
    std::fs::write(&compiler, FAKE_COMPILER).unwrap();
    std::fs::set_permissions(&compiler, std::fs::Permissions::from_mode(0o755)).unwrap();
    for name in ["a.cu", "b.cu"] {
        std::fs::write(d.join(name), "__global__ void k() {}\n").unwrap();
    }
    // A jobserver with one token besides our own slot, as make (and cargo) hand it down: a
    // fifo named in CARGO_MAKEFLAGS, holding one token.
    let fifo = d.join("jobserver");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut tokens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    std::io::Write::write_all(&mut tokens, b"+").unwrap();
    // SAFETY: this test binary runs this one test, on its own thread, before anything reads
    // the environment.
    unsafe {
        std::env::set_var(
            "CARGO_MAKEFLAGS",
            format!("-j2 --jobserver-auth=fifo:{}", fifo.display()),
        )
    };
    let outs = nvcc_orion::Build::new()
        .compiler(&compiler)
        .out_dir(d)
        .cargo_metadata(false)
        .files([d.join("a.cu"), d.join("b.cu")])
        .arch("sm_80")
        .build_ptx()
        .unwrap();
    assert_eq!(outs.len(), 2);
    for o in &outs {
        let seen = std::fs::read_to_string(o).unwrap();
        let mut lines = seen.lines();
        assert_eq!(lines.next(), Some("2"), "{}: ran alone", o.display());
        assert_eq!(lines.next(), Some("jobserver"), "{}: {seen}", o.display());
    }
    drop(tokens);
}
