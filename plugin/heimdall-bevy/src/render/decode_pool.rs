//! The threads that decode GPU results, so the readback thread only reads: one DNN's long decode
//! (PP-OCR's text boxes: 3 ms at the median, 9 ms at p99 on an H100 host) does not hold back
//! the results read after it in the same poll (the workspace's hands, read each frame).
//!
//! One DNN's results are decoded in the order they were read (a result never overtakes an
//! earlier one of its DNN, which the main world would then overwrite with the older one): while
//! a DNN has a decode queued or running, its next one goes to the same thread; otherwise it goes
//! to the thread with the fewest jobs, so two DNNs read together decode side by side.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Sender, unbounded};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Decode threads in the default configuration (decodes are short next to a frame; two keep one
/// long decode from delaying the rest).
pub(crate) const DECODE_THREADS: usize = 2;

/// Entries kept for DNNs with nothing in flight before they are forgotten.
const KEEP_IDLE_KEYS: usize = 256;

struct Lane {
    tx: Option<Sender<Job>>,
    /// Jobs queued or running on this lane.
    load: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

/// Where a key's last job went, and how many of its jobs are not done.
struct Placement {
    lane: usize,
    in_flight: Arc<AtomicUsize>,
}

/// A fixed set of decode threads, one channel each, used from one thread (the readback thread).
pub(crate) struct DecodePool<K> {
    lanes: Vec<Lane>,
    placed: HashMap<K, Placement>,
}

impl<K: Hash + Eq + Copy> DecodePool<K> {
    /// Starts `threads` (at least 1) named decode threads. A thread that cannot be started is
    /// left out; with none, jobs run on the caller ([`DecodePool::run`]).
    pub fn new(threads: usize) -> Self {
        let lanes = (0..threads.max(1))
            .filter_map(|i| {
                let (tx, rx) = unbounded::<Job>();
                let load = Arc::new(AtomicUsize::new(0));
                let lane_load = load.clone();
                let thread = std::thread::Builder::new()
                    .name(format!("heimdall-decode-{i}"))
                    .spawn(move || {
                        while let Ok(job) = rx.recv() {
                            job();
                            lane_load.fetch_sub(1, Ordering::AcqRel);
                        }
                    })
                    .ok()?;
                Some(Lane {
                    tx: Some(tx),
                    load,
                    thread: Some(thread),
                })
            })
            .collect();
        DecodePool {
            lanes,
            placed: HashMap::new(),
        }
    }

    /// Runs `job` for `key` on a decode thread: after `key`'s earlier jobs, beside other keys'.
    pub fn run(&mut self, key: K, job: impl FnOnce() + Send + 'static) {
        if self.lanes.is_empty() {
            job();
            return;
        }
        let lane = match self.placed.get(&key) {
            Some(p) if p.in_flight.load(Ordering::Acquire) > 0 => p.lane,
            _ => self.least_loaded(),
        };
        if self.placed.len() >= KEEP_IDLE_KEYS {
            self.placed
                .retain(|_, p| p.in_flight.load(Ordering::Acquire) > 0);
        }
        let in_flight = self
            .placed
            .entry(key)
            .and_modify(|p| p.lane = lane)
            .or_insert_with(|| Placement {
                lane,
                in_flight: Arc::new(AtomicUsize::new(0)),
            })
            .in_flight
            .clone();
        in_flight.fetch_add(1, Ordering::AcqRel);
        let l = &self.lanes[lane];
        l.load.fetch_add(1, Ordering::AcqRel);
        let done = in_flight.clone();
        let wrapped: Job = Box::new(move || {
            job();
            done.fetch_sub(1, Ordering::AcqRel);
        });
        let sent = l.tx.as_ref().map(|tx| tx.send(wrapped));
        if let Some(Err(e)) = sent {
            // The lane's thread is gone (it cannot be while the pool lives): run it here.
            l.load.fetch_sub(1, Ordering::AcqRel);
            (e.into_inner())();
        }
    }

    /// The lane with the fewest jobs (the first of equals).
    fn least_loaded(&self) -> usize {
        (0..self.lanes.len())
            .min_by_key(|&i| self.lanes[i].load.load(Ordering::Acquire))
            .unwrap_or(0)
    }
}

impl<K> Drop for DecodePool<K> {
    /// Lets the queued decodes finish, then joins the threads.
    fn drop(&mut self) {
        for l in &mut self.lanes {
            l.tx = None;
        }
        for l in &mut self.lanes {
            if let Some(t) = l.thread.take() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// A key's jobs run in the order given, even when each later one is quicker.
    #[test]
    fn one_keys_jobs_keep_their_order() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut pool = DecodePool::new(3);
        for i in 0..20u64 {
            let order = order.clone();
            pool.run(7u32, move || {
                std::thread::sleep(Duration::from_micros(2000 - 100 * i));
                order.lock().unwrap().push(i);
            });
        }
        drop(pool);
        assert_eq!(*order.lock().unwrap(), (0..20).collect::<Vec<_>>());
    }

    /// A long job of one key does not delay a short job of another given after it: the short
    /// one ends long before the long one.
    #[test]
    fn a_long_decode_does_not_hold_back_another_dnns() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut pool = DecodePool::new(2);
        let start = Instant::now();
        let slow = tx.clone();
        pool.run(1u32, move || {
            std::thread::sleep(Duration::from_millis(300));
            let _ = slow.send(("slow", start.elapsed()));
        });
        pool.run(2u32, move || {
            let _ = tx.send(("quick", start.elapsed()));
        });
        let first = rx.recv_timeout(Duration::from_secs(10)).expect("a result");
        assert_eq!(first.0, "quick");
        assert!(first.1 < Duration::from_millis(300), "{:?}", first.1);
        let second = rx.recv_timeout(Duration::from_secs(10)).expect("a result");
        assert_eq!(second.0, "slow");
    }

    /// Every job runs, the pool forgets idle keys beyond its bound, and with no thread the
    /// caller runs the job.
    #[test]
    fn every_job_runs_and_idle_keys_are_forgotten() {
        let count = Arc::new(AtomicUsize::new(0));
        let mut pool = DecodePool::new(2);
        for key in 0..(3 * KEEP_IDLE_KEYS as u32) {
            let c = count.clone();
            pool.run(key, move || {
                c.fetch_add(1, Ordering::Relaxed);
            });
            // Each key idle again before the next (so every older one may be forgotten).
            let start = Instant::now();
            while count.load(Ordering::Relaxed) <= key as usize
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::yield_now();
            }
            while pool.placed[&key].in_flight.load(Ordering::Acquire) > 0
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::yield_now();
            }
        }
        assert!(
            pool.placed.len() <= KEEP_IDLE_KEYS + 1,
            "{}",
            pool.placed.len()
        );
        drop(pool);
        assert_eq!(count.load(Ordering::Relaxed), 3 * KEEP_IDLE_KEYS);
        let mut none = DecodePool::<u32> {
            lanes: Vec::new(),
            placed: HashMap::new(),
        };
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        none.run(1, move || {
            r.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(ran.load(Ordering::Relaxed), 1);
    }
}
