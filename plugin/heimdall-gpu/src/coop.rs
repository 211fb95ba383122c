//! Cooperative matrices (`VK_KHR_cooperative_matrix` through wgpu's
//! `EXPERIMENTAL_COOPERATIVE_MATRIX`: NVIDIA's tensor cores): the adapter's configurations, the
//! tiles of the convolutions that run on them ([`crate::ops::conv_coop`]) and the rule that
//! chooses them ([`ConvCoopRule`], made per device by [`crate::GpuContext::tuning`]); the
//! matrix-product throughput probe is [`crate::probe::coop_gemm_rate`]. Plain data: no device.
//! [`crate::GpuContext::create`] asks for the feature where the adapter offers it
//! (`HEIMDALL_COOP_MATRIX=0`: not). Measurements: `docs/gpu.md`, "The 1x1 convolution on
//! tensor cores".

use wgpu::{CooperativeMatrixProperties, CooperativeScalarType};

use crate::precision::Precision;

/// A work group's share of the cooperative-matrix 1x1 convolution: `wm` x `wn` subgroups of 32
/// threads, each with `fm` x `fn_` 16x16 f32 accumulators, over K tiles of `kt` input channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoopTile {
    /// Subgroups along the pixels.
    pub wm: u32,
    /// Subgroups along the output channels.
    pub wn: u32,
    /// 16-pixel fragments per subgroup.
    pub fm: u32,
    /// 16-channel fragments per subgroup.
    pub fn_: u32,
    /// Input channels per K tile (16 or 32).
    pub kt: u32,
}

/// 128 pixels x 128 output channels, 4 subgroups of 4 x 4 fragments, K tiles of 16 channels
/// (H100, the probe's 128x128x256 -> 256: 0.0311 ms, the best of ten tiles).
pub const COOP_128X128: CoopTile = CoopTile {
    wm: 2,
    wn: 2,
    fm: 4,
    fn_: 4,
    kt: 16,
};

/// 128 pixels x 64 output channels, 4 subgroups of 4 x 2 fragments, K tiles of 32 channels
/// (H100, the probe's layer: 0.0403 ms).
pub const COOP_128X64: CoopTile = CoopTile {
    wm: 2,
    wn: 2,
    fm: 4,
    fn_: 2,
    kt: 32,
};

/// 64 pixels x 64 output channels, 4 subgroups of 2 x 2 fragments, K tiles of 16 channels
/// (H100, the probe's layer: 0.0368 ms; with K tiles of 32, 0.0449).
pub const COOP_64X64: CoopTile = CoopTile {
    wm: 2,
    wn: 2,
    fm: 2,
    fn_: 2,
    kt: 16,
};

/// The tiles of the rule, largest first ([`choose`] takes the one that pads the output
/// channels least).
pub const COOP_TILES: [CoopTile; 3] = [COOP_128X128, COOP_128X64, COOP_64X64];

impl CoopTile {
    /// Stride of a subgroup's f32 scratch rows (16 channels + 4 of padding: 80 bytes).
    pub const SCRATCH_STRIDE: u32 = 20;

    /// Threads per work group.
    pub fn threads(&self) -> u32 {
        32 * self.wm * self.wn
    }

    /// Pixels per work group.
    pub fn pixels(&self) -> u32 {
        16 * self.fm * self.wm
    }

    /// Output channels per work group.
    pub fn channels(&self) -> u32 {
        16 * self.fn_ * self.wn
    }

    /// Output slices (4 channels) per work group.
    pub fn slices(&self) -> u32 {
        self.channels() / 4
    }

    /// Input slices per K tile.
    pub fn ks(&self) -> u32 {
        self.kt / 4
    }

    /// Row stride of the staged x tile in f16 (K tile + 8: rows 16-byte aligned, skewed banks).
    pub fn x_stride(&self) -> u32 {
        self.kt + 8
    }

    /// Row stride of the staged w tile in f16.
    pub fn w_stride(&self) -> u32 {
        self.channels() + 8
    }

    /// Work-group memory in bytes: the x and w tiles (f16) and the subgroups' scratch (f32).
    pub fn storage_bytes(&self) -> u32 {
        2 * self.pixels() * self.x_stride()
            + 2 * self.kt * self.w_stride()
            + 4 * self.wm * self.wn * 16 * Self::SCRATCH_STRIDE
    }

