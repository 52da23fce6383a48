//! Jobs run on all cores, their results committed one by one in job order:
//! how a node's lines are aligned in parallel and written in sequence.
//!
//! Each job has a weight (a line's input bytes). A job starts only when
//! the jobs from the oldest uncommitted one up to it weigh at most the
//! window (the oldest itself always may): that bounds what results wait
//! in memory for their turn. Within each stretch of jobs weighing half
//! the window, the heaviest start first, so that a long line is not left
//! to run alone on one core after its short neighbours are done.
//!
//! The commit runs on whichever thread finishes the job whose turn it is
//! (under a lock, never waited for: a thread that finds it taken goes
//! back to work, and the holder commits what arrived meanwhile).

use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// Run job `k` of `weights.len()` with `run(k)` on the rayon pool, and
/// call `commit(k, result)` for `k = 0, 1, …` in order, each once, until
/// `commit` breaks (jobs not started yet are then skipped, results not
/// committed dropped). Returns when every job is committed or one
/// commit broke. A panic in `run` or `commit` stops the other jobs and
/// is resumed on the caller.
pub(crate) fn ordered<R: Send>(
    weights: &[usize],
    window: usize,
    run: impl Fn(usize) -> R + Sync,
    commit: impl FnMut(usize, R) -> ControlFlow<()> + Send,
) {
    let n = weights.len();
    if n == 0 {
        return;
    }
    let shared = Shared {
        order: start_order(weights, window),
        ends: weights
            .iter()
            .scan(0usize, |sum, &w| {
                *sum = sum.saturating_add(w);
                Some(*sum)
            })
            .collect(),
        window,
        slots: (0..n).map(|_| Mutex::new(None)).collect(),
        started: AtomicUsize::new(0),
        committed: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        commit: Mutex::new(commit),
        progress: (Mutex::new(()), Condvar::new()),
        run,
    };
    let workers = rayon::current_num_threads().clamp(1, n);
    rayon::scope(|s| {
        for _ in 0..workers {
            s.spawn(|_| shared.work());
        }
    });
}

/// The order in which jobs start: stretches of consecutive jobs weighing
/// at most half the window (a heavier job a stretch of its own), each
/// heaviest first.
fn start_order(weights: &[usize], window: usize) -> Vec<usize> {
    let half = window / 2;
    let mut order = Vec::with_capacity(weights.len());
    let mut start = 0;
    let mut sum = 0usize;
    for (k, &w) in weights.iter().enumerate() {
        if k > start && sum.saturating_add(w) > half {
            order.extend(start..k);
            order[start..].sort_by_key(|&j| std::cmp::Reverse(weights[j]));
            start = k;
            sum = 0;
        }
        sum = sum.saturating_add(w);
    }
    order.extend(start..weights.len());
    order[start..].sort_by_key(|&j| std::cmp::Reverse(weights[j]));
    order
}

struct Shared<R, F, C> {
    /// Jobs in start order.
    order: Vec<usize>,
    /// Per job, the weight of it and every job before it.
    ends: Vec<usize>,
    window: usize,
    /// Per job, its result until committed.
    slots: Vec<Mutex<Option<R>>>,
    /// Jobs of `order` handed out.
    started: AtomicUsize,
    /// Jobs committed: the next to commit.
    committed: AtomicUsize,
    stop: AtomicBool,
    commit: Mutex<C>,
    /// Signalled when `committed` or `stop` changes.
    progress: (Mutex<()>, Condvar),
    run: F,
}

