//! The analyzer: step costs and their online profiles, Band's units, and Heimdall's frame-budget
//! chunks.
//!
//! A model is a sequence of *steps* in topological order (op indices of the engine's plan). Each
//! step has a GPU and a CPU cost and a set of processors able to run it. [`units`] groups maximal
//! runs of steps with the same processor set; [`partition`] packs each GPU-capable unit greedily
//! into chunks that fit the [`FrameBudget`]; [`ModelProfile`] keeps the costs up to date from
//! measurements with an exponential moving average and serialises to JSON; [`ModelCosts`] answers
//! range costs in O(1) for the scheduler; [`ProfileStore`] keeps profiles on disk between runs;
//! [`cache`] predicts the cost of steps that run with the convolution cache from the reported
//! hit rates.

pub mod cache;
mod chunks;
mod costs;
mod profile;
mod store;
mod units;

pub use cache::{CacheExpectation, CacheSpec};
pub use chunks::{Chunk, FrameBudget, Partition, partition};
pub(crate) use costs::Analysis;
pub use costs::{ModelCosts, UnitCost};
pub use profile::{CostModel, ModelProfile, ProfileError, StepCost};
pub use store::{ProfileKey, ProfileStore, StoreError};
pub use units::{Unit, units};
