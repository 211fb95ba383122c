//! Why an image could not be read or resampled.

use thiserror::Error;

/// Why an image could not be read, or resampled.
#[derive(Debug, Error)]
pub enum ImageError {
    /// Reading the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bytes are not an image the decoder handles (PNG or JPEG).
    #[error("{path}: not a readable PNG or JPEG image: {message}")]
    Decode {
        /// The file (or `<memory>`).
        path: String,
        /// What the decoder said.
        message: String,
    },
    /// Width or height is zero, or the data length does not match them.
    #[error("bad image size {width}x{height} with {len} bytes")]
    Size {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
        /// Length of the data given.
        len: usize,
    },
    /// A crop, normalisation or output shape that cannot be used.
    #[error("{0}")]
    Parameters(String),
}
