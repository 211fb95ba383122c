//! A webcam through `nokhwa` (cargo feature `webcam`). The camera is opened and read on its own
//! thread (reading a frame blocks until the camera delivers one); the source hands the newest
//! frame to the app without waiting. Each frame is converted to RGBA8 by
//! [`RgbaFrame::from_raw`] (YUYV, NV12, Motion-JPEG, RGB, grey), so no format needs
//! a C decoder; a frame that cannot be read is an error of that frame, retried by the camera
//! layer ([`crate::camera::CameraRetry`]), which restarts the capture when its thread stopped
//! (a camera unplugged and plugged back in). No camera gives a clear error at `open`, and apps
//! fall back to the bundled clip. Each frame is stamped when the camera delivered it, and the
//! source keeps the camera's period from those stamps ([`FrameSource::clock`]): the frame's
//! capture time is its arrival, and the late frame start can wait for a frame due just after
//! the update would start ([`crate::camera_phase`]).

use std::sync::mpsc::{Receiver, TryRecvError, sync_channel};
use std::time::{Duration, Instant};

use bevy::math::UVec2;
use heimdall_vision::image::{PixelFormat, RawFrame};
use nokhwa::pixel_format::RgbAFormat;
use nokhwa::utils::{ApiBackend, CameraIndex, FrameFormat, RequestedFormat, RequestedFormatType};

use crate::camera::{FrameSource, RgbaFrame, SourceClock, SourceError};

/// Frames the capture thread may hold for the app (it waits when the app has not taken them).
const CAPTURE_QUEUE: usize = 2;

/// Capture errors in a row after which the capture thread closes the camera.
const CAPTURE_ERRORS: u32 = 3;

/// A frame as the capture thread hands it over: when the camera delivered it, and the frame.
type Captured = (Instant, Result<RgbaFrame, String>);

/// A webcam.
pub struct WebcamSource {
    index: u32,
    size: UVec2,
    frames: Receiver<Captured>,
    /// The capture thread stopped: [`FrameSource::restart`] opens the camera again.
    stopped: bool,
    latest: Option<RgbaFrame>,
    /// When the latest frame received arrived, and the camera's period (a running mean of the
    /// intervals between arrivals).
    arrived: Option<Instant>,
    period: Option<Duration>,
}

fn open_err(index: u32, message: impl ToString) -> SourceError {
    SourceError::Open {
        what: format!("webcam {index}"),
        message: message.to_string(),
    }
}

/// The layout of a nokhwa frame format.
pub fn pixel_format(f: FrameFormat) -> PixelFormat {
    match f {
        FrameFormat::MJPEG => PixelFormat::Mjpeg,
        FrameFormat::YUYV => PixelFormat::Yuyv,
        FrameFormat::NV12 => PixelFormat::Nv12,
        FrameFormat::GRAY => PixelFormat::Gray8,
        FrameFormat::RAWRGB => PixelFormat::Rgb8,
        FrameFormat::RAWBGR => PixelFormat::Bgr8,
    }
}

/// Opens camera `index` on a capture thread: its frame size, and the channel of its frames.
type Capture = (UVec2, Receiver<Captured>);

fn start_capture(index: u32) -> Result<Capture, SourceError> {
    let (ready_tx, ready_rx) = sync_channel::<Result<UVec2, String>>(1);
    let (tx, rx) = sync_channel(CAPTURE_QUEUE);
    std::thread::Builder::new()
        .name(format!("heimdall-webcam-{index}"))
        .spawn(move || {
            let format =
                RequestedFormat::new::<RgbAFormat>(RequestedFormatType::AbsoluteHighestFrameRate);
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
            let mut errors = 0;
            loop {
                let captured = camera.frame();
                let at = Instant::now();
                errors = if captured.is_err() { errors + 1 } else { 0 };
                let frame = captured.map_err(|e| e.to_string()).and_then(|b| {
                    let r = b.resolution();
                    let raw = RawFrame {
                        format: pixel_format(b.source_frame_format()),
                        width: r.width(),
                        height: r.height(),
                        stride: None,
                        data: b.buffer(),
                    };
                    RgbaFrame::from_raw(&raw, &format!("camera {index}")).map_err(|e| e.to_string())
                });
                // The app is gone when the receiver is dropped. A camera that failed several
                // frames in a row is closed: the source opens it again when it retries.
                if tx.send((at, frame)).is_err() || errors >= CAPTURE_ERRORS {
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
    Ok((size, rx))
}

impl WebcamSource {
    /// Opens camera `index`, asking for the highest frame rate (the capture size is the
    /// camera's; `_width`/`_height` are hints for future format negotiation).
    pub fn open(index: u32, _width: u32, _height: u32) -> Result<Self, SourceError> {
        let cameras = nokhwa::query(ApiBackend::Auto).map_err(|e| open_err(index, e))?;
        if cameras.is_empty() {
            return Err(open_err(index, "no camera found"));
        }
        let (size, frames) = start_capture(index)?;
        Ok(WebcamSource {
            index,
            size,
            frames,
            stopped: false,
            latest: None,
            arrived: None,
            period: None,
        })
    }

    /// A frame arrived at `at`: the camera's period learns from the interval to the one before
    /// (intervals over a second are a stall, not the period).
    fn arrived(&mut self, at: Instant) {
        if let Some(before) = self.arrived {
            let dt = at.saturating_duration_since(before);
            if dt > Duration::ZERO && dt < Duration::from_secs(1) {
                self.period = Some(match self.period {
                    Some(p) => p.mul_f64(0.9) + dt.mul_f64(0.1),
                    None => dt,
                });
            }
        }
        self.arrived = Some(at);
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
                Ok((at, Ok(f))) => {
                    self.arrived(at);
                    self.latest = Some(f);
                }
                Ok((_, Err(message))) => {
                    return Err(SourceError::Frame {
                        what: self.name(),
                        message,
                    });
                }
                Err(TryRecvError::Empty) => return Ok(self.latest.take()),
                Err(TryRecvError::Disconnected) => {
                    self.stopped = true;
                    return Err(SourceError::Frame {
                        what: self.name(),
                        message: "the capture thread stopped".into(),
                    });
                }
            }
        }
    }

    fn restart(&mut self) -> Result<(), SourceError> {
        if self.stopped {
            let (size, frames) = start_capture(self.index)?;
            (self.size, self.frames, self.stopped) = (size, frames, false);
            (self.arrived, self.period) = (None, None);
        }
        Ok(())
    }

    fn clock(&self) -> Option<SourceClock> {
        Some(SourceClock {
            latest: self.arrived?,
            period: self.period?,
        })
    }
}
