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
