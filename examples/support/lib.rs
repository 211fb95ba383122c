//! Support code shared by the example apps (emoji, shopping, workspace), so each app is only its
//! scene: command-line options ([`args`]), where the assets are ([`assets`]), the bundled clips
//! as a camera source ([`clip_source`]), the window or headless harness with a steady frame
//! pacer, screenshots and the exit after N frames ([`harness`]), `stats.json` ([`report`]), and
//! for the 3D apps the AR view ([`ar_view`]), what `--quality` means ([`quality`]), detections
//! against a clip's ground truth ([`truth`]), latency summaries ([`latency`]), the pinch
//! gesture ([`gestures`]), soak sampling ([`soak`]) and the headless swap chain ([`swapchain`]).
#![warn(missing_docs)]

pub mod ar_view;
pub mod args;
pub mod assets;
pub mod clip_source;
pub mod gestures;
pub mod gpu_shown;
pub mod harness;
pub mod harness_camera;
pub mod latency;
pub mod pacer;
pub mod quality;
pub mod report;
pub mod soak;
pub mod swapchain;
pub mod truth;

/// The README: its Rust code (the plugin snippet of "Add it to your app") is compiled as a doc
/// test here, where Bevy has the examples' features (`cargo test --doc -p heimdall-examples`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
