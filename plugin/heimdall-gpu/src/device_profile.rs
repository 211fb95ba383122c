//! The limits and features [`crate::GpuContext::create`] asks of a device: the adapter's best
//! (desktop and tests), or those of the phones the apps target (Adreno and Mali over Vulkan), so
//! that every kernel is exercised under them on any adapter. `HEIMDALL_MOBILE_LIMITS=1` picks the
//! typical phone's profile, `HEIMDALL_MOBILE_LIMITS=baseline` the least one; sources of the
//! figures: `docs/mobile-limits.md`.

/// Storage buffers per shader stage of [`DeviceProfile::Mobile`]: Vulkan's minimum, all that
/// Android's 2021 baseline profile guarantees. The convolutions bind input, weights, bias and
/// output, plus the fused epilogue's residual and PReLU slopes: up to 6, so a model with them
/// cannot run on such a device ([`crate::check_limits`] says which ops before compiling; the
/// Bevy plugin runs such a model on the CPU backend).
pub const MOBILE_STORAGE_BUFFERS: u32 = 4;

/// Storage buffers per shader stage of [`DeviceProfile::MobileTypical`]: WebGPU's default, and
/// enough for every kernel of the backend.
pub const MOBILE_TYPICAL_STORAGE_BUFFERS: u32 = 8;

/// Which limits and features to request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceProfile {
    /// WebGPU's default limits; `SHADER_F16`, timestamp queries (inside passes too) and the
    /// pipeline cache where the adapter has them.
    #[default]
    Desktop,
    /// The least phone the apps may meet (Android's 2021 baseline profile): no `SHADER_F16`,
    /// no timestamp queries at all, 4 storage buffers per shader stage, 128 invocations per
    /// work group (128 x 128 x 64), 16 KiB of work-group memory, 128 MiB storage bindings,
    /// storage offsets aligned to 256 bytes (`docs/mobile-limits.md`).
    Mobile,
    /// A current Adreno or Mali phone: as [`DeviceProfile::Mobile`], with 8 storage buffers per
    /// shader stage and timestamp queries in encoders (not inside passes), the limits under
    /// which every kernel of the backend runs.
    MobileTypical,
}

impl DeviceProfile {
    /// From `HEIMDALL_MOBILE_LIMITS`: `1` or `typical` gives [`DeviceProfile::MobileTypical`],
    /// `baseline` [`DeviceProfile::Mobile`]; anything else (or unset) [`DeviceProfile::Desktop`].
    /// `HEIMDALL_MOBILE_STORAGE_BUFFERS=N` overrides either mobile profile's storage buffers.
    pub fn from_env() -> DeviceProfile {
        match std::env::var("HEIMDALL_MOBILE_LIMITS").as_deref() {
            Ok("1" | "typical") => DeviceProfile::MobileTypical,
            Ok("baseline") => DeviceProfile::Mobile,
            _ => DeviceProfile::Desktop,
        }
    }

    /// Whether this is a phone's profile.
    pub fn is_mobile(self) -> bool {
        self != DeviceProfile::Desktop
    }

    /// The limits to request (an adapter with higher limits is held to these).
    pub fn limits(self) -> wgpu::Limits {
        let storage_buffers = match self {
            DeviceProfile::Desktop => return wgpu::Limits::default(),
            DeviceProfile::Mobile => MOBILE_STORAGE_BUFFERS,
            DeviceProfile::MobileTypical => MOBILE_TYPICAL_STORAGE_BUFFERS,
        };
        wgpu::Limits {
            max_storage_buffers_per_shader_stage: std::env::var("HEIMDALL_MOBILE_STORAGE_BUFFERS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(storage_buffers),
            max_compute_invocations_per_workgroup: 128,
            max_compute_workgroup_size_x: 128,
            max_compute_workgroup_size_y: 128,
            max_compute_workgroup_size_z: 64,
            max_compute_workgroup_storage_size: 16384,
            max_storage_buffer_binding_size: 128 << 20,
            min_storage_buffer_offset_alignment: 256,
            ..wgpu::Limits::default()
        }
    }

    /// The features wanted (each enabled only where the adapter has it).
    pub fn features(self) -> wgpu::Features {
        let timestamps =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        match self {
            DeviceProfile::Desktop => {
                timestamps
                    | wgpu::Features::SHADER_F16
                    | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
                    | wgpu::Features::PIPELINE_CACHE
            }
            DeviceProfile::MobileTypical => timestamps | wgpu::Features::PIPELINE_CACHE,
            DeviceProfile::Mobile => wgpu::Features::PIPELINE_CACHE,
        }
    }

    /// The features a device of this profile must not have, whatever its adapter offers (for a
    /// renderer that enables what the adapter has, as Bevy does: its
    /// `WgpuSettings::disabled_features`).
    pub fn disabled_features(self) -> wgpu::Features {
        let all = wgpu::Features::SHADER_F16
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
            | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        match self {
            DeviceProfile::Desktop => wgpu::Features::empty(),
            _ => all - self.features(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The strict profile has no timestamps and 4 storage buffers; the typical one keeps
    /// timestamps in encoders; neither has f16 or cooperative matrices.
    #[test]
    fn mobile_profiles_hold_a_phones_limits() {
        let m = DeviceProfile::Mobile;
        assert!(!m.features().contains(wgpu::Features::TIMESTAMP_QUERY));
        assert!(
            m.disabled_features()
                .contains(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::SHADER_F16)
        );
        if std::env::var_os("HEIMDALL_MOBILE_STORAGE_BUFFERS").is_none() {
            assert_eq!(m.limits().max_storage_buffers_per_shader_stage, 4);
            let t = DeviceProfile::MobileTypical.limits();
            assert_eq!(t.max_storage_buffers_per_shader_stage, 8);
        }
        let t = DeviceProfile::MobileTypical;
        assert!(
            t.features()
                .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
        );
        assert!(
            t.disabled_features()
                .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)
        );
        assert!(
            !t.disabled_features()
                .contains(wgpu::Features::TIMESTAMP_QUERY)
        );
        assert_eq!(
            DeviceProfile::Desktop.disabled_features(),
            wgpu::Features::empty()
        );
        assert_eq!(m.limits().max_compute_invocations_per_workgroup, 128);
    }
}
