//! The tiles of the shared-memory tiled 1x1 convolution (`shaders/conv1x1_tiled.wgsl`, built
//! by [`crate::ops::conv1x1_tiled`]): plain data that the tuning ([`crate::context::Tuning`])
//! lists and the kernel generator reads, kept apart from both so neither imports the other.

/// The work-group tile of the tiled 1x1 kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv1x1Tile {
    /// Pixels per thread.
    pub tm: u32,
    /// Output slices (4 channels each) per thread.
    pub tn: u32,
    /// Threads along pixels.
    pub gx: u32,
    /// Threads along output slices.
    pub gy: u32,
    /// Input slices per K tile (staged at once).
    pub bks: u32,
}

/// 128 pixels x 128 output channels, 256 threads of 8 x 8 outputs, K tiles of 8 channels
/// (16 KiB of work-group memory: WebGPU's default limit).
pub const TILE_128X128: Conv1x1Tile = Conv1x1Tile {
    tm: 8,
    tn: 2,
    gx: 16,
    gy: 16,
    bks: 2,
};

/// 128 pixels x 64 output channels, 128 threads of 8 x 8 outputs (12 KiB).
pub const TILE_128X64: Conv1x1Tile = Conv1x1Tile {
    tm: 8,
    tn: 2,
    gx: 16,
    gy: 8,
    bks: 2,
};

/// 64 pixels x 64 output channels, 64 threads of 8 x 8 outputs (8 KiB).
pub const TILE_64X64: Conv1x1Tile = Conv1x1Tile {
    tm: 8,
    tn: 2,
    gx: 8,
    gy: 8,
    bks: 2,
};

/// The tiles [`Conv1x1Tile::parse`] knows, largest first.
pub const TILES: [Conv1x1Tile; 3] = [TILE_128X128, TILE_128X64, TILE_64X64];

impl Conv1x1Tile {
    /// Threads per work group.
    pub const fn threads(&self) -> u32 {
        self.gx * self.gy
    }

    /// Pixels per work group.
    pub const fn pixels(&self) -> u32 {
        self.tm * self.gx
    }

    /// Output slices per work group.
    pub const fn slices(&self) -> u32 {
        self.tn * self.gy
    }

    /// Bytes of work-group memory: two buffers of a K tile of x and of w, in f32.
    pub const fn storage_bytes(&self) -> u32 {
        2 * (self.bks * self.pixels() + 4 * self.bks * self.slices()) * 16
    }

    /// Whether the tile is well formed (every count positive, both K tiles a whole number of
    /// loads per thread, at most 8 x 8 vec4 accumulators) and fits a work group of
    /// `max_threads` threads and `max_storage` bytes.
    pub fn fits(&self, max_threads: u32, max_storage: u32) -> bool {
        let t = self.threads();
        [self.tm, self.tn, self.gx, self.gy, self.bks]
            .iter()
            .all(|&v| v > 0)
            && self.tm <= 8
            && self.tn <= 8
            && t <= max_threads
            && self.storage_bytes() <= max_storage
            && (self.bks * self.pixels()).is_multiple_of(t)
            && (4 * self.bks * self.slices()).is_multiple_of(t)
    }

    /// A tile by name, `PIXELSxCHANNELS` (`128x128`, `128x64`, `64x64`).
    pub fn parse(name: &str) -> Option<Conv1x1Tile> {
        TILES.into_iter().find(|t| t.name() == name)
    }

    /// A tile from its counts `TM,TN,GX,GY,BKS` (for tuning sweeps), if well formed.
    pub fn parse_counts(counts: &str) -> Option<Conv1x1Tile> {
        let n: Vec<u32> = counts
            .split(',')
            .map(|v| v.trim().parse().ok())
            .collect::<Option<_>>()?;
        let [tm, tn, gx, gy, bks] = n[..] else {
            return None;
        };
        let t = Conv1x1Tile {
            tm,
            tn,
            gx,
            gy,
            bks,
        };
        (gx <= 1024 && gy <= 1024 && bks <= 64 && t.fits(u32::MAX, u32::MAX)).then_some(t)
    }

    /// The tile's name, `PIXELSxCHANNELS`.
    pub fn name(&self) -> String {
        format!("{}x{}", self.pixels(), 4 * self.slices())
    }
}

impl std::fmt::Display for Conv1x1Tile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tiled {} px x {} ch per work group, {} px x {} slices per thread, {} threads, K tiles of {} slices",
            self.pixels(),
            4 * self.slices(),
            self.tm,
            self.tn,
            self.threads(),
            self.bks
        )
    }
}
