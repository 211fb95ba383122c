//! A timeline of what the coordinator decided and what ran, exportable as Chrome trace JSON
//! (open it in Perfetto or `chrome://tracing`).
//!
//! The timeline is a ring: it keeps the most recent [`Timeline::capacity`] events and drops the
//! oldest, so an app that runs for hours with tracing on uses bounded memory.

use std::collections::VecDeque;

use serde_json::{Value, json};

/// Where an event happened (one row of the trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Scene rendering on the GPU.
    Render,
    /// DNN chunks on the GPU.
    Gpu,
    /// A CPU worker.
    CpuWorker(usize),
    /// The coordinator's decisions (instants).
    Coordinator,
}

impl Lane {
    fn tid(self) -> u64 {
        match self {
            Lane::Render => 1,
            Lane::Gpu => 2,
            Lane::Coordinator => 3,
            Lane::CpuWorker(i) => 10 + i as u64,
        }
    }

    fn label(self) -> String {
        match self {
            Lane::Render => "GPU render".into(),
            Lane::Gpu => "GPU DNN chunks".into(),
            Lane::Coordinator => "coordinator".into(),
            Lane::CpuWorker(i) => format!("CPU worker {i}"),
        }
    }
}

/// One entry of the timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineEvent {
    /// What it is (model name, "render", "offload", ...).
    pub name: String,
    /// Category (`chunk`, `cpu`, `render`, `decision`, `offload`, ...).
    pub category: &'static str,
    /// Row.
    pub lane: Lane,
    /// Start, ms on the caller's clock.
    pub start_ms: f64,
    /// Duration in ms; `None` for an instant.
    pub dur_ms: Option<f64>,
    /// Extra key/value pairs shown in the trace viewer.
    pub args: Vec<(&'static str, String)>,
}

/// The most recent events, in recording order (a ring of bounded capacity).
#[derive(Clone, Debug)]
pub struct Timeline {
    events: VecDeque<TimelineEvent>,
    capacity: usize,
    dropped: u64,
    enabled: bool,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new(false)
    }
}

impl Timeline {
    /// Events kept by [`Timeline::new`]: about a minute of a 60 fps app with a few DNNs
    /// (an event is about 150 bytes, so some 5 MB at most).
    pub const DEFAULT_CAPACITY: usize = 1 << 15;

    /// A timeline that records when `enabled` (a disabled one drops everything), keeping the
    /// last [`Timeline::DEFAULT_CAPACITY`] events.
    pub fn new(enabled: bool) -> Self {
        Timeline::with_capacity(enabled, Self::DEFAULT_CAPACITY)
    }

    /// A timeline that keeps the last `capacity` events (at least one) when `enabled`. The ring's
    /// room is allocated here, once (up to 2^20 events), so recording does not grow it step by
    /// step (the last doubling of a 32,768-event ring took 3.6 MB at once, minutes into a run).
    pub fn with_capacity(enabled: bool, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Timeline {
            events: VecDeque::with_capacity(if enabled { capacity.min(1 << 20) } else { 0 }),
            capacity,
            dropped: 0,
            enabled,
        }
    }

    /// Whether events are recorded.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The most events kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Events kept now.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event is kept.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Events recorded and since dropped to make room (the oldest go first).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn push(&mut self, e: TimelineEvent) {
        if self.events.len() == self.capacity {
            self.events.pop_front();
            self.dropped += 1;
        }
        self.events.push_back(e);
    }

    /// Records a span.
    pub fn span(
        &mut self,
        lane: Lane,
        category: &'static str,
        name: impl Into<String>,
        start_ms: f64,
        end_ms: f64,
        args: Vec<(&'static str, String)>,
    ) {
        if self.enabled {
            self.push(TimelineEvent {
                name: name.into(),
                category,
                lane,
                start_ms,
                dur_ms: Some((end_ms - start_ms).max(0.0)),
                args,
            });
        }
    }

    /// Records an instant.
    pub fn instant(
        &mut self,
        lane: Lane,
        category: &'static str,
        name: impl Into<String>,
        at_ms: f64,
        args: Vec<(&'static str, String)>,
    ) {
        if self.enabled {
            self.push(TimelineEvent {
                name: name.into(),
                category,
                lane,
                start_ms: at_ms,
                dur_ms: None,
                args,
            });
        }
    }

    /// The events kept, oldest first.
    pub fn events(&self) -> impl ExactSizeIterator<Item = &TimelineEvent> + '_ {
        self.events.iter()
    }

    /// The timeline as a Chrome trace (JSON object format: `traceEvents` with complete `X` events,
    /// instant `i` events and `M` thread-name metadata; timestamps in microseconds).
    pub fn to_chrome_trace(&self) -> Value {
        let mut out = Vec::with_capacity(self.events.len() + 8);
        let mut lanes: Vec<Lane> = Vec::new();
        for e in &self.events {
            if !lanes.contains(&e.lane) {
                lanes.push(e.lane);
            }
        }
        lanes.sort_by_key(|l| l.tid());
        out.push(
            json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                        "args": {"name": "heimdall"}}),
        );
        for l in &lanes {
            out.push(
                json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": l.tid(),
                            "args": {"name": l.label()}}),
            );
        }
        for e in &self.events {
            let args: serde_json::Map<String, Value> = e
                .args
                .iter()
                .map(|(k, v)| ((*k).to_string(), Value::String(v.clone())))
                .collect();
            let mut ev = json!({
                "name": e.name, "cat": e.category, "pid": 1, "tid": e.lane.tid(),
                "ts": e.start_ms * 1000.0, "args": args,
            });
            match e.dur_ms {
                Some(d) => {
                    ev["ph"] = json!("X");
                    ev["dur"] = json!(d * 1000.0);
                }
                None => {
                    ev["ph"] = json!("i");
                    ev["s"] = json!("t");
                }
            }
            out.push(ev);
        }
        json!({"traceEvents": out, "displayTimeUnit": "ms"})
    }

    /// [`Timeline::to_chrome_trace`] as a string.
    pub fn to_chrome_trace_string(&self) -> String {
        self.to_chrome_trace().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_most_recent_events() {
        let mut t = Timeline::with_capacity(true, 3);
        for k in 0..5 {
            t.instant(
                Lane::Coordinator,
                "decision",
                format!("e{k}"),
                k as f64,
                Vec::new(),
            );
        }
        assert_eq!(t.len(), 3);
        assert_eq!(t.dropped(), 2);
        let names: Vec<&str> = t.events().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["e2", "e3", "e4"]);
        let trace = t.to_chrome_trace();
        // 3 events + the process name + one lane name.
        assert_eq!(trace["traceEvents"].as_array().unwrap().len(), 5);
        let mut off = Timeline::with_capacity(false, 3);
        off.span(Lane::Gpu, "chunk", "x", 0.0, 1.0, Vec::new());
        assert!(off.is_empty());
        assert_eq!(Timeline::with_capacity(true, 0).capacity(), 1);
    }
}
