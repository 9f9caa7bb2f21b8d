//! The model's memory parameters measured on a user's GPU (Resios' instantiation workflow,
//! docs/papers.md §Resios): `nvcc-orion calibrate` runs its microbenchmarks, [`fit`] turns their
//! measurements into [`MemoryParams`], and the calibration file keeps them per device and
//! driver. A build that names the file (`NVCC_ORION_CALIBRATION`, part of what compiler caches
//! hash) prices each architecture the file has a device of with that device's parameters, and
//! the others with the published ones.
//!
//! The measurements, one per line as the microbenchmark program prints them:
//! - `DEVICE,<name>,<sm>,<SMs>,<L2 bytes>,<driver>`
//! - `CHASE,<footprint bytes>,<cycles per load>`: one thread chasing pointers through a
//!   footprint of global memory (L1-cached loads): plateaus at the L1, L2 and DRAM latencies,
//!   with knees at the capacities;
//! - `SHARED,<cycles per load>`: the same chase in shared memory;
//! - `STREAM,<L1|L2|DRAM>,<warps per SM>,<bytes per clock per SM>`: every SM loading from a
//!   footprint that one level holds, at a growing number of warps: Resios' saturation curve,
//!   linear in the warps until the level's bandwidth, flat after.
//!
//! Every time, rate, footprint and count is above zero and finite: a line that is not is
//! refused with its number, never fitted.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::arch::memory::MemoryParams;

/// The file's format tag.
pub const FORMAT: &str = "nvcc-orion-calibration-1";

/// A calibration file: devices by `"<name> / driver <version>"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub format: String,
    pub devices: BTreeMap<String, Device>,
}

/// One device's fitted parameters and the measurements they came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    pub device: String,
    pub driver: String,
    pub sm: u32,
    pub memory: MemoryParams,
    pub measured: Measurements,
}

/// What the microbenchmarks measured on one device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurements {
    pub device: String,
    pub driver: String,
    pub sm: u32,
    pub sms: u32,
    pub l2_bytes: u64,
    /// (footprint bytes, cycles per dependent load).
    pub chase: Vec<(u64, f64)>,
    /// Cycles per dependent shared-memory load.
    pub shared: Option<f64>,
    /// (level, warps per SM, bytes per clock per SM).
    pub stream: Vec<(String, u32, f64)>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error("line {0}: {1:?} is not a measurement")]
    BadLine(usize, String),
    #[error("no DEVICE line")]
    NoDevice,
    #[error("too few {0} measurements to fit ({1}; need {2})")]
    TooFew(&'static str, usize, usize),
    #[error("{0}: {1}")]
    File(String, String),
    /// The fit gives a parameter no device has (an L2 of fewer bytes than SMs).
    #[error("the fit gives {0} of zero")]
    Unmeasurable(&'static str),
}

impl Measurements {
    /// The microbenchmark program's output (other lines are ignored).
    pub fn parse(text: &str) -> Result<Measurements, CalibrationError> {
        let mut m = Measurements::default();
        let mut device = false;
        for (n, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.trim().split(',').collect();
            let bad = || CalibrationError::BadLine(n + 1, line.to_string());
            // A time or a rate of zero, below it, infinite or not a number is no measurement:
            // the model would price with it (the `calibration` fuzz target).
            let num = |s: &str| {
                let v = s.trim().parse::<f64>().map_err(|_| bad())?;
                if v.is_finite() && v > 0.0 {
                    Ok(v)
                } else {
                    Err(bad())
                }
            };
            let int = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
            let count = |s: &str| match s.trim().parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(bad()),
            };
            match f.as_slice() {
                ["DEVICE", name @ .., sm, sms, l2, driver] => {
                    m.device = name.join(",");
                    m.sm = count(sm)?;
                    m.sms = count(sms)?;
                    m.l2_bytes = int(l2)?;
                    m.driver = driver.to_string();
                    device = true;
                }
                ["CHASE", bytes, cycles] => {
                    let bytes = int(bytes).and_then(|b| if b > 0 { Ok(b) } else { Err(bad()) })?;
                    m.chase.push((bytes, num(cycles)?))
                }
                ["SHARED", cycles] => m.shared = Some(num(cycles)?),
                ["STREAM", level, warps, per_clock] => {
                    m.stream
                        .push((level.to_string(), count(warps)?, num(per_clock)?))
                }
                [tag, ..] if ["CHASE", "SHARED", "STREAM"].contains(tag) => return Err(bad()),
                _ => {}
            }
        }
        if !device {
            return Err(CalibrationError::NoDevice);
        }
        Ok(m)
    }

    /// The key of the device in a calibration file.
    pub fn key(&self) -> String {
        format!("{} / driver {}", self.device, self.driver)
    }
}

