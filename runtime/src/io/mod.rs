//! Inputs and outputs of `heddle run` (LANGUAGE.md §7).

pub mod bind;
pub mod npy;
pub mod number;
pub mod read;
pub mod write;

pub use bind::{InputError, bind_inputs, bind_inputs_flat};
pub use read::{Loaded, ScalarKind, read_input, read_input_for};
