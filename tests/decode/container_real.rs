//! The container layer (`nvcc_orion::container`) on real toolkit output: every fixture of the
//! shared matrix read and written back byte for byte, the images we extract checked against
//! `cuobjdump -xelf/-xptx`, compressed entries, size-changing edits of host objects that the
//! toolkit still reads and links, archives, and corrupt inputs that must not panic.
//!
//! Without nvcc the tests print a skip message and pass (with `CI` set they fail).

use crate::common;

use common::fixtures::{self, Artifact as Fx, Fixtures, Kind};
use nvcc_orion::container::{self, Artifact, Compression, EntryKind, ImageRef};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fx() -> Option<&'static Fixtures> {
    fixtures::fixtures()
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("container-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn load(a: &Fx) -> (Vec<u8>, Artifact) {
    let bytes = std::fs::read(&a.path).unwrap();
    let art =
        container::read(bytes.clone()).unwrap_or_else(|e| panic!("{}: {e}", a.path.display()));
    (bytes, art)
}

/// The images cuobjdump sees: in executables it ignores `__nv_relfatbin`.
fn visible<'a>(a: &Fx, images: Vec<ImageRef<'a>>) -> Vec<ImageRef<'a>> {
    images
        .into_iter()
        .filter(|i| {
            a.kind != Kind::Executable || i.location.section.as_deref() != Some("__nv_relfatbin")
        })
        .collect()
}

fn strip_nuls(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&x| x != 0).map_or(0, |p| p + 1);
    &b[..end]
}

/// `cuobjdump -xptx all` in `dir`: the extracted PTX files, in listing order.
fn extract_ptx(path: &Path, dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let listed = fixtures::list_ptx(path).unwrap();
    let abs = std::path::absolute(path).unwrap();
    let out = Command::new(fixtures::tool("cuobjdump"))
        .args(["-xptx", "all"])
        .arg(&abs)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success() || listed.is_empty(),
        "cuobjdump -xptx all {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    listed.into_iter().map(|l| dir.join(l.file)).collect()
}

/// Check that the ELF and PTX images of `art` are exactly what cuobjdump extracts from `path`
/// (and lists, with the same architectures and counts).
fn assert_images_match_cuobjdump(a: &Fx, art: &Artifact, path: &Path, dir: &Path) {
    let images = visible(a, art.images().unwrap());
    assert_listed_images_match(a.name, images, path, dir);
}

fn assert_listed_images_match(name: &str, images: Vec<ImageRef>, path: &Path, dir: &Path) {
    let elfs: Vec<&ImageRef> = images.iter().filter(|i| i.kind == EntryKind::Elf).collect();
    let ptxs: Vec<&ImageRef> = images.iter().filter(|i| i.kind == EntryKind::Ptx).collect();
    let listed_elf = fixtures::list_elf(path).unwrap();
    let listed_ptx = fixtures::list_ptx(path).unwrap();
    assert_eq!(
        elfs.iter().map(|i| i.arch).collect::<Vec<_>>(),
        listed_elf.iter().map(|l| l.arch).collect::<Vec<_>>(),
        "{name}: ELF archs"
    );
    assert_eq!(
        ptxs.iter().map(|i| i.arch).collect::<Vec<_>>(),
        listed_ptx.iter().map(|l| l.arch).collect::<Vec<_>>(),
        "{name}: PTX archs"
    );
    let extracted = fixtures::extract_elfs(path, &dir.join("elf")).unwrap();
    assert_eq!(extracted.len(), elfs.len(), "{name}");
    for (img, file) in elfs.iter().zip(&extracted) {
        let want = std::fs::read(file).unwrap();
        assert!(
            img.image.as_ref() == want.as_slice(),
            "{name} {}: our image ({} bytes) differs from {} ({} bytes)",
            img.location,
            img.image.len(),
            file.display(),
            want.len()
        );
    }
    let extracted = extract_ptx(path, &dir.join("ptx"));
    assert_eq!(extracted.len(), ptxs.len(), "{name}");
    for (img, file) in ptxs.iter().zip(&extracted) {
        let want = std::fs::read(file).unwrap();
        assert!(
            strip_nuls(&img.image) == strip_nuls(&want),
            "{name} {}: PTX differs from {}",
            img.location,
            file.display()
        );
    }
}

// ---------------------------------------------------------------------------------------------

