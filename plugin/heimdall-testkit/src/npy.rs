//! Reading the goldens' `.npy` tensors (float32, C order): `heimdall-npy`'s reader, the one the
//! engine's facade and the CLI use (this crate depends on no engine crate, so it takes it from
//! there, not from `heimdall::npy`).

pub use heimdall_npy::{NpyError, read_npy};

/// A float32 tensor: its shape (C order) and values.
pub type Tensor = heimdall_npy::NpyTensor;
