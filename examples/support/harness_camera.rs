//! The camera source the harness counts frames on (its own module so that the harness's add-ons,
//! such as the soak sampler, read it without depending on the harness).

use bevy::prelude::*;

/// The camera source the harness counts frames on, held back until the DNNs are ready.
#[derive(Resource, Clone, Copy, Debug)]
pub struct HarnessCamera(pub Entity);
