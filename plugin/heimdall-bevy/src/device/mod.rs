//! The render device as the plugin meets it: held to a phone's limits on any adapter
//! ([`render_plugin_for`]; Bevy's own device to its storage buffers too, [`render_plugin_held_to`]
//! and [`BevyDeviceLimitsPlugin`]), missing altogether ([`find_adapter`]: one clear line instead of
//! Bevy's panic), reporting errors (each counted in `stats.json`'s `faults` before the app's
//! own [`RenderErrorHandler`] decides), or lost ([`recover_lost_devices`]: a new device, every
//! model compiled again on it).

mod bevy_limits;
mod profile;

use bevy::prelude::*;
use bevy::render::error_handler::{ErrorType, RenderError, RenderErrorHandler, RenderErrorPolicy};
use bevy::render::settings::{RenderCreation, WgpuSettings};
pub use bevy_limits::{
    BEVY_GPU_CLUSTERING_STORAGE_BUFFERS, BEVY_GPU_PREPROCESSING_STORAGE_BUFFERS,
    BevyDeviceLimitsPlugin, adapter_limits, bevy_storage_buffers, gpu_clustering_fits,
    gpu_preprocessing_fits, hold_storage_buffers, render_plugin_held_to,
};
pub use heimdall_gpu::DeviceProfile;
pub use profile::{
    BACKENDS, HeimdallDeviceProfile, backends, render_plugin_for, without_missing_features,
};

use crate::bridge::readback_device::ReadbackDevice;
use crate::faults::{DeviceFault, HeimdallFaults};

/// No GPU adapter for the app's backends: what a user reads instead of Bevy's panic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "no GPU adapter: wgpu found none for {backends} ({why}); install a Vulkan driver: your \
     GPU vendor's, or Mesa's software one (Debian/Ubuntu: `sudo apt-get install \
     mesa-vulkan-drivers libvulkan1`)"
)]
pub struct NoGpu {
    /// The backends searched (`Vulkan | GL`).
    pub backends: String,
    /// What was found wanting (no driver, or `VK_ICD_FILENAMES` / `VK_DRIVER_FILES` naming
    /// none).
    pub why: String,
}

/// The adapter Bevy would pick for `backends` (by default [`backends`]: `WGPU_BACKEND`, else
/// Vulkan, Metal or DX12), or a [`NoGpu`] naming what is missing. Cheap (an instance and an
/// adapter list, no device): apps call it before building a Bevy app, which panics without an
/// adapter.
pub fn find_adapter(backends: Option<wgpu::Backends>) -> Result<wgpu::AdapterInfo, NoGpu> {
    let backends = backends.unwrap_or_else(self::backends);
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends,
        ..wgpu::InstanceDescriptor::new_without_display_handle_from_env()
    });
    let adapters = bevy::tasks::block_on(instance.enumerate_adapters(backends));
    if let Some(a) = adapters.first() {
        return Ok(a.get_info());
    }
    let named: Vec<String> = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
        .iter()
        .filter_map(|v| Some(format!("{v}={}", std::env::var(v).ok()?)))
        .collect();
    let why = if named.is_empty() {
        "no driver answered".to_string()
    } else {
        format!("the Vulkan loader was pointed at {}", named.join(" "))
    };
    Err(NoGpu {
        backends: format!("{backends:?}"),
        why,
    })
}

/// The app's own handler, called after the plugin counted the error (main world).
#[derive(Resource, Clone, Copy)]
struct AppHandler(Handler);

