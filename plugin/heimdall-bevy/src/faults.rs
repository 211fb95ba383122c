//! What went wrong in a run and what the plugin did about it, counted for `stats.json`
//! (`faults`): panics caught on the plugin's threads, errors the render device reported, lost
//! devices, camera errors, and every queue between threads with its bound, its policy when
//! full, the deepest it got and what it dropped or held back. `docs/reliability.md` lists the
//! faults, what a user sees, and the test that shows each.
//!
//! A panic in a decoder, a CPU worker's job or the readback thread ends no thread: it is
//! caught, counted, and fails the DNN it belongs to with [`DnnError::Panicked`] (a
//! [`crate::dnn::DnnFailed`] event); the other DNNs go on. [`RestartDnn`] compiles a failed DNN
//! again.
//!
//! The counters cover the whole run: [`crate::HeimdallStats::reset`] keeps them.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bevy::prelude::*;
use bevy::render::Extract;
use serde_json::{Value, json};

use crate::dnn::{Dnn, DnnError, DnnStatus};

/// What a queue does when it is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueuePolicy {
    /// The oldest waiting item of the same DNN is dropped for the new one (a newer result makes
    /// an older one that was not decoded yet worthless).
    DropOldest,
    /// The new item is dropped.
    DropNewest,
    /// The producer waits for room.
    BlockProducer,
}

impl QueuePolicy {
    fn name(self) -> &'static str {
        match self {
            QueuePolicy::DropOldest => "drop_oldest",
            QueuePolicy::DropNewest => "drop_newest",
            QueuePolicy::BlockProducer => "block_producer",
        }
    }
}

/// One bounded queue between threads: its bound, its policy, and what happened at the bound.
#[derive(Debug)]
pub struct QueueCounters {
    /// Items it holds at most.
    pub capacity: usize,
    /// What happens when it is full.
    pub policy: QueuePolicy,
    max_depth: AtomicUsize,
    dropped: AtomicU64,
    blocked: AtomicU64,
}

impl QueueCounters {
    const fn new(capacity: usize, policy: QueuePolicy) -> Self {
        QueueCounters {
            capacity,
            policy,
            max_depth: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            blocked: AtomicU64::new(0),
        }
    }

    /// The queue holds `depth` items now (the deepest is kept).
    pub(crate) fn depth(&self, depth: usize) {
        self.max_depth.fetch_max(depth, Ordering::Relaxed);
    }

