//! Camera sources behind one component: anything that implements [`FrameSource`] (a webcam with
//! the `webcam` feature; the examples' bundled clips; the tests' synthetic frames). Each new
//! frame is written once into an RGBA8 texture that is both the AR background and the input of
//! the preprocessing kernels; the pixels never come back from the GPU for inference. A source
//! whose frame fails (a camera unplugged mid-run, a bad frame) is retried with a growing delay
//! ([`CameraRetry`]: 50 ms doubling up to 2 s, restarting the source before each retry), each
//! error reported with a [`CameraError`] event and counted in `stats.json`
//! (`faults.camera_errors`); the last frame stays meanwhile. A source given up on (only with
//! [`CameraRetry::give_up_after`]) is reported once with [`CameraFailed`] and stopped.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use std::collections::HashMap;

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::Extract;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat, TextureUsages};

use heimdall_vision::image::{RawFrame, to_rgba};

use crate::camera_phase::CameraDue;
use crate::clock::HeimdallClock;
use crate::dnn::Dnn;

/// One RGBA8 frame from a source.
#[derive(Clone, Debug)]
pub struct RgbaFrame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes, sRGB-encoded, row-major.
    pub data: Vec<u8>,
}

impl RgbaFrame {
    /// A frame as a camera delivers it (YUYV, NV12, Motion-JPEG, RGB, BGR, grey; rows possibly
    /// padded; odd sizes) converted to RGBA8 ([`heimdall_vision::image::to_rgba`]): what the
    /// `webcam` source does with every captured frame, for any source of raw camera frames. A
    /// frame that cannot be read (too few bytes for its size and stride, a JPEG that does not
    /// decode or is not the frame's size) is a [`SourceError::Frame`] of `what`, which the
    /// camera layer retries ([`CameraRetry`]).
    pub fn from_raw(raw: &RawFrame<'_>, what: &str) -> Result<RgbaFrame, SourceError> {
        to_rgba(raw)
            .map(|img| RgbaFrame {
                width: img.width,
                height: img.height,
                data: img.data,
            })
            .map_err(|e| SourceError::Frame {
                what: what.to_string(),
                message: e.to_string(),
            })
    }
}

/// Why a source could not produce frames.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The source could not be opened (missing file, no camera).
    #[error("cannot open {what}: {message}")]
    Open {
        /// Which source.
        what: String,
        /// Why.
        message: String,
    },
    /// A frame could not be read.
    #[error("reading a frame from {what}: {message}")]
    Frame {
        /// Which source.
        what: String,
        /// Why.
        message: String,
    },
}

/// Something that yields camera frames.
pub trait FrameSource: Send + 'static {
    /// A short description for logs.
    fn name(&self) -> String;
    /// Frame size in pixels.
    fn size(&self) -> UVec2;
    /// The next frame, or `None` when a finite source ended (clips loop instead).
    fn next_frame(&mut self) -> Result<Option<RgbaFrame>, SourceError>;
    /// Called before a retry after an error: a source that can reopen its device (a webcam
    /// whose capture stopped) does so here. Does nothing by default.
    fn restart(&mut self) -> Result<(), SourceError> {
        Ok(())
    }
    /// The camera's clock, for a source that runs on one (a webcam's capture thread): when the
    /// latest frame [`FrameSource::next_frame`] returned arrived, and the camera's frame period.
    /// The frame is stamped with that arrival ([`CameraFrame::capture_time`]) and the late frame
    /// start waits for a frame due just after the update would start
    /// ([`crate::camera_phase`]). `None` (the default): frames are stamped when the app takes
    /// them, and nothing waits for them.
    fn clock(&self) -> Option<SourceClock> {
        None
    }
}

/// A source's clock ([`FrameSource::clock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceClock {
    /// When the latest frame arrived.
    pub latest: std::time::Instant,
    /// The camera's frame period.
    pub period: Duration,
}

