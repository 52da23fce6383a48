//! The sampling thread: a pair every period into a bounded ring buffer,
//! with counters, started and stopped cleanly (dropping joins it).

use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::clock::{PosixClock, TracerClock};
use crate::error::{Result, SamplerError};
use crate::pacer::{MonotonicPacer, Pacer, StopSignal};
use crate::record::Recording;
use crate::ring::Ring;
use crate::sandwich::{Sample, read_pair};

/// Most sandwich reads per pair ([`Config::tries`]): beyond a few the
/// tightest no longer improves, and each costs three clock reads before
/// the sampler can see a stop.
pub const MAX_TRIES: u32 = 1000;

/// Most pairs kept in memory ([`Config::capacity`]): 2^26 pairs, 1.5 GiB
/// (about 8.5 years at the default 4 s period).
pub const MAX_CAPACITY: usize = 1 << 26;

/// How to sample. Invariants (checked by [`Config::validate`]): a period
/// of at least 1 µs, 1 to [`MAX_TRIES`] tries, a capacity of 1 to
/// [`MAX_CAPACITY`] pairs (checked before anything is allocated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Time between deadlines; the first sample is taken at the start.
    pub period: Duration,
    /// Stop by itself after the deadline at this offset (`None`: only
    /// when stopped).
    pub duration: Option<Duration>,
    /// Sandwich reads per pair; the tightest is kept.
    pub tries: u32,
    /// Pairs the ring buffer keeps; beyond it the oldest are dropped.
    pub capacity: usize,
}

impl Config {
    /// Every `period`, 5 tries a pair, 65 536 pairs kept (72 h at 4 s).
    pub fn new(period: Duration) -> Config {
        Config {
            period,
            duration: None,
            tries: 5,
            capacity: 1 << 16,
        }
    }

    /// Check the invariants.
    pub fn validate(&self) -> Result<()> {
        let bad = |field, problem: &str| {
            Err(SamplerError::Config {
                field,
                problem: problem.to_owned(),
            })
        };
        if self.period < Duration::from_micros(1) {
            return bad("period", &format!("{:?} is under 1 µs", self.period));
        }
        if self.tries == 0 || self.tries > MAX_TRIES {
            return bad(
                "tries",
                &format!("{} is not between 1 and {MAX_TRIES}", self.tries),
            );
        }
        if self.capacity == 0 || self.capacity > MAX_CAPACITY {
            return bad(
                "capacity",
                &format!(
                    "{} pairs is not between 1 and {MAX_CAPACITY} ({} bytes each)",
                    self.capacity,
                    std::mem::size_of::<Sample>()
                ),
            );
        }
        Ok(())
    }
}

/// Where [`Sampler::start_streaming`] hands each pair kept.
pub type PairSink = Box<dyn FnMut(&Sample) -> Result<()> + Send>;

/// What the sampler counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Pairs taken, including any later overwritten.
    pub snapshots_taken: u64,
    /// Deadlines skipped because a sample ended after the next one.
    pub missed_deadline: u64,
    /// Pairs dropped from the full ring buffer, oldest first.
    pub overwritten: u64,
    /// Samples discarded: every sandwich had the host clock go backwards,
    /// or a clock read earlier than in the previous pair (the aligner
    /// needs both to rise).
    pub rejected: u64,
}

/// What the thread and the owner share.
struct Shared {
    ring: Ring<Sample>,
    counters: Counters,
    cpu_ns: Option<u64>,
}

/// A running sampler. [`Sampler::finish`] stops it and hands back the
/// [`Recording`]; dropping it stops and joins the thread too.
pub struct Sampler {
    shared: Arc<Mutex<Shared>>,
    stop: StopSignal,
    thread: Option<JoinHandle<Result<()>>>,
    config: Config,
    tracer_clock: String,
}

impl Sampler {
    /// Sample `tracer` against host `CLOCK_REALTIME` on a real schedule.
    pub fn start(config: Config, tracer: Box<dyn TracerClock>) -> Result<Sampler> {
        Self::start_with(
            config,
            Box::new(PosixClock::realtime()),
            tracer,
            Box::new(MonotonicPacer),
        )
    }

    /// [`Sampler::start`], every pair kept also handed to `sink` as it is
    /// taken (on the sampling thread; a sink error stops the sampler and
    /// is [`Sampler::finish`]'s): e.g. appended to a
    /// [`crate::RecordingFile`], so that a process killed outright leaves
    /// the pairs taken so far.
    pub fn start_streaming(
        config: Config,
        tracer: Box<dyn TracerClock>,
        sink: PairSink,
    ) -> Result<Sampler> {
        Self::start_full(
            config,
            Box::new(PosixClock::realtime()),
            tracer,
            Box::new(MonotonicPacer),
            Some(sink),
        )
    }

    /// Sample with any host clock and pacer (fakes in tests).
    pub fn start_with(
        config: Config,
        host: Box<dyn TracerClock>,
        tracer: Box<dyn TracerClock>,
        pacer: Box<dyn Pacer>,
    ) -> Result<Sampler> {
        Self::start_full(config, host, tracer, pacer, None)
    }

