//! The limits and features [`crate::GpuContext::create`] asks of a device: the adapter's best
//! (desktop and tests), or those of the phones the apps target (Adreno and Mali over Vulkan), so
//! that every kernel is exercised under them on any adapter. `HEIMDALL_MOBILE_LIMITS=1` picks the
//! mobile profile; sources of the figures: `docs/mobile-limits.md`.

/// Storage buffers per shader stage of [`DeviceProfile::Mobile`]: WebGPU's default, and enough
/// for the convolutions (input, weights, bias, output, then the fused epilogue's residual and
/// PReLU slopes: up to 6). Android's 2021 baseline profile guarantees only Vulkan's minimum of 4;
/// `HEIMDALL_MOBILE_STORAGE_BUFFERS=4` tries it (convolutions with a fused epilogue operand then
/// fail to compile with a typed error, see `docs/mobile-limits.md`).
pub const MOBILE_STORAGE_BUFFERS: u32 = 8;

/// Which limits and features to request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceProfile {
    /// WebGPU's default limits; `SHADER_F16`, timestamp queries (inside passes too) and the
    /// pipeline cache where the adapter has them.
    #[default]
    Desktop,
    /// A phone: no `SHADER_F16`, no timestamp queries inside passes, 8 storage buffers per
    /// shader stage, 128 invocations per work group (128 x 128 x 64), 16 KiB of work-group
    /// memory, 128 MiB storage bindings, storage offsets aligned to 256 bytes (Android's
    /// baseline profile, except its 4 storage buffers: see `docs/mobile-limits.md`).
    Mobile,
}

impl DeviceProfile {
    /// `Mobile` when `HEIMDALL_MOBILE_LIMITS=1`, else `Desktop`.
    pub fn from_env() -> DeviceProfile {
        if std::env::var("HEIMDALL_MOBILE_LIMITS").is_ok_and(|v| v == "1") {
            DeviceProfile::Mobile
        } else {
            DeviceProfile::Desktop
        }
    }

    /// The limits to request (an adapter with higher limits is held to these).
    pub fn limits(self) -> wgpu::Limits {
        match self {
            DeviceProfile::Desktop => wgpu::Limits::default(),
            DeviceProfile::Mobile => wgpu::Limits {
                max_storage_buffers_per_shader_stage: std::env::var(
                    "HEIMDALL_MOBILE_STORAGE_BUFFERS",
                )
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(MOBILE_STORAGE_BUFFERS),
                max_compute_invocations_per_workgroup: 128,
                max_compute_workgroup_size_x: 128,
                max_compute_workgroup_size_y: 128,
                max_compute_workgroup_size_z: 64,
                max_compute_workgroup_storage_size: 16384,
                max_storage_buffer_binding_size: 128 << 20,
                min_storage_buffer_offset_alignment: 256,
                ..wgpu::Limits::default()
            },
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
            DeviceProfile::Mobile => timestamps | wgpu::Features::PIPELINE_CACHE,
        }
    }
}
