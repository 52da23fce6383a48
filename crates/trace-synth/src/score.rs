//! Scoring an aligned or merged trace against the ground truth.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use xplane_proto::{
    FileBytes, PlaneIndex, SNAPSHOT_PLANE, StatValue, absolute_ps, session_start_ns_view,
};

use crate::SynthError;
use crate::histogram::Histogram;
use crate::ids::{EventId, EventKind, SYNTH_EVENT_ID_STAT};
use crate::truth::Truth;

/// Error distribution of one edge (start or end) of one event kind, in ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EdgeScore {
    /// Events scored.
    pub count: u64,
    /// Truth records of this kind not found in the trace.
    pub missing: u64,
    /// Median |error|, ns (log-bucketed: within 0.4%; exact below 0.256 ns).
    pub p50_abs_ns: f64,
    /// 99th percentile |error|, ns (same precision).
    pub p99_abs_ns: f64,
    /// Largest |error|, ns (exact).
    pub max_abs_ns: f64,
    /// Mean signed error (trace − truth), ns (exact).
    pub mean_signed_ns: f64,
}

/// Scores of one event kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindScore {
    /// The kind.
    pub kind: EventKind,
    /// Errors of event starts.
    pub start: EdgeScore,
    /// Errors of event ends.
    pub end: EdgeScore,
}

/// How far a trace's event times are from the truth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreReport {
    /// The scored trace files.
    pub files: Vec<PathBuf>,
    /// Records in the truth file.
    pub truth_events: u64,
    /// Events matched to a truth record.
    pub events_scored: u64,
    /// Events on planes with `synth_event_id` metadata that lack the stat.
    pub untagged_events: u64,
    /// Events whose id is not in the truth.
    pub unknown_ids: u64,
    /// Events whose id was already seen (only the first is scored).
    pub duplicate_ids: u64,
    /// Per kind, in [`EventKind::ALL`] order.
    pub kinds: Vec<KindScore>,
    /// Collective happens-before violations, filled by a caller that checks them.
    pub collective_violations: Option<u64>,
}

impl ScoreReport {
    /// True when every truth event was found and scored exactly.
    pub fn is_perfect(&self) -> bool {
        self.unknown_ids == 0
            && self.duplicate_ids == 0
            && self.kinds.iter().all(|k| {
                [&k.start, &k.end]
                    .iter()
                    .all(|e| e.missing == 0 && e.max_abs_ns == 0.0)
            })
    }

    /// The score as a plain-text table.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<13} {:<5} {:>10} {:>8} {:>14} {:>14} {:>14} {:>14}\n",
            "kind",
            "edge",
            "count",
            "missing",
            "p50 |err| ns",
            "p99 |err| ns",
            "max |err| ns",
            "mean err ns"
        );
        for k in &self.kinds {
            for (edge, e) in [("start", &k.start), ("end", &k.end)] {
                s.push_str(&format!(
                    "{:<13} {:<5} {:>10} {:>8} {:>14.3} {:>14.3} {:>14.3} {:>14.3}\n",
                    k.kind.name(),
                    edge,
                    e.count,
                    e.missing,
                    e.p50_abs_ns,
                    e.p99_abs_ns,
                    e.max_abs_ns,
                    e.mean_signed_ns
                ));
            }
        }
        s.push_str(&format!(
            "truth events {}, scored {}, untagged {}, unknown ids {}, duplicate ids {}",
            self.truth_events,
            self.events_scored,
            self.untagged_events,
            self.unknown_ids,
            self.duplicate_ids
        ));
        if let Some(v) = self.collective_violations {
            s.push_str(&format!(", collective violations {v}"));
        }
        s.push('\n');
        s
    }
}

/// Accumulates errors over one or more trace files.
pub struct Scorer<'t> {
    truth: &'t Truth,
    seen: Vec<u64>,
    hist: [[Histogram; 2]; 3],
    files: Vec<PathBuf>,
    untagged: u64,
    unknown: u64,
    duplicate: u64,
}

fn kind_index(kind: EventKind) -> usize {
    match kind {
        EventKind::Device => 0,
        EventKind::HostRuntime => 1,
        EventKind::HostWall => 2,
    }
}

