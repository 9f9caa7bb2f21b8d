//! Records for a file that is already built (`explain FILE.o|FILE.cubin`): no PTX to build
//! other budgets from, so each kernel has one candidate, the code the file holds, evaluated
//! the way the tuner evaluates its candidates (occupancy per block size, static stall model).

use std::path::Path;

use nvcc_orion_schema::{KeptCubins, Line, Record};

use crate::arch::Sm;
use crate::container::{self, EntryKind};
use crate::cubin::Cubin;
use crate::sass::raw;
use crate::settings::Settings;
use crate::tune::candidates::{self, KernelPlan};
use crate::tune::evaluate::evaluate;
use crate::tune::pricing::Pricing;
use crate::tune::report_line;

/// One record per kernel and device image of `path`, priced under `settings` (its
/// calibration); each image's cubin is written under `scratch` (named in the record's
/// `cubins`) for the code views.
pub fn records(path: &Path, scratch: &Path, settings: &Settings) -> Result<Vec<Line>, String> {
    let artifact = container::open(path).map_err(|e| e.to_string())?;
    let images = artifact
        .images()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, img) in images.iter().enumerate() {
        if img.kind != EntryKind::Elf {
            continue;
        }
        let Ok(cubin) = Cubin::parse(&img.image) else {
            continue;
        };
        let kept = scratch.join(format!("image{n}.cubin"));
        std::fs::write(&kept, &img.image).map_err(|e| format!("{}: {e}", kept.display()))?;
        out.extend(image_records(
            &cubin,
            &kept,
            &img.location.to_string(),
            settings,
        ));
    }
    Ok(out)
}

fn image_records(cubin: &Cubin, kept: &Path, location: &str, settings: &Settings) -> Vec<Line> {
    let sm = cubin.arch();
    let Some(arch) = Sm::of(sm).limits() else {
        return Vec::new();
    };
    let functions = raw::functions(cubin);
    let pricing = Pricing {
        model: crate::tune::model::for_step(sm, settings).0,
        arch,
        relocatable: cubin.is_relocatable(),
        baseline: &functions,
    };
    cubin
        .kernels()
        .iter()
        .filter_map(|f| {
            let regs = f.registers?;
            let (blocks, block_from) = candidates::block_sizes(f, &[]);
            let plan = KernelPlan {
                name: f.name.clone(),
                baseline_regs: regs,
                baseline_frame: f.frame_size.unwrap_or(0),
                static_shared: f.static_shared,
                blocks: blocks.clone(),
                block_from,
                budgets: Vec::new(),
                dynamic_shared: None,
            };
            let e = evaluate(&plan, &pricing, cubin, &functions, None)?;
            Some(Line::Kernel(Box::new(Record {
                arch: format!("sm_{sm}"),
                kernel: f.name.clone(),
                output: location.to_string(),
                source: Some("file".to_string()),
                block_sizes: blocks,
                block_from: report_line::block_from(block_from),
                candidates: vec![report_line::candidate(&e)],
                chosen_registers: regs,
                reason: "the variant this file holds (a built file has no PTX to try other budgets; explain the .cu for the candidates)".to_string(),
                cubins: Some(KeptCubins {
                    candidates: vec![kept.display().to_string()],
                    before_rewrite: None,
                }),
                ..Record::default()
            })))
        })
        .collect()
}
