//! Registered models: what the app declares about each.

use serde::{Deserialize, Serialize};

use crate::analyzer::StepCost;
use crate::utility::UtilityParams;

/// Index of a registered model, in registration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ModelId(pub usize);

/// What the app declares about a model when registering it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// Name for reports and traces.
    pub name: String,
    /// The model's steps in execution order, with their costs and processors.
    pub steps: Vec<StepCost>,
    /// Utility parameters.
    pub utility: UtilityParams,
    /// Relative deadline of one inference, ms.
    pub deadline_ms: Option<f64>,
}
