//! A timeline of what the coordinator decided and what ran, exportable as Chrome trace JSON
//! (open it in Perfetto or `chrome://tracing`).

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

/// An append-only list of events.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    events: Vec<TimelineEvent>,
    enabled: bool,
}

impl Timeline {
    /// A timeline that records when `enabled` (a disabled one drops everything, for benchmarks).
    pub fn new(enabled: bool) -> Self {
        Timeline {
            events: Vec::new(),
            enabled,
        }
    }

    /// Whether events are recorded.
    pub fn is_enabled(&self) -> bool {
        self.enabled
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
            self.events.push(TimelineEvent {
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
            self.events.push(TimelineEvent {
                name: name.into(),
                category,
                lane,
                start_ms: at_ms,
                dur_ms: None,
                args,
            });
        }
    }

    /// The recorded events, in recording order.
    pub fn events(&self) -> &[TimelineEvent] {
        &self.events
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
