//! The plugin's main-world system sets.

use bevy::prelude::*;

/// The plugin's main-world system sets, for ordering app systems against it.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeimdallSystems {
    /// Statuses and results arrive as components and events (`PreUpdate`). They come first, so
    /// that a result finished by the GPU reaches the world before anything else of the frame
    /// (the next camera frame's decode and copy included) and the frames it pinned are released
    /// before the camera takes a texture. The set runs again at the start of `PostUpdate`
    /// (`HeimdallSettings::late_delivery`, on by default) for what finished while the update
    /// ran, so the frame rendered next shows it; an app system that must see every result of
    /// the frame runs after it there.
    Results,
    /// New camera frames are written (`PreUpdate`, after `Results`).
    Camera,
    /// Requests are issued (`PostUpdate`, after the late `Results`).
    Requests,
}
