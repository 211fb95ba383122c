//! The threads that decode GPU results, so the readback thread only reads: one DNN's long decode
//! (PP-OCR's text boxes: 3 ms at the median, 9 ms at p99 on an H100 host) does not hold back
//! the results read after it in the same poll (the workspace's hands, read each frame).
//!
//! One DNN's results are decoded in the order they were read (a result never overtakes an
//! earlier one of its DNN, which the main world would then overwrite with the older one): while
//! a DNN has a decode queued or running, its next one goes to the same thread; otherwise it goes
//! to the thread with the fewest jobs, so two DNNs read together decode side by side.
//!
//! Bounded: a DNN has at most one result waiting for its decode thread. A result read while
//! the DNN's previous one still waits replaces it (the older one is dropped undecoded and
//! counted: [`crate::faults::QueuePolicy::DropOldest`]), so a decoder slower than its model
//! holds one result in memory, not a growing queue. A decode that panics ends neither its thread
//! nor the pool (the job reports the panic to its DNN; the pool counts it).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{Sender, TrySendError, bounded};

use crate::faults::{DECODE_QUEUE, HeimdallFaults};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A key's job waiting for its lane (`None` once the lane took it).
type Waiting = Arc<Mutex<Option<Job>>>;

/// Decode threads in the default configuration (decodes are short next to a frame; two keep one
/// long decode from delaying the rest).
pub(crate) const DECODE_THREADS: usize = 2;

/// Entries kept for DNNs with nothing in flight before they are forgotten.
const KEEP_IDLE_KEYS: usize = 256;

