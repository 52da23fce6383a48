//! CPU time of the calling thread, from `getrusage(RUSAGE_THREAD)`.

/// User plus system CPU time of the calling thread, ns (µs resolution);
/// `None` where the system has no per-thread usage.
#[cfg(target_os = "linux")]
pub fn thread_cpu_ns() -> Option<u64> {
    usage_ns(libc::RUSAGE_THREAD)
}

/// User plus system CPU time of the calling thread, ns; `None` here.
#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_ns() -> Option<u64> {
    None
}

/// User plus system CPU time of the whole process, ns (µs resolution).
pub fn process_cpu_ns() -> Option<u64> {
    usage_ns(libc::RUSAGE_SELF)
}

fn usage_ns(who: libc::c_int) -> Option<u64> {
    // SAFETY: an all-zero rusage is valid, and getrusage only writes it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return None;
    }
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    Some(ns(usage.ru_utime) + ns(usage.ru_stime))
}
