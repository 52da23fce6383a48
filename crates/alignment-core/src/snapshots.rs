//! Clock snapshot pairs `(sys, tracer)` from any of their three carriers:
//! the embedded `/host:snapshots` plane, a `SnapshotPairs` protobuf file, or
//! JSONL (`{"sys_ns": U, "tracer_ns": U}`, `rocm_ns` accepted for `tracer_ns`).

use std::io::BufRead;
use std::path::{Path, PathBuf};

pub use clock_model::SnapshotPair;
use clock_model::{HostTime, TracerTime};
use prost::Message as _;
use serde::Deserialize;
use xplane_proto::{PlaneIndex, SNAPSHOT_PLANE, SpaceView, StatValue};

use crate::error::{AlignError, Result};

/// A pair as stored: whole ns on the tracer clock (CLOCK_BOOTTIME on
/// ROCm) and on host REALTIME (epoch ns).
fn stored_pair(tracer_ns: u64, sys_ns: u64) -> SnapshotPair {
    SnapshotPair {
        tracer: TracerTime::from_unsigned_ns(tracer_ns),
        host: HostTime::from_unsigned_ns(sys_ns),
    }
}

/// A node's snapshot pairs, in recorded order, with where they came from.
///
/// Invariant (checked by [`Snapshots::new`]): neither clock goes backwards
/// from one pair to the next.
#[derive(Debug, Clone)]
pub struct Snapshots {
    source: PathBuf,
    pairs: Vec<SnapshotPair>,
}

impl Snapshots {
    /// Check the pairs read from `source`.
    pub fn new(source: impl Into<PathBuf>, pairs: Vec<SnapshotPair>) -> Result<Self> {
        let source = source.into();
        for (i, w) in pairs.windows(2).enumerate() {
            let (a, b) = (w[0], w[1]);
            let which = if b.host < a.host {
                Some(("sys", a.sys_ns(), b.sys_ns()))
            } else if b.tracer < a.tracer {
                Some(("tracer", a.tracer_ns(), b.tracer_ns()))
            } else {
                None
            };
            if let Some((clock, before_ns, after_ns)) = which {
                return Err(AlignError::SnapshotsBackwards {
                    file: source,
                    pair: i + 1,
                    clock,
                    before_ns,
                    after_ns,
                });
            }
        }
        Ok(Snapshots { source, pairs })
    }

    /// The pairs.
    pub fn pairs(&self) -> &[SnapshotPair] {
        &self.pairs
    }

    /// The file they came from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// Pairs embedded in a trace's `/host:snapshots` plane; `None` when the
    /// trace has no such plane. `session_start_ns` is the trace's `T_sess`.
    pub fn from_trace(
        path: &Path,
        space: &SpaceView<'_>,
        session_start_ns: i128,
    ) -> Result<Option<Self>> {
        let wire = |e| AlignError::wire(path, space, e);
        for plane in space.planes() {
            let plane = plane.map_err(wire)?;
            if plane.name != SNAPSHOT_PLANE {
                continue;
            }
            let index = PlaneIndex::new(&plane).map_err(wire)?;
            let rocm_ns = index.stat_id("rocm_ns");
            let mut pairs = Vec::new();
            for line in plane.lines() {
                let line = line.map_err(wire)?;
                for (i, event) in line.events().enumerate() {
                    let event = event.map_err(wire)?;
                    let mut tracer = None;
                    for stat in event.stats() {
                        let stat = stat.map_err(wire)?;
                        if Some(stat.metadata_id) == rocm_ns {
                            tracer = match stat.value {
                                Some(StatValue::Uint64(v)) => Some(v),
                                Some(StatValue::Int64(v)) if v >= 0 => Some(v as u64),
                                _ => None,
                            };
                        }
                    }
                    let tracer = tracer.ok_or_else(|| AlignError::SnapshotWithoutTracerTime {
                        path: path.to_path_buf(),
                        line: line.name.to_owned(),
                        event: i,
                    })?;
                    let sys = xplane_proto::absolute_ps(
                        session_start_ns,
                        line.timestamp_ns,
                        event.offset_ps(),
                    )
                    .div_euclid(1000);
                    let sys = u64::try_from(sys).map_err(|_| AlignError::NegativeSnapshotTime {
                        path: path.to_path_buf(),
                        line: line.name.to_owned(),
                        event: i,
                        sys_ns: sys,
                    })?;
                    pairs.push(stored_pair(tracer, sys));
                }
            }
            return Self::new(format!("{} ({SNAPSHOT_PLANE})", path.display()), pairs).map(Some);
        }
        Ok(None)
    }

