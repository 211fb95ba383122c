//! State shared by the main world, the render world and the workers: the clock, the result and
//! frame-record channels, and what the plugin reports about itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy::prelude::*;

use crate::crop::Crop;
use crate::decode::Decoded;
use crate::dnn::Backend;
use crate::workers::Mailbox;

/// A finished, decoded inference on its way to the main world.
pub(crate) struct ResultMsg {
    pub entity: Entity,
    pub frame_index: u64,
    pub capture_ms: f64,
    pub tensors: Arc<Vec<Vec<f32>>>,
    pub backend: Backend,
    pub crop: Crop,
    pub decoded: Decoded,
}

/// What the GPU did in one frame (from its timestamps).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameRecord {
    /// Render-world frame number.
    pub frame: u64,
    /// Whether timestamps measured it (otherwise the times are zero).
    pub timed: bool,
    /// Scene passes, ms.
    pub scene_ms: f64,
    /// Frame start to the end of its last chunk, ms.
    pub gpu_total_ms: f64,
    /// Chunks run after the scene: (DNN instance index, ms).
    pub chunks: Vec<(u32, f64)>,
}

impl FrameRecord {
    pub(crate) fn untimed(frame: u64) -> Self {
        FrameRecord {
            frame,
            timed: false,
            scene_ms: 0.0,
            gpu_total_ms: 0.0,
            chunks: Vec::new(),
        }
    }
}

#[derive(Default)]
struct Info {
    backend: String,
    adapter: Option<String>,
    model_devices: Vec<wgpu::Device>,
    status: HashMap<Entity, (String, String)>,
    instances: std::collections::BTreeMap<u32, String>,
    trace: Option<String>,
}

pub(crate) struct Inner {
    start: Instant,
    pub results: Mailbox<ResultMsg>,
    pub frames: Mailbox<FrameRecord>,
    info: Mutex<Info>,
    pub trace_requested: AtomicBool,
}

/// Shared handle (a resource in both worlds).
#[derive(Resource, Clone)]
pub struct HeimdallShared(pub(crate) Arc<Inner>);

impl Default for HeimdallShared {
    fn default() -> Self {
        HeimdallShared(Arc::new(Inner {
            start: Instant::now(),
            results: Mailbox::default(),
            frames: Mailbox::default(),
            info: Mutex::new(Info::default()),
            trace_requested: AtomicBool::new(false),
        }))
    }
}

impl HeimdallShared {
    /// The clock's origin.
    pub fn start(&self) -> Instant {
        self.0.start
    }

    /// Time since the clock's origin.
    pub fn elapsed(&self) -> Duration {
        self.0.start.elapsed()
    }

    /// Time since the clock's origin, ms.
    pub fn now_ms(&self) -> f64 {
        self.elapsed().as_secs_f64() * 1e3
    }

    /// A duration since the origin in ms.
    pub fn ms_of(&self, d: Duration) -> f64 {
        d.as_secs_f64() * 1e3
    }

    fn info(&self) -> std::sync::MutexGuard<'_, Info> {
        self.0.info.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_backend(&self, backend: &str, adapter: Option<String>) {
        let mut i = self.info();
        i.backend = backend.into();
        i.adapter = adapter;
    }

    pub(crate) fn record_model_device(&self, device: wgpu::Device) {
        self.info().model_devices.push(device);
    }

    pub(crate) fn set_status(&self, e: Entity, name: &str, status: &str) {
        self.info().status.insert(e, (name.into(), status.into()));
    }

    pub(crate) fn set_instance_name(&self, index: u32, name: &str) {
        self.info().instances.insert(index, name.into());
    }

    /// DNN instance index (as in [`FrameRecord::chunks`]) to model name.
    pub fn instance_names(&self) -> std::collections::BTreeMap<u32, String> {
        self.info().instances.clone()
    }

    pub(crate) fn set_trace(&self, trace: String) {
        self.info().trace = Some(trace);
    }

    /// `gpu`, or `cpu (...)` with the reason.
    pub fn backend(&self) -> String {
        self.info().backend.clone()
    }

    /// The adapter's description, when there is a render device.
    pub fn adapter(&self) -> Option<String> {
        self.info().adapter.clone()
    }

    /// The devices the plugin's GPU models were compiled on (one entry per compiled model).
    pub fn model_devices(&self) -> Vec<wgpu::Device> {
        self.info().model_devices.clone()
    }

    /// Each DNN's name and status (`compiling`, `gpu`, `cpu`, `failed: ...`).
    pub fn statuses(&self) -> Vec<(Entity, String, String)> {
        let mut v: Vec<_> = self
            .info()
            .status
            .iter()
            .map(|(e, (n, s))| (*e, n.clone(), s.clone()))
            .collect();
        v.sort_by_key(|(e, _, _)| *e);
        v
    }

    /// Asks the render world for the coordinator's Chrome trace (see [`Self::take_trace`]).
    pub fn request_trace(&self) {
        self.0.trace_requested.store(true, Ordering::Release);
    }

    /// The Chrome trace, once the render world produced it.
    pub fn take_trace(&self) -> Option<String> {
        self.info().trace.take()
    }
}
