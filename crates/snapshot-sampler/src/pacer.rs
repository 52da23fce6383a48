//! When the sampler wakes: the [`Pacer`] trait, the real one on
//! `CLOCK_MONOTONIC`, and the [`StopSignal`] that ends a wait early.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::clock::{PosixClock, TracerClock};

/// The schedule's time and its waits. The real pacer sleeps; a test's
/// pacer moves a fake clock instead, so cadence and missed deadlines are
/// tested without timing anything.
pub trait Pacer: Send {
    /// Schedule time now, ns (any origin, never backwards).
    fn now_ns(&self) -> u64;

    /// Wait until `now_ns() >= deadline_ns` or until `stop` is requested;
    /// true when stopped.
    fn wait_until(&self, deadline_ns: u64, stop: &StopSignal) -> bool;
}

/// The real pacer: `CLOCK_MONOTONIC`, waits on the stop signal's condition
/// variable so a stop wakes it at once.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonotonicPacer;

impl Pacer for MonotonicPacer {
    fn now_ns(&self) -> u64 {
        // CLOCK_MONOTONIC cannot fail with a valid id; 0 would only make
        // the sampler take its next sample early.
        PosixClock::monotonic()
            .read()
            .map_or(0, |ns| ns.max(0) as u64)
    }

    fn wait_until(&self, deadline_ns: u64, stop: &StopSignal) -> bool {
        let mut state = stop.lock();
        loop {
            if state.stop {
                return true;
            }
            let now = self.now_ns();
            if now >= deadline_ns {
                return false;
            }
            let wait = Duration::from_nanos(deadline_ns - now);
            state = match stop.0.changed.wait_timeout(state, wait) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

/// Shared between a [`crate::Sampler`], its thread and whoever stops it (a
/// signal handler thread): a stop request and the thread's end.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<State>,
    changed: Condvar,
}

/// What the sampler thread is told and what it tells.
#[derive(Debug, Default)]
pub struct State {
    /// A stop was requested.
    pub stop: bool,
    /// The sampling thread has ended.
    pub finished: bool,
}

impl StopSignal {
    /// Ask the sampling thread to take a last sample and end; waiting
    /// pacers wake at once.
    pub fn request_stop(&self) {
        self.lock().stop = true;
        self.0.changed.notify_all();
    }

    /// True once a stop was requested.
    pub fn stop_requested(&self) -> bool {
        self.lock().stop
    }

    /// True once the sampling thread has ended.
    pub fn finished(&self) -> bool {
        self.lock().finished
    }

    /// Block until the sampling thread has ended (its duration is over,
    /// it was stopped, or it failed).
    pub fn wait_finished(&self) {
        let mut state = self.lock();
        while !state.finished {
            state = match self.0.changed.wait(state) {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
        }
    }

    /// Mark the thread ended and wake whoever waits.
    pub(crate) fn set_finished(&self) {
        self.lock().finished = true;
        self.0.changed.notify_all();
    }

    /// The state, locked (a poisoned lock still holds valid flags).
    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
