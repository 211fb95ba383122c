//! What the main world and the render world share, so that neither names the other's systems:
//! the channel from the render world (and the CPU workers) to the main world ([`channel`]),
//! the render thread's phases as `stats.json` reports them ([`phases`]), the accuracy guard's
//! decision as JSON ([`guard_json`]), and the handle on the device readbacks belong to
//! ([`readback_device`]). The main-world modules and `render/` import these; no main-world
//! module imports `render` (`scripts/render_boundary.py` checks it), `lib.rs` aside, which
//! assembles both worlds.

pub(crate) mod channel;
pub(crate) mod guard_json;
pub mod phases;
pub(crate) mod readback_device;
