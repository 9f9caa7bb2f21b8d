//! Which translation unit each ptxas step compiles, for the report's `unit`: the front end
//! (`cicc`) names its source as nvcc was given it (`--orig_src_file_name`) and the PTX it
//! writes (`-o`); a ptxas step reads that PTX.

use std::collections::HashMap;

use super::dryrun::{Plan, RunKind, Step};

/// PTX file → the source it was compiled from.
#[derive(Debug, Default)]
pub(crate) struct Units(HashMap<String, String>);

impl Units {
    /// The front-end steps of `plan`.
    pub(crate) fn of(plan: &Plan) -> Units {
        let mut map = HashMap::new();
        for step in &plan.steps {
            if let Step::Run {
                kind:
                    RunKind::FrontEnd {
                        source: Some(src),
                        ptx: Some(ptx),
                    },
                ..
            } = step
            {
                map.insert(ptx.clone(), src.clone());
            }
        }
        Units(map)
    }

    /// The source of the ptxas step `argv` (its PTX input), if a front end of the plan made it.
    pub(crate) fn of_ptxas(&self, argv: &[String]) -> Option<&str> {
        argv.iter()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .find_map(|a| self.0.get(a.as_str()))
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_steps_find_their_source() {
        let plan = super::super::dryrun::parse(
            "#$ \"/nvvm/bin/cicc\" --orig_src_file_name \"src/a b.cu\" --orig_src_path_name \"/w/src/a b.cu\" -arch compute_80 \"/t/x.cpp1.ii\" -o \"/t/x-6_a b.ptx\"\n\
             #$ ptxas -arch=sm_80 -m64 \"/t/x-6_a b.ptx\" -o \"/t/x-8_a b.sm_80.cubin\"\n\
             #$ ptxas -arch=sm_80 -m64 \"/t/other.ptx\" -o \"/t/o.cubin\"\n",
            &HashMap::new(),
        )
        .unwrap();
        let units = Units::of(&plan);
        let argv = |i: usize| match &plan.steps[i] {
            Step::Run { argv, .. } => argv.clone(),
            _ => unreachable!(),
        };
        assert_eq!(units.of_ptxas(&argv(1)), Some("src/a b.cu"));
        assert_eq!(units.of_ptxas(&argv(2)), None);
    }
}
