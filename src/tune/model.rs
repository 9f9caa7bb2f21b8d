//! The model a step prices its candidates with: the published parameters of its architecture,
//! or those a calibration file (`NVCC_ORION_CALIBRATION`) has measured on a device of that
//! architecture (`predict::calibration`).

use crate::predict::Model;
use crate::predict::calibration::Calibration;
use crate::settings::Settings;

/// The model for sm_`sm` under `settings`, and a warning when the calibration file named
/// cannot be read (the published parameters are used then).
pub fn for_step(sm: u32, settings: &Settings) -> (Model, Option<String>) {
    let published = Model::published(sm);
    let Some(setting) = &settings.calibration else {
        return (published, None);
    };
    match Calibration::read(&setting.path) {
        Ok(c) => match c.for_sm(sm) {
            Some((_, memory)) => (
                Model {
                    sm,
                    memory: *memory,
                },
                None,
            ),
            None => (published, None),
        },
        Err(e) => (
            published,
            Some(format!(
                "calibration not used ({e}): sm_{sm} priced with the published parameters"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Sm;
    use crate::predict::calibration::{Device, Measurements};

    #[test]
    fn a_calibrated_architecture_uses_its_device_and_the_others_are_published() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let mut memory = Sm::of(90).memory();
        memory.dram_latency = 777.0;
        let c = Calibration::default().with(Device {
            device: "GPU".into(),
            driver: "1".into(),
            sm: 90,
            memory,
            measured: Measurements::default(),
        });
        std::fs::write(&path, c.to_json()).unwrap();
        let env = |k: &str| (k == "NVCC_ORION_CALIBRATION").then(|| path.display().to_string());
        let (settings, _) = Settings::read(&env, &[], &[]);
        assert_eq!(for_step(90, &settings), (Model { sm: 90, memory }, None));
        assert_eq!(for_step(80, &settings), (Model::published(80), None));
        std::fs::write(&path, "not json").unwrap();
        let (settings, _) = Settings::read(&env, &[], &[]);
        let (m, warning) = for_step(90, &settings);
        assert_eq!(m, Model::published(90));
        assert!(warning.unwrap().contains("calibration not used"));
        assert_eq!(
            for_step(90, &Settings::default()),
            (Model::published(90), None)
        );
    }
}
