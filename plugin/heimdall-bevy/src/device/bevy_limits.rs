//! Bevy's own render device held to a phone profile's storage buffers per shader stage
//! (`docs/mobile-limits.md`, "Bevy's own device at 4 storage buffers per stage"). Four settings
//! together, all of them no-ops under [`DeviceProfile::Desktop`]:
//!
//! 1. the device's limit: [`render_plugin_held_to`] (or [`hold_storage_buffers`] on the app's own
//!    `WgpuSettings`);
//! 2. mesh instance buffers built on the CPU: `PbrPlugin { use_gpu_instance_buffer_builder:
//!    gpu_preprocessing_fits(profile), .. }` in the app's `DefaultPlugins`
//!    ([`gpu_preprocessing_fits`]);
//! 3. Bevy's render phases batching without GPU preprocessing: [`BevyDeviceLimitsPlugin`];
//! 4. light clustering on the CPU: `GlobalClusterSettings::gpu_clustering = None` in the main
//!    world after `app.finish()` where [`gpu_clustering_fits`] says no (a `PreStartup` system of
//!    the app).
//!
//! 2 and 4 are the app's: `PbrPlugin` and `GlobalClusterSettings` live in `bevy_pbr` and
//! `bevy_light`, which the plugin does not depend on (the renderer's features are the app's
//! choice). 128 invocations per work group cannot be held on Bevy's device (its sparse buffer
//! updates and mip downsampling use 256): that limit stays the adapter's.

use bevy::prelude::*;
use bevy::render::batching::gpu_preprocessing::{GpuPreprocessingMode, GpuPreprocessingSupport};
use bevy::render::settings::{RenderCreation, WgpuSettings};
use bevy::render::{RenderApp, RenderPlugin, RenderStartup, init_gpu_resource};
use heimdall_gpu::DeviceProfile;

/// Storage buffers per shader stage that Bevy's GPU mesh preprocessing binds (frustum culling,
/// `mesh_preprocess.wgsl`, compute stage): a device with fewer needs it off.
pub const BEVY_GPU_PREPROCESSING_STORAGE_BUFFERS: u32 = 8;

/// Storage buffers per shader stage that Bevy's GPU light clustering binds (its populate pass,
/// `cluster_raster.wgsl`, fragment stage): a device with fewer needs it off.
pub const BEVY_GPU_CLUSTERING_STORAGE_BUFFERS: u32 = 6;

/// The storage buffers per shader stage Bevy's device is held to under `profile` (the profile's,
/// `HEIMDALL_MOBILE_STORAGE_BUFFERS` included), or `None` under [`DeviceProfile::Desktop`].
pub fn bevy_storage_buffers(profile: DeviceProfile) -> Option<u32> {
    profile
        .is_mobile()
        .then(|| profile.limits().max_storage_buffers_per_shader_stage)
}

/// Whether Bevy's GPU mesh preprocessing fits `profile`'s storage buffers (always under
/// [`DeviceProfile::Desktop`]): the value for `PbrPlugin::use_gpu_instance_buffer_builder`.
pub fn gpu_preprocessing_fits(profile: DeviceProfile) -> bool {
    bevy_storage_buffers(profile).is_none_or(|n| n >= BEVY_GPU_PREPROCESSING_STORAGE_BUFFERS)
}

/// Whether Bevy's GPU light clustering fits `profile`'s storage buffers (always under
/// [`DeviceProfile::Desktop`]); where not, the app sets `GlobalClusterSettings::gpu_clustering`
/// to `None` after `app.finish()`.
pub fn gpu_clustering_fits(profile: DeviceProfile) -> bool {
    bevy_storage_buffers(profile).is_none_or(|n| n >= BEVY_GPU_CLUSTERING_STORAGE_BUFFERS)
}

/// Holds the device Bevy creates from `settings` to `profile`'s storage buffers per shader stage,
/// every other limit the adapter's (`adapter`: its limits, e.g. [`adapter_limits`]'s). Bevy
/// requests the adapter's limits, each made no better than `constrained_limits`' (which this
/// sets, or tightens where the app set it). Nothing changes under [`DeviceProfile::Desktop`].
pub fn hold_storage_buffers(
    settings: &mut WgpuSettings,
    profile: DeviceProfile,
    adapter: &wgpu::Limits,
) {
    let Some(n) = bevy_storage_buffers(profile) else {
        return;
    };
    let held = wgpu::Limits {
        max_storage_buffers_per_shader_stage: n,
        ..adapter.clone()
    };
    settings.constrained_limits = Some(match settings.constrained_limits.take() {
        Some(app) => app.or_worse_values_from(&held),
        None => held,
    });
}

