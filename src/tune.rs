//! The tuning hook: every ptxas step of a replayed compile goes through [`ptxas_step`].
//!
//! For now it runs the step exactly as nvcc would; the occupancy-tuning issue makes it build
//! register-budget variants from the same PTX and put the winner where ptxas would have
//! written its cubin.

use crate::driver::process::{Captured, StepContext};

/// Run one ptxas step (`argv` exactly as nvcc's dry run printed it, expanded).
pub fn ptxas_step(argv: &[String], ctx: &StepContext) -> std::io::Result<Captured> {
    ctx.run(argv)
}