/// The plugin's handler: counts the error in [`HeimdallFaults`], says what a lost device means
/// for the DNNs, then lets the app's handler decide.
fn counting_handler(
    error: &RenderError,
    main: &mut World,
    render: &mut World,
) -> RenderErrorPolicy {
    let kind = match error.ty {
        ErrorType::Validation => DeviceFault::Validation,
        ErrorType::OutOfMemory => DeviceFault::OutOfMemory,
        ErrorType::DeviceLost => DeviceFault::Lost,
        ErrorType::Internal => DeviceFault::Internal,
    };
    if let Some(f) = main.get_resource::<HeimdallFaults>() {
        f.device_fault(kind);
    }
    if kind == DeviceFault::Lost
        && let Some(device) = render.get_resource::<ReadbackDevice>()
    {
        // Its buffers are gone: readbacks in flight are dropped unread, not mapped.
        device.set(None);
    }
    let app = main
        .get_resource::<AppHandler>()
        .map(|h| h.0)
        .filter(|h| !std::ptr::fn_addr_eq(*h, counting_handler as Handler))
        .unwrap_or(quit);
    let policy = app(error, main, render);
    if kind == DeviceFault::Lost {
        match &policy {
            RenderErrorPolicy::Recover(_) => warn!(
                "heimdall: the GPU device was lost ({}); a new one is made and every model \
                 compiled again on it",
                error.description
            ),
            _ => error!(
                "heimdall: the GPU device was lost ({}); the app's RenderErrorHandler does not \
                 recover (heimdall_bevy::device::recover_lost_devices does): no more frames or \
                 GPU results",
                error.description
            ),
        }
    }
    policy
}

/// Bevy's default policy: log, quit with an error, stop rendering.
fn quit(error: &RenderError, main: &mut World, _: &mut World) -> RenderErrorPolicy {
    error!(
        "heimdall: quitting after a {:?} render error: {}",
        error.ty, error.description
    );
    main.write_message(AppExit::error());
    RenderErrorPolicy::StopRendering
}

/// The handlers' signature.
type Handler = for<'a> fn(&'a RenderError, &'a mut World, &'a mut World) -> RenderErrorPolicy;

/// Keeps the plugin's counting handler in front of whatever handler the app sets (main world,
/// `Last`: before the render world's extraction, where errors are handled). Bevy takes the
/// resource out and puts it back while it handles an error, which marks it changed: the
/// plugin's own handler is never taken for the app's.
pub(crate) fn count_render_errors(
    handler: Option<ResMut<RenderErrorHandler>>,
    mut commands: Commands,
) {
    let Some(mut handler) = handler else { return };
    if handler.is_changed() && !std::ptr::fn_addr_eq(handler.0, counting_handler as Handler) {
        // Set by the app (or Bevy's default): called by ours.
        commands.insert_resource(AppHandler(handler.0));
        handler.bypass_change_detection().0 = counting_handler;
    }
}

/// The device's settings to make a new one with after a loss, and when the last loss was
/// (main world).
#[derive(Resource, Clone)]
struct Recovery {
    settings: WgpuSettings,
    lost_at: Option<std::time::Instant>,
}

/// How long after a loss errors are taken for its consequences (the lost device's in-flight
/// work reporting its destroyed buffers) rather than errors of their own.
const LOSS_AFTERMATH: std::time::Duration = std::time::Duration::from_secs(5);

/// Recovers from a lost render device: Bevy makes a new one with `settings` (those the app
/// created its device with, e.g. [`render_plugin_for`]'s), the plugin compiles every model again
/// on it and results resume; any other render error quits the app, as by Bevy's default, except
/// in the seconds after a loss, when errors of the lost device's work in flight arrive (they
/// get a new device too, as the loss did).
pub fn recover_lost_devices(app: &mut App, settings: WgpuSettings) {
    app.insert_resource(Recovery {
        settings,
        lost_at: None,
    })
    .insert_resource(RenderErrorHandler(recover_or_quit));
}

fn recover_or_quit(error: &RenderError, main: &mut World, render: &mut World) -> RenderErrorPolicy {
    let Some(mut r) = main.get_resource_mut::<Recovery>() else {
        return quit(error, main, render);
    };
    let aftermath = r.lost_at.is_some_and(|t| t.elapsed() < LOSS_AFTERMATH);
    if error.ty == ErrorType::DeviceLost {
        r.lost_at = Some(std::time::Instant::now());
    } else if !aftermath {
        return quit(error, main, render);
    }
    RenderErrorPolicy::Recover(RenderCreation::Automatic(Box::new(r.settings.clone())))
}