/// The best of each limit over the adapters of `backends` (`None` without one): whichever of
/// them Bevy picks, a device held to these has that adapter's own limits.
pub fn adapter_limits(backends: wgpu::Backends) -> Option<wgpu::Limits> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends,
        ..wgpu::InstanceDescriptor::new_without_display_handle_from_env()
    });
    let adapters = bevy::tasks::block_on(instance.enumerate_adapters(backends));
    adapters
        .iter()
        .map(|a| a.limits())
        .reduce(|best, l| best.or_better_values_from(&l))
}

/// [`super::render_plugin_for`] with Bevy's device also held to `profile`'s storage buffers per
/// shader stage ([`hold_storage_buffers`] on [`adapter_limits`]); the same as
/// `render_plugin_for` under [`DeviceProfile::Desktop`] or without an adapter. Bevy renders on
/// such a device only with the other three settings (the module's documentation): pair it with
/// [`BevyDeviceLimitsPlugin`].
pub fn render_plugin_held_to(profile: DeviceProfile) -> RenderPlugin {
    let mut plugin = super::render_plugin_for(profile);
    if profile.is_mobile()
        && let RenderCreation::Automatic(settings) = &mut plugin.render_creation
        && let Some(adapter) = adapter_limits(settings.backends.unwrap_or_else(super::backends))
    {
        hold_storage_buffers(settings, profile, &adapter);
    }
    plugin
}

/// Bevy's render phases batch without GPU preprocessing where [`gpu_preprocessing_fits`] says
/// no: `GpuPreprocessingSupport::max_supported_mode` is set to `None` in the render world once
/// Bevy has set it (`RenderStartup`). The phases read their batching mode from it, not from
/// `PbrPlugin::use_gpu_instance_buffer_builder`: with that switch alone the CPU-built batches
/// are dropped and nothing is drawn. Add it after `DefaultPlugins` (it needs the render app); a
/// no-op under [`DeviceProfile::Desktop`] or where preprocessing fits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BevyDeviceLimitsPlugin(pub DeviceProfile);

impl Plugin for BevyDeviceLimitsPlugin {
    fn build(&self, app: &mut App) {
        if gpu_preprocessing_fits(self.0) {
            return;
        }
        let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
            warn!(
                "heimdall: BevyDeviceLimitsPlugin added without a render app (add it after \
                 DefaultPlugins): Bevy's GPU preprocessing stays on"
            );
            return;
        };
        render_app.add_systems(
            RenderStartup,
            preprocessing_on_the_cpu.after(init_gpu_resource::<GpuPreprocessingSupport>),
        );
    }
}

fn preprocessing_on_the_cpu(support: Option<ResMut<GpuPreprocessingSupport>>) {
    if let Some(mut support) = support {
        support.max_supported_mode = GpuPreprocessingMode::None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Desktop changes nothing; the least phone holds 4 storage buffers and the adapter's other
    /// limits, and needs preprocessing and clustering off; the typical phone's 8 fit both.
    #[test]
    fn a_phones_storage_buffers_hold_bevys_device() {
        let adapter = wgpu::Limits {
            max_storage_buffers_per_shader_stage: 16,
            max_compute_invocations_per_workgroup: 1024,
            ..wgpu::Limits::default()
        };
        let mut desktop = WgpuSettings::default();
        hold_storage_buffers(&mut desktop, DeviceProfile::Desktop, &adapter);
        assert!(desktop.constrained_limits.is_none());
        assert!(gpu_preprocessing_fits(DeviceProfile::Desktop));
        assert!(gpu_clustering_fits(DeviceProfile::Desktop));
        if std::env::var_os("HEIMDALL_MOBILE_STORAGE_BUFFERS").is_some() {
            return;
        }
        let mut phone = WgpuSettings::default();
        hold_storage_buffers(&mut phone, DeviceProfile::Mobile, &adapter);
        let held = phone.constrained_limits.clone().expect("held");
        assert_eq!(held.max_storage_buffers_per_shader_stage, 4);
        assert_eq!(held.max_compute_invocations_per_workgroup, 1024);
        assert!(!gpu_preprocessing_fits(DeviceProfile::Mobile));
        assert!(!gpu_clustering_fits(DeviceProfile::Mobile));
        assert!(gpu_preprocessing_fits(DeviceProfile::MobileTypical));
        assert!(gpu_clustering_fits(DeviceProfile::MobileTypical));
        // An app's own constraint stays where it is tighter.
        let mut tighter = WgpuSettings {
            constrained_limits: Some(wgpu::Limits {
                max_compute_invocations_per_workgroup: 256,
                ..adapter.clone()
            }),
            ..default()
        };
        hold_storage_buffers(&mut tighter, DeviceProfile::MobileTypical, &adapter);
        let held = tighter.constrained_limits.expect("held");
        assert_eq!(held.max_storage_buffers_per_shader_stage, 8);
        assert_eq!(held.max_compute_invocations_per_workgroup, 256);
    }
}
