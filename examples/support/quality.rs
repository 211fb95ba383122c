//! What `--quality low|medium|high` means for the 3D apps: real rendering work (shadow map size
//! and cascades, MSAA, how many furniture instances, extra lights, HDR bloom), so an experiment
//! can bring the GPU near its frame budget with the kind of work AR apps do.

use bevy::light::{CascadeShadowConfig, CascadeShadowConfigBuilder};
use bevy::prelude::*;

use crate::args::{AppArgs, Quality};

/// The rendering settings of one quality level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QualitySettings {
    /// MSAA samples (1: off).
    pub msaa_samples: u32,
    /// Side of each directional-light shadow cascade, in texels.
    pub shadow_map_size: usize,
    /// Number of shadow cascades.
    pub cascades: usize,
    /// Furniture instances besides the main one (a catalogue shelf, each a full PBR model with
    /// shadows).
    pub instances: usize,
    /// Point lights with shadows (lamps of the scene).
    pub point_lights: usize,
    /// HDR rendering with bloom.
    pub bloom: bool,
}

impl QualitySettings {
    /// The settings of `quality`.
    pub fn of(quality: Quality) -> Self {
        match quality {
            Quality::Low => QualitySettings {
                msaa_samples: 1,
                shadow_map_size: 1024,
                cascades: 1,
                instances: 2,
                point_lights: 0,
                bloom: false,
            },
            Quality::Medium => QualitySettings {
                msaa_samples: 4,
                shadow_map_size: 2048,
                cascades: 2,
                instances: 4,
                point_lights: 0,
                bloom: false,
            },
            // Measured on an H200 at 2560x1440 (docs/apps.md): 4096 x 4 cascades, 32 instances
            // and two lamps took 29 ms of scene GPU time, beyond a 60 Hz frame; this level is
            // about three quarters of it.
            Quality::High => QualitySettings {
                msaa_samples: 4,
                shadow_map_size: 2048,
                cascades: 2,
                instances: 8,
                point_lights: 1,
                bloom: true,
            },
        }
    }

    /// The settings of the run: its `--quality` level, with `--instances` if given.
    pub fn of_args(args: &AppArgs) -> Self {
        let mut s = Self::of(args.quality);
        if let Some(n) = args.instances {
            s.instances = n;
        }
        s
    }

    /// The camera's MSAA component.
    pub fn msaa(&self) -> Msaa {
        match self.msaa_samples {
            1 => Msaa::Off,
            2 => Msaa::Sample2,
            8 => Msaa::Sample8,
            _ => Msaa::Sample4,
        }
    }

    /// The cascades of the directional light (a room: shadows out to 12 m).
    pub fn cascade_config(&self) -> CascadeShadowConfig {
        CascadeShadowConfigBuilder {
            num_cascades: self.cascades,
            minimum_distance: 0.1,
            first_cascade_far_bound: if self.cascades == 1 { 12.0 } else { 3.0 },
            maximum_distance: 12.0,
            overlap_proportion: 0.2,
        }
        .build()
    }

    /// As JSON for `stats.json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "msaa_samples": self.msaa_samples,
            "shadow_map_size": self.shadow_map_size,
            "cascades": self.cascades,
            "instances": self.instances,
            "point_lights": self.point_lights,
            "bloom": self.bloom,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_grow() {
        let [l, m, h] = [Quality::Low, Quality::Medium, Quality::High].map(QualitySettings::of);
        assert!(l.shadow_map_size < m.shadow_map_size && m.shadow_map_size <= h.shadow_map_size);
        assert!(l.instances < m.instances && m.instances < h.instances);
        assert!(l.cascades <= m.cascades && m.cascades <= h.cascades);
        assert!(l.point_lights <= m.point_lights && m.point_lights < h.point_lights);
        assert_eq!(l.msaa(), Msaa::Off);
        assert_eq!(h.cascade_config().bounds.len(), 2);
    }
}
