//! The error of every decoder: an output tensor of the wrong size.

use thiserror::Error;

/// A model output that does not have the size a decoder expects.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{what}: expected {expected} values, got {got}")]
pub struct DecodeError {
    /// Which tensor.
    pub what: &'static str,
    /// The number of values the decoder needs.
    pub expected: usize,
    /// The number of values it was given.
    pub got: usize,
}

/// Checks a tensor's length.
pub(crate) fn check_len(
    what: &'static str,
    data: &[f32],
    expected: usize,
) -> Result<(), DecodeError> {
    if data.len() == expected {
        Ok(())
    } else {
        Err(DecodeError {
            what,
            expected,
            got: data.len(),
        })
    }
}