#[test]
fn every_fixture_round_trips_byte_identical() {
    let Some(fx) = fx() else { return };
    for a in &fx.artifacts {
        let (bytes, art) = load(a);
        let want_kind = match a.kind {
            Kind::Cubin => "cubin",
            Kind::Fatbin => "fatbin",
            Kind::Object | Kind::RdcObject => "host object",
            Kind::Executable => "executable",
            Kind::Archive => "archive",
        };
        assert_eq!(art.kind_name(), want_kind, "{}", a.name);
        let out = art.write().unwrap();
        assert!(out == bytes, "{}: write is not the identity", a.name);
        assert!(!art.images().unwrap().is_empty(), "{}: no images", a.name);
    }
}

#[test]
fn images_agree_with_cuobjdump() {
    let Some(fx) = fx() else { return };
    let dir = scratch("images");
    for a in &fx.artifacts {
        let (_, art) = load(a);
        assert_images_match_cuobjdump(a, &art, &a.path, &dir.path().join(a.name));
    }
}

#[test]
fn compressed_entries_decode_to_their_header_sizes() {
    let Some(fx) = fx() else { return };
    let mut seen = BTreeSet::new();
    for a in &fx.artifacts {
        let (_, art) = load(a);
        let sizes = entry_sizes(&art);
        for (img, (full, ds, cs, ps)) in art.images().unwrap().iter().zip(sizes) {
            if img.compression != Compression::None {
                seen.insert((img.compression.name(), img.kind.name()));
                assert_eq!(full, ds, "{} {}", a.name, img.location);
                // The image is the decompressed data, cut to the ELF's extent.
                assert!(img.image.len() as u64 <= ds && ds - (img.image.len() as u64) < 16);
                assert!(
                    u64::from(cs) <= ps && ps - u64::from(cs) < 8,
                    "{}",
                    img.location
                );
                assert_eq!(
                    ps % 8,
                    0,
                    "{}: compressed payloads are padded to 8",
                    img.location
                );
            }
        }
    }
    for want in [("zstd", "elf"), ("zstd", "ptx"), ("lz4", "ptx")] {
        assert!(
            seen.contains(&want),
            "no {want:?} entry in the fixtures: {seen:?}"
        );
    }
}

/// (bytes decompressed, decompressed size, compressed size, payload size) of every entry, in
/// `images()` order.
fn entry_sizes(art: &Artifact) -> Vec<(u64, u64, u32, u64)> {
    let hosts: Vec<&container::HostElf> = match art {
        Artifact::Host(h) => vec![h],
        Artifact::Archive(ar) => ar
            .members
            .iter()
            .filter_map(|m| match &m.data {
                container::MemberData::Host(h) => Some(&**h),
                container::MemberData::Raw(_) => None,
            })
            .collect(),
        Artifact::Fatbin(fb) => {
            return fb.entries().map(sizes_of).collect();
        }
        Artifact::Cubin(c) => return vec![(c.len() as u64, 0, 0, c.len() as u64)],
    };
    hosts
        .iter()
        .flat_map(|h| h.fatbins.iter())
        .flat_map(|f| f.fatbin.entries())
        .map(sizes_of)
        .collect()
}

fn sizes_of((_, _, e): (usize, usize, &container::Entry)) -> (u64, u64, u32, u64) {
    (
        e.decompressed().unwrap().len() as u64,
        e.decompressed_size(),
        e.compressed_size(),
        e.payload_size(),
    )
}

/// Store every entry (ELF and PTX) of every fatbin of `art` uncompressed.
fn decompress_all(art: &mut Artifact) -> usize {
    let mut fatbins: Vec<&mut container::Fatbin> = match art {
        Artifact::Fatbin(fb) => vec![fb],
        Artifact::Host(h) => h.fatbins.iter_mut().map(|f| &mut f.fatbin).collect(),
        Artifact::Archive(ar) => ar
            .members
            .iter_mut()
            .filter_map(|m| match &mut m.data {
                container::MemberData::Host(h) => Some(h),
                container::MemberData::Raw(_) => None,
            })
            .flat_map(|h| h.fatbins.iter_mut().map(|f| &mut f.fatbin))
            .collect(),
        Artifact::Cubin(_) => vec![],
    };
    let mut n = 0;
    for fb in fatbins.iter_mut() {
        for c in fb.containers_mut() {
            for e in &mut c.entries {
                if e.compression().unwrap() != Compression::None {
                    let img = e.image().unwrap().into_owned();
                    e.set_image(img).unwrap();
                    n += 1;
                }
            }
        }
    }
    n
}