    fn start_full(
        config: Config,
        host: Box<dyn TracerClock>,
        tracer: Box<dyn TracerClock>,
        pacer: Box<dyn Pacer>,
        sink: Option<PairSink>,
    ) -> Result<Sampler> {
        config.validate()?;
        let shared = Arc::new(Mutex::new(Shared {
            ring: Ring::new(config.capacity),
            counters: Counters::default(),
            cpu_ns: None,
        }));
        let stop = StopSignal::default();
        let tracer_clock = tracer.describe();
        let worker = Worker {
            shared: Arc::clone(&shared),
            stop: stop.clone(),
            config: config.clone(),
            host,
            tracer,
            pacer,
            sink,
        };
        let thread = std::thread::Builder::new()
            .name("snapshot-sampler".into())
            .spawn(move || worker.run())
            .map_err(|source| SamplerError::Spawn { source })?;
        Ok(Sampler {
            shared,
            stop,
            thread: Some(thread),
            config,
            tracer_clock,
        })
    }

    /// The handle that stops this sampler (e.g. from a signal thread).
    pub fn stop_signal(&self) -> StopSignal {
        self.stop.clone()
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        lock(&self.shared).counters
    }

    /// The pairs and counters so far, the sampler still running.
    pub fn recording(&self) -> Recording {
        let shared = lock(&self.shared);
        Recording {
            tracer_clock: self.tracer_clock.clone(),
            period: self.config.period,
            tries: self.config.tries,
            pairs: shared.ring.to_vec(),
            counters: shared.counters,
            sampler_cpu_ns: shared.cpu_ns,
        }
    }

    /// Stop (taking a last pair unless the duration already ended it),
    /// join the thread and hand back everything recorded.
    pub fn finish(mut self) -> Result<Recording> {
        self.stop.request_stop();
        self.join()?;
        Ok(self.recording())
    }

    fn join(&mut self) -> Result<()> {
        match self.thread.take() {
            Some(thread) => thread.join().map_err(|_| SamplerError::Panicked)?,
            None => Ok(()),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.request_stop();
        // Errors were for `finish` to report; dropping only cleans up.
        let _ = self.join();
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// The sampling thread's own state.
struct Worker {
    shared: Arc<Mutex<Shared>>,
    stop: StopSignal,
    config: Config,
    host: Box<dyn TracerClock>,
    tracer: Box<dyn TracerClock>,
    pacer: Box<dyn Pacer>,
    sink: Option<PairSink>,
}

impl Worker {
    fn run(mut self) -> Result<()> {
        /// Marks the thread finished however it ends.
        struct Finished(StopSignal);
        impl Drop for Finished {
            fn drop(&mut self) {
                self.0.set_finished();
            }
        }
        let _finished = Finished(self.stop.clone());
        let cpu_before = crate::cpu::thread_cpu_ns();
        let result = self.sample_loop();
        if let (Some(before), Some(after)) = (cpu_before, crate::cpu::thread_cpu_ns()) {
            lock(&self.shared).cpu_ns = Some(after.saturating_sub(before));
        }
        result
    }

    /// Deadlines at `start + k·period`; after each sample the next is the
    /// first deadline not yet passed, and those skipped count as missed.
    fn sample_loop(&mut self) -> Result<()> {
        let period = self.config.period.as_nanos().max(1) as u64;
        let ticks = self
            .config
            .duration
            .map(|d| d.as_nanos() as u64 / period + 1);
        let start = self.pacer.now_ns();
        let mut tick = 0u64;
        loop {
            if ticks.is_some_and(|n| tick >= n) {
                return Ok(());
            }
            // The first pair is taken whatever: a stop that comes before
            // it still leaves a pair at the start and one at the stop.
            let deadline = start.saturating_add(tick.saturating_mul(period));
            if tick > 0 && self.pacer.wait_until(deadline, &self.stop) {
                return self.take();
            }
            self.take()?;
            let elapsed = self.pacer.now_ns().saturating_sub(start);
            let next = elapsed.div_ceil(period).max(tick + 1);
            let skipped_to = ticks.map_or(next, |n| next.min(n));
            lock(&self.shared).counters.missed_deadline += skipped_to.saturating_sub(tick + 1);
            tick = next;
        }
    }

    fn take(&mut self) -> Result<()> {
        let sample = read_pair(self.host.as_ref(), self.tracer.as_ref(), self.config.tries)?;
        let kept = self.keep(sample);
        match (kept, self.sink.as_mut()) {
            (Some(s), Some(sink)) => sink(&s),
            _ => Ok(()),
        }
    }

    /// Keep `sample` when it rises; the pair kept.
    fn keep(&self, sample: Option<Sample>) -> Option<Sample> {
        let mut shared = lock(&self.shared);
        let rises = |s: &Sample| {
            shared
                .ring
                .last()
                .is_none_or(|p| s.sys_ns >= p.sys_ns && s.tracer_ns >= p.tracer_ns)
        };
        match sample {
            Some(s) if rises(&s) => {
                shared.counters.snapshots_taken += 1;
                if shared.ring.push(s) {
                    shared.counters.overwritten += 1;
                }
                Some(s)
            }
            _ => {
                shared.counters.rejected += 1;
                None
            }
        }
    }
}
