//! The render device the readback thread may read outputs from: set by the render world when
//! it (re)builds its backend, cleared by the main world's device-error handler when the device
//! is lost (`device/mod.rs`), so that readbacks in flight are dropped unread, not mapped.

use std::sync::{Arc, Mutex};

use bevy::prelude::*;

/// The device readbacks may be read from (`None`: none), shared by the readback thread
/// (`render/readback.rs`) and, as a render-world resource, the device-error handler.
#[derive(Resource, Clone, Default)]
pub(crate) struct ReadbackDevice(Arc<Mutex<Option<wgpu::Device>>>);

impl ReadbackDevice {
    /// The render device readbacks belong to from now on: pending readbacks of another device
    /// (a lost one) are dropped unread.
    pub fn set(&self, device: Option<wgpu::Device>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = device;
    }

    /// The device readbacks may be read from now (`None` also when the lock is poisoned).
    pub fn current(&self) -> Option<wgpu::Device> {
        self.0.lock().map(|d| d.clone()).unwrap_or(None)
    }
}
