//! The device the backend runs on: a caller's `wgpu::Device` and `wgpu::Queue` (Bevy's), or one
//! created here for the CLI and tests.

use crate::error::GpuError;

/// A wgpu device and queue with what the backend needs to know about the adapter.
#[derive(Clone, Debug)]
pub struct GpuContext {
    /// The device (shared with the caller; wgpu handles are reference counted).
    pub device: wgpu::Device,
    /// The queue work is submitted on.
    pub queue: wgpu::Queue,
    /// The adapter's name, vendor, device type and backend.
    pub info: wgpu::AdapterInfo,
    /// Features enabled on the device.
    pub features: wgpu::Features,
    /// Limits of the device.
    pub limits: wgpu::Limits,
}

impl GpuContext {
    /// Wraps a caller-supplied device and queue (e.g. Bevy's `RenderDevice`/`RenderQueue`).
    /// Features and limits are read from the device itself.
    pub fn from_device(device: wgpu::Device, queue: wgpu::Queue, info: wgpu::AdapterInfo) -> Self {
        let features = device.features();
        let limits = device.limits();
        GpuContext {
            device,
            queue,
            info,
            features,
            limits,
        }
    }

    /// Creates an own device on the best adapter (for the CLI and tests), enabling `SHADER_F16`
    /// and timestamp queries when the adapter has them, with WebGPU's default limits (≤ 256
    /// invocations per work group, ≤ 8 storage buffers per stage, 128 MiB bindings).
    pub fn create() -> Result<Self, GpuError> {
        pollster::block_on(Self::create_async())
    }

    /// Async version of [`GpuContext::create`].
    pub async fn create_async() -> Result<Self, GpuError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
            })
            .await
            .map_err(|e| GpuError::NoDevice(e.to_string()))?;
        let wanted = wgpu::Features::SHADER_F16
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        let info = adapter.get_info();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("heimdall-gpu"),
                required_features: adapter.features() & wanted,
                required_limits: wgpu::Limits::default(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoDevice(format!("{} ({:?}): {e}", info.name, info.backend)))?;
        Ok(Self::from_device(device, queue, info))
    }

    /// Whether kernels may store tensors as `f16` (the device has `SHADER_F16`).
    pub fn has_f16(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F16)
    }

    /// Threads a grid should have before kernels give each thread more outputs: GPUs need many
    /// threads in flight, a CPU rasteriser (lavapipe) few.
    pub fn min_threads(&self) -> usize {
        match self.info.device_type {
            wgpu::DeviceType::Cpu => 256,
            wgpu::DeviceType::IntegratedGpu => 2048,
            _ => 8192,
        }
    }

    /// A one-line description of the adapter.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?}, f16 {}, timestamps {})",
            self.info.name,
            self.info.backend,
            self.info.device_type,
            self.has_f16(),
            self.features.contains(wgpu::Features::TIMESTAMP_QUERY)
        )
    }
}
