//! The device the backend runs on: a caller's `wgpu::Device` and `wgpu::Queue` (Bevy's), or one
//! created here for the CLI and tests.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::coop::{COOP_TILES, ConvCoopRule, CoopTile, has_f16_f32_16};
use crate::device_profile::DeviceProfile;
use crate::error::GpuError;
use crate::params::ParamsSpace;
use crate::tiles::{Conv1x1Tile, TILES};

/// Devices created by [`GpuContext::create`] in this process.
static DEVICES_CREATED: AtomicUsize = AtomicUsize::new(0);

/// How many devices [`GpuContext::create`] has created in this process (a Bevy app using the
/// plugin must show 0: inference runs on Bevy's own device).
pub fn devices_created() -> usize {
    DEVICES_CREATED.load(Ordering::Acquire)
}

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
    /// Whether wgpu validates indirect dispatches on this device (its instance has
    /// `InstanceFlags::VALIDATION_INDIRECT_CALL`): each one then gets a compute pass of its own,
    /// so the convolution cache dispatches over the whole grid instead (see
    /// [`crate::conv_cache`]). A caller's device is assumed validated unless told otherwise
    /// ([`GpuContext::with_indirect_validation`]); [`GpuContext::create`] turns it off.
    pub indirect_validation: bool,
    /// The adapter's cooperative matrix configurations (`VK_KHR_cooperative_matrix`, subgroup
    /// scope), where the device was created with `EXPERIMENTAL_COOPERATIVE_MATRIX`; empty
    /// otherwise (a caller's device: [`GpuContext::with_cooperative_matrices`] sets them).
    pub coop_matrix: Vec<wgpu::CooperativeMatrixProperties>,
    /// Whether someone else (a renderer) submits work on this device too: then the blocking
    /// parts of this crate (compilation, profiling, the f16 guard) wait for the GPU with
    /// non-blocking polls, because a blocking poll holds the lock that every `Queue::submit`
    /// needs until the GPU is idle ([`GpuContext::wait_idle`]). True for a caller's device
    /// ([`GpuContext::from_device`]), false for [`GpuContext::create`]'s own.
    pub shared_device: bool,
    /// The most GPU time, ms, of background runs (profiles, the convolution cache's
    /// calibration) submitted before the host waits for them ([`crate::GpuModel::profile`]).
    /// Each wait also waits for the frames queued before it, so larger bursts make a model ready
    /// sooner, and on a device shared with a renderer they also delay the frames queued behind
    /// them.
    /// [`DEFAULT_BACKGROUND_BURST_MS`] on a caller's device; unbounded on an own one.
    pub background_burst_ms: f64,
}