    /// An item was dropped.
    pub(crate) fn drop_one(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// A producer found the queue full and waited.
    pub(crate) fn block_one(&self) {
        self.blocked.fetch_add(1, Ordering::Relaxed);
    }

    /// Items dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Times a producer waited for room.
    pub fn blocked(&self) -> u64 {
        self.blocked.load(Ordering::Relaxed)
    }

    /// The deepest the queue got.
    pub fn max_depth(&self) -> usize {
        self.max_depth.load(Ordering::Relaxed)
    }

    fn to_json(&self) -> Value {
        json!({
            "capacity": self.capacity,
            "policy": self.policy.name(),
            "max_depth": self.max_depth(),
            "dropped": self.dropped(),
            "blocked": self.blocked(),
        })
    }
}

/// Readbacks waiting for the readback thread (render world → readback thread): at most one per
/// DNN is in flight, so it fills only with this many DNNs; a readback that finds it full is
/// given up (its DNN is idle again, its result lost and counted).
pub const READBACK_QUEUE: usize = 256;
/// Results waiting for a decode thread, per thread; each DNN has at most one result waiting
/// (a newer one replaces it: [`QueuePolicy::DropOldest`]), so a slow decoder never holds more
/// than one undecoded result per DNN.
pub const DECODE_QUEUE: usize = 256;
/// Jobs waiting for a CPU worker, per worker; the render world waits when it is full (the
/// coordinator hands work to idle workers, so it is not in practice).
pub const WORKER_QUEUE_PER_WORKER: usize = 16;
/// Messages to the main world (results, statuses, frame records) not drained yet: the main world
/// drains them every update; beyond this (an app that stopped updating) new ones are dropped.
pub const RESULTS_QUEUE: usize = 1 << 16;

/// The queues between the plugin's threads.
#[derive(Debug)]
pub struct Queues {
    /// Render world → readback thread.
    pub readback: QueueCounters,
    /// Readback thread → decode threads.
    pub decode: QueueCounters,
    /// Render world → CPU workers.
    pub workers: QueueCounters,
    /// Render world, readback, decode and worker threads → main world.
    pub results: QueueCounters,
}

/// Everything counted.
#[derive(Debug)]
struct Counts {
    panics: AtomicU64,
    validation_errors: AtomicU64,
    out_of_memory: AtomicU64,
    internal_errors: AtomicU64,
    device_lost: AtomicU64,
    camera_errors: AtomicU64,
    queues: Queues,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            panics: AtomicU64::new(0),
            validation_errors: AtomicU64::new(0),
            out_of_memory: AtomicU64::new(0),
            internal_errors: AtomicU64::new(0),
            device_lost: AtomicU64::new(0),
            camera_errors: AtomicU64::new(0),
            queues: Queues {
                readback: QueueCounters::new(READBACK_QUEUE, QueuePolicy::DropNewest),
                decode: QueueCounters::new(DECODE_QUEUE, QueuePolicy::DropOldest),
                workers: QueueCounters::new(WORKER_QUEUE_PER_WORKER, QueuePolicy::BlockProducer),
                results: QueueCounters::new(RESULTS_QUEUE, QueuePolicy::DropNewest),
            },
        }
    }
}

/// The run's fault counters, shared by both worlds and the plugin's threads (a resource of
/// each world; [`crate::HeimdallStats`] writes them to `stats.json` as `faults`).
#[derive(Resource, Clone, Debug, Default, Reflect)]
#[reflect(opaque)]
#[reflect(Resource, Debug, Default, Clone)]
pub struct HeimdallFaults(Arc<Counts>);

/// A kind of error the render device reported (Bevy's `RenderError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceFault {
    /// A wgpu validation error (a bug: of heimdall, of Bevy or of the app).
    Validation,
    /// The device ran out of memory.
    OutOfMemory,
    /// An internal error of wgpu or the driver.
    Internal,
    /// The device was lost (a driver reset, `Device::destroy`).
    Lost,
}

impl HeimdallFaults {
    /// Panics caught on the plugin's threads (decoders, CPU workers, the readback thread).
    pub fn panics(&self) -> u64 {
        self.0.panics.load(Ordering::Relaxed)
    }

    /// wgpu validation errors the render device reported.
    pub fn validation_errors(&self) -> u64 {
        self.0.validation_errors.load(Ordering::Relaxed)
    }

    /// Lost render devices.
    pub fn devices_lost(&self) -> u64 {
        self.0.device_lost.load(Ordering::Relaxed)
    }

    /// Errors of camera sources (each retried).
    pub fn camera_errors(&self) -> u64 {
        self.0.camera_errors.load(Ordering::Relaxed)
    }

    /// The queues between threads.
    pub fn queues(&self) -> &Queues {
        &self.0.queues
    }