/// How a camera source's errors are retried: after the `n`-th error in a row, the next frame is
/// asked for `first * 2^(n-1)` later, at most `max`; after `give_up_after` errors in a row (if
/// set) the source stops ([`CameraFailed`]).
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Debug, PartialEq, Default, Clone)]
pub struct CameraRetry {
    /// The delay after the first error.
    pub first: Duration,
    /// The longest delay.
    pub max: Duration,
    /// Errors in a row after which the source stops (`None`: it is retried for as long as the
    /// app runs, so a camera plugged back in resumes).
    pub give_up_after: Option<u32>,
}

impl Default for CameraRetry {
    /// 50 ms, doubling up to 2 s, for ever.
    fn default() -> Self {
        CameraRetry {
            first: Duration::from_millis(50),
            max: Duration::from_secs(2),
            give_up_after: None,
        }
    }
}

impl CameraRetry {
    /// The delay after the `errors`-th error in a row (1 for the first).
    pub fn delay(&self, errors: u32) -> Duration {
        let doublings = errors.saturating_sub(1).min(31);
        self.first
            .checked_mul(1 << doublings)
            .unwrap_or(self.max)
            .min(self.max)
    }
}

/// When a source delivers a new frame.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Debug, PartialEq, Clone)]
pub enum FramePacing {
    /// One new frame per app update (deterministic: headless runs and tests).
    EveryUpdate,
    /// At the source's own rate in real time (e.g. a 30 fps clip in a 60 fps app), on its own
    /// clock as a camera is: frame `k` is due `k` periods after the plugin's clock started, the
    /// update takes the newest frame due by then (frames due before it are skipped, as a camera
    /// reader that fell behind skips them), and the frame is stamped with its due time, so
    /// `capture_to_start` counts the time it waited for the update.
    Rate(f64),
}

/// A camera source: put it on an entity; [`CameraFrame`] appears next to it.
///
/// Reflected (its pacing, retry and state), except the [`FrameSource`] itself; it cannot be
/// made from reflection (no `FromReflect`: the source is the app's object).
#[derive(Component, Reflect)]
#[reflect(from_reflect = false)]
#[reflect(Component)]
pub struct CameraSource {
    #[reflect(ignore)]
    source: Arc<Mutex<Box<dyn FrameSource>>>,
    /// Frame pacing.
    pub pacing: FramePacing,
    /// How errors are retried.
    pub retry: CameraRetry,
    next_due: Duration,
    /// The due time of the latest frame of a [`FramePacing::Rate`] source.
    last_due: Duration,
    failed: bool,
    /// Errors in a row, and when the next try is due.
    errors: u32,
    retry_at: Duration,
    history: usize,
}

impl CameraSource {
    /// Wraps any [`FrameSource`].
    pub fn new(source: impl FrameSource, pacing: FramePacing) -> Self {
        CameraSource {
            source: Arc::new(Mutex::new(Box::new(source))),
            pacing,
            retry: CameraRetry::default(),
            next_due: Duration::ZERO,
            last_due: Duration::ZERO,
            failed: false,
            errors: 0,
            retry_at: Duration::ZERO,
            history: 1,
        }
    }

    /// Retries errors as `retry` says (the default: 50 ms doubling up to 2 s, for ever).
    pub fn with_retry(mut self, retry: CameraRetry) -> Self {
        self.retry = retry;
        self
    }

    /// Keeps the textures of the latest `frames` frames (at least 1) instead of one texture
    /// rewritten in place, for a background synced with results ([`CameraFrame::image_of`]).
    pub fn with_history(mut self, frames: usize) -> Self {
        self.history = frames.max(1);
        self
    }

    /// The source's description.
    pub fn name(&self) -> String {
        self.source.lock().map(|s| s.name()).unwrap_or_default()
    }

    /// Whether the source failed and was stopped.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Errors in a row so far (0 while frames arrive).
    pub fn errors_in_a_row(&self) -> u32 {
        self.errors
    }

