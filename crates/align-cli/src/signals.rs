//! SIGINT and SIGTERM: remove the run's temporary files and folders, then
//! end with 128 + the signal number (130, 143), as a shell does.

/// Start the thread that waits for SIGINT/SIGTERM. Every temporary of
/// the workspace is listed by `safe_temp`, which removes them all before
/// the process ends; outputs already in place stay whole.
#[cfg(unix)]
pub fn remove_temps_on_signal() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    // Without a handler the default action ends the process, and the next
    // run in the folder removes what it left.
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            safe_temp::remove_all_and_exit(128 + signal);
        }
    });
}

/// Other systems keep the default action; the next run removes what a
/// killed one left.
#[cfg(not(unix))]
pub fn remove_temps_on_signal() {}

/// SIGINT/SIGTERM for a command that stops work at the first signal (the
/// snapshot recorder).
#[cfg(unix)]
mod stop {
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::{Arc, Mutex};

    use anyhow::Context;
    use snapshot_sampler::StopSignal;

    /// SIGINT/SIGTERM: the first stops the sampler, which then writes what it
    /// has; a second removes the temporaries and ends the process (128 +
    /// the signal), as every other command does at the first.
    pub struct SignalStop {
        received: Arc<AtomicI32>,
        target: Arc<Mutex<Option<StopSignal>>>,
    }

    impl SignalStop {
        pub fn install() -> anyhow::Result<SignalStop> {
            use signal_hook::consts::{SIGINT, SIGTERM};
            let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
                .context("installing the SIGINT/SIGTERM handler")?;
            let received = Arc::new(AtomicI32::new(0));
            let target: Arc<Mutex<Option<StopSignal>>> = Arc::default();
            let (seen, stop) = (Arc::clone(&received), Arc::clone(&target));
            std::thread::spawn(move || {
                for signal in signals.forever() {
                    if seen.swap(signal, Ordering::SeqCst) != 0 {
                        safe_temp::remove_all_and_exit(128 + signal);
                    }
                    if let Some(stop) = stop.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                        stop.request_stop();
                    }
                }
            });
            Ok(SignalStop { received, target })
        }

        /// Stop `stop` at the first signal, or now if one came already.
        pub fn attach(&self, stop: StopSignal) {
            let mut slot = self.target.lock().unwrap_or_else(|p| p.into_inner());
            if self.received().is_some() {
                stop.request_stop();
            }
            *slot = Some(stop);
        }

        /// The first signal received, if any.
        pub fn received(&self) -> Option<i32> {
            Some(self.received.load(Ordering::SeqCst)).filter(|&s| s != 0)
        }
    }
}
#[cfg(unix)]
pub use stop::SignalStop;