/// The first parameter of `m` no device measures (zero, below zero, not finite), if any.
fn unmeasurable(m: &MemoryParams) -> Option<&'static str> {
    let times_and_rates = [
        ("l1_latency", m.l1_latency),
        ("l2_latency", m.l2_latency),
        ("dram_latency", m.dram_latency),
        ("shared_latency", m.shared_latency),
        ("l1_bytes_per_clock", m.l1_bytes_per_clock),
        ("l2_bytes_per_clock", m.l2_bytes_per_clock),
        ("dram_bytes_per_clock", m.dram_bytes_per_clock),
    ];
    let sizes = [
        ("l1_shared_bytes", m.l1_shared_bytes),
        ("l2_bytes_per_sm", m.l2_bytes_per_sm),
    ];
    times_and_rates
        .iter()
        .find(|(_, v)| !(v.is_finite() && *v > 0.0))
        .map(|(name, _)| *name)
        .or_else(|| sizes.iter().find(|(_, v)| *v == 0).map(|(name, _)| *name))
}

/// Three plateaus of a latency curve (cycles) and the footprints where the first two end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plateaus {
    pub latency: [f64; 3],
    /// The largest footprint of the first and of the second plateau.
    pub knees: [u64; 2],
}

/// The pointer chase's three plateaus: the two breakpoints that leave the least squared error
/// around each segment's median (every split of the footprint-ordered points is tried).
pub fn plateaus(chase: &[(u64, f64)]) -> Result<Plateaus, CalibrationError> {
    let mut pts = chase.to_vec();
    pts.sort_by_key(|p| p.0);
    let n = pts.len();
    if n < 3 {
        return Err(CalibrationError::TooFew("CHASE", n, 3));
    }
    let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let err = |s: &[f64]| {
        let m = median(s);
        s.iter().map(|y| (y - m).powi(2)).sum::<f64>()
    };
    let mut best = (f64::INFINITY, 1, 2);
    for i in 1..n - 1 {
        for j in i + 1..n {
            let e = err(&ys[..i]) + err(&ys[i..j]) + err(&ys[j..]);
            if e < best.0 {
                best = (e, i, j);
            }
        }
    }
    let (_, i, j) = best;
    Ok(Plateaus {
        latency: [median(&ys[..i]), median(&ys[i..j]), median(&ys[j..])],
        knees: [pts[i - 1].0, pts[j - 1].0],
    })
}

/// Resios' saturation curve `min(slope × warps, bandwidth)` fitted to (warps, bytes per clock)
/// points by least squares: for each split of the warp-ordered points, the slope through the
/// origin of those before it and the mean of those after; the bandwidth of the best split.
/// When no point is past the knee the largest measured rate is the bandwidth.
pub fn saturation(points: &[(u32, f64)]) -> Result<(f64, f64), CalibrationError> {
    let mut pts = points.to_vec();
    pts.sort_by_key(|p| p.0);
    if pts.len() < 2 {
        return Err(CalibrationError::TooFew("STREAM", pts.len(), 2));
    }
    let mut best: Option<(f64, f64, f64)> = None;
    for k in 1..=pts.len() {
        let (rise, flat) = pts.split_at(k);
        let sxy: f64 = rise.iter().map(|(w, y)| f64::from(*w) * y).sum();
        let sxx: f64 = rise.iter().map(|(w, _)| f64::from(*w).powi(2)).sum();
        let slope = sxy / sxx;
        let bandwidth = if flat.is_empty() {
            rise.iter().map(|p| p.1).fold(0.0, f64::max)
        } else {
            flat.iter().map(|p| p.1).sum::<f64>() / flat.len() as f64
        };
        let e: f64 = pts
            .iter()
            .map(|(w, y)| ((slope * f64::from(*w)).min(bandwidth) - y).powi(2))
            .sum();
        if best.is_none_or(|b| e < b.0) {
            best = Some((e, slope, bandwidth));
        }
    }
    let (_, slope, bandwidth) = best.expect("at least one split");
    Ok((slope, bandwidth))
}

