//! The one handle on an architecture's facts: looked up once from the SM number, it holds the
//! row of each table (the family model, the memory system, and the occupancy parameters where
//! the architecture has them), so no caller keys a table on its own.

use super::limits::Arch;
use super::memory::{self, MemoryParams};
use super::model::{self, ShaderModel};

/// sm_`number`'s rows. Every number has a model and a memory row (both tables cover every
/// number); only the architectures `cuda_occupancy.h` knows have occupancy parameters.
#[derive(Debug, Clone, Copy)]
pub struct Sm {
    number: u32,
    model: &'static ShaderModel,
    memory: &'static MemoryParams,
    limits: Option<Arch>,
}

impl Sm {
    /// The rows of sm_`sm` (`90` is sm_90; an `a`/`f` suffix is already dropped).
    pub fn of(sm: u32) -> Sm {
        Sm {
            number: sm,
            model: model::row(sm).expect("the model table covers every SM number"),
            memory: memory::row(sm).expect("the memory table covers every SM number"),
            limits: Arch::from_sm(sm),
        }
    }

    /// The SM number (`90`).
    pub fn number(self) -> u32 {
        self.number
    }

    /// The family's facts: encodings, what the rewrites and the relayout handle, pipe rates.
    pub fn model(self) -> &'static ShaderModel {
        self.model
    }

    /// The published memory system the predictor prices against.
    pub fn memory(self) -> MemoryParams {
        *self.memory
    }

    /// The occupancy parameters, where `cuda_occupancy.h` has them (the architectures this
    /// tunes).
    pub fn limits(self) -> Option<Arch> {
        self.limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An architecture is added to all three tables or to none: every one with occupancy
    /// parameters has a model row and a memory row, and its handle reads all three.
    #[test]
    fn every_supported_architecture_has_all_three_rows() {
        for a in Arch::all() {
            let n = a.sm_number();
            assert!(model::row(n).is_some(), "{a}: no model row");
            assert!(memory::row(n).is_some(), "{a}: no memory row");
            assert_eq!(Sm::of(n).limits(), Some(a), "{a}");
        }
    }

    #[test]
    fn numbers_without_occupancy_data_keep_their_other_rows() {
        let sm = Sm::of(103);
        assert!(sm.limits().is_none());
        assert!(sm.model().split_branch_offsets && !sm.model().rewrites);
        assert_eq!(sm.memory(), Sm::of(100).memory());
    }
}