struct Lane {
    /// Each message: a key's waiting job to take and run.
    tx: Option<Sender<Waiting>>,
    /// Jobs queued or running on this lane.
    load: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

/// Where a key's last job went, how many of its jobs are not done, and its job waiting.
struct Placement {
    lane: usize,
    in_flight: Arc<AtomicUsize>,
    waiting: Waiting,
}

/// A fixed set of decode threads, one bounded channel each, used from one thread (the readback
/// thread).
pub(crate) struct DecodePool<K> {
    lanes: Vec<Lane>,
    placed: HashMap<K, Placement>,
    faults: HeimdallFaults,
}

impl<K: Hash + Eq + Copy> DecodePool<K> {
    /// Starts `threads` (at least 1) named decode threads. A thread that cannot be started is
    /// left out; with none, jobs run on the caller ([`DecodePool::run`]).
    pub fn new(threads: usize, faults: HeimdallFaults) -> Self {
        let lanes = (0..threads.max(1))
            .filter_map(|i| {
                let (tx, rx) = bounded::<Waiting>(DECODE_QUEUE);
                let load = Arc::new(AtomicUsize::new(0));
                let lane_load = load.clone();
                let faults = faults.clone();
                let thread = std::thread::Builder::new()
                    .name(format!("heimdall-decode-{i}"))
                    .spawn(move || {
                        while let Ok(waiting) = rx.recv() {
                            let job = waiting.lock().unwrap_or_else(|e| e.into_inner()).take();
                            if let Some(job) = job
                                && let Err(message) = crate::faults::catch(job)
                            {
                                faults.panicked();
                                bevy::log::error!(
                                    "heimdall: a decode on heimdall-decode-{i} panicked: {message}"
                                );
                            }
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
            faults,
        }
    }

    /// Runs `job` for `key` on a decode thread: after `key`'s earlier jobs, beside other keys';
    /// replaces `key`'s job that waits for its thread, if there is one.
    pub fn run(&mut self, key: K, job: impl FnOnce() + Send + 'static) {
        if self.lanes.is_empty() {
            job();
            return;
        }
        let queue = &self.faults.queues().decode;
        if let Some(p) = self.placed.get(&key) {
            let mut waiting = p.waiting.lock().unwrap_or_else(|e| e.into_inner());
            if waiting.is_some() {
                // The older result was not decoded yet: the newer one takes its place (and its
                // turn on the lane), the older one is dropped.
                *waiting = Some(counted(&p.in_flight, job));
                queue.drop_one();
                return;
            }
        }
        let lane = match self.placed.get(&key) {
            Some(p) if p.in_flight.load(Ordering::Acquire) > 0 => p.lane,
            _ => self.least_loaded(),
        };
        if self.placed.len() >= KEEP_IDLE_KEYS {
            self.placed
                .retain(|_, p| p.in_flight.load(Ordering::Acquire) > 0);
        }
        let placement = self
            .placed
            .entry(key)
            .and_modify(|p| p.lane = lane)
            .or_insert_with(|| Placement {
                lane,
                in_flight: Arc::new(AtomicUsize::new(0)),
                waiting: Arc::new(Mutex::new(None)),
            });
        let waiting = placement.waiting.clone();
        *waiting.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(counted(&placement.in_flight, job));
        let l = &self.lanes[lane];
        let depth = l.load.fetch_add(1, Ordering::AcqRel) + 1;
        queue.depth(depth);
        let sent = l.tx.as_ref().map(|tx| match tx.try_send(waiting.clone()) {
            Err(TrySendError::Full(w)) => {
                queue.block_one();
                tx.send(w).map_err(|e| e.into_inner())
            }
            r => r.map_err(|e| e.into_inner()),
        });
        if let Some(Err(w)) = sent {
            // The lane's thread is gone (it cannot be while the pool lives): run it here.
            l.load.fetch_sub(1, Ordering::AcqRel);
            let job = w.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(job) = job {
                job();
            }
        }
    }

    /// The lane with the fewest jobs (the first of equals).
    fn least_loaded(&self) -> usize {
        (0..self.lanes.len())
            .min_by_key(|&i| self.lanes[i].load.load(Ordering::Acquire))
            .unwrap_or(0)
    }
}

/// Ends a key's job: counted in its `in_flight` for as long as it lives (run, dropped undecoded,
/// or unwound by a panic).
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `job`, counted in `in_flight` until it has run or is dropped.
fn counted(in_flight: &Arc<AtomicUsize>, job: impl FnOnce() + Send + 'static) -> Job {
    in_flight.fetch_add(1, Ordering::AcqRel);
    let guard = InFlight(in_flight.clone());
    Box::new(move || {
        let _guard = guard;
        job();
    })
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

    /// A key's jobs run in the order given, even when each later one is quicker; those that
    /// waited behind a newer one were dropped (counted), the last one always runs.
    #[test]
    fn one_keys_jobs_keep_their_order() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let faults = HeimdallFaults::default();
        let mut pool = DecodePool::new(3, faults.clone());
        for i in 0..20u64 {
            let order = order.clone();
            pool.run(7u32, move || {
                std::thread::sleep(Duration::from_micros(2000 - 100 * i));
                order.lock().unwrap().push(i);
            });
            std::thread::sleep(Duration::from_micros(700));
        }
        drop(pool);
        let ran = order.lock().unwrap().clone();
        assert!(ran.windows(2).all(|w| w[0] < w[1]), "{ran:?}");
        assert_eq!(ran.last(), Some(&19));
        assert_eq!(ran.len() as u64 + faults.queues().decode.dropped(), 20);
    }

    /// A decoder slower than its model holds one result, not a queue: while the first decode
    /// of a DNN runs, 100 more results of it leave one waiting (99 dropped), and the other
    /// DNN's result is not held back.
    #[test]
    fn a_slow_decoder_holds_one_waiting_result_per_dnn() {
        let faults = HeimdallFaults::default();
        let mut pool = DecodePool::new(2, faults.clone());
        let (release, wait) = crossbeam_channel::bounded::<()>(0);
        let (started, running) = crossbeam_channel::bounded::<()>(1);
        let ran = Arc::new(Mutex::new(Vec::new()));
        let r = ran.clone();
        pool.run(1u32, move || {
            started.send(()).unwrap();
            let _ = wait.recv();
            r.lock().unwrap().push(0);
        });
        running
            .recv_timeout(Duration::from_secs(10))
            .expect("the first decode started");
        for i in 1..=100 {
            let r = ran.clone();
            pool.run(1u32, move || r.lock().unwrap().push(i));
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        pool.run(2u32, move || tx.send(()).unwrap());
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the other DNN decoded while the slow one ran");
        assert_eq!(faults.queues().decode.dropped(), 99);
        release.send(()).unwrap();
        drop(pool);
        assert_eq!(*ran.lock().unwrap(), vec![0, 100]);
        assert!(faults.queues().decode.max_depth() <= 2);
    }

    /// A decode that panics ends neither its thread nor the pool, and is counted.
    #[test]
    fn a_panicking_decode_leaves_the_threads_running() {
        let faults = HeimdallFaults::default();
        let mut pool = DecodePool::new(1, faults.clone());
        pool.run(3u32, || panic!("a decoder that panics"));
        let (tx, rx) = crossbeam_channel::unbounded();
        for key in [1u32, 2] {
            let tx = tx.clone();
            pool.run(key, move || tx.send(key).unwrap());
        }
        let mut got: Vec<u32> = (0..2)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("a decode"))
            .collect();
        got.sort();
        assert_eq!(got, vec![1, 2]);
        drop(pool);
        assert_eq!(faults.panics(), 1);
    }

    /// A long job of one key does not delay a short job of another given after it: the short
    /// one ends long before the long one.
    #[test]
    fn a_long_decode_does_not_hold_back_another_dnns() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut pool = DecodePool::new(2, HeimdallFaults::default());
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
        let mut pool = DecodePool::new(2, HeimdallFaults::default());
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
            faults: HeimdallFaults::default(),
        };
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        none.run(1, move || {
            r.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(ran.load(Ordering::Relaxed), 1);
    }
}