/// [`GpuContext::background_burst_ms`] on a device shared with a renderer: about one of the
/// chunks the coordinator interleaves with the frames (its margin is 1 ms).
pub const DEFAULT_BACKGROUND_BURST_MS: f64 = 1.0;

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
            indirect_validation: true,
            coop_matrix: Vec::new(),
            shared_device: true,
            background_burst_ms: DEFAULT_BACKGROUND_BURST_MS,
        }
    }

    /// This context, told whether another user submits on the device too (see
    /// [`GpuContext::shared_device`]); an own device also takes unbounded background bursts.
    pub fn with_shared_device(mut self, shared: bool) -> Self {
        self.shared_device = shared;
        if !shared {
            self.background_burst_ms = f64::INFINITY;
        }
        self
    }

    /// This context with [`GpuContext::background_burst_ms`] = `ms` (0: one run per wait;
    /// negative or NaN: 0).
    pub fn with_background_burst_ms(mut self, ms: f64) -> Self {
        self.background_burst_ms = if ms > 0.0 { ms } else { 0.0 };
        self
    }

    /// This context with the adapter's cooperative matrix configurations
    /// (`wgpu::Adapter::cooperative_matrix_properties`); kept only where the device has
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX`.
    pub fn with_cooperative_matrices(
        mut self,
        configs: Vec<wgpu::CooperativeMatrixProperties>,
    ) -> Self {
        if self
            .features
            .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        {
            self.coop_matrix = configs;
        }
        self
    }

    /// This context held to `profile`'s limits and features on a device that has more: every
    /// limit the kernels are chosen for and checked against ([`crate::check_limits`]) is the
    /// lower of the device's and the profile's, and the features the profile lacks (timestamp
    /// queries, `SHADER_F16`, cooperative matrices on a phone) are not used. For a renderer
    /// whose own pipelines need more than a phone's limits (Bevy 0.19's GPU preprocessing binds
    /// 8 storage buffers and its sparse buffer updates use 256-invocation work groups), so its
    /// device cannot be created with them, while heimdall's kernels are held to them. `Desktop`
    /// changes nothing.
    pub fn held_to(mut self, profile: DeviceProfile) -> Self {
        if profile.is_mobile() {
            self.limits = self.limits.or_worse_values_from(&profile.limits());
            self.features.remove(profile.disabled_features());
            self.coop_matrix.clear();
        }
        self
    }

    /// This context, told whether the device's instance validates indirect dispatches (false
    /// for an instance created without `InstanceFlags::VALIDATION_INDIRECT_CALL`, as Bevy's
    /// release builds do where DX12 is not among the backends).
    pub fn with_indirect_validation(mut self, validated: bool) -> Self {
        self.indirect_validation = validated;
        self
    }

    /// Creates an own device on the best adapter (for the CLI and tests), enabling `SHADER_F16`,
    /// timestamp queries and `PIPELINE_CACHE` when the adapter has them, with WebGPU's default limits (≤ 256
    /// invocations per work group, ≤ 8 storage buffers per stage, 128 MiB bindings); with
    /// `HEIMDALL_MOBILE_LIMITS=1`, the limits and features of a phone instead
    /// ([`DeviceProfile::Mobile`]). The instance does not validate indirect dispatches (the only
    /// indirect arguments here are the convolution cache's, which its kernel bounds by the
    /// dispatch's own grid) unless `WGPU_VALIDATION_INDIRECT_CALL=1`.
    pub fn create() -> Result<Self, GpuError> {
        pollster::block_on(Self::create_async())
    }

    /// Async version of [`GpuContext::create`].
    pub async fn create_async() -> Result<Self, GpuError> {
        Self::create_with(DeviceProfile::from_env()).await
    }

    /// Creates an own device on the best adapter with the limits and features of `profile`.
    pub async fn create_with(profile: DeviceProfile) -> Result<Self, GpuError> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        if std::env::var_os("WGPU_VALIDATION_INDIRECT_CALL").is_none() {
            desc.flags
                .remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
        }
        let validated = desc
            .flags
            .contains(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
        let instance = wgpu::Instance::new(desc);
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
            })
            .await
            .map_err(|e| GpuError::NoDevice(no_adapter(&e.to_string())))?;
        let mut wanted = profile.features();
        // Tensor cores (`crate::coop`): cooperative matrices where the adapter offers them on a
        // desktop profile, unless `HEIMDALL_COOP_MATRIX=0`.
        let coop = profile == DeviceProfile::Desktop
            && std::env::var("HEIMDALL_COOP_MATRIX").map_or(true, |v| v != "0");
        if coop {
            wanted |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        }
        let info = adapter.get_info();
        let required_features = adapter.features() & wanted;
        let experimental_features =
            if required_features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
                // SAFETY: wgpu asks that users of experimental features accept that their
                // implementation may have bugs; the only one requested is cooperative matrices,
                // used by `conv_coop.wgsl` and the probe alone, each checked against the CPU
                // (tests/conv_coop.rs) before it is chosen by default.
                unsafe { wgpu::ExperimentalFeatures::enabled() }
            } else {
                wgpu::ExperimentalFeatures::disabled()
            };
        let mut required_limits = profile.limits();
        if required_features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
            // The cooperative-matrix kernels' larger tiles (`crate::coop::CoopTile`) take up to
            // 48 KiB of work-group memory; the other kernels are chosen for 16 KiB, as before.
            required_limits.max_compute_workgroup_storage_size = adapter
                .limits()
                .max_compute_workgroup_storage_size
                .clamp(required_limits.max_compute_workgroup_storage_size, 48 << 10);
        }
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("heimdall-gpu"),
                required_features,
                required_limits,
                experimental_features,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoDevice(format!("{} ({:?}): {e}", info.name, info.backend)))?;
        DEVICES_CREATED.fetch_add(1, Ordering::AcqRel);
        Ok(Self::from_device(device, queue, info)
            .with_indirect_validation(validated)
            .with_shared_device(false)
            .with_cooperative_matrices(adapter.cooperative_matrix_properties()))
    }

    /// Whether kernels may store tensors as `f16` (the device has `SHADER_F16`).
    pub fn has_f16(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F16)
    }

    /// Where kernels take their parameters from: uniform buffers, except on lavapipe, which
    /// gets read-only storage buffers. Lavapipe (Mesa's `llvmpipe` Vulkan driver) inlines the
    /// values of uniforms that steer control flow into the shader and compiles it again with
    /// LLVM at every bind; Mesa 22.3 (Debian 12's) keeps no cache of those variants and no
    /// shader it compiled this way is freed before the pipeline. Measured on the emoji example
    /// with every model on lavapipe (docs/soak.md): the C heap grew by 4-50 MB a second, 8-11 MB
    /// per inference of face detection and selfie segmentation (`tests/memory.rs`). Storage
    /// buffers are never inlined. `HEIMDALL_PARAMS=uniform` or `storage` replaces the choice
    /// (to see the difference).
    pub fn params_space(&self) -> ParamsSpace {
        static OVERRIDE: std::sync::OnceLock<Option<ParamsSpace>> = std::sync::OnceLock::new();
        let o = OVERRIDE.get_or_init(|| match std::env::var("HEIMDALL_PARAMS").ok()?.as_str() {
            "uniform" => Some(ParamsSpace::Uniform),
            "storage" => Some(ParamsSpace::Storage),
            _ => None,
        });
        if let Some(space) = *o {
            return space;
        }
        let lavapipe = self.info.device_type == wgpu::DeviceType::Cpu
            && (self.info.driver.to_ascii_lowercase().contains("llvmpipe")
                || self.info.name.to_ascii_lowercase().contains("llvmpipe"));
        if lavapipe {
            ParamsSpace::Storage
        } else {
            ParamsSpace::Uniform
        }
    }

    /// Threads a grid should have before kernels give each thread more outputs: GPUs need many
    /// threads in flight, a CPU rasteriser (lavapipe) few.
    /// `HEIMDALL_MIN_THREADS=N` replaces the choice (for tuning experiments).
    pub fn min_threads(&self) -> usize {
        static OVERRIDE: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
        let o = OVERRIDE.get_or_init(|| std::env::var("HEIMDALL_MIN_THREADS").ok()?.parse().ok());
        if let Some(n) = *o {
            return n;
        }
        match self.info.device_type {
            wgpu::DeviceType::Cpu => 256,
            wgpu::DeviceType::IntegratedGpu => 2048,
            // Measured on an H100 (ms per run, 8192 -> 32768): palm_detection_full 0.90 ->
            // 0.73, pose_detection 0.88 -> 0.73, hand_landmark_full 0.62 -> 0.49; 65536 gains
            // 1-3 % more but drops the large 1x1 layer from 8x4 to 4x4 blocking (73 -> 65 % of
            // the FMA peak).
            _ => 32768,
        }
    }

    /// The GPU family, from the adapter's PCI vendor id (or its name where the id is not a PCI
    /// one, as on Apple and some mobile drivers); a CPU rasteriser is [`GpuFamily::Software`].
    pub fn family(&self) -> GpuFamily {
        if self.info.device_type == wgpu::DeviceType::Cpu {
            return GpuFamily::Software;
        }
        match self.info.vendor {
            0x10de => GpuFamily::Nvidia,
            0x1002 | 0x1022 => GpuFamily::Amd,
            0x8086 => GpuFamily::Intel,
            0x13b5 => GpuFamily::Mali,
            0x5143 => GpuFamily::Adreno,
            0x106b => GpuFamily::Apple,
            0x1010 => GpuFamily::PowerVr,
            _ => {
                let name = self.info.name.to_ascii_lowercase();
                if name.contains("apple") {
                    GpuFamily::Apple
                } else if name.contains("mali") {
                    GpuFamily::Mali
                } else if name.contains("adreno") {
                    GpuFamily::Adreno
                } else if name.contains("llvmpipe") || name.contains("swiftshader") {
                    GpuFamily::Software
                } else {
                    GpuFamily::Other
                }
            }
        }
    }

    /// How kernels are blocked on this device (TFLite GPU style: by family, device type and
    /// limits).
    pub fn tuning(&self) -> Tuning {
        let family = self.family();
        let max_wg = self
            .limits
            .max_compute_invocations_per_workgroup
            .min(self.limits.max_compute_workgroup_size_x);
        // Work group of the 1x1 conv: 64 (2 NVIDIA warps: measured on an H100, 64 beat 128
        // and 256 by 4-7 %), 128 on AMD (2 wave64s), 64 on mobile GPUs (more work groups
        // resident with fewer threads each).
        let conv1x1_workgroup = match family {
            GpuFamily::Amd => 128,
            _ => 64,
        }
        .min(max_wg)
        .max(1);
        // Outputs per thread, largest first: desktop GPUs have 255 registers per thread and
        // broadcast the shared weights (H100, 128x128x256->256: 8x4 72 % of the measured FMA
        // peak, 4x4 65 %, 4x2 43 %, 2x2 39 %, 1x1 31 %); Intel's and Apple's register files take half;
        // Mali/PowerVR have 64 registers per thread (spills are fatal); Adreno prefers more
        // pixels than slices.
        let conv_blocks: &'static [(u32, u32)] = match family {
            GpuFamily::Nvidia | GpuFamily::Amd => &[(8, 4), (4, 4), (4, 2), (2, 2), (2, 1), (1, 1)],
            GpuFamily::Intel | GpuFamily::Apple | GpuFamily::Other => {
                &[(4, 2), (2, 2), (2, 1), (1, 1)]
            }
            GpuFamily::Adreno => &[(4, 1), (2, 2), (2, 1), (1, 1)],
            GpuFamily::Mali | GpuFamily::PowerVr => &[(2, 2), (2, 1), (1, 1)],
            GpuFamily::Software => &[(4, 2), (4, 1), (2, 1), (1, 1)],
        };
        // A 1x1 convolution with a small grid (a 7x7x1152->192 layer has 2352 output vec4s,
        // each a chain of 288 input slices; face_landmark_with_attention's 4x4x128->128 ones
        // 512 of 32) leaves a GPU idle and waits on one long dependency chain per thread: it
        // splits the reduction across the threads of a work group until the grid reaches this
        // many threads (H100, pose_detection: 70 us per such layer before, 1.31 -> 0.61 ms per
        // run with the other changes). A CPU rasteriser gains nothing from more threads.
        let split_k_threads = match self.info.device_type {
            wgpu::DeviceType::Cpu => 0,
            _ => 2 * self.min_threads(),
        };
        // The shared-memory tiled 1x1 kernel (`conv1x1_tiled.wgsl`): on NVIDIA only, where it was
        // measured (H100, docs/gpu.md "The tiled 1x1 convolution": the 128x128x256->256 probe
        // layer 0.086 -> 0.065 ms, PP-OCRv6_det_small 1.91 -> 1.81 ms per run), for layers of at
        // least 12 input slices (48 channels: PP-OCR's tiled layers have 48-384) whose grid of
        // tiles keeps 4096 threads (PP-OCR's layers alone, one tile forced: 80x160x48->96
        // 0.0148 -> 0.0133 ms, 40x80x96->192 0.0238 -> 0.0147, 20x40x192->384 0.0251 -> 0.0209;
        // with 16384 threads PP-OCR kept 3 of its 16 such layers, 1.90 ms). The other
        // families keep the blocked kernel: AMD's and Intel's desktop GPUs are unmeasured, and
        // mobile GPUs have too few registers for 8 x 8 tiles.
        let conv1x1_tiles: &'static [Conv1x1Tile] = match family {
            GpuFamily::Nvidia => &TILES,
            _ => &[],
        };
        let mut t = Tuning {
            family,
            min_threads: self.min_threads(),
            conv1x1_workgroup,
            conv_blocks,
            split_k_threads,
            max_workgroup: max_wg,
            max_workgroup_storage: self.limits.max_compute_workgroup_storage_size,
            conv1x1_tiles,
            conv1x1_tiled_min_slices: 12,
            conv1x1_tiled_min_threads: tiled_min_threads().unwrap_or(4096),
            f16_arithmetic: f16_arithmetic_default(),
            conv_coop: coop_rule(self),
        };
        if let Some((blocks, tg)) = block_override() {
            t.conv_blocks = blocks;
            t.conv1x1_workgroup = tg.min(max_wg).max(1);
            t.min_threads = 0;
            t.split_k_threads = 0;
            t.conv1x1_tiles = &[];
        }
        if let Some(tiles) = tiled_override() {
            t.conv1x1_tiles = tiles;
        }
        t
    }

    /// A one-line description of the adapter.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?}, {:?}, f16 {}, timestamps {}, cooperative matrices {}, {} storage buffers per stage, {} invocations per work group)",
            self.info.name,
            self.info.backend,
            self.info.device_type,
            self.family(),
            self.has_f16(),
            self.features.contains(wgpu::Features::TIMESTAMP_QUERY),
            self.coop_matrix.len(),
            self.limits.max_storage_buffers_per_shader_stage,
            self.limits.max_compute_invocations_per_workgroup
        )
    }
}

/// What a user without a GPU adapter reads (one line): what wgpu said, the Vulkan loader's
/// variables if they point it somewhere, and how to get a driver.
fn no_adapter(wgpu: &str) -> String {
    let pointed: Vec<String> = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
        .iter()
        .filter_map(|v| Some(format!("{v}={}", std::env::var(v).ok()?)))
        .collect();
    let pointed = match pointed.is_empty() {
        true => String::new(),
        false => format!("; the Vulkan loader was pointed at {}", pointed.join(" ")),
    };
    format!(
        "wgpu found no adapter ({}{pointed}): install a Vulkan driver, your GPU vendor's or Mesa's \
         software one (Debian/Ubuntu: `sudo apt-get install mesa-vulkan-drivers libvulkan1`)",
        wgpu.lines()
            .next()
            .unwrap_or("wgpu found none")
            .trim_end_matches('.')
    )
}

/// `HEIMDALL_CONV_BLOCK=BP,BS,TG` (for tuning experiments such as `heimdall bench --probe`):
/// every convolution uses `BP` pixels (columns) x `BS` output slices per thread and the 1x1
/// convolution `TG` threads per work group (no split reductions and no tiled 1x1 kernel unless
/// `HEIMDALL_CONV1X1_TILED` asks for it; `min_threads` is 0, so the depthwise kernel takes its
/// widest column block too). Values outside 1..=8 (blocks) or 1..=1024 (work group) are ignored.
fn block_override() -> Option<(&'static [(u32, u32)], u32)> {
    /// One block and the 1x1 work group.
    type Override = ([(u32, u32); 1], u32);
    static OVERRIDE: std::sync::OnceLock<Option<Override>> = std::sync::OnceLock::new();
    let o = OVERRIDE.get_or_init(|| {
        let v = std::env::var("HEIMDALL_CONV_BLOCK").ok()?;
        let n: Vec<u32> = v
            .split(',')
            .map(|x| x.trim().parse().ok())
            .collect::<Option<_>>()?;
        match n[..] {
            [bp @ 1..=8, bs @ 1..=8, tg @ 1..=1024] => Some(([(bp, bs)], tg)),
            _ => None,
        }
    });
    o.as_ref().map(|(b, tg)| (&b[..], *tg))
}

/// `HEIMDALL_CONV1X1_TILED=0` (never tile the 1x1 convolution, for A/B measurements),
/// `=all` (every tile of [`TILES`], on any family), `=128x128`, `128x64`, `64x64` (that tile
/// only, on any family) or `=TM,TN,GX,GY,BKS` (any well-formed tile, for sweeps); the size
/// rule of [`crate::ops::conv1x1_tiled::choose_tile`] still applies. Anything else is ignored.
fn tiled_override() -> Option<&'static [Conv1x1Tile]> {
    static OVERRIDE: std::sync::OnceLock<Option<Vec<Conv1x1Tile>>> = std::sync::OnceLock::new();
    OVERRIDE
        .get_or_init(
            || match std::env::var("HEIMDALL_CONV1X1_TILED").ok()?.as_str() {
                "0" => Some(Vec::new()),
                "all" => Some(TILES.to_vec()),
                name => Conv1x1Tile::parse(name)
                    .or_else(|| Conv1x1Tile::parse_counts(name))
                    .map(|t| vec![t]),
            },
        )
        .as_deref()
}

/// The rule of a device: on NVIDIA (subgroups of 32) with `SHADER_F16` and the 16x16x16
/// f16/f32 configuration, the tiles of [`crate::coop::COOP_TILES`] that fit the device, for layers of at
/// least 12 slices of reduction (48 channels, as the tiled kernel) and 32 work groups, 1x1 and
/// windowed convolutions.
/// `HEIMDALL_CONV_COOP=0` turns it off, `=1` drops the size thresholds (every conv of f16
/// inputs and weights, for tests), `=WM,WN,FM,FN,KT` takes that tile (for sweeps);
/// `HEIMDALL_CONV_COOP_WINDOWED=0` keeps windowed convolutions on their kernel.
fn coop_rule(ctx: &GpuContext) -> Option<ConvCoopRule> {
    if ctx.family() != GpuFamily::Nvidia || !ctx.has_f16() || !has_f16_f32_16(&ctx.coop_matrix) {
        return None;
    }
    let l = &ctx.limits;
    let max_threads = l
        .max_compute_invocations_per_workgroup
        .min(l.max_compute_workgroup_size_x);
    let fit: Vec<CoopTile> = COOP_TILES
        .into_iter()
        .filter(|t| t.fits(max_threads, l.max_compute_workgroup_storage_size))
        .collect();
    let mut rule = ConvCoopRule {
        tiles: COOP_TILES,
        tile_count: fit.len(),
        min_in_slices: 12,
        min_groups: 32,
        windowed: std::env::var("HEIMDALL_CONV_COOP_WINDOWED").map_or(true, |v| v != "0"),
    };
    rule.tiles[..fit.len()].copy_from_slice(&fit);
    match std::env::var("HEIMDALL_CONV_COOP").ok().as_deref() {
        Some("0") => return None,
        Some("1") => {
            rule.min_in_slices = 1;
            rule.min_groups = 0;
        }
        Some(s) => {
            if let Some(t) = CoopTile::parse(s) {
                if !t.fits(max_threads, l.max_compute_workgroup_storage_size) {
                    return None;
                }
                rule = ConvCoopRule::one(t, rule.min_in_slices, rule.min_groups, rule.windowed);
            }
        }
        None => {}
    }
    (rule.tile_count > 0).then_some(rule)
}

/// `HEIMDALL_TILED_MIN_THREADS=N`: [`Tuning::conv1x1_tiled_min_threads`] (for measurements).
fn tiled_min_threads() -> Option<usize> {
    static OVERRIDE: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *OVERRIDE.get_or_init(|| {
        std::env::var("HEIMDALL_TILED_MIN_THREADS")
            .ok()?
            .parse()
            .ok()
    })
}

/// Whether convolutions of f16 models compute in f16 ([`Tuning::f16_arithmetic`]): off by
/// default, since on the H100 it was neither faster nor as accurate as f16 storage with f32
/// arithmetic (docs/gpu.md, "f16 arithmetic"); `HEIMDALL_F16_ARITH=1` turns it on.
fn f16_arithmetic_default() -> bool {
    static OVERRIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OVERRIDE.get_or_init(|| std::env::var("HEIMDALL_F16_ARITH").is_ok_and(|v| v == "1"))
}

/// GPU families whose kernels are blocked differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuFamily {
    /// NVIDIA (PCI vendor 0x10de).
    Nvidia,
    /// AMD (0x1002).
    Amd,
    /// Intel (0x8086).
    Intel,
    /// ARM Mali (0x13b5).
    Mali,
    /// Qualcomm Adreno (0x5143).
    Adreno,
    /// Apple silicon.
    Apple,
    /// Imagination PowerVR (0x1010).
    PowerVr,
    /// A CPU rasteriser (lavapipe, SwiftShader).
    Software,
    /// Anything else.
    Other,
}

/// Blocking choices of the kernels for one device, from [`GpuContext::tuning`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// The family the choices were made for.
    pub family: GpuFamily,
    /// Threads a grid should keep before kernels give each thread more outputs.
    pub min_threads: usize,
    /// Threads per work group of the 1x1 convolution.
    pub conv1x1_workgroup: u32,
    /// Outputs per thread of the convolutions as (pixels or columns, output slices), largest
    /// first: the first whose grid keeps `min_threads` threads is used.
    pub conv_blocks: &'static [(u32, u32)],
    /// A 1x1 convolution whose grid has fewer threads than this (at one output per thread)
    /// splits its reduction over up to 16 threads of a work group, aiming at this many
    /// threads; 0: never.
    pub split_k_threads: usize,
    /// The most threads a work group may have on the device (its invocation limit and its
    /// x-size limit, whichever is lower): kernels that would like more (the large-window
    /// reduction's 256) take this many instead.
    pub max_workgroup: u32,
    /// The most work-group memory a kernel may declare, in bytes (the device's limit).
    pub max_workgroup_storage: u32,
    /// Tiles of the shared-memory tiled 1x1 kernel (`conv1x1_tiled.wgsl`), largest first; the
    /// one that suits a layer best is used ([`crate::ops::conv1x1_tiled::choose_tile`]); empty:
    /// never (the blocked and split-reduction kernels).
    pub conv1x1_tiles: &'static [Conv1x1Tile],
    /// The fewest input slices (4 channels each) a 1x1 convolution needs for the tiled kernel
    /// (12: 48 channels).
    pub conv1x1_tiled_min_slices: usize,
    /// The fewest threads the tiled kernel's grid must keep for a 1x1 convolution to take it
    /// (4096; `HEIMDALL_TILED_MIN_THREADS=N` replaces it).
    pub conv1x1_tiled_min_threads: usize,
    /// Convolutions of ops stored in f16 compute in f16 (`vec4<f16>` FMAs, f32 accumulation of
    /// long reductions: [`crate::arith::Arith`]); `false` (the default): f16 is storage only.
    pub f16_arithmetic: bool,
    /// Whether 1x1 convolutions of f16 inputs and weights may run on cooperative matrices
    /// (`conv_coop.wgsl`, tensor cores), and for which layers
    /// ([`crate::coop::ConvCoopRule`]); `None`: never.
    pub conv_coop: Option<crate::coop::ConvCoopRule>,
}

impl Tuning {
    /// The largest block of [`Tuning::conv_blocks`] whose grid (`threads(a, b)` threads) keeps
    /// at least [`Tuning::min_threads`] threads, skipping blocks of more output slices than
    /// there are (`slices`); `(1, 1)` when none does.
    pub fn conv_block(&self, slices: usize, threads: impl Fn(u32, u32) -> usize) -> (u32, u32) {
        self.conv_blocks
            .iter()
            .copied()
            .filter(|&(_, s)| s == 1 || s as usize <= slices)
            .find(|&(a, s)| threads(a, s) >= self.min_threads)
            .unwrap_or((1, 1))
    }

    /// Checks a tuning against `limits` before kernels are generated from it (a tuning passed in
    /// [`crate::GpuOptions::tuning`] is user input): the 1x1 work group must lie within the
    /// device's work-group limits, and every block's entries in 1..=8 (the generated tiles'
    /// register budget).
    pub fn validate(&self, limits: &wgpu::Limits) -> Result<(), String> {
        let max = limits
            .max_compute_invocations_per_workgroup
            .min(limits.max_compute_workgroup_size_x);
        let tg = self.conv1x1_workgroup;
        if !(1..=max).contains(&tg) {
            return Err(format!(
                "1x1 work group of {tg} threads: must be in 1..={max}"
            ));
        }
        if !(1..=max).contains(&self.max_workgroup) {
            return Err(format!(
                "work groups of up to {} threads: must be in 1..={max}",
                self.max_workgroup
            ));
        }
        if self.max_workgroup_storage > limits.max_compute_workgroup_storage_size {
            return Err(format!(
                "{} bytes of work-group memory: the device has {}",
                self.max_workgroup_storage, limits.max_compute_workgroup_storage_size
            ));
        }
        if let Some(t) = self
            .conv1x1_tiles
            .iter()
            .find(|t| !t.fits(u32::MAX, u32::MAX))
        {
            // A tile that is well formed but too large for the device is skipped, not an error.
            return Err(format!(
                "1x1 tile {t}: counts must be positive, at most 8 x 8 per thread, whole loads per thread"
            ));
        }
        if let Some(&(a, b)) = self
            .conv_blocks
            .iter()
            .find(|&&(a, b)| !(1..=8).contains(&a) || !(1..=8).contains(&b))
        {
            return Err(format!(
                "convolution block {a}x{b}: entries must be in 1..=8"
            ));
        }
        Ok(())
    }

    /// Into how many parts (a power of two, 2..=16) a 1x1 convolution of `outputs` output
    /// vec4s (pixels x output slices) and `in_slices` input slices splits its reduction, or
    /// `None` to keep one thread per output block: splits only when the grid is below
    /// [`Tuning::split_k_threads`] and each part keeps at least 4 input slices (H100, ms per run
    /// with parts of ≥ 4 slices vs parts of ≥ 32: face_landmark_with_attention 0.96 vs 1.24,
    /// iris_landmark 0.56 vs 0.73, pose_detection 0.61 vs 0.73).
    pub fn split_k(&self, outputs: usize, in_slices: usize) -> Option<u32> {
        if self.split_k_threads == 0 || outputs >= self.split_k_threads || in_slices < 8 {
            return None;
        }
        let mut ks = 1usize;
        while ks < 16 && outputs * ks < self.split_k_threads && in_slices / (2 * ks) >= 4 {
            ks *= 2;
        }
        (ks > 1).then_some(ks as u32)
    }
}
