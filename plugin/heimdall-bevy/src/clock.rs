//! The plugin's clock: one origin for capture times, latencies and the coordinator's virtual
//! time, the same in the main world, the render world and the workers.

use std::time::{Duration, Instant};

use bevy::prelude::*;

/// The clock's origin (a resource in both worlds; `Copy`, nothing shared mutably).
#[derive(Resource, Clone, Copy, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Resource, Debug, Clone)]
pub struct HeimdallClock {
    start: Instant,
}

impl Default for HeimdallClock {
    fn default() -> Self {
        HeimdallClock {
            start: Instant::now(),
        }
    }
}

impl HeimdallClock {
    /// The origin.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Time since the origin.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Time since the origin, ms.
    pub fn now_ms(&self) -> f64 {
        self.elapsed().as_secs_f64() * 1e3
    }

    /// A time since the origin in ms.
    pub fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1e3
    }
}
