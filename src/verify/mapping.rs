//! The correspondence map (module doc, item 1): which rewritten instruction is the image of
//! which original, under the claim's offset map, and which are inserted or padding. Built
//! before the [`super::section::Section`] that holds it; the structural checks on the map are
//! in [`super::correspond`].

use std::collections::{BTreeSet, HashMap};

use super::claim::{Check, Claim, Rejection, reject};
use super::semantics::is_nop;
use crate::sass::ir::Function;

/// A rewritten instruction's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    Image(usize),
    Inserted,
    Padding,
}

/// Per function: the origin of each rewritten instruction.
pub(super) type Origins = Vec<Vec<Origin>>;
/// Per function: the rewritten index of each original instruction's image.
pub(super) type Images = Vec<Vec<Option<usize>>>;

/// Pair every original instruction with its image under the claim's map: one original per
/// offset, inside its own function, never on an inserted offset; only trailing padding may
/// lose its image. Every other rewritten instruction is inserted, or a `NOP`.
pub(super) fn images(
    orig: &[Function],
    rew: &[Function],
    claim: &Claim,
    inserted: &BTreeSet<u64>,
) -> Result<(Origins, Images), Rejection> {
    let mut origins: Origins = Vec::with_capacity(rew.len());
    let mut images: Images = Vec::with_capacity(orig.len());
    let mut taken: HashMap<u64, (usize, u64)> = HashMap::new();
    for (fk, (a, b)) in orig.iter().zip(rew).enumerate() {
        let img = function_images(fk, a, b, claim, inserted, &mut taken)?;
        origins.push(origins_of(b, &img, inserted)?);
        images.push(img);
    }
    Ok((origins, images))
}

/// The image index of each instruction of original `a` in rewritten `b` (`taken`: the
/// images of the functions before, offset → (function, original offset)).
fn function_images(
    fk: usize,
    a: &Function,
    b: &Function,
    claim: &Claim,
    inserted: &BTreeSet<u64>,
    taken: &mut HashMap<u64, (usize, u64)>,
) -> Result<Vec<Option<usize>>, Rejection> {
    let mut img = vec![None; a.instrs.len()];
    for (k, ins) in a.instrs.iter().enumerate() {
        let Some(m) = claim.map.map(ins.offset) else {
            return reject(
                Check::Mapping,
                &a.name,
                0,
                format!(
                    "the map gives no image of the original at {:#x}",
                    ins.offset
                ),
            );
        };
        let Some(i) = b.index_of(m) else {
            if is_nop(ins) {
                continue;
            }
            return reject(
                Check::Mapping,
                &a.name,
                m,
                format!(
                    "image of the original at {:#x} is outside the rewritten function",
                    ins.offset
                ),
            );
        };
        if inserted.contains(&m) {
            return reject(
                Check::Mapping,
                &a.name,
                m,
                format!(
                    "offset is both inserted and the image of the original at {:#x}",
                    ins.offset
                ),
            );
        }
        if let Some((_, other)) = taken.insert(m, (fk, ins.offset)) {
            return reject(
                Check::Mapping,
                &a.name,
                m,
                format!(
                    "the originals at {other:#x} and {:#x} map to one offset",
                    ins.offset
                ),
            );
        }
        img[k] = Some(i);
    }
    // Only trailing padding may lose its image (re-padding at the section's end).
    if let Some(k) = img.iter().position(Option::is_none)
        && let Some(j) = img[k..].iter().position(Option::is_some)
    {
        return reject(
            Check::Mapping,
            &a.name,
            a.instrs[k].offset,
            format!(
                "the NOP at {:#x} has no image but the original at {:#x} after it has",
                a.instrs[k].offset,
                a.instrs[k + j].offset
            ),
        );
    }
    Ok(img)
}

/// The origin of each instruction of rewritten `b`, given the images of `a`'s.
fn origins_of(
    b: &Function,
    img: &[Option<usize>],
    inserted: &BTreeSet<u64>,
) -> Result<Vec<Origin>, Rejection> {
    let mut org = vec![Origin::Padding; b.instrs.len()];
    for (k, i) in img.iter().enumerate() {
        if let Some(i) = *i {
            org[i] = Origin::Image(k);
        }
    }
    for (i, ins) in b.instrs.iter().enumerate() {
        if org[i] == Origin::Padding {
            if inserted.contains(&ins.offset) {
                org[i] = Origin::Inserted;
            } else if !is_nop(ins) {
                return reject(
                    Check::Mapping,
                    &b.name,
                    ins.offset,
                    format!(
                        "`{}` is neither the image of an original nor inserted",
                        ins.opcode
                    ),
                );
            }
        }
    }
    Ok(org)
}
