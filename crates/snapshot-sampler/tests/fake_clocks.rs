//! The sampler on fake clocks and a fake pacer: cadence, the ring
//! buffer's bound, the counters, missed deadlines under load, stopping,
//! all exact and without timing anything.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use snapshot_sampler::{
    Config, Counters, Pacer, Recording, Result, Sampler, SamplerError, StopSignal, TracerClock,
};

const EPOCH_NS: i64 = 1_765_432_100_000_000_000;
const BOOT_NS: i64 = 864_000_000_000_000;
const MS: u64 = 1_000_000;

/// Fake time, ns since the sampler started; every clock read moves it.
#[derive(Clone, Default)]
struct FakeTime(Arc<AtomicU64>);

impl FakeTime {
    fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    fn advance(&self, ns: u64) -> u64 {
        self.0.fetch_add(ns, Ordering::SeqCst) + ns
    }
}

/// A clock at `base + fake time`; each read takes 100 ns, and read number
/// `stall.0` takes `stall.1` ns more. Read number `step_back` returns a
/// second earlier (a REALTIME step); read number `fail` fails.
struct FakeClock {
    time: FakeTime,
    base: i64,
    reads: AtomicU64,
    stall: (u64, u64),
    step_back: u64,
    fail: u64,
}

impl FakeClock {
    fn new(time: &FakeTime, base: i64) -> Self {
        FakeClock {
            time: time.clone(),
            base,
            reads: AtomicU64::new(0),
            stall: (u64::MAX, 0),
            step_back: u64::MAX,
            fail: u64::MAX,
        }
    }
}

impl TracerClock for FakeClock {
    fn name(&self) -> &str {
        "fake"
    }
    fn read(&self) -> Result<i64> {
        let n = self.reads.fetch_add(1, Ordering::SeqCst);
        if n == self.fail {
            return Err(SamplerError::ClockUnavailable {
                clock: "fake".into(),
                why: "read failed on purpose".into(),
            });
        }
        let extra = if n == self.stall.0 { self.stall.1 } else { 0 };
        let t = self.base + self.time.advance(100 + extra) as i64;
        Ok(if n == self.step_back {
            t - 1_000_000_000
        } else {
            t
        })
    }
}

/// Waits by jumping the fake time to the deadline.
struct FakePacer(FakeTime);

impl Pacer for FakePacer {
    fn now_ns(&self) -> u64 {
        self.0.now()
    }
    fn wait_until(&self, deadline_ns: u64, stop: &StopSignal) -> bool {
        if stop.stop_requested() {
            return true;
        }
        self.0.0.fetch_max(deadline_ns, Ordering::SeqCst);
        false
    }
}

fn config(period_ms: u64, duration_ms: Option<u64>, tries: u32, capacity: usize) -> Config {
    Config {
        period: Duration::from_millis(period_ms),
        duration: duration_ms.map(Duration::from_millis),
        tries,
        capacity,
    }
}

/// Run to the end of the configured duration.
fn run(config: Config, host: FakeClock, tracer: FakeClock, time: &FakeTime) -> Result<Recording> {
    let sampler = Sampler::start_with(
        config,
        Box::new(host),
        Box::new(tracer),
        Box::new(FakePacer(time.clone())),
    )?;
    sampler.stop_signal().wait_finished();
    sampler.finish()
}

fn clocks(time: &FakeTime) -> (FakeClock, FakeClock) {
    (
        FakeClock::new(time, EPOCH_NS),
        FakeClock::new(time, BOOT_NS),
    )
}

#[test]
fn one_pair_per_period_from_the_start_to_the_duration() {
    let time = FakeTime::default();
    let (host, tracer) = clocks(&time);
    let rec = run(config(10, Some(100), 3, 64), host, tracer, &time).unwrap();
    assert_eq!(rec.pairs.len(), 11);
    assert_eq!(
        rec.counters,
        Counters {
            snapshots_taken: 11,
            ..Counters::default()
        }
    );
    for (k, p) in rec.pairs.iter().enumerate() {
        // host at +100, tracer at +200, host at +300: midpoint +200, window 200.
        assert_eq!(
            p.sys_ns as i64,
            EPOCH_NS + (k as u64 * 10 * MS) as i64 + 200,
            "pair {k}"
        );
        assert_eq!(p.tracer_ns as i64 - p.sys_ns as i64, BOOT_NS - EPOCH_NS);
        assert_eq!(p.window_ns, 200);
    }
    assert_eq!(rec.span_ns(), 100 * MS);
    assert_eq!(rec.period, Duration::from_millis(10));
}

#[test]
fn the_ring_keeps_the_newest_pairs_and_counts_the_dropped() {
    let time = FakeTime::default();
    let (host, tracer) = clocks(&time);
    let rec = run(config(10, Some(100), 1, 4), host, tracer, &time).unwrap();
    assert_eq!(rec.pairs.len(), 4);
    assert_eq!(
        (rec.counters.snapshots_taken, rec.counters.overwritten),
        (11, 7)
    );
    let first = (rec.pairs[0].sys_ns as i64 - EPOCH_NS) as u64;
    assert_eq!(first, 70 * MS + 200);
}

