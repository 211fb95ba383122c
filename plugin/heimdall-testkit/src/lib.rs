//! Fixtures of the heimdall workspace, for tests, benchmarks and examples; no library crate
//! depends on it.
//!
//! - [`clip`]: the bundled camera clips (`assets/clips/`): a virtual camera moving over a still
//!   photo, with per-frame ground truth.
//! - [`synthetic`]: frames that carry their own index in the pixels (capture index in, same index
//!   out).
//! - [`warp`]: the fixed-point renderer the clips use.
#![warn(missing_docs)]

pub mod clip;
pub mod synthetic;
pub mod warp;

pub use clip::{CameraPose, Clip, ClipError};
pub use synthetic::{SyntheticSource, decode_frame_index};
