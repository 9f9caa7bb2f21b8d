//! Differential testing of nvcc-orion with generated programs (in the spirit of Csmith and
//! YARPGen): [`generate`] writes a random register-hungry CUDA module from a seed, [`harness`]
//! compiles it through nvcc-orion in several modes and compares every shipped kernel with a
//! whole-module ptxas build of the same PTX at that kernel's budget, and [`reduce`] shrinks a
//! failing program. The reference is built and read with the toolkit alone.

pub mod ast;
pub mod campaign;
pub mod check;
pub mod compare;
pub mod elf;
pub mod features;
pub mod flagged;
pub mod generate;
pub mod harness;
pub mod print;
pub mod rdc;
pub mod reduce;
pub mod refptx;
pub mod rng;
pub mod tools;

pub use generate::generate;
