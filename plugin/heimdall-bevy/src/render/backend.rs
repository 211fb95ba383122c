//! Where inference runs: Bevy's own render device when it can run the kernels (checked once, in
//! `Plugin::finish`, and again whenever Bevy makes a new device), else the CPU workers with one
//! warning.

use bevy::prelude::*;
use bevy::render::renderer::{RenderAdapterInfo, RenderDevice, RenderQueue};
use heimdall_gpu::GpuContext;

use super::timer::FrameTimer;
use crate::results::{BackendKind, HeimdallBackend};
use crate::settings::HeimdallSettings;

/// Whether the render device's wgpu instance validates indirect dispatches (render world): read
/// from the `RenderPlugin`'s `WgpuSettings::instance_flags` when the plugin is built; `true`
/// where the device came from elsewhere (`RenderCreation::Manual`). The convolution cache
/// launches only its listed work where wgpu adds no validation pass to an indirect dispatch.
#[derive(Resource, Clone, Copy, Debug)]
pub(crate) struct IndirectValidation(pub bool);

impl IndirectValidation {
    /// What `app`'s `RenderPlugin` asks of its instance.
    pub fn of(app: &App) -> Self {
        use bevy::render::RenderPlugin;
        use bevy::render::settings::RenderCreation;
        let validated = app
            .get_added_plugins::<RenderPlugin>()
            .first()
            .is_none_or(|p| match &p.render_creation {
                RenderCreation::Automatic(s) => s
                    .instance_flags
                    .contains(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL),
                RenderCreation::Manual(_) => true,
            });
        IndirectValidation(validated)
    }
}

/// Where inference runs (render world).
#[derive(Resource)]
pub(crate) struct InferenceBackend {
    /// Bevy's device as a heimdall context, or `None` for CPU-only.
    gpu: Option<Box<GpuContext>>,
    /// The frame timestamps (absent without timestamp support or a GPU).
    pub timer: Option<FrameTimer>,
    /// The render device this was made for (even in CPU mode), to notice a new one.
    pub device: Option<wgpu::Device>,
}

impl InferenceBackend {
    /// The GPU context, in GPU mode.
    pub fn gpu(&self) -> Option<&GpuContext> {
        self.gpu.as_deref()
    }
}

/// Whether a device can run the GPU backend's kernels.
pub(crate) fn gpu_capable(ctx: &GpuContext) -> Result<(), String> {
    let l = &ctx.limits;
    if l.max_compute_workgroup_size_x < 64 || l.max_compute_invocations_per_workgroup < 64 {
        return Err(format!(
            "compute work groups of at most {} invocations",
            l.max_compute_invocations_per_workgroup
        ));
    }
    if l.max_storage_buffers_per_shader_stage < 4 {
        return Err(format!(
            "{} storage buffers per shader stage (4 needed)",
            l.max_storage_buffers_per_shader_stage
        ));
    }
    if l.max_storage_buffer_binding_size < (16 << 20) {
        return Err(format!(
            "storage bindings of at most {} bytes",
            l.max_storage_buffer_binding_size
        ));
    }
    if l.max_compute_workgroups_per_dimension == 0 {
        return Err("no compute shaders".into());
    }
    Ok(())
}

/// The backend for the render world's device, and what the main world is told about it.
pub(crate) fn choose(
    world: &World,
    settings: &HeimdallSettings,
) -> (InferenceBackend, HeimdallBackend) {
    let device = world.get_resource::<RenderDevice>().cloned();
    let queue = world.get_resource::<RenderQueue>().cloned();
    let info = world
        .get_resource::<RenderAdapterInfo>()
        .map(|i| i.0.clone());
    let wgpu_device = device.as_ref().map(|d| d.wgpu_device().clone());
    let cpu = |why: &str, adapter: Option<String>| {
        (
            InferenceBackend {
                gpu: None,
                timer: None,
                device: wgpu_device.clone(),
            },
            HeimdallBackend {
                kind: BackendKind::Cpu(why.into()),
                adapter,
            },
        )
    };
    let (Some(device), Some(queue), Some(info)) = (device, queue, info) else {
        warn!("heimdall: no render device; every model runs on the CPU backend");
        return cpu("no device", None);
    };
    let validated = world
        .get_resource::<IndirectValidation>()
        .is_none_or(|v| v.0);
    let ctx = GpuContext::from_device(
        device.wgpu_device().clone(),
        (**queue.0).clone(),
        (*info).clone(),
    )
    .with_indirect_validation(validated)
    .with_shared_device(settings.nonblocking_gpu_waits)
    .with_background_burst_ms(settings.background_burst_ms)
    .held_to(
        world
            .get_resource::<crate::device::HeimdallDeviceProfile>()
            .map_or_else(Default::default, |p| p.0),
    );
    let adapter = Some(ctx.describe());
    if settings.force_cpu {
        warn!(
            "heimdall: the CPU backend was forced (HeimdallSettings::force_cpu); every model \
             runs on CPU workers"
        );
        return cpu("forced", adapter);
    }
    if let Err(why) = gpu_capable(&ctx) {
        warn!(
            "heimdall: {} cannot run the GPU kernels ({why}); every model runs on the CPU \
             backend instead",
            ctx.info.name
        );
        return cpu("no compute", adapter);
    }
    let timer = FrameTimer::new(&ctx.device, &ctx.queue);
    (
        InferenceBackend {
            gpu: Some(Box::new(ctx)),
            timer,
            device: wgpu_device,
        },
        HeimdallBackend {
            kind: BackendKind::Gpu,
            adapter,
        },
    )
}
