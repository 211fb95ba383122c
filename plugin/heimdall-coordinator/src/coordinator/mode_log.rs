//! Where a model's new inferences have run over time, in bounded memory: how many times it moved
//! between the GPU and the CPU workers, the time it spent offloaded, and its latest moves.

use std::collections::VecDeque;

use crate::processor::Processor;

/// A model's moves between processors. A model that flaps for hours keeps
/// [`ModeLog::RECENT`] moves, not one per move.
#[derive(Clone, Debug)]
pub(super) struct ModeLog {
    switches: u64,
    /// Time on the CPU up to `current`'s start, ms.
    closed_cpu_ms: f64,
    /// Since when the model has been where it is now.
    current: (f64, Processor),
    recent: VecDeque<(f64, Processor)>,
}

impl ModeLog {
    /// Moves kept for reports.
    pub const RECENT: usize = 64;

    /// On the GPU from time 0.
    pub fn new() -> Self {
        ModeLog {
            switches: 0,
            closed_cpu_ms: 0.0,
            current: (0.0, Processor::Gpu),
            recent: VecDeque::from([(0.0, Processor::Gpu)]),
        }
    }

    /// The model's new inferences go to `to` from `now` on.
    pub fn switch(&mut self, now: f64, to: Processor) {
        if self.current.1 == Processor::Cpu {
            self.closed_cpu_ms += (now - self.current.0).max(0.0);
        }
        self.current = (now, to);
        self.switches += 1;
        if self.recent.len() == Self::RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((now, to));
    }

    /// Since when the model has been where it is now, ms.
    pub fn since(&self) -> f64 {
        self.current.0
    }

    /// Moves so far.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// Time spent offloaded to the CPU up to `until`, ms.
    pub fn offloaded_ms(&self, until: f64) -> f64 {
        let open = if self.current.1 == Processor::Cpu {
            (until - self.current.0).max(0.0)
        } else {
            0.0
        };
        self.closed_cpu_ms + open
    }

    /// The latest moves, oldest first (with `(0, GPU)` first until more than
    /// [`ModeLog::RECENT`] - 1 moves happened).
    pub fn recent(&self) -> Vec<(f64, Processor)> {
        self.recent.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offloaded_time_and_switches_by_hand() {
        let mut log = ModeLog::new();
        assert_eq!(log.offloaded_ms(100.0), 0.0);
        log.switch(10.0, Processor::Cpu);
        log.switch(25.0, Processor::Gpu);
        log.switch(40.0, Processor::Cpu);
        // 15 ms closed, then 60 - 40 open.
        assert_eq!(log.offloaded_ms(60.0), 35.0);
        assert_eq!(log.switches(), 3);
        assert_eq!(
            log.recent(),
            vec![
                (0.0, Processor::Gpu),
                (10.0, Processor::Cpu),
                (25.0, Processor::Gpu),
                (40.0, Processor::Cpu)
            ]
        );
    }

    #[test]
    fn a_flapping_model_keeps_a_bounded_log() {
        let mut log = ModeLog::new();
        for k in 0..10_000u32 {
            let to = if k.is_multiple_of(2) {
                Processor::Cpu
            } else {
                Processor::Gpu
            };
            log.switch(k as f64, to);
        }
        assert_eq!(log.switches(), 10_000);
        assert_eq!(log.recent().len(), ModeLog::RECENT);
        assert_eq!(log.recent().last(), Some(&(9999.0, Processor::Gpu)));
        // 5,000 stays of 1 ms on the CPU.
        assert_eq!(log.offloaded_ms(20_000.0), 5000.0);
    }
}