    /// The source's clock on the plugin's clock (its latest frame's arrival and its period),
    /// for the camera phase lock ([`crate::camera_phase`]): a [`FramePacing::Rate`] source's
    /// own, else the [`FrameSource::clock`] of the source, if it has one. `None` while the source
    /// is failing or failed (nothing to wait for).
    pub fn due(&self, clock: &HeimdallClock) -> Option<CameraDue> {
        if self.failed || self.errors > 0 {
            return None;
        }
        match self.pacing {
            FramePacing::Rate(fps) => Some(CameraDue {
                last_ms: HeimdallClock::ms(self.next_due) - 1e3 / fps.max(1e-3),
                period_ms: 1e3 / fps.max(1e-3),
            }),
            FramePacing::EveryUpdate => {
                let c = self.source.try_lock().ok()?.clock()?;
                Some(CameraDue {
                    last_ms: HeimdallClock::ms(c.latest.saturating_duration_since(clock.start())),
                    period_ms: HeimdallClock::ms(c.period),
                })
            }
        }
    }

    /// The capture time of the frame just taken at `now`: its due time on a
    /// [`FramePacing::Rate`] source's clock, its arrival on a source with a
    /// [`FrameSource::clock`], else `now`.
    fn stamp(&self, now: Duration, clock: &HeimdallClock) -> Duration {
        match self.pacing {
            FramePacing::Rate(_) => self.last_due.min(now),
            FramePacing::EveryUpdate => self
                .source
                .try_lock()
                .ok()
                .and_then(|s| s.clock())
                .map_or(now, |c| {
                    c.latest.saturating_duration_since(clock.start()).min(now)
                }),
        }
    }
}

/// A camera source's frame failed and will be retried: triggered on its entity for each error
/// (the last [`CameraFrame`] stays meanwhile).
#[derive(EntityEvent, Clone, Debug)]
pub struct CameraError {
    /// The source's entity.
    pub entity: Entity,
    /// What happened.
    pub error: String,
    /// Errors in a row, this one included.
    pub attempt: u32,
    /// When the source is asked again.
    pub retry_in: Duration,
}

/// A camera source that was given up on ([`CameraRetry::give_up_after`] errors in a row):
/// triggered once on its entity; the source delivers no more frames, the last [`CameraFrame`]
/// stays.
#[derive(EntityEvent, Clone, Debug)]
pub struct CameraFailed {
    /// The source's entity.
    pub entity: Entity,
    /// What happened.
    pub error: String,
}

/// The latest frame of a [`CameraSource`] (on the same entity).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct CameraFrame {
    /// The texture holding it (sRGB RGBA8): use it as the AR background.
    pub image: Handle<Image>,
    /// Frames delivered so far minus one (the first frame is 0).
    pub index: u64,
    /// When it was captured, since app start.
    pub capture_time: Duration,
    /// Size in pixels.
    pub size: UVec2,
    /// The pixels, kept on the CPU side for the CPU backend and the content-variation term.
    pub pixels: Arc<Vec<u8>>,
    /// Mean absolute luma difference to the previous frame on a 16x16 thumbnail, in `[0, 1]`
    /// (the utility's content variation `C`).
    pub content_variation: f64,
    thumb: Vec<f32>,
    /// The textures of the latest frames, oldest first (see [`CameraSource::with_history`]).
    history: std::collections::VecDeque<(u64, Handle<Image>)>,
    /// The frames DNNs reading this source still need (their running inferences' and latest
    /// results'): those textures stay in the history past its length, so a synced background
    /// finds the result's frame however slow the DNN is. The render world pins a frame when an
    /// inference starts on it (through the extracted frame's clone of the table).
    pins: FramePins,
}

impl CameraFrame {
    /// A DNN's result from frame `index` arrived.
    pub(crate) fn pin_result(&self, dnn: Entity, index: u64) {
        self.pins.result(dnn, index);
    }

    fn pinned(&self, index: u64) -> bool {
        self.pins.pinned(index)
    }

