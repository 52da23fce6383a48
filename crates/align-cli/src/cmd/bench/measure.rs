//! What a stage measures of itself: CPU time, peak memory, its inputs.

use std::path::PathBuf;

/// CPU time of this process so far (user + system, every thread), s.
pub fn cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/self/stat")
}

/// CPU time of the calling thread so far (user + system), s.
pub fn thread_cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/thread-self/stat")
}

/// User + system time of a `/proc/.../stat` file, s.
fn stat_cpu_seconds(path: &str) -> f64 {
    // Fields 14 and 15, after the parenthesised name.
    let ticks = std::fs::read_to_string(path).ok().and_then(|s| {
        let rest = &s[s.rfind(')')? + 2..];
        let mut fields = rest.split_whitespace().skip(11);
        let user: u64 = fields.next()?.parse().ok()?;
        let system: u64 = fields.next()?.parse().ok()?;
        Some(user + system)
    });
    // The kernel's USER_HZ is 100 on every Linux configuration in use.
    ticks.map_or(f64::NAN, |t| t as f64 / 100.0)
}

/// Peak resident memory of this process (`VmHWM`), MiB.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// The bytes of `paths` together.
pub fn file_bytes(paths: &[PathBuf]) -> u64 {
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// The events of every trace.
pub fn count_events(traces: &[PathBuf]) -> anyhow::Result<u64> {
    let mut events = 0;
    for path in traces {
        let bytes = xplane_proto::FileBytes::open(path)?;
        events += bytes
            .view()
            .walk_all()
            .map_err(|e| bytes.wire_error(e))?
            .events;
    }
    Ok(events)
}
