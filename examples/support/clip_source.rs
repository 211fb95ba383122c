//! The bundled clips (`assets/clips/*`, see `heimdall_testkit::clip`) as a camera source,
//! looping, and the camera an app gets from its options: a webcam when asked for and present,
//! else the clip.

use std::path::Path;

use bevy::prelude::*;
use heimdall_bevy::camera::{CameraSource, FramePacing, FrameSource, RgbaFrame, SourceError};
use heimdall_testkit::Clip;

/// A clip played frame by frame, looping.
pub struct ClipSource {
    clip: Clip,
    next: usize,
}

impl ClipSource {
    /// Plays `clip` from its first frame.
    pub fn new(clip: Clip) -> Self {
        ClipSource { clip, next: 0 }
    }
}

impl FrameSource for ClipSource {
    fn name(&self) -> String {
        format!("clip {}", self.clip.source_path().display())
    }

    fn size(&self) -> UVec2 {
        UVec2::new(self.clip.width(), self.clip.height())
    }

    fn next_frame(&mut self) -> Result<Option<RgbaFrame>, SourceError> {
        let i = self.next % self.clip.len().max(1);
        self.next += 1;
        let f = self.clip.frame(i);
        Ok(Some(RgbaFrame {
            width: f.width,
            height: f.height,
            data: f.data,
        }))
    }
}

/// Loads the clip in `dir`, with an error that names it.
pub fn load_clip(dir: &Path) -> Result<Clip, String> {
    Clip::load(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The app's camera: a webcam if `webcam` (feature `webcam`) and one opens, else `clip`, one
/// frame per update, or paced like a camera at `clip_fps` Hz on its own clock when that is
/// given (`--camera-fps`).
pub fn camera(webcam: bool, clip_fps: Option<f64>, clip: Clip, (w, h): (u32, u32)) -> CameraSource {
    #[cfg(feature = "webcam")]
    if webcam {
        match heimdall_bevy::webcam::WebcamSource::open(0, w, h) {
            Ok(cam) => return CameraSource::new(cam, FramePacing::EveryUpdate),
            Err(e) => warn!("{e}; falling back to the bundled clip"),
        }
    }
    #[cfg(not(feature = "webcam"))]
    if webcam {
        warn!("built without the `webcam` feature; using the bundled clip");
    }
    let _ = (w, h);
    let pacing = clip_fps.map_or(FramePacing::EveryUpdate, FramePacing::Rate);
    CameraSource::new(ClipSource::new(clip), pacing)
}