    pub(crate) fn panicked(&self) {
        self.0.panics.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn camera_error(&self) {
        self.0.camera_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an error the render device reported.
    pub fn device_fault(&self, kind: DeviceFault) {
        let c = &self.0;
        match kind {
            DeviceFault::Validation => &c.validation_errors,
            DeviceFault::OutOfMemory => &c.out_of_memory,
            DeviceFault::Internal => &c.internal_errors,
            DeviceFault::Lost => &c.device_lost,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    /// The counters as `stats.json`'s `faults`.
    pub fn to_json(&self) -> Value {
        let c = &self.0;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        json!({
            "panics": n(&c.panics),
            "validation_errors": n(&c.validation_errors),
            "out_of_memory": n(&c.out_of_memory),
            "internal_errors": n(&c.internal_errors),
            "devices_lost": n(&c.device_lost),
            "camera_errors": n(&c.camera_errors),
            "queues": {
                "readback": c.queues.readback.to_json(),
                "decode": c.queues.decode.to_json(),
                "workers": c.queues.workers.to_json(),
                "results": c.queues.results.to_json(),
            },
        })
    }
}

/// The message of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs `f`, turning a panic into its message (the panic hook has printed it already).
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| panic_message(&*p))
}

/// How a CPU job's error says that the job panicked (`render/readback.rs` then fails the DNN).
pub(crate) const PANICKED: &str = "panicked: ";

/// Runs a CPU job's work, turning a panic into an error that says so ([`PANICKED`]).
pub(crate) fn catch_work<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch(f).unwrap_or_else(|message| Err(format!("{PANICKED}{message}")))
}

/// The error a DNN fails with when `what` panicked with `message`.
pub(crate) fn panicked(what: &str, message: &str) -> DnnError {
    DnnError::Panicked(format!("{what} panicked: {message}"))
}

/// Compiles a DNN again from its model (after a [`DnnError::Panicked`] or any other failure, or
/// to start it afresh): its status goes back to `Loading`, then `Compiling` and `Ready`.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartDnn(pub Entity);

/// DNNs asked to restart this update (main world; cleared every `First`).
#[derive(Resource, Default, Debug)]
pub(crate) struct PendingRestarts(pub Vec<Entity>);

/// DNNs to restart in the frame being rendered (render world).
#[derive(Resource, Default, Debug)]
pub(crate) struct ExtractedRestarts(pub Vec<Entity>);

/// Takes this update's [`RestartDnn`] messages: the DNNs' statuses go back to `Loading`.
pub(crate) fn take_restarts(
    mut messages: MessageReader<RestartDnn>,
    mut pending: ResMut<PendingRestarts>,
    mut dnns: Query<&mut DnnStatus, With<Dnn>>,
) {
    pending.0.clear();
    for RestartDnn(e) in messages.read() {
        if let Ok(mut status) = dnns.get_mut(*e) {
            info!("heimdall: DNN {e} restarts");
            *status = DnnStatus::Loading;
            pending.0.push(*e);
        }
    }
}

pub(crate) fn extract_restarts(
    mut out: ResMut<ExtractedRestarts>,
    pending: Extract<Res<PendingRestarts>>,
) {
    out.0.clone_from(&pending.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A caught panic gives its message, whether a literal or formatted.
    #[test]
    fn panics_are_caught_with_their_message() {
        let literal = catch(|| panic!("a literal"));
        let formatted = catch(|| panic!("{} {}", "a", 1));
        assert_eq!(literal, Err("a literal".to_string()));
        assert_eq!(formatted, Err("a 1".to_string()));
        assert_eq!(catch(|| 3), Ok(3));
    }

    /// The counters appear in the JSON with each queue's bound and policy.
    #[test]
    fn counters_are_reported() {
        let f = HeimdallFaults::default();
        f.panicked();
        f.device_fault(DeviceFault::Validation);
        f.device_fault(DeviceFault::Lost);
        f.queues().decode.drop_one();
        f.queues().decode.depth(3);
        f.queues().decode.depth(2);
        let j = f.to_json();
        assert_eq!(j["panics"], 1);
        assert_eq!(j["validation_errors"], 1);
        assert_eq!(j["devices_lost"], 1);
        assert_eq!(j["queues"]["decode"]["dropped"], 1);
        assert_eq!(j["queues"]["decode"]["max_depth"], 3);
        assert_eq!(j["queues"]["decode"]["policy"], "drop_oldest");
        assert_eq!(j["queues"]["workers"]["policy"], "block_producer");
        assert_eq!(j["queues"]["readback"]["capacity"], READBACK_QUEUE);
    }
}
