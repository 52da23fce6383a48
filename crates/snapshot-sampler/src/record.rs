//! A finished recording and its file: a `SnapshotPairs` protobuf, the
//! format `alignment_core`'s reader takes (`node<N>.snapshots.pb`), with
//! the read windows and the sampler's counters in its extension fields.

use std::path::Path;
use std::time::Duration;

use prost::Message as _;
use xplane_proto::{SamplerRecord, SnapshotPair, SnapshotPairs};

use crate::error::{Result, SamplerError};
use crate::sampler::Counters;
use crate::sandwich::Sample;

/// The pairs a sampler kept, oldest first, and how it took them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// The tracer clock, as [`crate::TracerClock::describe`] put it.
    pub tracer_clock: String,
    /// The sampling period.
    pub period: Duration,
    /// Sandwich reads per pair.
    pub tries: u32,
    /// The pairs kept.
    pub pairs: Vec<Sample>,
    /// The counters.
    pub counters: Counters,
    /// CPU time of the sampling thread, ns, once it has ended.
    pub sampler_cpu_ns: Option<u64>,
}

/// Summary figures of a recording's read windows, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowStats {
    /// Median.
    pub p50: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Recording {
    /// Host time from the first pair to the last, ns (0 with under two).
    pub fn span_ns(&self) -> u64 {
        match (self.pairs.first(), self.pairs.last()) {
            (Some(a), Some(b)) => b.sys_ns - a.sys_ns,
            _ => 0,
        }
    }

    /// Read-window percentiles; `None` without pairs or when the file did
    /// not record windows (every one 0).
    pub fn windows(&self) -> Option<WindowStats> {
        let mut w: Vec<u64> = self.pairs.iter().map(|p| p.window_ns).collect();
        if w.iter().all(|&x| x == 0) {
            return None;
        }
        w.sort_unstable();
        let rank = |q: f64| w[((q * w.len() as f64).ceil() as usize).clamp(1, w.len()) - 1];
        Some(WindowStats {
            p50: rank(0.50),
            p99: rank(0.99),
            max: w[w.len() - 1],
        })
    }

    /// The `SnapshotPairs` message: sandwich midpoints as `sys_clock_ns`,
    /// windows and counters in the extension fields.
    pub fn to_message(&self) -> SnapshotPairs {
        SnapshotPairs {
            pairs: self
                .pairs
                .iter()
                .map(|p| SnapshotPair {
                    sys_clock_ns: p.sys_ns,
                    tracer_clock_ns: p.tracer_ns,
                    read_window_ns: p.window_ns,
                })
                .collect(),
            sampling_period_ns: self.period.as_nanos() as u64,
            sampler: Some(SamplerRecord {
                tracer_clock: self.tracer_clock.clone(),
                tries: self.tries,
                snapshots_taken: self.counters.snapshots_taken,
                missed_deadline: self.counters.missed_deadline,
                overwritten: self.counters.overwritten,
                rejected: self.counters.rejected,
                sampler_cpu_ns: self.sampler_cpu_ns.unwrap_or(0),
            }),
        }
    }

    /// A recording from a message; one written by another collector has
    /// no sampler record (empty clock name, zero counters and windows).
    pub fn from_message(message: SnapshotPairs) -> Recording {
        let sampler = message.sampler.unwrap_or_default();
        Recording {
            tracer_clock: sampler.tracer_clock,
            period: Duration::from_nanos(message.sampling_period_ns),
            tries: sampler.tries,
            pairs: message
                .pairs
                .iter()
                .map(|p| Sample {
                    sys_ns: p.sys_clock_ns,
                    tracer_ns: p.tracer_clock_ns,
                    window_ns: p.read_window_ns,
                })
                .collect(),
            counters: Counters {
                snapshots_taken: sampler.snapshots_taken,
                missed_deadline: sampler.missed_deadline,
                overwritten: sampler.overwritten,
                rejected: sampler.rejected,
            },
            sampler_cpu_ns: (sampler.sampler_cpu_ns > 0).then_some(sampler.sampler_cpu_ns),
        }
    }

    /// Write the `SnapshotPairs` file atomically: a temporary beside
    /// `path`, synced, renamed over it.
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = self.to_message().encode_to_vec();
        xplane_proto::write_atomically(path, |f| std::io::Write::write_all(f, &bytes))?;
        Ok(())
    }

    /// Read a `SnapshotPairs` file.
    pub fn read(path: &Path) -> Result<Recording> {
        let bytes = xplane_proto::source::read_input(path).map_err(|source| SamplerError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let message = SnapshotPairs::decode(bytes.as_slice()).map_err(|source| {
            SamplerError::NotSnapshotPairs {
                path: path.to_path_buf(),
                source,
            }
        })?;
        Ok(Self::from_message(message))
    }
}

/// A `SnapshotPairs` file written as the pairs are taken: created (never
/// over an existing file) before the first pair, each pair appended as
/// one more `pairs` field and handed to the system at once, the counters
/// appended at the end. Protobuf merges repeated fields, so the file
/// reads as a whole recording at every moment: a recorder killed outright
/// (SIGKILL, power loss after the system wrote it out) leaves every pair
/// appended so far.
#[derive(Debug)]
pub struct RecordingFile {
    file: std::fs::File,
    path: std::path::PathBuf,
    tracer_clock: String,
    tries: u32,
}