    /// Takes the oldest texture of the history that no DNN needs.
    fn take_unpinned(&mut self) -> Option<Handle<Image>> {
        let at = (0..self.history.len()).find(|&k| !self.pinned(self.history[k].0))?;
        self.history.remove(at).map(|(_, h)| h)
    }

    /// The texture of frame `index`, if it is still among the kept ones: a background synced
    /// with results shows the frame they were computed from (`image_of(result.frame_index)`), so
    /// overlays never lag the picture.
    pub fn image_of(&self, index: u64) -> Option<&Handle<Image>> {
        self.history
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, h)| h)
    }
}

/// Which frames of a camera source its DNNs still need: the frames each DNN's inferences in flight
/// started on (pinned by the render world when it starts an inference, through the extracted
/// frame's clone of the table; an inference stays in flight through its readback and decode,
/// while the DNN may already run the next one) and the frame of each DNN's latest result
/// (pinned by the main world when it delivers the result). The texture ring skips those frames.
/// Cheap to clone, the clones share the table.
#[derive(Clone, Debug, Default)]
pub(crate) struct FramePins(Arc<Mutex<HashMap<Entity, DnnPins>>>);

/// One DNN's pins.
#[derive(Clone, Debug, Default)]
struct DnnPins {
    /// Frames of inferences started and not yet delivered, oldest first, at most
    /// [`MAX_IN_FLIGHT`].
    in_flight: Vec<u64>,
    /// The frame of its latest delivered result.
    result: Option<u64>,
}

/// The most inferences of one DNN a source keeps frames for: one running, one decoding and one
/// waiting to decode, and one more; an older one whose result never comes (a failed decode) is
/// let go rather than holding a texture for the rest of the app.
const MAX_IN_FLIGHT: usize = 4;

impl FramePins {
    /// The table; a panic elsewhere while it was held leaves it usable (each entry is written
    /// whole).
    fn table(&self) -> MutexGuard<'_, HashMap<Entity, DnnPins>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// DNN `dnn` started an inference on frame `index` (render world). Two inferences on one
    /// frame (a stalled camera) pin it twice: one given up leaves the other's.
    pub(crate) fn started(&self, dnn: Entity, index: u64) {
        let mut table = self.table();
        let pins = &mut table.entry(dnn).or_default().in_flight;
        pins.push(index);
        if pins.len() > MAX_IN_FLIGHT {
            pins.remove(0);
        }
    }

    /// DNN `dnn`'s inference on frame `index` will deliver no result (its outputs were dropped
    /// undecoded for a newer result's): its pin goes, so it takes no place among the
    /// [`MAX_IN_FLIGHT`] that the inferences still coming need.
    fn abandoned(&self, dnn: Entity, index: u64) {
        let mut table = self.table();
        if let Some(pins) = table.get_mut(&dnn)
            && let Some(at) = pins.in_flight.iter().position(|&i| i == index)
        {
            pins.in_flight.remove(at);
        }
    }

    /// A hold on DNN `dnn`'s pin of frame `index` for outputs on their way to a decode: dropped
    /// without [`PendingPin::sent`], the inference is given up ([`FramePins::abandoned`]).
    pub(crate) fn pending(&self, dnn: Entity, index: u64) -> PendingPin {
        PendingPin {
            pins: self.clone(),
            dnn,
            index,
            sent: false,
        }
    }

    /// DNN `dnn`'s result from frame `index` was delivered (main world): that frame stays pinned
    /// as its latest result; the inferences started on it or before are over (delivered,
    /// dropped or failed).
    pub(crate) fn result(&self, dnn: Entity, index: u64) {
        let mut table = self.table();
        let pins = table.entry(dnn).or_default();
        pins.in_flight.retain(|&i| i > index);
        pins.result = Some(index);
    }

    /// DNN `dnn` is gone: it needs none of the source's frames any more.
    pub(crate) fn forget(&self, dnn: Entity) {
        self.table().remove(&dnn);
    }