    /// Whether the tile is well formed (K tiles of 16 or 32, whole loads per thread) and fits
    /// `max_threads` threads and `max_storage` bytes of work-group memory.
    pub fn fits(&self, max_threads: u32, max_storage: u32) -> bool {
        let counts = [self.wm, self.wn, self.fm, self.fn_];
        counts.iter().all(|&c| (1..=8).contains(&c))
            && matches!(self.kt, 16 | 32)
            && (self.pixels() * self.ks()).is_multiple_of(self.threads())
            && (self.kt * self.slices()).is_multiple_of(self.threads())
            && self.threads() <= max_threads
            && self.storage_bytes() <= max_storage
    }

    /// Parses `WM,WN,FM,FN,KT`.
    pub fn parse(s: &str) -> Option<CoopTile> {
        let n: Vec<u32> = s
            .split(',')
            .map(|x| x.trim().parse().ok())
            .collect::<Option<_>>()?;
        let [wm, wn, fm, fn_, kt] = n[..] else {
            return None;
        };
        let t = CoopTile {
            wm,
            wn,
            fm,
            fn_,
            kt,
        };
        t.fits(u32::MAX, u32::MAX).then_some(t)
    }
}

impl std::fmt::Display for CoopTile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cooperative matrices {}x{} ({}x{} subgroups of {}x{} 16x16 fragments, K tiles of {})",
            self.pixels(),
            self.channels(),
            self.wm,
            self.wn,
            self.fm,
            self.fn_,
            self.kt
        )
    }
}

/// Which convolutions take the cooperative-matrix kernel ([`crate::Tuning::conv_coop`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvCoopRule {
    /// The tiles, largest first; `tile_count` of them are used.
    pub tiles: [CoopTile; 3],
    /// How many of `tiles` the rule may take (1 with a forced tile).
    pub tile_count: usize,
    /// The fewest slices (4 channels each) of the reduction: input slices of a 1x1, taps x
    /// input slices of a window.
    pub min_in_slices: usize,
    /// The fewest work groups the layer's grid must have.
    pub min_groups: usize,
    /// Whether windowed convolutions (CONV_2D other than 1x1 stride 1) take it too.
    pub windowed: bool,
}

/// Whether `configs` hold the configuration the kernels use: 16x16x16, f16 A and B, f32
/// accumulators.
pub fn has_f16_f32_16(configs: &[CooperativeMatrixProperties]) -> bool {
    configs.iter().any(|c| {
        (c.m_size, c.n_size, c.k_size) == (16, 16, 16)
            && c.ab_type == CooperativeScalarType::F16
            && c.cr_type == CooperativeScalarType::F32
    })
}

impl ConvCoopRule {
    /// A rule of the one tile `tile`.
    pub fn one(tile: CoopTile, min_in_slices: usize, min_groups: usize, windowed: bool) -> Self {
        ConvCoopRule {
            tiles: [tile; 3],
            tile_count: 1,
            min_in_slices,
            min_groups,
            windowed,
        }
    }
}

/// The tile a conv of `pixels` output pixels, `in_slices` slices of reduction and `out_slices`
/// output slices takes under `rule`, or `None`: x and w (`inputs`) must be f16 and the
/// reduction at least [`ConvCoopRule::min_in_slices`] long; of the rule's tiles whose output
/// channels are at least half used and whose grid has [`ConvCoopRule::min_groups`] work
/// groups (without a size rule, every tile qualifies), those that pad the output slices
/// least; of those the first (largest) whose grid has [`FULL_GROUPS`] work groups, else the
/// one whose grid has the most.
pub fn choose(
    rule: Option<ConvCoopRule>,
    inputs: [Precision; 2],
    pixels: usize,
    in_slices: usize,
    out_slices: usize,
) -> Option<CoopTile> {
    let r = rule?;
    if inputs != [Precision::F16; 2] || pixels == 0 || in_slices < r.min_in_slices.max(1) {
        return None;
    }
    let forced = r.min_groups == 0;
    let groups = |t: &CoopTile| {
        pixels.div_ceil(t.pixels() as usize) * out_slices.div_ceil(t.slices() as usize)
    };
    let tiles = &r.tiles[..r.tile_count.min(3)];
    let ok: Vec<CoopTile> = tiles
        .iter()
        .copied()
        .filter(|t| forced || (2 * out_slices >= t.slices() as usize && groups(t) >= r.min_groups))
        .collect();
    let least = ok
        .iter()
        .map(|t| out_slices.next_multiple_of(t.slices() as usize))
        .min()?;
    let best: Vec<CoopTile> = ok
        .into_iter()
        .filter(|t| out_slices.next_multiple_of(t.slices() as usize) == least)
        .collect();
    // The largest tile that keeps FULL_GROUPS work groups, else the one with the most.
    best.iter()
        .copied()
        .find(|t| groups(t) >= FULL_GROUPS)
        .or_else(|| best.iter().copied().max_by_key(|t| groups(t)))
}