    /// Read a `SnapshotPairs` protobuf file or a JSONL file (chosen by the
    /// `.jsonl`/`.json` extension).
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let jsonl = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("json"));
        if jsonl {
            let file = xplane_proto::source::open_input(path).map_err(AlignError::io(path))?;
            return Self::parse_jsonl(std::io::BufReader::new(file), path);
        }
        let bytes = xplane_proto::source::read_input(path).map_err(AlignError::io(path))?;
        Self::parse_protobuf(&bytes, path)
    }

    /// Parse an encoded `SnapshotPairs` message; `path` names the source in
    /// errors.
    pub fn parse_protobuf(bytes: &[u8], path: &Path) -> Result<Self> {
        let message = xplane_proto::SnapshotPairs::decode(bytes).map_err(|source| {
            AlignError::NotSnapshotPairs {
                path: path.to_path_buf(),
                source,
            }
        })?;
        let pairs = message
            .pairs
            .iter()
            .map(|p| stored_pair(p.tracer_clock_ns, p.sys_clock_ns))
            .collect();
        Self::new(path, pairs)
    }

    /// Parse JSONL pairs; `path` names the source in errors.
    pub fn parse_jsonl(reader: impl BufRead, path: &Path) -> Result<Self> {
        #[derive(Deserialize)]
        struct Line {
            sys_ns: u64,
            #[serde(alias = "rocm_ns")]
            tracer_ns: u64,
        }
        let mut pairs = Vec::new();
        for (i, text) in reader.lines().enumerate() {
            let text = text.map_err(AlignError::io(path))?;
            if text.trim().is_empty() {
                continue;
            }
            let line: Line = serde_json::from_str(&text).map_err(|source| AlignError::Json {
                path: path.to_path_buf(),
                line: i + 1,
                expected: "{\"sys_ns\": U, \"tracer_ns\": U}",
                source,
            })?;
            pairs.push(stored_pair(line.tracer_ns, line.sys_ns));
        }
        Self::new(path, pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_accepts_rocm_ns_and_names_bad_lines() {
        let text = "{\"sys_ns\": 10, \"tracer_ns\": 100}\n\n{\"sys_ns\": 20, \"rocm_ns\": 110}\n";
        let s = Snapshots::parse_jsonl(text.as_bytes(), Path::new("s.jsonl")).unwrap();
        assert_eq!(s.pairs(), &[stored_pair(100, 10), stored_pair(110, 20)]);
        let err = Snapshots::parse_jsonl(
            &b"{\"sys_ns\": 1, \"tracer_ns\": 2}\n{\"sys_ns\": 3}\n"[..],
            Path::new("s.jsonl"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("s.jsonl:2: "), "{err}");
        let err = Snapshots::parse_jsonl(
            &b"{\"sys_ns\": 5, \"tracer_ns\": 2}\n{\"sys_ns\": 3, \"tracer_ns\": 4}\n"[..],
            Path::new("s.jsonl"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("snapshot pair 1") && err.contains("sys clock goes backwards"),
            "{err}"
        );
    }

    #[test]
    fn snapshot_pairs_protobuf_round_trip_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node1.snapshots.pb");
        let message = xplane_proto::SnapshotPairs {
            pairs: vec![xplane_proto::SnapshotPair {
                sys_clock_ns: 7,
                tracer_clock_ns: 9,
                read_window_ns: 0,
            }],
            sampling_period_ns: 4_000_000_000,
            sampler: None,
        };
        std::fs::write(&path, message.encode_to_vec()).unwrap();
        assert_eq!(
            Snapshots::read(&path).unwrap().pairs(),
            &[stored_pair(9, 7)]
        );
        std::fs::write(&path, b"\xff\xff\xff").unwrap();
        let err = Snapshots::read(&path).unwrap_err().to_string();
        assert!(
            err.contains("node1.snapshots.pb") && err.contains("not a SnapshotPairs protobuf"),
            "{err}"
        );
    }
}