impl<'t> Scorer<'t> {
    /// A scorer against `truth`.
    pub fn new(truth: &'t Truth) -> Scorer<'t> {
        Scorer {
            truth,
            seen: vec![0; truth.len().div_ceil(64)],
            hist: Default::default(),
            files: Vec::new(),
            untagged: 0,
            unknown: 0,
            duplicate: 0,
        }
    }

    /// Score every tagged event of the XSpace in `path` (absolute times from
    /// its own `Task Environment`). Planes without `synth_event_id` metadata
    /// and the snapshot plane are skipped.
    pub fn add_file(&mut self, path: impl AsRef<Path>) -> Result<(), SynthError> {
        let path = path.as_ref();
        let file = FileBytes::open(path)?;
        let wire = |e| SynthError::Xspace(file.wire_error(e));
        let space = file.view();
        for hostname in space.hostnames() {
            let trace_run = crate::truth::run_id_of_hostname(hostname.map_err(wire)?);
            if let Some(trace_run) = trace_run.filter(|&r| r != self.truth.run_id()) {
                return Err(SynthError::OtherRun {
                    path: path.to_owned(),
                    trace_run,
                    truth_run: self.truth.run_id(),
                });
            }
        }
        let t_sess = session_start_ns_view(&space).map_err(wire)?;
        let mut hint = 0usize;
        for plane in space.planes() {
            let plane = plane.map_err(wire)?;
            if plane.name == SNAPSHOT_PLANE {
                continue;
            }
            let index = PlaneIndex::new(&plane).map_err(wire)?;
            let Some(id_stat) = index.stat_id(SYNTH_EVENT_ID_STAT) else {
                continue;
            };
            for line in plane.lines() {
                let line = line.map_err(wire)?;
                for event in line.events() {
                    let event = event.map_err(wire)?;
                    let mut id = None;
                    for stat in event.stats() {
                        let stat = stat.map_err(wire)?;
                        if stat.metadata_id == id_stat {
                            id = match stat.value {
                                Some(StatValue::Uint64(v)) => Some(v),
                                Some(StatValue::Int64(v)) => Some(v as u64),
                                other => {
                                    return Err(SynthError::BadTrace {
                                        path: path.to_owned(),
                                        plane: plane.name.to_owned(),
                                        line: line.name.to_owned(),
                                        reason: format!(
                                            "{SYNTH_EVENT_ID_STAT} is {other:?}, not an integer"
                                        ),
                                    });
                                }
                            };
                            break;
                        }
                    }
                    let Some(id) = id else {
                        self.untagged += 1;
                        continue;
                    };
                    let Some(i) = self.truth.find(EventId(id), hint) else {
                        self.unknown += 1;
                        continue;
                    };
                    hint = i + 1;
                    let (word, bit) = (i / 64, 1u64 << (i % 64));
                    if self.seen[word] & bit != 0 {
                        self.duplicate += 1;
                        continue;
                    }
                    self.seen[word] |= bit;
                    let rec = self.truth.get(i);
                    let start = absolute_ps(t_sess, line.timestamp_ns, event.offset_ps());
                    let end = start + i128::from(event.duration_ps);
                    let h = &mut self.hist[kind_index(rec.id.kind())];
                    h[0].add(start - rec.start_ps);
                    h[1].add(end - rec.end_ps);
                }
            }
        }
        self.files.push(path.to_owned());
        Ok(())
    }

    /// The report.
    pub fn finish(self) -> ScoreReport {
        let mut total = [0u64; 3];
        for rec in self.truth.iter() {
            total[kind_index(rec.id.kind())] += 1;
        }
        let edge = |h: &Histogram, total: u64| EdgeScore {
            count: h.count(),
            missing: total - h.count(),
            p50_abs_ns: h.quantile(0.5) as f64 / 1000.0,
            p99_abs_ns: h.quantile(0.99) as f64 / 1000.0,
            max_abs_ns: h.max() as f64 / 1000.0,
            mean_signed_ns: h.mean_signed() / 1000.0,
        };
        let kinds = EventKind::ALL
            .iter()
            .map(|&kind| {
                let i = kind_index(kind);
                KindScore {
                    kind,
                    start: edge(&self.hist[i][0], total[i]),
                    end: edge(&self.hist[i][1], total[i]),
                }
            })
            .collect();
        ScoreReport {
            files: self.files,
            truth_events: self.truth.len() as u64,
            events_scored: self.hist.iter().map(|h| h[0].count()).sum(),
            untagged_events: self.untagged,
            unknown_ids: self.unknown,
            duplicate_ids: self.duplicate,
            kinds,
            collective_violations: None,
        }
    }
}

/// Score `traces` (per-node aligned files, or one merged file) against the
/// truth file `truth`.
pub fn score_files<P: AsRef<Path>>(
    traces: &[P],
    truth: impl AsRef<Path>,
) -> Result<ScoreReport, SynthError> {
    let truth = Truth::open(truth)?;
    let mut scorer = Scorer::new(&truth);
    for t in traces {
        scorer.add_file(t)?;
    }
    Ok(scorer.finish())
}