/// Work groups a tile's grid should have before a larger tile is taken: about two per
/// multiprocessor of an H100 (132). PP-OCRv6_det_small, f16 on cooperative matrices: 1.146 ms
/// per run with 64x64 tiles throughout, 1.173 ms with the largest tile of least padding.
pub const FULL_GROUPS: usize = 256;

/// A configuration as `MxNxK A->C`, e.g. `16x16x16 F16->F32`.
pub fn describe(c: &CooperativeMatrixProperties) -> String {
    format!(
        "{}x{}x{} {:?}->{:?}{}",
        c.m_size,
        c.n_size,
        c.k_size,
        c.ab_type,
        c.cr_type,
        if c.saturating_accumulation {
            " (saturating)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_fit_the_requested_limits() {
        // The device asks for up to 48 KiB where it has cooperative matrices; 128x128 and
        // 64x64 fit WebGPU's default 16 KiB.
        let l = wgpu::Limits::default();
        for t in COOP_TILES {
            assert!(
                t.fits(l.max_compute_invocations_per_workgroup, 48 << 10),
                "{t}"
            );
            let default = t.fits(
                l.max_compute_invocations_per_workgroup,
                l.max_compute_workgroup_storage_size,
            );
            assert_eq!(
                default,
                t != COOP_128X64,
                "{t}: {} bytes",
                t.storage_bytes()
            );
            let counts = format!("{},{},{},{},{}", t.wm, t.wn, t.fm, t.fn_, t.kt);
            assert_eq!(CoopTile::parse(&counts), Some(t));
        }
        assert_eq!(COOP_128X128.storage_bytes(), 6144 + 4352 + 5120);
        assert_eq!(CoopTile::parse("2,2,2,2,24"), None);
        assert_eq!(CoopTile::parse("2,2,2,2"), None);
    }

    #[test]
    fn choice_needs_f16_inputs_and_size() {
        let rule = Some(ConvCoopRule {
            tiles: COOP_TILES,
            tile_count: 3,
            min_in_slices: 12,
            min_groups: 32,
            windowed: true,
        });
        let f16 = [Precision::F16; 2];
        assert_eq!(choose(rule, f16, 128 * 128, 64, 64), Some(COOP_128X128));
        // PP-OCR's 80x160 layers, 96 output channels: 128 either way; 100, 200 and 400 work
        // groups: the 64x64 tile. 48 channels (128x128 pads too much): 64x64 too.
        assert_eq!(choose(rule, f16, 80 * 160, 12, 24), Some(COOP_64X64));
        assert_eq!(choose(rule, f16, 80 * 160, 12, 12), Some(COOP_64X64));
        // A large layer with 64 channels: 128x64 (512 work groups).
        assert_eq!(choose(rule, f16, 256 * 256, 64, 16), Some(COOP_128X64));
        assert_eq!(choose(rule, [Precision::F32; 2], 128 * 128, 64, 64), None);
        assert_eq!(
            choose(rule, [Precision::F16, Precision::F32], 128 * 128, 64, 64),
            None
        );
        assert_eq!(choose(rule, f16, 128 * 128, 8, 64), None);
        // A small grid: 64x64 tiles keep 32 work groups where 128x128 ones do not.
        assert_eq!(choose(rule, f16, 32 * 32, 64, 32), Some(COOP_64X64));
        assert_eq!(choose(rule, f16, 64, 64, 64), None);
        assert_eq!(choose(None, f16, 128 * 128, 64, 64), None);
        let one = Some(ConvCoopRule::one(COOP_64X64, 1, 0, true));
        assert_eq!(choose(one, f16, 5, 1, 1), Some(COOP_64X64));
    }
}