fn median(s: &[f64]) -> f64 {
    let mut v = s.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The parameters `m` measures, the others kept from `published` (the smallest carve-out, to
/// turn the L1 knee into the unified array's size, is `min_carveout`).
pub fn fit(
    m: &Measurements,
    published: &MemoryParams,
    min_carveout: u32,
) -> Result<MemoryParams, CalibrationError> {
    let p = plateaus(&m.chase)?;
    let level = |name: &str| -> Vec<(u32, f64)> {
        m.stream
            .iter()
            .filter(|(l, _, _)| l == name)
            .map(|(_, w, y)| (*w, *y))
            .collect()
    };
    let (_, l1_bw) = saturation(&level("L1"))?;
    let (_, l2_bw) = saturation(&level("L2"))?;
    let (_, dram_bw) = saturation(&level("DRAM"))?;
    let sms = u64::from(m.sms.max(1));
    let l2_total = if m.l2_bytes > 0 {
        m.l2_bytes
    } else {
        p.knees[1]
    };
    let fitted = MemoryParams {
        l1_shared_bytes: u32::try_from(p.knees[0]).unwrap_or(u32::MAX) + min_carveout,
        l2_bytes_per_sm: u32::try_from(l2_total / sms).unwrap_or(u32::MAX),
        l1_latency: p.latency[0],
        l2_latency: p.latency[1],
        dram_latency: p.latency[2],
        shared_latency: m.shared.unwrap_or(published.shared_latency),
        l1_bytes_per_clock: l1_bw,
        l2_bytes_per_clock: l2_bw,
        dram_bytes_per_clock: dram_bw,
    };
    // What a calibration file may not hold (`Calibration::read`), `calibrate` does not write.
    match unmeasurable(&fitted) {
        Some(field) => Err(CalibrationError::Unmeasurable(field)),
        None => Ok(fitted),
    }
}

impl Calibration {
    /// Read a calibration file.
    pub fn read(path: &std::path::Path) -> Result<Calibration, CalibrationError> {
        let file = |e: &dyn fmt::Display| {
            CalibrationError::File(path.display().to_string(), e.to_string())
        };
        let text = std::fs::read_to_string(path).map_err(|e| file(&e))?;
        let c: Calibration = serde_json::from_str(&text).map_err(|e| file(&e))?;
        if c.format != FORMAT {
            return Err(file(&format!("format {:?}, not {FORMAT:?}", c.format)));
        }
        // The file may have been edited by hand: what no device measures is refused here, so
        // a build prices with the published parameters and says why (`tune::model`).
        for (key, d) in &c.devices {
            if let Some(field) = unmeasurable(&d.memory) {
                return Err(file(&format!("{key}: {field} is not above zero")));
            }
        }
        Ok(c)
    }

    /// The calibrated parameters for sm_`sm`: the first device of that architecture (devices
    /// in key order), if any.
    pub fn for_sm(&self, sm: u32) -> Option<(&str, &MemoryParams)> {
        self.devices
            .iter()
            .find(|(_, d)| d.sm == sm)
            .map(|(k, d)| (k.as_str(), &d.memory))
    }

    /// This calibration with `device` added (replacing one of the same key).
    pub fn with(mut self, device: Device) -> Calibration {
        self.format = FORMAT.to_string();
        self.devices.insert(
            format!("{} / driver {}", device.device, device.driver),
            device,
        );
        self
    }

    /// The file's text (sorted keys, one trailing newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("serialisable") + "\n"
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::arch::Sm;

    /// Synthetic measurements of a device with the given parameters: a chase over 4 KiB to
    /// 512 MiB and streams at 1 to 64 warps, each `noise`-perturbed (a fixed pattern of
    /// ±`noise` relative error).
    pub(crate) fn synthetic(truth: &MemoryParams, sms: u32, carveout: u32, noise: f64) -> String {
        let wobble = |i: usize| 1.0 + noise * [0.0, 1.0, -1.0, 0.5, -0.5][i % 5];
        let l1 = u64::from(truth.l1_shared_bytes - carveout);
        let l2 = u64::from(truth.l2_bytes_per_sm) * u64::from(sms);
        let mut out = format!("DEVICE,Synthetic GPU,90,{sms},{l2},575.51\n");
        for (i, kb) in (12..=29).map(|s| 1u64 << s).enumerate() {
            let cycles = if kb <= l1 {
                truth.l1_latency
            } else if kb <= l2 {
                truth.l2_latency
            } else {
                truth.dram_latency
            };
            out += &format!("CHASE,{kb},{:.2}\n", cycles * wobble(i));
        }
        out += &format!("SHARED,{:.2}\n", truth.shared_latency);
        for (level, bw, latency) in [
            ("L1", truth.l1_bytes_per_clock, truth.l1_latency),
            ("L2", truth.l2_bytes_per_clock, truth.l2_latency),
            ("DRAM", truth.dram_bytes_per_clock, truth.dram_latency),
        ] {
            // Each warp keeps 4 loads of 512 bytes in flight: 2048 bytes per latency.
            for (i, w) in [1u32, 2, 4, 8, 16, 32, 48, 64].into_iter().enumerate() {
                let y = (f64::from(w) * 2048.0 / latency).min(bw) * wobble(i + 2);
                out += &format!("STREAM,{level},{w},{y:.4}\n");
            }
        }
        out
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn fitting_recovers_the_parameters_it_was_made_from() {
        for sm in [75, 80, 86, 89, 90, 100, 120] {
            let truth = Sm::of(sm).memory();
            let carveout = if sm == 75 { 32 * 1024 } else { 0 };
            for noise in [0.0, 0.03] {
                let text = synthetic(&truth, 100, carveout, noise);
                let m = Measurements::parse(&text).unwrap();
                assert_eq!(
                    (m.device.as_str(), m.sms, m.chase.len()),
                    ("Synthetic GPU", 100, 18)
                );
                let got = fit(&m, &Sm::of(sm).memory(), carveout).unwrap();
                // The program prints four decimals.
                let tol = 2.0 * noise + 1e-4;
                for (name, g, t) in [
                    ("L1", got.l1_latency, truth.l1_latency),
                    ("L2", got.l2_latency, truth.l2_latency),
                    ("DRAM", got.dram_latency, truth.dram_latency),
                    ("L1 BW", got.l1_bytes_per_clock, truth.l1_bytes_per_clock),
                    ("L2 BW", got.l2_bytes_per_clock, truth.l2_bytes_per_clock),
                    (
                        "DRAM BW",
                        got.dram_bytes_per_clock,
                        truth.dram_bytes_per_clock,
                    ),
                ] {
                    assert!(close(g, t, tol), "sm_{sm} noise {noise} {name}: {g} vs {t}");
                }
                // The L1 knee is the largest power of two under L1's size: within a factor 2.
                assert!(got.l1_shared_bytes <= truth.l1_shared_bytes, "sm_{sm}");
                assert!(2 * got.l1_shared_bytes > truth.l1_shared_bytes, "sm_{sm}");
                assert_eq!(got.l2_bytes_per_sm, truth.l2_bytes_per_sm, "sm_{sm}");
                assert_eq!(got.shared_latency, truth.shared_latency);
            }
        }
    }

    #[test]
    fn saturation_knee_and_plateaus() {
        // 10 bytes per clock per warp until 80.
        let pts: Vec<(u32, f64)> = [1, 2, 4, 8, 16, 32]
            .into_iter()
            .map(|w| (w, (10.0 * f64::from(w)).min(80.0)))
            .collect();
        let (slope, bw) = saturation(&pts).unwrap();
        assert!(
            close(slope, 10.0, 1e-9) && close(bw, 80.0, 1e-9),
            "{slope} {bw}"
        );
        // Never saturated: the largest rate measured.
        assert_eq!(saturation(&pts[..3]).unwrap().1, 40.0);
        assert!(saturation(&pts[..1]).is_err());
        let p = plateaus(&[(1, 30.0), (2, 31.0), (4, 200.0), (8, 201.0), (16, 500.0)]).unwrap();
        assert_eq!(p.latency, [30.5, 200.5, 500.0]);
        assert_eq!(p.knees, [2, 8]);
    }

    #[test]
    fn a_file_keeps_devices_by_name_and_driver() {
        let truth = Sm::of(90).memory();
        let m = Measurements::parse(&synthetic(&truth, 132, 0, 0.0)).unwrap();
        let fitted = fit(&m, &truth, 0).unwrap();
        let d = Device {
            device: m.device.clone(),
            driver: m.driver.clone(),
            sm: m.sm,
            memory: fitted,
            measured: m.clone(),
        };
        let c = Calibration::default().with(d.clone());
        assert_eq!(
            c.devices.keys().collect::<Vec<_>>(),
            ["Synthetic GPU / driver 575.51"]
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, c.to_json()).unwrap();
        let back = Calibration::read(&path).unwrap();
        assert_eq!(back, c);
        assert_eq!(
            back.for_sm(90).map(|(k, _)| k),
            Some("Synthetic GPU / driver 575.51")
        );
        assert!(back.for_sm(80).is_none());
        std::fs::write(&path, "{\"format\":\"other\",\"devices\":{}}").unwrap();
        assert!(Calibration::read(&path).is_err());
        // A name with a comma survives the DEVICE line.
        let m = Measurements::parse("DEVICE,A, B,90,1,2,3\n").unwrap();
        assert_eq!((m.device.as_str(), m.driver.as_str()), ("A, B", "3"));
        assert!(matches!(
            Measurements::parse("CHASE,x,1\nDEVICE,A,90,1,2,3"),
            Err(CalibrationError::BadLine(1, _))
        ));
        assert_eq!(
            Measurements::parse("nothing"),
            Err(CalibrationError::NoDevice)
        );
    }

    /// What no microbenchmark measures is refused with its line, never fitted: a time or a
    /// rate of zero, below zero, infinite or not a number, no bytes or no warps, an SM
    /// number past `u32` (found by the `calibration` fuzz target: `CHASE` lines of 0 cycles
    /// fitted an L1 latency of 0).
    #[test]
    fn a_value_no_measurement_gives_names_its_line() {
        let device = "DEVICE,G,90,132,52428800,580\n";
        for bad in [
            "CHASE,4096,0",
            "CHASE,4096,-3",
            "CHASE,4096,NaN",
            "CHASE,4096,inf",
            "CHASE,0,33",
            "SHARED,0",
            "SHARED,nan",
            "STREAM,L1,0,4",
            "STREAM,L1,4,0",
            "STREAM,DRAM,4,-inf",
            "DEVICE,G,4294967386,132,1,580",
            "DEVICE,G,90,0,1,580",
        ] {
            assert_eq!(
                Measurements::parse(&format!("{device}{bad}\n")),
                Err(CalibrationError::BadLine(2, bad.to_string())),
                "{bad}"
            );
        }
        assert!(
            Measurements::parse(&format!("{device}CHASE,4096,33.5\nSTREAM,L2,4,12.25\n")).is_ok()
        );
    }

    /// A calibration file edited to hold what no device measures is refused as a whole (the
    /// build then prices with the published parameters and warns, `tune::model`).
    #[test]
    fn a_file_with_a_parameter_no_device_measures_is_refused() {
        let m = Measurements::parse(&synthetic(&Sm::of(90).memory(), 132, 0, 0.0)).unwrap();
        let memory = fit(&m, &Sm::of(90).memory(), 0).unwrap();
        let d = Device {
            device: m.device.clone(),
            driver: m.driver.clone(),
            sm: 90,
            memory,
            measured: m,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let good = Calibration::default().with(d.clone());
        std::fs::write(&path, good.to_json()).unwrap();
        assert_eq!(Calibration::read(&path).unwrap(), good);
        for (field, edit) in [
            (
                "l1_latency",
                (|p| p.l1_latency = 0.0) as fn(&mut MemoryParams),
            ),
            ("dram_bytes_per_clock", |p| p.dram_bytes_per_clock = -1.0),
            ("l2_bytes_per_sm", |p| p.l2_bytes_per_sm = 0),
        ] {
            let mut bad = d.clone();
            edit(&mut bad.memory);
            std::fs::write(&path, Calibration::default().with(bad).to_json()).unwrap();
            let e = Calibration::read(&path).unwrap_err().to_string();
            assert!(e.contains(&format!("{field} is not above zero")), "{e}");
        }
        // Nor does calibrate write one: an L2 of fewer bytes than SMs fits to no L2 per SM
        // (found by the `calibration` fuzz target, which reads back what calibrate wrote).
        let tiny_l2 = synthetic(&Sm::of(90).memory(), 132, 0, 0.0)
            .lines()
            .map(|l| match l.strip_prefix("DEVICE,") {
                Some(_) => {
                    let mut f: Vec<&str> = l.split(',').collect();
                    let n = f.len();
                    f[n - 2] = "100";
                    f.join(",")
                }
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let m = Measurements::parse(&tiny_l2).unwrap();
        assert_eq!(m.l2_bytes, 100);
        assert_eq!(
            fit(&m, &Sm::of(90).memory(), 0),
            Err(CalibrationError::Unmeasurable("l2_bytes_per_sm"))
        );
    }
}
