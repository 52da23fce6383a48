//! The summary `record` and `inspect` print: pairs, span, read windows,
//! counters, CPU cost.

use snapshot_sampler::Recording;

/// A duration in ns as text: `850 ns`, `1.25 µs`, `10.0 ms`, `2.000 s`.
pub fn ns_text(ns: u64) -> String {
    let ns = ns as f64;
    if ns < 1e3 {
        format!("{ns} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// The tracer clock's rate against host REALTIME over the span, ppm
/// (end points; `None` with under two pairs).
pub fn rate_ppm(rec: &Recording) -> Option<f64> {
    let (a, b) = (rec.pairs.first()?, rec.pairs.last()?);
    let sys = (b.sys_ns - a.sys_ns) as f64;
    (sys > 0.0).then(|| ((b.tracer_ns - a.tracer_ns) as f64 - sys) / sys * 1e6)
}

/// Sampling-thread CPU time per pair taken, ns.
pub fn cpu_per_pair_ns(rec: &Recording) -> Option<f64> {
    let cpu = rec.sampler_cpu_ns?;
    (rec.counters.snapshots_taken > 0).then(|| cpu as f64 / rec.counters.snapshots_taken as f64)
}

/// The summary as lines of text.
pub fn lines(rec: &Recording) -> Vec<String> {
    let clock = match rec.tracer_clock.as_str() {
        "" => "not recorded (a file from another collector)",
        name => name,
    };
    let mut out = vec![
        format!("tracer clock: {clock}"),
        format!(
            "pairs: {} over {} (period {}, {} tries a pair)",
            rec.pairs.len(),
            ns_text(rec.span_ns()),
            ns_text(rec.period.as_nanos() as u64),
            rec.tries
        ),
    ];
    if let (Some(first), Some(last)) = (rec.pairs.first(), rec.pairs.last()) {
        out.push(format!(
            "first: sys {} tracer {}; last: sys {} tracer {}",
            first.sys_ns, first.tracer_ns, last.sys_ns, last.tracer_ns
        ));
    }
    if let Some(ppm) = rate_ppm(rec) {
        out.push(format!(
            "tracer rate vs REALTIME over the span: {ppm:+.3} ppm"
        ));
    }
    out.push(match rec.windows() {
        Some(w) => format!(
            "read windows: p50 {} p99 {} max {} (pair error at most half)",
            ns_text(w.p50),
            ns_text(w.p99),
            ns_text(w.max)
        ),
        None => "read windows: not recorded".into(),
    });
    let c = rec.counters;
    out.push(if rec.tracer_clock.is_empty() {
        "counters: not recorded".into()
    } else {
        format!(
            "counters: snapshots_taken {} missed_deadline {} overwritten {} rejected {}",
            c.snapshots_taken, c.missed_deadline, c.overwritten, c.rejected
        )
    });
    if let (Some(cpu), Some(per)) = (rec.sampler_cpu_ns, cpu_per_pair_ns(rec)) {
        out.push(format!(
            "sampler CPU: {} ({} a pair)",
            ns_text(cpu),
            ns_text(per.round() as u64)
        ));
    }
    out
}

/// The summary as JSON.
pub fn json(rec: &Recording) -> serde_json::Value {
    let w = rec.windows();
    let c = rec.counters;
    serde_json::json!({
        "tracer_clock": rec.tracer_clock,
        "period_ns": rec.period.as_nanos() as u64,
        "tries": rec.tries,
        "pairs": rec.pairs.len(),
        "span_ns": rec.span_ns(),
        "rate_ppm": rate_ppm(rec),
        "window_ns": w.map(|w| serde_json::json!({"p50": w.p50, "p99": w.p99, "max": w.max})),
        "snapshots_taken": c.snapshots_taken,
        "missed_deadline": c.missed_deadline,
        "overwritten": c.overwritten,
        "rejected": c.rejected,
        "sampler_cpu_ns": rec.sampler_cpu_ns,
        "cpu_per_pair_ns": cpu_per_pair_ns(rec),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_text_picks_the_unit() {
        assert_eq!(ns_text(850), "850 ns");
        assert_eq!(ns_text(1_250), "1.25 µs");
        assert_eq!(ns_text(10_000_000), "10.0 ms");
        assert_eq!(ns_text(2_000_000_000), "2.000 s");
    }
}