#[test]
fn uncompressed_rewrite_keeps_what_cuobjdump_extracts() {
    let Some(fx) = fx() else { return };
    let dir = scratch("uncompressed");
    for name in [
        "memory_size.fatbin",
        "memory_speed.fatbin",
        "math_multi.fatbin",
    ] {
        let a = fx.get(name);
        let (bytes, mut art) = load(a);
        let n = decompress_all(&mut art);
        assert!(n > 0, "{name}: nothing compressed");
        let out = art.write().unwrap();
        assert!(out.len() > bytes.len(), "{name}");
        let path = dir.path().join(name);
        std::fs::write(&path, &out).unwrap();
        let again = container::read(out).unwrap();
        assert!(
            again
                .images()
                .unwrap()
                .iter()
                .all(|i| i.compression == Compression::None)
        );
        // Same images as the original, and cuobjdump reads the new file the same way.
        assert_images_match_cuobjdump(a, &again, &path, &dir.path().join(format!("{name}.x")));
        assert_images_match_cuobjdump(a, &again, &a.path, &dir.path().join(format!("{name}.o")));
    }
}

// ---------------------------------------------------------------------------------------------
// Size-changing edits of host objects
// ---------------------------------------------------------------------------------------------

fn nvcc(args: &[&str], cwd: &Path) {
    let nvcc = common::find_nvcc().unwrap();
    let out = Command::new(&nvcc)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nvcc {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn readelf_ok(path: &Path) {
    let Ok(out) = Command::new("readelf")
        .args(["-S", "-W"])
        .arg(path)
        .output()
    else {
        return; // no binutils
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.trim().is_empty(),
        "readelf -S {}: {err}",
        path.display()
    );
}

fn section_size(art: &Artifact, name: &str) -> u64 {
    let Artifact::Host(h) = art else {
        panic!("not a host ELF")
    };
    h.sections()
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.size)
        .unwrap()
}

/// The kernels `cuobjdump -sass` shows in `path`.
fn sass_kernels(path: &Path) -> BTreeSet<String> {
    fixtures::sass_functions(path)
        .unwrap()
        .into_iter()
        .map(|(_, f)| f)
        .collect()
}

#[test]
fn host_object_with_a_different_size_cubin_links() {
    let Some(fx) = fx() else { return };
    let dir = scratch("resize-host");
    let a = fx.get("calls_all.o");
    let (bytes, mut art) = load(a);
    // Replace the sm_80 cubin by the one built from the same source with -lineinfo (a real,
    // different-size cubin), and store the compute_120 PTX uncompressed.
    let replacement = std::fs::read(&fx.get("calls_sm80_lineinfo.cubin").path).unwrap();
    let mut old_len = 0;
    let n = art
        .edit_cubins(|_, img| {
            if container::cubin_arch(img) == 80 {
                old_len = img.len();
                Ok(Some(replacement.clone()))
            } else {
                Ok(None)
            }
        })
        .unwrap();
    assert_eq!(n, 1);
    assert_ne!(old_len, replacement.len());
    if let Artifact::Host(h) = &mut art {
        for c in h.fatbins[0].fatbin.containers_mut() {
            for e in &mut c.entries {
                if e.kind() == EntryKind::Ptx {
                    let img = e.image().unwrap().into_owned();
                    e.set_image(img).unwrap();
                }
            }
        }
    }
    let out = art.write().unwrap();
    assert_ne!(out.len(), bytes.len());
    let edited = dir.path().join("calls_all.o");
    std::fs::write(&edited, &out).unwrap();
    readelf_ok(&edited);
    let again = container::read(out).unwrap();
    assert_ne!(
        section_size(&again, ".nv_fatbin"),
        section_size(&load(a).1, ".nv_fatbin")
    );
    // cuobjdump: the same images, except the replaced one.
    let ours: Vec<Vec<u8>> = again
        .images()
        .unwrap()
        .iter()
        .filter(|i| i.kind == EntryKind::Elf)
        .map(|i| i.image.to_vec())
        .collect();
    let theirs = fixtures::extract_elfs(&edited, &dir.path().join("x")).unwrap();
    assert_eq!(ours.len(), theirs.len());
    let listed = fixtures::list_elf(&edited).unwrap();
    for ((img, file), l) in ours.iter().zip(&theirs).zip(&listed) {
        assert!(img == &std::fs::read(file).unwrap(), "{}", file.display());
        if l.arch == 80 {
            assert!(img == &replacement);
        }
    }
    fixtures::elf_dump(&edited).unwrap();
    // Link it with a tiny main and look at the executable's SASS.
    std::fs::write(
        dir.path().join("tiny_main.cu"),
        "int main() { return 0; }\n",
    )
    .unwrap();
    nvcc(
        &[
            "-gencode=arch=compute_80,code=sm_80",
            "tiny_main.cu",
            "calls_all.o",
            "-o",
            "app",
        ],
        dir.path(),
    );
    let exe = dir.path().join("app");
    let sass = sass_kernels(&exe);
    for k in &a.kernels {
        assert!(sass.contains(k), "kernel {k} missing from the linked SASS");
    }
    let exe_art = container::open(&exe).unwrap();
    assert_eq!(exe_art.kind_name(), "executable");
    assert!(
        exe_art
            .images()
            .unwrap()
            .iter()
            .any(|i| i.kind == EntryKind::Elf && i.image.as_ref() == replacement.as_slice()),
        "the linked executable carries the replacement cubin"
    );
}

#[test]
fn debug_object_stored_uncompressed_links() {
    let Some(fx) = fx() else { return };
    let dir = scratch("resize-debug");
    let a = fx.get("memory_G.o");
    let (bytes, mut art) = load(a);
    let before: Vec<Vec<u8>> = art
        .images()
        .unwrap()
        .iter()
        .map(|i| i.image.to_vec())
        .collect();
    let n = art.edit_cubins(|_, img| Ok(Some(img.to_vec()))).unwrap();
    assert_eq!(n, 2);
    let out = art.write().unwrap();
    assert!(out.len() > bytes.len());
    let edited = dir.path().join("memory_G.o");
    std::fs::write(&edited, &out).unwrap();
    readelf_ok(&edited);
    let again = container::read(out).unwrap();
    let after: Vec<Vec<u8>> = again
        .images()
        .unwrap()
        .iter()
        .map(|i| i.image.to_vec())
        .collect();
    assert!(before == after, "images changed");
    assert_images_match_cuobjdump(a, &again, &edited, &dir.path().join("x"));
    std::fs::write(
        dir.path().join("tiny_main.cu"),
        "int main() { return 0; }\n",
    )
    .unwrap();
    nvcc(
        &["-arch=sm_75", "tiny_main.cu", "memory_G.o", "-o", "app"],
        dir.path(),
    );
    let sass = sass_kernels(&dir.path().join("app"));
    for k in &a.kernels {
        assert!(sass.contains(k), "kernel {k} missing from the linked SASS");
    }
}

#[test]
fn rdc_object_with_uncompressed_cubins_device_links() {
    let Some(fx) = fx() else { return };
    let dir = scratch("resize-rdc");
    for name in ["main_rdc.o", "rdc_use.o"] {
        std::fs::copy(&fx.get(name).path, dir.path().join(name)).unwrap();
    }
    let a = fx.get("rdc_lib.o");
    let (bytes, mut art) = load(a);
    let n = art.edit_cubins(|_, img| Ok(Some(img.to_vec()))).unwrap();
    assert_eq!(n, 2);
    let out = art.write().unwrap();
    assert_ne!(out.len(), bytes.len());
    let edited = dir.path().join("rdc_lib.o");
    std::fs::write(&edited, &out).unwrap();
    readelf_ok(&edited);
    let again = container::read(out).unwrap();
    assert!(
        again
            .images()
            .unwrap()
            .iter()
            .all(|i| i.compression == Compression::None)
    );
    assert_images_match_cuobjdump(a, &again, &edited, &dir.path().join("x"));
    nvcc(
        &[
            "-rdc=true",
            "-gencode=arch=compute_80,code=sm_80",
            "-gencode=arch=compute_100,code=sm_100",
            "main_rdc.o",
            "rdc_lib.o",
            "rdc_use.o",
            "-o",
            "app_rdc",
        ],
        dir.path(),
    );
    let exe = dir.path().join("app_rdc");
    let sass = sass_kernels(&exe);
    let want = &fx.get("app_rdc").kernels;
    assert!(!want.is_empty());
    for k in want {
        assert!(sass.contains(k), "kernel {k} missing from the linked SASS");
    }
}

#[test]
fn executables_take_same_size_edits_and_refuse_growth() {
    let Some(fx) = fx() else { return };
    let dir = scratch("exe");
    let a = fx.get("app");
    let (bytes, mut art) = load(a);
    // Same-size replacement (the image itself): the file is unchanged.
    let n = art.edit_cubins(|_, img| Ok(Some(img.to_vec()))).unwrap();
    assert!(n > 0);
    assert!(art.write().unwrap() == bytes);
    // Growth is refused with a typed error.
    let err = art
        .edit_cubins(|_, img| {
            let mut v = img.to_vec();
            v.extend_from_slice(&[0; 64]);
            Ok(Some(v))
        })
        .unwrap_err();
    assert!(
        matches!(err, container::ContainerError::ExecutableGrow { .. }),
        "{err}"
    );
    assert!(!err.to_string().contains('\n'));
    // A same-size edit of every image keeps cuobjdump happy (the in-place path; shrinking
    // is covered by the unit tests of `container::host`).
    let (_, mut art) = load(a);
    art.edit_cubins(|_, img| Ok(Some(img.to_vec()))).unwrap();
    let path = dir.path().join("app");
    std::fs::write(&path, art.write().unwrap()).unwrap();
    assert_images_match_cuobjdump(a, &art, &path, &dir.path().join("x"));
}

// ---------------------------------------------------------------------------------------------
// Archives
// ---------------------------------------------------------------------------------------------

#[test]
fn archive_images_name_their_members_and_edits_keep_the_index() {
    let Some(fx) = fx() else { return };
    let dir = scratch("archive");
    let a = fx.get("librdc.a");
    let art = container::open(&a.path).unwrap();
    assert_eq!(art.kind_name(), "archive");
    let locs: Vec<String> = art
        .images()
        .unwrap()
        .iter()
        .map(|i| i.location.to_string())
        .collect();
    assert_eq!(
        locs,
        [
            "librdc.a(rdc_lib.o) __nv_relfatbin container 0 entry 0",
            "librdc.a(rdc_lib.o) __nv_relfatbin container 0 entry 1",
            "librdc.a(rdc_use.o) __nv_relfatbin container 0 entry 0",
            "librdc.a(rdc_use.o) __nv_relfatbin container 0 entry 1",
        ]
        .map(String::from)
        .to_vec(),
        "{locs:#?}"
    );
    // Store rdc_lib.o's cubins uncompressed: the member grows, rdc_use.o moves.
    let bytes = std::fs::read(&a.path).unwrap();
    let mut art = art;
    let n = art
        .edit_cubins(|loc, img| {
            Ok((loc.member.as_deref() == Some("rdc_lib.o")).then(|| img.to_vec()))
        })
        .unwrap();
    assert_eq!(n, 2);
    let out = art.write().unwrap();
    assert!(out.len() > bytes.len());
    let path = dir.path().join("librdc.a");
    std::fs::write(&path, &out).unwrap();
    assert_images_match_cuobjdump(a, &art, &path, &dir.path().join("x"));
    // binutils agree: the index is valid and names the same symbols.
    if let Ok(o) = Command::new("nm").args(["-s"]).arg(&path).output() {
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let orig = Command::new("nm")
            .args(["-s"])
            .arg(&a.path)
            .output()
            .unwrap();
        let index = |t: &str| -> Vec<String> {
            // `nm -s` resolves each index entry's member offset to a member name.
            t.lines()
                .filter(|l| l.contains(" in "))
                .map(String::from)
                .collect()
        };
        assert_eq!(index(&text), index(&String::from_utf8_lossy(&orig.stdout)));
    }
    // And the edited archive still links.
    std::fs::copy(&fx.get("main_rdc.o").path, dir.path().join("main_rdc.o")).unwrap();
    nvcc(
        &[
            "-rdc=true",
            "-gencode=arch=compute_80,code=sm_80",
            "-gencode=arch=compute_100,code=sm_100",
            "main_rdc.o",
            "librdc.a",
            "-o",
            "app_rdc",
        ],
        dir.path(),
    );
    let sass = sass_kernels(&dir.path().join("app_rdc"));
    for k in &fx.get("app_rdc").kernels {
        assert!(sass.contains(k), "kernel {k} missing from the linked SASS");
    }
}

// ---------------------------------------------------------------------------------------------
// Corrupt input
// ---------------------------------------------------------------------------------------------

/// Read, and if that works, list images and write: none of it may panic.
fn exercise(bytes: Vec<u8>) {
    if let Ok(mut art) = container::read(bytes) {
        let _ = art.images();
        let _ = art.write();
        let _ = art.edit_cubins(|_, img| Ok(Some(img.to_vec())));
        let _ = art.write();
    }
}

#[test]
fn corrupt_inputs_never_panic() {
    let Some(fx) = fx() else { return };
    let dir = scratch("corrupt");
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for name in [
        "memory_size.fatbin",
        "memory_speed.fatbin",
        "rdc_lib.o",
        "memory_G.o",
        "librdc.a",
        "coop_sm120.cubin",
    ] {
        let bytes = std::fs::read(&fx.get(name).path).unwrap();
        let len = bytes.len();
        let mut cuts: BTreeSet<usize> = (0..=64).map(|i| len * i / 64).collect();
        cuts.extend(0..512.min(len));
        for cut in cuts {
            exercise(bytes[..cut].to_vec());
        }
        for _ in 0..1500 {
            let mut b = bytes.clone();
            let flips = 1 + next() % 4;
            for _ in 0..flips {
                // Half the flips in the first 4 KiB, where the headers are.
                let span = if next() % 2 == 0 { len.min(4096) } else { len };
                let pos = (next() % span as u64) as usize;
                b[pos] ^= 1 << (next() % 8);
            }
            exercise(b);
        }
        // `open` names the file, on one line.
        let path = dir.path().join(format!("{name}.cut"));
        std::fs::write(&path, &bytes[..len / 3]).unwrap();
        if let Err(e) = container::open(&path) {
            let s = e.to_string();
            assert!(s.starts_with(&format!("{}: ", path.display())), "{s}");
            assert!(!s.contains('\n'), "{s}");
        }
    }
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let e = container::open(&empty).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: ", empty.display())) && !e.contains('\n'),
        "{e}"
    );
    let e = container::open(&dir.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn truncated_fatbin_error_says_where() {
    let Some(fx) = fx() else { return };
    let bytes = std::fs::read(&fx.get("math_multi.fatbin").path).unwrap();
    let e = container::read(bytes[..bytes.len() / 2].to_vec())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("fatbin container 0"), "{e}");
    assert!(e.contains("0x"), "{e}");
    let b = std::fs::read(&fx.get("rdc_lib.o").path).unwrap();
    let Artifact::Host(h) = container::read(b.clone()).unwrap() else {
        panic!()
    };
    let s = h
        .sections()
        .iter()
        .find(|s| s.name == "__nv_relfatbin")
        .unwrap()
        .clone();
    // Make the first entry's payload size run past the section.
    let mut bad = b.clone();
    let at = s.offset as usize + 16 + 8;
    bad[at..at + 8].copy_from_slice(&0x10_0000u64.to_le_bytes());
    let e = container::read(bad).unwrap_err().to_string();
    assert!(
        e.starts_with("section __nv_relfatbin (offset ")
            && e.contains("container 0 entry 0: payload runs past the end of the container"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// `--concat` entries (CUDA 13, opt-in: not in the fixture matrix)
// ---------------------------------------------------------------------------------------------

#[test]
fn concat_entries_are_listed_part_by_part_and_kept() {
    let Some(fx) = fx() else { return };
    let dir = scratch("concat");
    for f in std::fs::read_dir(fx.src_dir()).unwrap().flatten() {
        std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
    }
    let arches = [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_100,code=[sm_100,compute_100]",
    ];
    for (mode, out) in [("-fatbin", "calls_concat.fatbin"), ("-c", "calls_concat.o")] {
        let mut args = vec![mode, "--concat"];
        args.extend(arches);
        args.extend(["calls.cu", "-o", out]);
        nvcc(&args, dir.path());
        let path = dir.path().join(out);
        let bytes = std::fs::read(&path).unwrap();
        let mut art = container::read(bytes.clone()).unwrap();
        assert!(art.write().unwrap() == bytes, "{out}: identity");
        let images = art.images().unwrap();
        let parts: Vec<String> = images
            .iter()
            .filter(|i| i.location.part.is_some())
            .map(|i| i.location.to_string())
            .collect();
        // sm_100 (its entry carries the compat header) and the PTX stay separate entries; the
        // sm_80 and sm_90 cubins share one concat entry.
        assert_eq!(parts.len(), 2, "{out}: {parts:?}");
        assert!(
            parts[0].ends_with(" part 0") && parts[1].ends_with(" part 1"),
            "{parts:?}"
        );
        assert_listed_images_match(out, images, &path, &dir.path().join(format!("{out}.x")));
        // The parts are read-only: edit_cubins does not visit them.
        let n = art.edit_cubins(|loc, _| {
            assert!(loc.part.is_none());
            Ok(None)
        });
        assert_eq!(n.unwrap(), 0);
    }
}
