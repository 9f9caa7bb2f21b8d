//! A whole program through the harness: every mode ([`crate::harness`]), then, for an `-rdc`
//! program, its separate-compilation steps ([`crate::rdc`]). A file of its own so that the
//! harness and `rdc`, which uses the harness's types, do not import each other.

use crate::ast::Program;
use crate::harness::{Harness, Outcome};

impl Harness {
    /// Check `p` on `arch` in every mode of the harness. `Err`: the program itself (nvcc
    /// refused it) or the harness could not run, not a finding about nvcc-orion.
    pub fn check(&self, p: &Program, arch: u32) -> Result<Outcome, String> {
        let (mut out, dir) = self.check_modes(p, arch)?;
        if p.rdc {
            crate::rdc::check(self, &dir, p, arch, &mut out);
        }
        Ok(out)
    }
}
