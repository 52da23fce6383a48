//! The real clocks of this machine: pairs rise, windows are small, the
//! aligner's reader takes the file. No timing is asserted beyond sanity.

use std::time::Duration;

use snapshot_sampler::{ClockKind, Config, Recording, Sampler, SamplerError};

fn record(kind: ClockKind) -> Result<Recording, SamplerError> {
    let tracer = kind.open(Duration::from_millis(20))?;
    let mut config = Config::new(Duration::from_millis(1));
    config.duration = Some(Duration::from_millis(30));
    let sampler = Sampler::start(config, tracer)?;
    sampler.stop_signal().wait_finished();
    sampler.finish()
}

fn check_sane(kind: ClockKind, rec: &Recording) {
    assert!(rec.pairs.len() >= 2, "{kind}: {} pairs", rec.pairs.len());
    assert_eq!(rec.counters.snapshots_taken, rec.pairs.len() as u64);
    for w in rec.pairs.windows(2) {
        assert!(
            w[1].sys_ns >= w[0].sys_ns && w[1].tracer_ns >= w[0].tracer_ns,
            "{kind}: {w:?}"
        );
    }
    // A sandwich of two clock reads, even on a loaded machine, is far under 10 ms.
    let worst = rec.windows().expect("windows recorded").max;
    assert!(worst < 10_000_000, "{kind}: window {worst} ns");
    // Both clocks tick seconds: over the span they agree within 5 %.
    let (a, b) = (rec.pairs[0], rec.pairs[rec.pairs.len() - 1]);
    let (sys, tracer) = (
        (b.sys_ns - a.sys_ns) as f64,
        (b.tracer_ns - a.tracer_ns) as f64,
    );
    assert!(
        (tracer / sys - 1.0).abs() < 0.05,
        "{kind}: {tracer} ns vs {sys} ns"
    );
}

#[test]
fn posix_clocks_give_rising_pairs_with_small_windows() {
    for kind in [
        ClockKind::Monotonic,
        ClockKind::MonotonicRaw,
        ClockKind::Boottime,
    ] {
        let rec = record(kind).unwrap();
        check_sane(kind, &rec);
        assert!(
            rec.tracer_clock.starts_with("CLOCK_"),
            "{}",
            rec.tracer_clock
        );
    }
}

#[test]
fn tsc_is_calibrated_and_says_so_or_says_why_not() {
    match record(ClockKind::Tsc) {
        Ok(rec) => {
            check_sane(ClockKind::Tsc, &rec);
            assert!(
                rec.tracer_clock
                    .contains("calibrated against CLOCK_MONOTONIC_RAW")
            );
        }
        Err(SamplerError::ClockUnavailable { clock, why }) => {
            assert!(!cfg!(target_arch = "x86_64") || !why.is_empty());
            assert_eq!(clock, "tsc");
        }
        Err(e) => panic!("{e}"),
    }
}

#[cfg(not(feature = "cupti"))]
#[test]
fn cupti_without_the_feature_says_so() {
    let err = ClockKind::Cupti
        .open(Duration::ZERO)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("`cupti` cargo feature"), "{err}");
}

#[cfg(feature = "cupti")]
#[test]
fn cupti_reads_or_names_the_libraries_tried() {
    match snapshot_sampler::Cupti::load() {
        Ok(cupti) => {
            use snapshot_sampler::TracerClock as _;
            assert!(cupti.read().unwrap() > 0);
        }
        Err(SamplerError::CuptiLibrary { tried, reason }) => {
            assert!(
                tried.contains("libcupti.so.12") && !reason.is_empty(),
                "{tried}: {reason}"
            );
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn the_aligner_reads_a_recorded_file_as_written() {
    let rec = record(ClockKind::Monotonic).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node2.snapshots.pb");
    rec.write(&path).unwrap();
    let read = alignment_core::Snapshots::read(&path).unwrap();
    assert_eq!(read.pairs().len(), rec.pairs.len());
    for (theirs, ours) in read.pairs().iter().zip(&rec.pairs) {
        assert_eq!(
            (theirs.sys_ns(), theirs.tracer_ns()),
            (ours.sys_ns as i128, ours.tracer_ns as i128)
        );
    }
    assert_eq!(Recording::read(&path).unwrap(), rec);
}
