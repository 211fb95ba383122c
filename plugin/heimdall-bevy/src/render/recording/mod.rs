//! The run's recording, beside the frame path: the path sends what the scheduler did and measured
//! as events (`events.rs`) and one observer (`log.rs`'s [`RunLog`]) turns them into the
//! simulator's recording and the scheduler's latencies for `stats.json`. Nothing here decides
//! anything the frame does.

mod events;
mod log;

pub(crate) use events::{RegisteredModel, RunEvent, RunEvents, observe_run};
pub(crate) use log::RunLog;