impl RecordingFile {
    /// Create `path` (it must not exist) and write the recording's
    /// header: the period and the tries (the tracer clock, when known
    /// only later, with [`RecordingFile::set_tracer_clock`]).
    pub fn create(
        path: &Path,
        tracer_clock: &str,
        period: Duration,
        tries: u32,
    ) -> Result<RecordingFile> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|source| SamplerError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        let mut out = RecordingFile {
            file,
            path: path.to_path_buf(),
            tracer_clock: tracer_clock.to_owned(),
            tries,
        };
        out.put(&SnapshotPairs {
            pairs: Vec::new(),
            sampling_period_ns: period.as_nanos() as u64,
            sampler: Some(out.sampler_record(Counters::default(), None)),
        })?;
        Ok(out)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Name the tracer clock (once it is open).
    pub fn set_tracer_clock(&mut self, tracer_clock: &str) -> Result<()> {
        self.tracer_clock = tracer_clock.to_owned();
        self.put(&SnapshotPairs {
            pairs: Vec::new(),
            sampling_period_ns: 0,
            sampler: Some(self.sampler_record(Counters::default(), None)),
        })
    }

    /// Append one pair.
    pub fn append(&mut self, pair: &Sample) -> Result<()> {
        self.put(&SnapshotPairs {
            pairs: vec![SnapshotPair {
                sys_clock_ns: pair.sys_ns,
                tracer_clock_ns: pair.tracer_ns,
                read_window_ns: pair.window_ns,
            }],
            sampling_period_ns: 0,
            sampler: None,
        })
    }

    /// Append the final counters (the file keeps every pair, so none
    /// counts as overwritten) and sync the file to disk.
    pub fn finish(mut self, counters: Counters, sampler_cpu_ns: Option<u64>) -> Result<()> {
        let counters = Counters {
            overwritten: 0,
            ..counters
        };
        self.put(&SnapshotPairs {
            pairs: Vec::new(),
            sampling_period_ns: 0,
            sampler: Some(self.sampler_record(counters, sampler_cpu_ns)),
        })?;
        self.file.sync_all().map_err(|source| SamplerError::Io {
            path: self.path.clone(),
            source,
        })
    }

    fn sampler_record(&self, counters: Counters, sampler_cpu_ns: Option<u64>) -> SamplerRecord {
        SamplerRecord {
            tracer_clock: self.tracer_clock.clone(),
            tries: self.tries,
            snapshots_taken: counters.snapshots_taken,
            missed_deadline: counters.missed_deadline,
            overwritten: counters.overwritten,
            rejected: counters.rejected,
            sampler_cpu_ns: sampler_cpu_ns.unwrap_or(0),
        }
    }

    /// One write of the message's bytes (unbuffered: in the system's
    /// hands when this returns).
    fn put(&mut self, message: &SnapshotPairs) -> Result<()> {
        std::io::Write::write_all(&mut self.file, &message.encode_to_vec()).map_err(|source| {
            SamplerError::Io {
                path: self.path.clone(),
                source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(windows: &[u64]) -> Recording {
        Recording {
            tracer_clock: "CLOCK_MONOTONIC".into(),
            period: Duration::from_millis(10),
            tries: 5,
            pairs: windows
                .iter()
                .enumerate()
                .map(|(i, &w)| Sample {
                    sys_ns: 1_000 + 10 * i as u64,
                    tracer_ns: 7 + 10 * i as u64,
                    window_ns: w,
                })
                .collect(),
            counters: Counters {
                snapshots_taken: windows.len() as u64 + 2,
                missed_deadline: 3,
                overwritten: 2,
                rejected: 1,
            },
            sampler_cpu_ns: Some(12_345),
        }
    }

    #[test]
    fn file_round_trip_keeps_windows_and_counters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node3.snapshots.pb");
        let rec = recording(&[40, 30, 50]);
        rec.write(&path).unwrap();
        assert_eq!(Recording::read(&path).unwrap(), rec);
        assert_eq!(rec.span_ns(), 20);
        std::fs::write(&path, b"\xff\xff").unwrap();
        let err = Recording::read(&path).unwrap_err().to_string();
        assert!(
            err.contains("node3.snapshots.pb") && err.contains("SnapshotPairs"),
            "{err}"
        );
    }

    #[test]
    fn a_streamed_file_reads_whole_at_every_moment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node3.snapshots.pb");
        let rec = recording(&[40, 30, 50]);
        let mut file =
            RecordingFile::create(&path, &rec.tracer_clock, rec.period, rec.tries).unwrap();
        assert!(Recording::read(&path).unwrap().pairs.is_empty());
        for (k, pair) in rec.pairs.iter().enumerate() {
            file.append(pair).unwrap();
            // What a process killed here leaves.
            let read = Recording::read(&path).unwrap();
            assert_eq!(read.pairs, rec.pairs[..=k]);
            assert_eq!(
                (read.tracer_clock.as_str(), read.tries),
                ("CLOCK_MONOTONIC", 5)
            );
        }
        file.finish(rec.counters, rec.sampler_cpu_ns).unwrap();
        let read = Recording::read(&path).unwrap();
        assert_eq!(read.counters.overwritten, 0);
        assert_eq!(read.counters.rejected, rec.counters.rejected);
        assert_eq!(read.pairs, rec.pairs);
        assert_eq!(read.period, rec.period);
        // Never over an existing file.
        assert!(RecordingFile::create(&path, "x", rec.period, 1).is_err());
    }

    #[test]
    fn window_percentiles_are_nearest_rank() {
        let windows: Vec<u64> = (1..=100).collect();
        let stats = recording(&windows).windows().unwrap();
        assert_eq!((stats.p50, stats.p99, stats.max), (50, 99, 100));
        assert_eq!(recording(&[0, 0]).windows(), None);
        assert_eq!(recording(&[]).windows(), None);
        assert_eq!(recording(&[]).span_ns(), 0);
    }
}
