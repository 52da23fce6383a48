//! Every XSpace a run writes starts its session at or before its earliest
//! event: xprof's trace viewers drop (`trace_viewer@`) or wrap by 2^64 ps
//! (`trace_viewer`) events placed before `profile_start_time`. On the
//! reference's start, a real 2-process JAX run whose rank 1 is corrected by
//! −3.7 ms lost 3 511 of rank 1's events in xprof.

use std::path::{Path, PathBuf};

use alignment_core::AlignOptions;
use trace_align::{ClockSource, MergeSettings, RunFiles};
use xplane_proto::FileBytes;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-faketime")
        .join(name)
}

/// The earliest event of `path` relative to its session start, ps, and the
/// number of events.
fn earliest_event_ps(path: &Path) -> (i128, usize) {
    let space = FileBytes::open(path).unwrap().decode().unwrap();
    let mut earliest = i128::MAX;
    let mut events = 0;
    for plane in &space.planes {
        for line in &plane.lines {
            for e in &line.events {
                let offset = match e.data {
                    Some(xplane_proto::x_event::Data::OffsetPs(ps)) => ps,
                    _ => continue,
                };
                events += 1;
                let ps = i128::from(line.timestamp_ns) * 1000 + i128::from(offset);
                earliest = earliest.min(ps);
            }
        }
    }
    (earliest, events)
}

fn every_event_after_the_session_start(name: &str) {
    let run = RunFiles::discover(fixture(name)).unwrap();
    let plan = run
        .plan_with(&AlignOptions::default(), ClockSource::Collectives)
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let each = plan.align_each(out.path().join("each"), None).unwrap();
    let merged = out.path().join("merged.xplane.pb");
    plan.merge(&merged, &MergeSettings::default()).unwrap();
    let mut outputs: Vec<PathBuf> = each.nodes.iter().map(|n| n.output.clone()).collect();
    outputs.push(merged);
    let mut starts = Vec::new();
    for path in &outputs {
        let (earliest, events) = earliest_event_ps(path);
        println!(
            "{}: {events} events, earliest {earliest} ps after the session start",
            path.display()
        );
        assert!(events > 1_000);
        assert!(
            earliest >= 0,
            "{}: an event {} ps before the session start",
            path.display(),
            -earliest
        );
        starts.push(earliest);
    }
    // The start is the earliest node's: some output begins within 1 s of it.
    assert!(starts.iter().any(|&ps| ps < 1_000_000_000_000));
}

#[test]
fn a_node_corrected_backwards_keeps_every_event_after_the_session_start() {
    for name in [
        "n2_skew_250steps",
        "n4_skew_300steps",
        "n4_skew_1thread_350steps",
        "mesh2x2_skew_60steps",
    ] {
        every_event_after_the_session_start(name);
    }
}