#[test]
fn a_sample_that_runs_past_the_next_deadlines_counts_them_missed() {
    let time = FakeTime::default();
    let (host, mut tracer) = clocks(&time);
    // Sample 3 (at 30 ms) stalls 25 ms in its tracer read: the deadlines
    // at 40 and 50 ms pass, the next pair is at 60 ms.
    tracer.stall = (3, 25 * MS);
    let rec = run(config(10, Some(100), 1, 64), host, tracer, &time).unwrap();
    assert_eq!(rec.counters.missed_deadline, 2);
    assert_eq!(rec.counters.snapshots_taken, 9);
    let at: Vec<u64> = rec
        .pairs
        .iter()
        .map(|p| (p.sys_ns as i64 - EPOCH_NS) as u64 / MS)
        .collect();
    assert_eq!(at, [0, 10, 20, 42, 60, 70, 80, 90, 100]);
    // The stalled pair's window shows it: the host time is that uncertain.
    assert_eq!(rec.pairs[3].window_ns, 25 * MS + 200);
}

#[test]
fn a_stall_past_the_duration_misses_only_the_deadlines_inside_it() {
    let time = FakeTime::default();
    let (host, mut tracer) = clocks(&time);
    tracer.stall = (9, 50 * MS);
    let rec = run(config(10, Some(100), 1, 64), host, tracer, &time).unwrap();
    assert_eq!(
        (rec.counters.snapshots_taken, rec.counters.missed_deadline),
        (10, 1)
    );
}

#[test]
fn a_host_clock_step_inside_the_sandwich_rejects_the_sample() {
    let time = FakeTime::default();
    let (mut host, tracer) = clocks(&time);
    // Sample 5's second host read (read 11) is a second early.
    host.step_back = 11;
    let rec = run(config(10, Some(100), 1, 64), host, tracer, &time).unwrap();
    assert_eq!(
        (rec.counters.snapshots_taken, rec.counters.rejected),
        (10, 1)
    );
    assert!(rec.pairs.windows(2).all(|w| w[1].sys_ns > w[0].sys_ns));
}

#[test]
fn a_host_clock_step_between_samples_rejects_the_backward_pair() {
    let time = FakeTime::default();
    let (mut host, tracer) = clocks(&time);
    // With 2 tries, sample 5's reads are 20..24: read 20 early gives an
    // unordered try, the other try is fine, so nothing is lost.
    host.step_back = 20;
    let rec = run(config(10, Some(100), 2, 64), host, tracer, &time).unwrap();
    assert_eq!(
        (rec.counters.snapshots_taken, rec.counters.rejected),
        (11, 0)
    );
}

#[test]
fn stop_takes_a_last_pair_and_drop_joins() {
    let time = FakeTime::default();
    let (host, tracer) = clocks(&time);
    let sampler = Sampler::start_with(
        config(10, None, 1, 8),
        Box::new(host),
        Box::new(tracer),
        Box::new(FakePacer(time.clone())),
    )
    .unwrap();
    while sampler.counters().snapshots_taken < 20 {
        std::thread::yield_now();
    }
    let stop = sampler.stop_signal();
    let rec = sampler.finish().unwrap();
    assert!(stop.finished());
    assert_eq!(rec.pairs.len(), 8);
    assert_eq!(rec.counters.overwritten, rec.counters.snapshots_taken - 8);
    assert!(rec.sampler_cpu_ns.is_some() || !cfg!(target_os = "linux"));

    let (host, tracer) = clocks(&time);
    let sampler = Sampler::start_with(
        config(10, None, 1, 8),
        Box::new(host),
        Box::new(tracer),
        Box::new(FakePacer(time.clone())),
    )
    .unwrap();
    let stop = sampler.stop_signal();
    drop(sampler);
    assert!(stop.finished());
}

#[test]
fn a_failing_tracer_read_ends_the_sampler_with_its_error() {
    let time = FakeTime::default();
    let (host, mut tracer) = clocks(&time);
    tracer.fail = 4;
    let err = run(config(10, Some(100), 1, 64), host, tracer, &time).unwrap_err();
    assert!(err.to_string().contains("read failed on purpose"), "{err}");
}

#[test]
fn bad_configurations_are_refused_naming_the_field() {
    for (cfg, field) in [
        (config(0, None, 1, 1), "period"),
        (config(1, None, 0, 1), "tries"),
        (config(1, None, 1, 0), "capacity"),
    ] {
        let time = FakeTime::default();
        let (host, tracer) = clocks(&time);
        let err = Sampler::start_with(
            cfg,
            Box::new(host),
            Box::new(tracer),
            Box::new(FakePacer(time)),
        )
        .err()
        .expect("refused")
        .to_string();
        assert!(err.contains(field), "{err}");
    }
}

/// Waits for the stop, whatever the deadline.
struct UntilStop;

impl Pacer for UntilStop {
    fn now_ns(&self) -> u64 {
        0
    }
    fn wait_until(&self, _deadline_ns: u64, stop: &StopSignal) -> bool {
        while !stop.stop_requested() {
            std::thread::yield_now();
        }
        true
    }
}

#[test]
fn a_stop_before_the_first_deadline_still_leaves_a_first_and_a_last_pair() {
    let time = FakeTime::default();
    let (host, tracer) = clocks(&time);
    let sampler = Sampler::start_with(
        config(10, None, 1, 8),
        Box::new(host),
        Box::new(tracer),
        Box::new(UntilStop),
    )
    .unwrap();
    let rec = sampler.finish().unwrap();
    assert_eq!(rec.pairs.len(), 2);
    assert_eq!(rec.counters.snapshots_taken, 2);
}