impl<R, F, C> Shared<R, F, C>
where
    R: Send,
    F: Fn(usize) -> R + Sync,
    C: FnMut(usize, R) -> ControlFlow<()> + Send,
{
    fn work(&self) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.work_on())) {
            self.halt();
            resume_unwind(panic);
        }
    }

    fn work_on(&self) {
        let n = self.slots.len();
        loop {
            let k = self.started.fetch_add(1, Ordering::Relaxed);
            if k >= n || self.stop.load(Ordering::Acquire) {
                return;
            }
            let job = self.order[k];
            // Every job started before this one in `order` is running or
            // done, the one whose turn it is among them (or this one):
            // the wait ends.
            self.wait_for_room(job);
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            let result = (self.run)(job);
            *lock(&self.slots[job]) = Some(result);
            self.commit_ready();
        }
    }

    /// True when `job` may start: it is the next to commit, or the jobs
    /// from that one to it weigh at most the window.
    fn has_room(&self, job: usize) -> bool {
        let next = self.committed.load(Ordering::Acquire);
        let before = if next == 0 { 0 } else { self.ends[next - 1] };
        job <= next || self.ends[job] - before <= self.window
    }

    fn wait_for_room(&self, job: usize) {
        if self.has_room(job) {
            return;
        }
        let (lock_, signal) = &self.progress;
        let mut guard = lock(lock_);
        while !self.has_room(job) && !self.stop.load(Ordering::Acquire) {
            guard = signal.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Commit every result whose turn has come, unless another thread is
    /// committing (it then commits this one too).
    fn commit_ready(&self) {
        let n = self.slots.len();
        loop {
            let Ok(mut commit) = self.commit.try_lock() else {
                return;
            };
            let mut advanced = false;
            loop {
                let next = self.committed.load(Ordering::Acquire);
                if next >= n || self.stop.load(Ordering::Acquire) {
                    break;
                }
                let Some(result) = lock(&self.slots[next]).take() else {
                    break;
                };
                let flow = commit(next, result);
                self.committed.store(next + 1, Ordering::Release);
                advanced = true;
                if flow.is_break() {
                    self.stop.store(true, Ordering::Release);
                    break;
                }
            }
            drop(commit);
            if advanced {
                self.signal();
            }
            // A result that arrived while the lock was held, from a thread
            // that found it taken, is committed here.
            let next = self.committed.load(Ordering::Acquire);
            if next >= n || self.stop.load(Ordering::Acquire) || lock(&self.slots[next]).is_none() {
                return;
            }
        }
    }

    fn signal(&self) {
        let _guard = lock(&self.progress.0);
        self.progress.1.notify_all();
    }

    fn halt(&self) {
        self.stop.store(true, Ordering::Release);
        self.signal();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn committed(weights: &[usize], window: usize, stop_at: Option<usize>) -> Vec<(usize, usize)> {
        let mut seen = Vec::new();
        ordered(
            weights,
            window,
            |k| {
                // Uneven work, so that jobs finish out of order.
                let spin = weights[k] % 7 * 200;
                (0..spin).fold(k, |a, b| std::hint::black_box(a ^ b))
                    ^ (0..spin).fold(0, |a, b| a ^ b)
            },
            |k, r| {
                seen.push((k, r));
                if Some(k) == stop_at {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        seen
    }

    proptest! {
        #[test]
        fn every_result_is_committed_once_in_job_order(
            weights in prop::collection::vec(0usize..100, 0..60),
            window in 1usize..300,
        ) {
            let seen = committed(&weights, window, None);
            let expected: Vec<(usize, usize)> = (0..weights.len()).map(|k| (k, k)).collect();
            prop_assert_eq!(seen, expected);
        }

        #[test]
        fn a_commit_that_breaks_is_the_last(
            weights in prop::collection::vec(0usize..100, 1..60),
            window in 1usize..300,
            at in any::<prop::sample::Index>(),
        ) {
            let stop = at.index(weights.len());
            let seen = committed(&weights, window, Some(stop));
            let expected: Vec<(usize, usize)> = (0..=stop).map(|k| (k, k)).collect();
            prop_assert_eq!(seen, expected);
        }

        #[test]
        fn the_start_order_is_a_permutation(
            weights in prop::collection::vec(0usize..100, 0..60),
            window in 1usize..300,
        ) {
            let order = start_order(&weights, window);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..weights.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn stretches_of_half_the_window_start_heaviest_first() {
        // Half the window is 10: [1, 5, 2] (8), [100] alone, [3, 3].
        assert_eq!(start_order(&[1, 5, 2, 100, 3, 3], 20), [1, 2, 0, 3, 4, 5]);
        assert_eq!(start_order(&[], 20), Vec::<usize>::new());
    }

    #[test]
    fn a_panic_in_a_job_reaches_the_caller() {
        let weights = [1usize; 16];
        let caught = catch_unwind(AssertUnwindSafe(|| {
            ordered(
                &weights,
                4,
                |k| {
                    assert_ne!(k, 5, "job 5 fails");
                    k
                },
                |_, _| ControlFlow::Continue(()),
            )
        }));
        assert!(caught.is_err());
    }
}
