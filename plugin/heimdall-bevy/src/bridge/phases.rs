//! The phases of a frame on the render thread, as the render world measures them
//! (`render/phases.rs` stamps them) and the main world reports them (`stats.json`'s
//! `render_phases_ms` and `late_frame_phases`, the frame-start pacing).

/// The phases of one frame, in order; together they span the interval from the previous
/// frame's presentation to this one's.
pub const PHASES: [&str; PHASE_COUNT] = [
    "wait_main_world",
    "extract",
    "bevy_prepare_before_heimdall",
    "heimdall_prepare",
    "heimdall_encode",
    "bevy_prepare_after_heimdall",
    "graph_scene",
    "heimdall_encode_after_scene",
    "submit",
    "finish_and_present",
];

/// How many phases a frame has.
pub const PHASE_COUNT: usize = 10;

/// One frame's phases, ms, in the order of [`PHASES`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FramePhases {
    /// Milliseconds per phase.
    pub ms: [f32; PHASE_COUNT],
    /// The scheduler's frame number (as in the GPU timeline), when the plugin schedules.
    pub frame: Option<u64>,
}
