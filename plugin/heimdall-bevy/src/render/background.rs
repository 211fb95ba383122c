//! The plugin's work on Bevy's async compute pool (compilations, f16 guard checks) holds the
//! render device. A task that outlives the app would drop the device on a pool thread while the
//! process exits, and the driver's exit handlers then race its teardown (a crash in `exit` after
//! the app has ended). [`BackgroundWork`] counts the plugin's tasks until their futures are
//! gone, and the render world's teardown waits for that: a removed DNN never waits on its
//! compilation, the app's end does.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::tasks::{AsyncComputeTaskPool, Task};

/// How long the teardown waits for the tasks still running (a compilation on a slow device).
const TEARDOWN_WAIT: Duration = Duration::from_secs(60);

/// The plugin's tasks on the async compute pool (render world).
#[derive(Resource, Default)]
pub(crate) struct BackgroundWork {
    alive: Arc<AtomicUsize>,
}

impl BackgroundWork {
    /// Spawns `work` on the async compute pool; it counts until its future has been dropped
    /// (after it finished, or after its cancelled task was dropped by the pool).
    pub fn spawn<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Task<T> {
        self.alive.fetch_add(1, Ordering::AcqRel);
        AsyncComputeTaskPool::get().spawn(Counted {
            work: Some(Box::pin(work)),
            alive: self.alive.clone(),
        })
    }

    /// Tasks whose future still exists.
    pub fn alive(&self) -> usize {
        self.alive.load(Ordering::Acquire)
    }
}

impl Drop for BackgroundWork {
    fn drop(&mut self) {
        let start = Instant::now();
        while self.alive() > 0 {
            if start.elapsed() > TEARDOWN_WAIT {
                warn!(
                    "heimdall: {} background task(s) still running after {} s at teardown",
                    self.alive(),
                    TEARDOWN_WAIT.as_secs()
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A future that leaves the count once it is dropped, after what it captured.
struct Counted<T> {
    work: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
    alive: Arc<AtomicUsize>,
}

impl<T> Future for Counted<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(work) = self.work.as_mut() else {
            return Poll::Pending; // polled after it finished: the executor never does
        };
        let out = work.as_mut().poll(cx);
        if out.is_ready() {
            // What the work held (the device) goes now, on this thread.
            self.work = None;
        }
        out
    }
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        self.work = None;
        self.alive.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_counts_until_its_future_is_gone() {
        AsyncComputeTaskPool::get_or_init(bevy::tasks::TaskPool::new);
        let work = BackgroundWork::default();
        let held = Arc::new(());
        let h = held.clone();
        let task = work.spawn(async move {
            let _h = h;
            7
        });
        assert_eq!(bevy::tasks::block_on(task), 7);
        let start = Instant::now();
        while work.alive() > 0 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(work.alive(), 0);
        assert_eq!(
            Arc::strong_count(&held),
            1,
            "the future's captures are dropped"
        );
    }

    #[test]
    fn teardown_waits_for_a_cancelled_task_to_stop() {
        AsyncComputeTaskPool::get_or_init(bevy::tasks::TaskPool::new);
        let work = BackgroundWork::default();
        let held = Arc::new(());
        let h = held.clone();
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let task = work.spawn(async move {
            let _h = h;
            let _ = started_tx.send(());
            std::thread::sleep(Duration::from_millis(300));
        });
        started_rx.recv().unwrap();
        drop(task); // cancelled while it runs: the pool finishes the poll, then drops it
        drop(work); // waits
        assert_eq!(
            Arc::strong_count(&held),
            1,
            "the teardown returned before the task"
        );
    }
}
