//! A webcam through `nokhwa` (cargo feature `webcam`). The camera is opened and read on its own
//! thread (reading a frame blocks until the camera delivers one); the source hands the newest
//! frame to the app without waiting. No camera gives a clear error at `open`, and apps fall
//! back to the bundled clip.

use std::sync::mpsc::{Receiver, TryRecvError, sync_channel};

use bevy::math::UVec2;
use nokhwa::pixel_format::RgbAFormat;
use nokhwa::utils::{ApiBackend, CameraIndex, RequestedFormat, RequestedFormatType};

use crate::camera::{FrameSource, RgbaFrame, SourceError};

/// A webcam.
pub struct WebcamSource {
    index: u32,
    size: UVec2,
    frames: Receiver<Result<RgbaFrame, String>>,
    latest: Option<RgbaFrame>,
}

fn open_err(index: u32, message: impl ToString) -> SourceError {
    SourceError::Open {
        what: format!("webcam {index}"),
        message: message.to_string(),
    }
}

impl WebcamSource {
    /// Opens camera `index`, asking for the highest frame rate (the capture size is the
    /// camera's; `_width`/`_height` are hints for future format negotiation).
    pub fn open(index: u32, _width: u32, _height: u32) -> Result<Self, SourceError> {
        let cameras = nokhwa::query(ApiBackend::Auto).map_err(|e| open_err(index, e))?;
        if cameras.is_empty() {
            return Err(open_err(index, "no camera found"));
        }
        let (ready_tx, ready_rx) = sync_channel::<Result<UVec2, String>>(1);
        let (tx, rx) = sync_channel(2);
        std::thread::Builder::new()
            .name(format!("heimdall-webcam-{index}"))
            .spawn(move || {
                let format = RequestedFormat::new::<RgbAFormat>(
                    RequestedFormatType::AbsoluteHighestFrameRate,
                );
                let mut camera = match nokhwa::Camera::new(CameraIndex::Index(index), format)
                    .and_then(|mut c| c.open_stream().map(|()| c))
                {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let r = camera.resolution();
                let _ = ready_tx.send(Ok(UVec2::new(r.width(), r.height())));
                loop {
                    let frame = camera
                        .frame()
                        .and_then(|b| b.decode_image::<RgbAFormat>())
                        .map(|img| RgbaFrame {
                            width: img.width(),
                            height: img.height(),
                            data: img.into_raw(),
                        })
                        .map_err(|e| e.to_string());
                    // The app is gone when the receiver is dropped.
                    if tx.send(frame).is_err() {
                        let _ = camera.stop_stream();
                        return;
                    }
                }
            })
            .map_err(|e| open_err(index, e))?;
        let size = ready_rx
            .recv()
            .map_err(|e| open_err(index, e))?
            .map_err(|e| open_err(index, e))?;
        Ok(WebcamSource {
            index,
            size,
            frames: rx,
            latest: None,
        })
    }
}

impl FrameSource for WebcamSource {
    fn name(&self) -> String {
        format!("webcam {}", self.index)
    }

    fn size(&self) -> UVec2 {
        self.size
    }

    fn next_frame(&mut self) -> Result<Option<RgbaFrame>, SourceError> {
        // The newest frame that arrived, without waiting; none if the camera has not delivered.
        loop {
            match self.frames.try_recv() {
                Ok(Ok(f)) => self.latest = Some(f),
                Ok(Err(message)) => {
                    return Err(SourceError::Frame {
                        what: self.name(),
                        message,
                    });
                }
                Err(TryRecvError::Empty) => return Ok(self.latest.take()),
                Err(TryRecvError::Disconnected) => {
                    return Err(SourceError::Frame {
                        what: self.name(),
                        message: "the capture thread stopped".into(),
                    });
                }
            }
        }
    }
}