    /// Whether any DNN still needs frame `index`.
    pub(crate) fn pinned(&self, index: u64) -> bool {
        self.table()
            .values()
            .any(|p| p.result == Some(index) || p.in_flight.contains(&index))
    }
}

/// An inference's outputs queued for a decode thread, holding its frame's pin: a decode queue
/// drops a DNN's waiting outputs when newer ones come (`render/decode_pool.rs`), and a result
/// that will never be delivered must not keep its pin, or the bound on a DNN's pins would let go
/// of the frame of the result being decoded instead.
pub(crate) struct PendingPin {
    pins: FramePins,
    dnn: Entity,
    index: u64,
    sent: bool,
}

impl PendingPin {
    /// The outputs went to their decode: the result's delivery (main world) takes the pin over.
    pub(crate) fn sent(mut self) {
        self.sent = true;
    }
}

impl Drop for PendingPin {
    fn drop(&mut self) {
        if !self.sent {
            self.pins.abandoned(self.dnn, self.index);
        }
    }
}

/// A [`Dnn`] removed or despawned (an inference may be running): its pins on its source's frames
/// go with it, so the ring does not keep those textures for the rest of the app.
pub(crate) fn release_pins(
    remove: On<Remove, Dnn>,
    dnns: Query<&Dnn>,
    frames: Query<&CameraFrame>,
) {
    if let Ok(dnn) = dnns.get(remove.entity)
        && let Ok(frame) = frames.get(dnn.source)
    {
        frame.pins.forget(remove.entity);
    }
}

/// A 16x16 luma thumbnail (box filter) of an RGBA8 frame.
pub fn luma_thumbnail(frame: &RgbaFrame) -> Vec<f32> {
    const N: usize = 16;
    let (w, h) = (frame.width as usize, frame.height as usize);
    let mut sum = vec![0f32; N * N];
    let mut count = vec![0u32; N * N];
    // Every 2nd pixel in each direction is plenty for a 16x16 box filter.
    for y in (0..h).step_by(2) {
        let ty = y * N / h.max(1);
        for x in (0..w).step_by(2) {
            let tx = x * N / w.max(1);
            let p = &frame.data[(y * w + x) * 4..(y * w + x) * 4 + 3];
            let l = 0.299 * p[0] as f32 + 0.587 * p[1] as f32 + 0.114 * p[2] as f32;
            sum[ty * N + tx] += l / 255.0;
            count[ty * N + tx] += 1;
        }
    }
    sum.iter()
        .zip(&count)
        .map(|(s, &c)| if c == 0 { 0.0 } else { s / c as f32 })
        .collect()
}

