//! The cargo helper (`nvcc_orion_build`) under a jobserver, as in a build script: with a token
//! to spare, two sources compile at the same time, and each compiler run is handed the
//! jobserver (`CARGO_MAKEFLAGS` naming it), so nvcc-orion's variant builds draw on the same
//! tokens; for PTX (run by the helper) and for objects (run by the `cc` crate, then archived).
//! The compiler here is a script that records what it saw. (A test binary of its own: the
//! helper takes the jobserver from the environment once per process.)

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

const FAKE_COMPILER: &str = r#"#!/bin/sh
# Writes, to its -o file, how many compiles had started when it looked (waiting up to 3 s for
# a second one), and "jobserver" when CARGO_MAKEFLAGS names the jobserver's fifo. cc's probes
# (`-E` for the compiler family, `-?` for cl-style flags) get a GCC answer and a refusal.
for a in "$@"; do
  [ "$a" = "-E" ] && { echo '"gcc"'; exit 0; }
  [ "$a" = "-?" ] && exit 1
done
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
echo "args: $*" >> "$out"
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
    // the environment. TARGET, HOST and OPT_LEVEL are what cargo gives a build script (cc
    // reads them).
    unsafe {
        std::env::set_var(
            "CARGO_MAKEFLAGS",
            format!("-j2 --jobserver-auth=fifo:{}", fifo.display()),
        );
        let target = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
        std::env::set_var("TARGET", &target);
        std::env::set_var("HOST", &target);
        std::env::set_var("OPT_LEVEL", "3");
    };
    // What the fake compiler saw: its arguments.
    let check = |o: &std::path::Path| -> String {
        let seen = std::fs::read_to_string(o).unwrap();
        let mut lines = seen.lines();
        assert_eq!(lines.next(), Some("2"), "{}: ran alone", o.display());
        assert_eq!(lines.next(), Some("jobserver"), "{}: {seen}", o.display());
        lines.next().unwrap().to_string()
    };
    let mut b = nvcc_orion_build::Build::new();
    b.compiler(&compiler)
        .cargo_metadata(false)
        .files([d.join("a.cu"), d.join("b.cu")])
        .arch("sm_80");

    let ptx_dir = d.join("ptx");
    std::fs::create_dir(&ptx_dir).unwrap();
    let outs = b.clone().out_dir(&ptx_dir).build_ptx().unwrap();
    assert_eq!(outs.len(), 2);
    for o in &outs {
        assert!(check(o).contains(" -ptx "));
    }

    // Objects go through cc, each source its own whole-program compile (no `--device-c`),
    // then into one archive holding both.
    let obj_dir = d.join("obj");
    std::fs::create_dir(&obj_dir).unwrap();
    let lib = b.clone().out_dir(&obj_dir).try_compile("k").unwrap();
    assert_eq!(lib, obj_dir.join("libk.a"));
    let objects: Vec<_> = std::fs::read_dir(&obj_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    assert_eq!(objects.len(), 2, "{objects:?}");
    for o in &objects {
        let args = check(o);
        assert!(
            args.contains(" -c ") && !args.contains("--device-c"),
            "{args}"
        );
        assert!(
            args.contains("-gencode=arch=compute_80,code=sm_80"),
            "{args}"
        );
    }
    let members = Command::new("ar").arg("t").arg(&lib).output().unwrap();
    let members = String::from_utf8_lossy(&members.stdout);
    assert_eq!(members.lines().count(), 2, "{members}");
    drop(tokens);
}
