//! Which device the apps render on and which limits heimdall's kernels are held to: Vulkan,
//! Metal or DX12, and a phone's profile on any adapter (`docs/mobile-limits.md`).

use bevy::prelude::*;
use bevy::render::RenderPlugin;
use bevy::render::settings::{RenderCreation, WgpuSettings};
use heimdall_gpu::DeviceProfile;

/// The device profile heimdall's kernels are held to on Bevy's render device (main world, read
/// when the plugin chooses its backend; `Desktop` by default): with [`DeviceProfile::Mobile`]
/// the plugin compiles, checks ([`heimdall_gpu::check_limits`]) and profiles every model as on
/// the least Android phone (4 storage buffers per shader stage, 128 invocations per work
/// group), whatever the adapter offers (`docs/mobile-limits.md`).
///
/// Bevy's own device keeps the adapter's limits here. It can be held to the profile's storage
/// buffers per stage, with Bevy's GPU preprocessing and GPU light clustering off where they
/// need more ([`super::render_plugin_held_to`], [`super::BevyDeviceLimitsPlugin`]), but not to
/// 128 invocations per work group (Bevy's sparse buffer updates and mip downsampling use 256).
/// Its features can: pair this with [`render_plugin_for`] (no timestamp queries, no
/// `SHADER_F16` on the device).
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(opaque)]
#[reflect(Resource, Debug, Default, PartialEq, Clone)]
pub struct HeimdallDeviceProfile(pub DeviceProfile);

/// The plugin's `RenderPlugin` ([`crate::render_plugin`]) on Vulkan, Metal or DX12
/// ([`BACKENDS`]; `WGPU_BACKEND` overrides), without the features `profile` lacks: on
/// [`DeviceProfile::Mobile`] Bevy's device has no timestamp queries and no `SHADER_F16`,
/// whatever the adapter offers. (Its limits stay the adapter's: [`HeimdallDeviceProfile`] holds
/// heimdall's kernels to the profile's; [`super::render_plugin_held_to`] Bevy's device to its
/// storage buffers.)
pub fn render_plugin_for(profile: DeviceProfile) -> RenderPlugin {
    let mut plugin = crate::render_plugin();
    if let RenderCreation::Automatic(settings) = &mut plugin.render_creation {
        settings.backends = Some(backends());
        without_missing_features(settings, profile);
    }
    plugin
}

/// The backends apps render on: Vulkan, Metal, DX12 (`wgpu::Backends::PRIMARY`). Not GL: on a
/// machine without a Vulkan driver wgpu would take Mesa's GL through EGL, and its GL backend
/// panics there on Bevy's task threads (wgpu-hal 29, `gles/device.rs`: the EGL context cannot be
/// made current) instead of rendering; the apps ship on Vulkan anyway.
pub const BACKENDS: wgpu::Backends = wgpu::Backends::PRIMARY;

/// [`BACKENDS`], or `WGPU_BACKEND`'s.
pub fn backends() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(BACKENDS)
}

/// `settings` without the features `profile` lacks (nothing changes for `Desktop`).
pub fn without_missing_features(settings: &mut WgpuSettings, profile: DeviceProfile) {
    if profile.is_mobile() {
        let disabled = settings
            .disabled_features
            .unwrap_or(wgpu::Features::empty());
        settings.disabled_features = Some(disabled | profile.disabled_features());
    }
}