fn new_texture(size: UVec2) -> Image {
    let mut image = Image::new_fill(
        Extent3d {
            width: size.x.max(1),
            height: size.y.max(1),
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        &[0, 0, 0, 255],
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::MAIN_WORLD | RenderAssetUsages::RENDER_WORLD,
    );
    // The preprocessing kernels read it through its sRGB view and undo the decoding, so the
    // models see the stored bytes.
    image.texture_descriptor.usage =
        TextureUsages::TEXTURE_BINDING | TextureUsages::COPY_DST | TextureUsages::COPY_SRC;
    image
}

/// Pulls a new frame from every due source and writes it into its texture; a source whose frame
/// failed is asked again after its retry delay (restarted first).
pub(crate) fn advance_sources(
    mut commands: Commands,
    clock: Res<HeimdallClock>,
    faults: Option<Res<crate::faults::HeimdallFaults>>,
    mut images: ResMut<Assets<Image>>,
    mut sources: Query<(Entity, &mut CameraSource, Option<&mut CameraFrame>)>,
) {
    let now = clock.elapsed();
    for (entity, mut source, frame) in &mut sources {
        if !take_due(&mut source, now) {
            continue;
        }
        let rgba = match source.pull_frame(entity) {
            Ok(Some(f)) => f,
            Ok(None) => continue,
            Err(e) => {
                source_error(&mut commands, &mut source, entity, e, now);
                if let Some(f) = &faults {
                    f.camera_error();
                }
                continue;
            }
        };
        if source.errors > 0 {
            info!(
                "heimdall: camera source {entity}: frames again after {} errors",
                source.errors
            );
            source.errors = 0;
        }
        let thumb = luma_thumbnail(&rgba);
        let captured = source.stamp(now, &clock);
        match frame {
            Some(mut frame) => frame.advance(rgba, thumb, source.history, captured, &mut images),
            None => {
                let first = CameraFrame::first(rgba, thumb, captured, &mut images);
                commands.entity(entity).insert(first);
            }
        }
    }
}

/// Whether `source` is due for a frame at `now` (not failed, not waiting to retry, its
/// [`FramePacing::Rate`] period elapsed); a due paced source's next time is set (the only
/// change to the component, as change detection sees it).
fn take_due(source: &mut Mut<CameraSource>, now: Duration) -> bool {
    if source.failed || (source.errors > 0 && now < source.retry_at) {
        return false;
    }
    if let FramePacing::Rate(fps) = source.pacing {
        if now < source.next_due {
            return false;
        }
        // The camera keeps its own clock: the newest frame due by now.
        let period = Duration::from_secs_f64(1.0 / fps.max(1e-3));
        let behind = (now - source.next_due).as_secs_f64() / period.as_secs_f64();
        let due = source.next_due + period.mul_f64(behind.floor());
        source.last_due = due;
        source.next_due = due + period;
    }
    true
}

impl CameraSource {
    /// The source's next frame (restarted first when retrying): a panic is an error of the
    /// frame, and a frame whose bytes do not match its size is skipped (`Ok(None)`).
    fn pull_frame(&self, entity: Entity) -> Result<Option<RgbaFrame>, SourceError> {
        let retrying = self.errors > 0;
        let next = match self.source.lock() {
            // A source that panics is an error of its frame, retried like any other.
            Ok(mut s) => crate::faults::catch(|| {
                if retrying {
                    s.restart()?;
                }
                s.next_frame()
            })
            .unwrap_or_else(|message| {
                Err(SourceError::Frame {
                    what: s.name(),
                    message: format!("the source panicked: {message}"),
                })
            }),
            Err(_) => Err(SourceError::Frame {
                what: "camera".into(),
                message: "the source panicked earlier".into(),
            }),
        };
        match next {
            Ok(Some(f))
                if f.data.len() == (f.width as usize * f.height as usize * 4)
                    && f.width > 0
                    && f.height > 0 =>
            {
                Ok(Some(f))
            }
            Ok(Some(f)) => {
                warn!(
                    "heimdall: camera source {entity}: a {}x{} frame with {} bytes; skipped",
                    f.width,
                    f.height,
                    f.data.len()
                );
                Ok(None)
            }
            other => other,
        }
    }
}

impl CameraFrame {
    /// A source's first frame, `rgba` (its luma thumbnail `thumb`), in a new texture.
    fn first(rgba: RgbaFrame, thumb: Vec<f32>, now: Duration, images: &mut Assets<Image>) -> Self {
        let size = UVec2::new(rgba.width, rgba.height);
        let mut image = new_texture(size);
        image.data = Some(rgba.data.clone());
        let image = images.add(image);
        CameraFrame {
            history: [(0, image.clone())].into(),
            pins: Default::default(),
            image,
            index: 0,
            capture_time: now,
            size,
            pixels: Arc::new(rgba.data),
            content_variation: 1.0,
            thumb,
        }
    }

    /// The next frame, `rgba` (its luma thumbnail `thumb`), written into the next texture of a
    /// history of `history` frames; its content variation to the previous one.
    fn advance(
        &mut self,
        rgba: RgbaFrame,
        thumb: Vec<f32>,
        history: usize,
        now: Duration,
        images: &mut Assets<Image>,
    ) {
        let size = UVec2::new(rgba.width, rgba.height);
        if self.size != size {
            self.history.clear();
            self.size = size;
        }
        let handle = self
            .next_texture(history)
            .unwrap_or_else(|| images.add(new_texture(size)));
        if let Some(mut image) = images.get_mut(&handle) {
            image.data = Some(rgba.data.clone());
        }
        let next = self.index + 1;
        self.history.push_back((next, handle.clone()));
        self.image = handle;
        self.content_variation = self
            .thumb
            .iter()
            .zip(&thumb)
            .map(|(a, b)| (a - b).abs() as f64)
            .sum::<f64>()
            / thumb.len() as f64;
        self.thumb = thumb;
        self.index += 1;
        self.capture_time = now;
        self.pixels = Arc::new(rgba.data);
    }

    /// The texture to reuse for the next frame: none while the ring of `history` textures fills
    /// (a new one is made), else the oldest one; with a history, frames DNNs still need are
    /// skipped (the ring grows past its length while they are all needed, and shrinks back once
    /// they are not).
    fn next_texture(&mut self, history: usize) -> Option<Handle<Image>> {
        if history == 1 {
            self.history.pop_front().map(|(_, h)| h)
        } else {
            while self.history.len() > history && self.take_unpinned().is_some() {}
            if self.history.len() < history {
                None
            } else {
                self.take_unpinned()
            }
        }
    }
}

/// A source's frame failed: reported, and retried after its delay, or the source given up on.
fn source_error(
    commands: &mut Commands,
    source: &mut CameraSource,
    entity: Entity,
    e: SourceError,
    now: Duration,
) {
    source.errors = source.errors.saturating_add(1);
    let attempt = source.errors;
    if source.retry.give_up_after.is_some_and(|n| attempt >= n) {
        error!(
            "heimdall: camera source {entity}: {e}; {attempt} errors in a row, the source stops"
        );
        source.failed = true;
        commands.trigger(CameraFailed {
            entity,
            error: e.to_string(),
        });
        return;
    }
    let retry_in = source.retry.delay(attempt);
    source.retry_at = now + retry_in;
    // Every error of a short streak, then one per doubling of the streak.
    if attempt <= 5 || attempt.is_power_of_two() {
        warn!(
            "heimdall: camera source {entity}: {e}; retrying in {} ms (error {attempt} in a row)",
            retry_in.as_millis()
        );
    }
    commands.trigger(CameraError {
        entity,
        error: e.to_string(),
        attempt,
        retry_in,
    });
}

/// A camera frame as the render world sees it.
#[derive(Clone, Debug)]
pub struct ExtractedFrame {
    /// Its texture.
    pub image: AssetId<Image>,
    /// Its index.
    pub index: u64,
    /// Capture time, ms on the plugin's clock.
    pub capture_ms: f64,
    /// Size in pixels.
    pub size: UVec2,
    /// The pixels (for the CPU backend).
    pub pixels: Arc<Vec<u8>>,
    /// Content variation to the previous frame.
    pub content_variation: f64,
    /// The source's pinned frames (shared with its [`CameraFrame`]): an inference pins its frame
    /// here when it starts.
    pub(crate) pins: FramePins,
}

/// The latest frame of every source (render world).
#[derive(Resource, Default)]
pub struct ExtractedFrames(pub HashMap<Entity, ExtractedFrame>);

/// Copies the sources' latest frames into the render world.
pub(crate) fn extract_frames(
    mut extracted: ResMut<ExtractedFrames>,
    frames: Extract<Query<(Entity, &CameraFrame)>>,
) {
    extracted.0.clear();
    for (e, f) in &frames {
        extracted.0.insert(
            e,
            ExtractedFrame {
                image: f.image.id(),
                index: f.index,
                capture_ms: HeimdallClock::ms(f.capture_time),
                size: f.size,
                pixels: f.pixels.clone(),
                content_variation: f.content_variation,
                pins: f.pins.clone(),
            },
        );
    }
}

#[cfg(test)]
mod tests;
