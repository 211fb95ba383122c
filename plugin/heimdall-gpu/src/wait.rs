//! Waiting for the GPU from a thread that blocks (compilation, profiling, the f16 guard, tests,
//! the CLI). wgpu's blocking `Device::poll(Wait)` holds the device's fence lock for as long as it
//! waits, and `Queue::submit` needs that lock for writing: on a device shared with a renderer
//! (Bevy's), every frame submitted meanwhile stalls until the GPU is idle. On such a device the
//! wait polls without blocking instead; on an own device (the CLI, benchmarks) it blocks, which
//! wakes up sooner.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::context::GpuContext;
use crate::error::GpuError;

/// How long a wait may take before it is given up (a lost or hung device).
const WAIT_LIMIT: Duration = Duration::from_secs(60);
/// While the GPU has been busy for less than this, a non-blocking wait only yields between
/// polls (short waits stay short); after it, it sleeps.
const SPIN_FOR: Duration = Duration::from_micros(500);
/// The sleep between two polls after [`SPIN_FOR`].
const SLEEP: Duration = Duration::from_micros(50);

thread_local! {
    /// Waits for the GPU made on this thread ([`waits_on_this_thread`]).
    static WAITS: Cell<u64> = const { Cell::new(0) };
}

/// How many times this thread has waited for the GPU through this crate's blocking calls
/// (compilation checks, profiles, calibrations, the f16 guard, blocking runs). On a device shared
/// with a renderer each wait also waits for the frames queued before it, so fewer waits start a
/// model sooner; a thread's count before and after a call says how many that call made.
pub fn waits_on_this_thread() -> u64 {
    WAITS.get()
}

impl GpuContext {
    /// Waits until the GPU has finished everything submitted on this queue so far.
    pub fn wait_idle(&self) -> Result<(), GpuError> {
        if !self.shared_device {
            WAITS.set(WAITS.get() + 1);
            return self.block_once();
        }
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        self.queue
            .on_submitted_work_done(move || flag.store(true, Ordering::Release));
        self.wait_until(|| done.load(Ordering::Acquire))
    }

    /// Polls the device until `ready()` holds (a `map_async` callback's flag): blocking polls
    /// on an own device, non-blocking ones on a shared device. One blocking poll is not enough
    /// when several threads poll the same device: another thread's poll may be the one running
    /// the callback, and ours can return before that callback has finished.
    pub fn wait_until(&self, ready: impl Fn() -> bool) -> Result<(), GpuError> {
        WAITS.set(WAITS.get() + 1);
        let start = Instant::now();
        loop {
            if self.shared_device {
                self.device
                    .poll(wgpu::PollType::Poll)
                    .map_err(|e| GpuError::Wgpu(e.to_string()))?;
            } else {
                self.block_once()?;
            }
            if ready() {
                return Ok(());
            }
            let waited = start.elapsed();
            if waited > WAIT_LIMIT {
                return Err(GpuError::Readback(format!(
                    "no result after {} s of waiting",
                    WAIT_LIMIT.as_secs()
                )));
            }
            if self.shared_device && waited < SPIN_FOR {
                std::thread::yield_now();
            } else {
                std::thread::sleep(SLEEP);
            }
        }
    }

    /// One blocking poll for everything submitted so far.
    fn block_once(&self) -> Result<(), GpuError> {
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map(|_| ())
            .map_err(|e| GpuError::Wgpu(e.to_string()))
    }
}
